"""The class board as this server's settings name it: one store per process, and who this browser is in a class."""

from __future__ import annotations

import hashlib
import hmac
import logging
from dataclasses import dataclass

import streamlit as st

from ...errors import AttentionError
from ...io.board import Board
from .settings import server_settings

_LOG = logging.getLogger(__name__)
MEMBER = "board.member"  # session_state: the Member this browser joined as (never in the address)
TEACHER = "board.teacher"  # session_state: True once the teacher key was given in this browser session
SHOWN_CLASS = "board.class"  # session_state: the class code the teacher page shows
COOKIE = "attention_member"  # this browser's membership (code.token), kept across every link of this app
FORGET = "board.forget"  # session_state: this browser left its class (its cookie is cleared, not read again)
TEACHER_PARAM = "teacher"  # the teacher page's address: the class shown and its signature by the teacher key


@dataclass(frozen=True)
class Member:
    """A student of a class: its code, her display name and her secret token (kept in this browser session)."""

    code: str
    name: str
    token: str


@st.cache_resource(show_spinner=False)
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
    """Who this browser joined a class as, or None."""
    got = st.session_state.get(MEMBER)
    return got if isinstance(got, Member) else None


def teacher_token(code: str) -> str:
    """The teacher page's address value for class ``code``: the code and its HMAC by the server's teacher key (a
    reload or a restarted replica checks it again with the key alone; it opens that class's board, nothing else)."""
    key = (server_settings().teacher_key or "").encode()
    return f"{code}.{hmac.new(key, f'teacher:{code}'.encode(), hashlib.sha256).hexdigest()[:32]}"


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
    try:
        value = st.context.cookies.get(COOKIE)
    except Exception:  # noqa: BLE001 - no request context (AppTest)
        return None
    return value if isinstance(value, str) and value else None
