"""The one matrix editor: a plain HTML grid (``st.components.v2``) whose page owns its keystrokes.

A value typed in the page is kept there as *pending*, with a sequence number, and sent to the server with every other
pending value of the grid (so a send dropped when reruns are coalesced is carried by the next, and one not echoed
after a moment is sent again). The page shows a pending value over whatever numbers arrive until the data the server
draws the grid with echoes its sequence number: a rerun can never take a typed value away, whenever it comes. A value
the server refuses (not a number, a locked matrix, typed over numbers no longer shown) is echoed too, so the cell
shows its kept value again, and the refusal is named under the grid by the caller.

The page's side (keys, paste, copy, the cell editor) is ``matrix_grid.js``; how a sent edit is read and checked is
here (:func:`sent`, :func:`fresh`); what it does to the numbers is the caller's callback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import streamlit as st

from ..core import session
from ..state import edits as state_edits

_HERE = Path(__file__).parent
_GRID = st.components.v2.component(
    "attention.matrix_grid",
    css=(_HERE / "matrix_grid.css").read_text(encoding="utf-8"),
    js=(_HERE / "matrix_grid.js").read_text(encoding="utf-8"),
    isolate_styles=False,  # the app's font; and the page's copy and paste reach the focused cell
)
EVENT = "edit"  # the trigger the page sends its pending values by
MAX_PID_CHARS, MAX_SEQ = 40, 2**53  # bounds of what the page sends: its page-load id and sequence number


def draw(
    key: str,
    label: str,
    rows: Sequence[str],
    cols: Sequence[str],
    shown: np.ndarray,
    exact: np.ndarray,
    on_edit: Callable[[], None],
    changed: np.ndarray | None = None,
    locked: str = "",
    ver: str = "",
    corner: str = "",
) -> None:
    """Draw the grid ``key``: cells ``shown`` (text in the digits setting; ``exact``: every digit, what a copy
    takes), labelled ``label`` row · column; ``changed`` marks cells that differ from the preset; ``locked`` (the
    note to say) refuses edits; ``ver`` names the numbers drawn (an edit typed over others is refused by the
    callback). ``on_edit`` runs when the page sends edits (read them with :func:`sent`)."""
    s = session.get()
    echo = s.edit_echo.get(key)
    marks = [] if changed is None else [[int(r), int(c)] for r, c in np.argwhere(changed)]
    data = {
        "key": key,
        "label": label,
        "corner": corner,
        "rows": [str(r) for r in rows],
        "cols": [str(c) for c in cols],
        "shown": np.asarray(shown, dtype=object).tolist(),
        "exact": np.asarray(exact, dtype=object).tolist(),
        "changed": marks,
        "locked": bool(locked),
        "lockedNote": locked,
        "ver": ver,
        "echo": list(echo) if echo else None,
    }
    _GRID(key=key, data=data, on_edit_change=on_edit, width="stretch", height="content")


def sent(key: str) -> object:
    """What the page sent from grid ``key`` in this run (its pending values), or None."""
    value = st.session_state.get(key)
    return value.get(EVENT) if isinstance(value, dict) else None


def fresh(key: str, payload: object) -> bool:
    """Record the sequence number of an edit sent from grid ``key`` (the page's data echoes it); False when the
    payload is not a sent edit with one, or its number was applied already (a send repeated: nothing to do again)."""
    if not isinstance(payload, dict):
        return True  # not the page's: the caller's check names it
    pid, seq = payload.get("pid"), payload.get("seq")
    if not isinstance(pid, str) or not 0 < len(pid) <= MAX_PID_CHARS:
        return True
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 < seq <= MAX_SEQ:
        return True
    return state_edits.echo_edit(key, pid, seq)
