"""A query × key grid of checkboxes (the custom mask, the Learn page's painted target): drawn, and its edits read back.

The grid is a fixed-size ``st.data_editor`` of booleans, one row and one column per token label. Its callback reads
the grid's payload with :func:`ticked`, which checks it against the grid it was drawn from and never raises.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import streamlit as st

Grid = tuple[tuple[bool, ...], ...]  # (n, n): row = query, column = key, True = ticked

NOT_TICKS = "something other than ticked cells"  # the payload adds or deletes rows, or is not a table of edits
NO_SUCH_CELL = "a cell it does not have"  # a row or column outside the grid, or a value that is not a tick


def tick_grid(grid: Grid, labels: Sequence[str], key: str, on_change: Callable[[str], None]) -> None:
    """Draw ``grid`` (n × n) with the token ``labels`` on both axes; ``on_change(key)`` runs after an edit."""
    st.data_editor(
        pd.DataFrame(np.array(grid, dtype=bool), index=labels, columns=labels),
        key=key,
        num_rows="fixed",
        on_change=on_change,
        args=(key,),
        column_config={c: st.column_config.CheckboxColumn(c, width="small") for c in labels},
    )


def ticked(key: str, labels: Sequence[str], grid: Grid) -> tuple[Grid | None, str | None]:
    """``grid`` with the edits the grid in widget ``key`` sent applied, or (None, what it sent instead): either
    :data:`NOT_TICKS` or :data:`NO_SUCH_CELL`, for a message such as "The mask grid sent {what}"."""
    payload = st.session_state.get(key) or {}
    edited = payload.get("edited_rows") if isinstance(payload, dict) else None
    if not isinstance(edited, dict) or payload.get("added_rows") or payload.get("deleted_rows"):
        return None, NOT_TICKS
    out = [list(row) for row in grid]
    for r, cells in edited.items():
        row = int(r) if str(r).isdigit() else -1
        if (
            not 0 <= row < len(labels)
            or not isinstance(cells, dict)
            or any(c not in labels or not isinstance(v, bool) for c, v in cells.items())
        ):
            return None, NO_SUCH_CELL
        for c, v in cells.items():
            out[row][list(labels).index(c)] = v
    return tuple(tuple(row) for row in out), None
