"""Choose a position by searching for its token: the one control the Logit lens, Attribution, Routes and Generate share.

On a long text (2,048 tokens) a position is hard to find by number: type any part of a token's text (case ignored;
␣ or a space for a space) and the positions whose token holds it are listed as "pos 1,432 · “␣Paris”"; choosing one
sets the position (the readout pages' ``Inside.position``, or the end of the Generate page's prompt). The text typed
is ``Inside.find``, written only by :func:`attention.ui.state.inside.on_find`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from ..core import keys
from ..state import inside
from ..widgets.common import bind
from . import runs

LISTED = 500  # matches listed at most (the first ones); the count says how many there are


def matches(tokens: Sequence[str], text: str) -> list[int]:
    """The positions (0-based) whose token's text holds ``text`` (marks for whitespace read as it, case ignored);
    none for an empty text."""
    wanted = inside.searched(text)
    if not wanted:
        return []
    return [k for k, t in enumerate(tokens) if wanted in inside.searched(t)]


def label(position: int, tokens: Sequence[str]) -> str:
    """A match as the list shows it: "pos 1,432 · “␣Paris”" (counted from 1)."""
    return f"pos {position + 1:,} · “{tokens[position]}”"


def control(position: int, on_pick: Callable[[], None], what: str = "the position") -> None:
    """The search box and the positions it finds; choosing one calls ``on_pick`` (which reads keys.FIND_PICK).
    ``position`` is the one in force (shown chosen when it is among the matches)."""
    ids = inside.now().ids
    tokens = runs.pieces(ids)
    bind(keys.FIND_TEXT, inside.now().find)
    st.text_input(
        f"Find {what} by its token: type part of a token, then press Enter",
        key=keys.FIND_TEXT,
        on_change=inside.on_find,  # no max_chars: a longer paste is refused by name, not dropped
        help=f"Any part of a token's text, case ignored (␣ or a space for a space); at most {inside.MAX_FIND} "
        "characters.",
        placeholder="e.g. Paris",
    )
    found = matches(tokens, inside.now().find)
    if not inside.now().find:
        return
    if not found:
        st.caption(f"No token of the {len(ids):,} holds that text.")  # ours: a number
        return
    listed = found[:LISTED]
    bind(keys.FIND_PICK, position if position in listed else None)
    more = f" (the first {LISTED:,} listed)" if len(found) > LISTED else ""
    st.selectbox(
        f"{len(found):,} position{'s hold' if len(found) != 1 else ' holds'} it{more}: choose one",
        listed,
        format_func=lambda k: label(k, tokens),
        key=keys.FIND_PICK,
        on_change=on_pick,
        placeholder="Choose a position",
    )
