"""The teacher's key kept in this browser, and the class the teacher page shows in its address.

The teacher types the server's key once per browser: the page then keeps a signed cookie (``attention_teacher``,
:meth:`attention.io.board.Board.teacher_pass`: its issue time, signed by the board's own secret over a hash of the
key; never the key) for LINK_HOURS, so a reload, another tab or a replica taking over needs no key. The address
names only the class shown (``class=CODE``, the code the class writes on the board anyway): the address alone never
opens the board, so a link seen on a projector gives nothing. "Lock this page" forgets the key in this browser.
"""

from __future__ import annotations

import streamlit as st

from ...errors import AttentionError
from ...io.board import LINK_HOURS, normal_code
from ..core import classboard
from ..core.settings import server_settings
from ..state import board as state_board
from . import membership

COOKIE = "attention_teacher"
PARAM = "class"  # the class the teacher page shows (the same name a hand-in link names its class by)


def restore() -> str | None:
    """Give the teacher page to this browser session when its kept key checks out (quietly otherwise); what to say
    when it was kept but no longer counts (too old, another key), else None."""
    if classboard.TEACHER in st.session_state:  # typed, restored or locked in this session already
        return None
    board, value = classboard.board(), classboard.cookie(COOKIE)
    if board is None or not value:
        return None
    try:
        board.check_teacher_pass(value, server_settings().teacher_key or "")
    except AttentionError as exc:
        state_board.teacher_kept(False)  # a stale cookie is cleared
        return exc.message
    state_board.teacher_kept(True)
    return None


def draw() -> None:
    """Write the pending cookie, if any (a one-line script: Streamlit itself sets no cookie)."""
    value = state_board.take_teacher_cookie()
    if value is not None:
        hours = LINK_HOURS if value else 0
        membership.script(membership.cookie_text(value, classboard.https(), COOKIE, hours))


def shown() -> str | None:
    """The class the address names, when it reads as a class code, or None."""
    value = st.query_params.get(PARAM)
    try:
        return normal_code(value) if isinstance(value, str) and value else None
    except AttentionError:
        return None


def solve_asked() -> int | None:
    """The hand-in a short link asks the teacher page to open (``solve=ID``), or None."""
    value = st.query_params.get("solve")
    return int(value) if isinstance(value, str) and value.isdigit() and len(value) <= 12 else None


def show(code: str | None) -> None:
    """Name the class shown in the address bar (a reload shows it again to a browser that kept the key)."""
    if code and st.query_params.get(PARAM) != code:
        st.query_params[PARAM] = code
    elif not code and PARAM in st.query_params:
        del st.query_params[PARAM]
    if "teacher" in st.query_params:  # an older signed teacher link opens nothing now: dropped
        del st.query_params["teacher"]
