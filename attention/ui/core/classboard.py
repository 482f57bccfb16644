"""The class board as this server's settings name it: one store per process, and who this browser is in a class."""

from __future__ import annotations

import hmac
import logging

import streamlit as st

from ...errors import AttentionError
from ...io.board import Board
from .cache import kept
from .session import KEY, Member
from .settings import server_settings

_LOG = logging.getLogger(__name__)
TEACHER = "board.teacher"  # session_state: True once the key was typed or its cookie checked out; False: locked
PASS_WRITE = "board.teacher.write"  # session_state: the teacher cookie's value to write on the next draw ("": clear)
SHOWN_AT = "board.shown_at"  # session_state: when (UTC) the teacher page began showing its class here
NAMED = "board.named_class"  # session_state: the class a hand-in link opened here names (its ``class=``)
SHOWN_CLASS = "board.class"  # session_state: the class code the teacher page shows
COOKIE = "attention_member"  # this browser's membership (code.token), kept across every link of this app
FORGET = "board.forget"  # session_state: this browser left its class (its cookie is cleared, not read again)
COOKIE_HOURS = 8  # the membership cookie's lifetime: a lab session, not the next day's students


@kept(4)
def _board(url: str) -> Board:
    return Board(url)


def board() -> Board | None:
    """The class board, or None when the server's settings name no database or it cannot be opened now (the reason
    goes to the server's log; a page then reads as if the board were off, and tries again next run)."""
    url = server_settings().board_url
    if not url:
        return None
    try:
        return _board(url)
    except AttentionError as exc:
        _LOG.warning("class board unavailable: %s", exc.message)
        return None


def member() -> Member | None:
    """Who this browser joined a class as (the Session's ``member``), or None."""
    got = getattr(st.session_state.get(KEY), "member", None)
    return got if isinstance(got, Member) else None


def key_matches(typed: object) -> bool:
    """Whether ``typed`` is this server's teacher key (constant-time); an empty key, set or typed, never matches."""
    key = server_settings().teacher_key or ""
    typed = str(typed or "")[:500]
    return bool(key) and bool(typed) and hmac.compare_digest(typed.encode(), key.encode())


def key_session() -> bool:
    """Whether the teacher key was typed in this browser, now or earlier (its cookie): it opens and shows any class."""
    return st.session_state.get(TEACHER) is True


def may_manage(code: str) -> bool:
    """Whether this browser session may set challenges for, rename, remove or close in class ``code``: the teacher
    key, typed here or kept in this browser's signed cookie, and the teacher page showing that class."""
    return key_session() and bool(code) and st.session_state.get(SHOWN_CLASS) == code


def https() -> bool:
    """Whether the browser reached this page over https (directly or through a proxy that says so)."""
    try:
        url, proto = st.context.url or "", st.context.headers.get("X-Forwarded-Proto", "")
    except Exception:  # noqa: BLE001 - no request context (AppTest)
        return False
    return url.startswith("https://") or str(proto).lower() == "https"


def app_base() -> str:
    """This app's address as the browser sees it (scheme, host and any path before the page), or "" when unknown."""
    try:
        url = st.context.url or ""
    except Exception:  # noqa: BLE001 - no request context (AppTest)
        return ""
    return url.split("?", 1)[0].rsplit("/", 1)[0] if "://" in url else ""


def cookie_member() -> str | None:
    """The membership this browser keeps in its cookie (set when it joined), or None."""
    if st.session_state.get(FORGET):
        return None
    return cookie(COOKIE)


def cookie(name: str) -> str | None:
    """The value of this site's cookie ``name`` as the browser sent it when this session began, or None."""
    try:
        value = st.context.cookies.get(name)
    except Exception:  # noqa: BLE001 - no request context (AppTest)
        return None
    return value if isinstance(value, str) and value and len(value) <= 200 else None
