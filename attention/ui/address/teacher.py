"""The teacher page's signed link in its own address bar, so a reload or a restarted replica reopens the class shown.

The value ``teacher=CODE.ISSUED.SIG`` is signed with the board's own random secret (see
:meth:`attention.io.board.Board.teacher_link`); it unlocks that one class, for a limited time. Only a session where
the teacher key was typed writes it.
"""

from __future__ import annotations

import streamlit as st

from ...errors import AttentionError
from ..core import classboard

PARAM = "teacher"


def read() -> str | None:
    """The signed teacher link the address carries, or None."""
    value = st.query_params.get(PARAM)
    return value if isinstance(value, str) and value else None


def write(code: str | None) -> None:
    """Put a fresh signed link for class ``code`` in the address bar when the teacher key was typed in this session
    and the address does not already hold a valid link for that class."""
    board = classboard.board()
    if board is None or not code or not classboard.key_session():
        return
    try:
        if board.check_teacher_link(read() or "") == code:
            return
    except AttentionError:
        pass
    st.query_params[PARAM] = board.teacher_link(code)
