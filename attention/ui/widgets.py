"""Small shared widget helpers: the messages left for a place, and a whole number read back from a box."""

from __future__ import annotations

import streamlit as st

from . import session, state
from .text import esc


def show_messages(place: str, where=st) -> None:
    """The messages left for ``place`` by the last change or refusal."""
    for kind, text in session.messages(place):
        icon = {"success": ":material/check_circle:", "error": ":material/error:", "warning": ":material/warning:"}.get(
            kind
        )
        getattr(where, kind)(text, icon=icon)


def whole_number(key: str, what: str, lo: int, hi: int, place: str, current: int) -> int | None:
    """The whole number in widget ``key``, or None after leaving a message and putting ``current`` back."""
    value = st.session_state.get(key)
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and float(value).is_integer()
        and lo <= value <= hi
    )
    if ok:
        return int(value)
    state.say(
        place,
        "error",
        f"{what} must be a whole number from {lo} to {hi}; {esc(value)} was not applied and {what} stays {current}.",
    )
    st.session_state[key] = current
    return None
