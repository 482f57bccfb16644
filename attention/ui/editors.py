"""Matrix editors: labelled ``st.data_editor`` grids whose edits are checked cell by cell in their callback.

Each edit is checked in the grid's ``on_change`` callback and applied through :func:`attention.ui.state.edit_cells`.

A valid cell goes straight into the session's matrices (and so to every page); a bad cell (blank, NaN,
infinite, not a number) is named and keeps its previous value, while every other edit in the grid is kept.
The grid's payload itself is checked against the grid: an edit to a row or column the grid does not have,
or an added or deleted row (the grids have a fixed size), is refused with a message and nothing is applied.
Large matrices are edited a window of rows and columns at a time.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from .. import charts
from ..errors import cell_name
from ..io.parse import cell_number, number_too_long
from ..names import MAX_NUMBER_CHARS
from . import session, state
from .text import esc
from .widgets import show_messages
from .windows import EDIT_COLS, EDIT_ROWS, window_controls


def editor_key(name: str, s: session.Session, r0: int = 0, c0: int = 0) -> str:
    return f"ed.{name}.{s.version}.{s.grids}.{r0}.{c0}"


def matrix_editor(name: str, s: session.Session) -> None:
    """Draw the editor for one of X, W_q, W_k, W_v; its edits reach the session through :func:`_on_edit`."""
    m = s.matrices[name]
    rows, cols = s.axis_labels(name, m.shape)
    st.markdown(f"**{name}** · shape {m.shape[0]} × {m.shape[1]}")
    if s.challenge is not None and name not in s.challenge.editable:
        st.caption(f":material/lock: {name} is locked by the challenge: an edit here is refused.")
    r0, c0 = window_controls(f"edwin.{name}", *m.shape)
    r1, c1 = min(m.shape[0], r0 + EDIT_ROWS), min(m.shape[1], c0 + EDIT_COLS)
    if (r0, c0, r1, c1) != (0, 0, *m.shape):
        st.caption(
            f"Editing rows {r0 + 1}–{r1} and columns {c0 + 1}–{c1}; move the window to edit the rest (or upload a CSV)."
        )
    # Cells are edited as text: the grid's number editor drops the "e" of 1e-15 and keeps only ~12
    # decimals, while text keeps exactly what was typed; it is parsed (and checked) in the callback.
    df = pd.DataFrame(
        to_text(m[r0:r1, c0:c1], charts.decimals_for(m, s.digits)), index=list(rows[r0:r1]), columns=list(cols[c0:c1])
    )
    key = editor_key(name, s, r0, c0)
    st.data_editor(
        df,
        key=key,
        num_rows="fixed",
        width="stretch",
        on_change=_on_edit,
        args=(name, key, r0, c0),
        column_config={c: st.column_config.TextColumn(c) for c in df.columns},
    )
    show_messages(f"edit.{name}")


def to_text(values: np.ndarray, pattern: str = "{!r}") -> np.ndarray:
    """Each number as text in the table's format (``"{!r}"``: its shortest exact text, what is stored). A rounded
    display is safe to edit: the grid sends only the cells a person changes, so the others keep every digit."""
    return (
        np.vectorize(lambda v: pattern.format(float(v)), otypes=[object])(values)
        if values.size
        else values.astype(object)
    )


def _on_edit(name: str, key: str, r0: int, c0: int) -> None:
    """The grid's callback: check the payload against the grid, then each edited cell; apply the good ones."""
    s = session.get()
    m = s.matrices[name]
    r1, c1 = min(m.shape[0], r0 + EDIT_ROWS), min(m.shape[1], c0 + EDIT_COLS)
    rows, cols = s.axis_labels(name, m.shape)
    col_index = {c: j for j, c in enumerate(cols[c0:c1])}
    problem, edits = check_payload(st.session_state.get(key), r1 - r0, col_index)
    if problem:
        state.renew_grids()
        state.say(f"edit.{name}", "error", f"{name}: {problem}; nothing was applied.")
        return
    good: dict[tuple[int, int], float] = {}
    bad: list[str] = []
    for (r, c), raw in edits.items():
        value = cell_number(raw)
        where = cell_name((r0 + r, c0 + c), rows, cols)
        if value is None or not math.isfinite(value):
            what = (
                f"{len(raw):,} characters long; a number has at most {MAX_NUMBER_CHARS:,}"
                if number_too_long(raw)
                else "blank"
                if raw is None or not str(raw).strip()
                else (
                    "NaN"
                    if str(raw).strip().lower() == "nan"
                    else f"{esc(repr(str(raw)[:40]))}, which is "
                    + ("infinite" if value is not None else "not a number")
                )
            )
            bad.append(
                f"{name} {esc(where)} is {what}; it keeps its previous value {m[r0 + r, c0 + c]:.8g} "
                "until you enter a finite number."
            )
        else:
            good[(r0 + r, c0 + c)] = value
    before = state.edit_cells(name, good)  # the cells that changed, with their old values
    if before:  # named under the grid: the grid itself cannot mark the edited cell
        done = [f"{esc(cell_name(rc, rows, cols))} {was:.8g} → {good[rc]:.8g}" for rc, was in before.items()]
        more = f" and {len(done) - 3} more" if len(done) > 3 else ""
        state.say(f"edit.{name}.last", "caption", f":material/edit: Changed {name} " + "; ".join(done[:3]) + more)
    if bad:
        more = len(bad) - 5
        state.say(
            f"edit.{name}", "error", "\n\n".join(bad[:5]) + (f"\n\n…and {more} more such cells." if more > 0 else "")
        )


def check_payload(
    payload: object, n_rows: int, col_index: dict[str, int]
) -> tuple[str | None, dict[tuple[int, int], object]]:
    """The grid's edit payload as {(row, col): raw value} within an ``n_rows`` × ``len(col_index)`` grid, or the
    reason it does not fit (a message naming the row or column). Never raises, whatever the payload holds."""
    if payload is None:
        return None, {}
    if not isinstance(payload, dict):
        return f"the grid sent {type(payload).__name__} instead of its edits", {}
    if payload.get("added_rows") or payload.get("deleted_rows"):
        return (
            "rows cannot be added or deleted here (the matrix has one row per token or dimension; resize it instead)",
            {},
        )
    edited = payload.get("edited_rows") or {}
    if not isinstance(edited, dict):
        return "the grid's edits are not a table of rows", {}
    out: dict[tuple[int, int], object] = {}
    for r, cells in edited.items():
        try:
            row = int(r)
        except (TypeError, ValueError):
            return f"the grid sent an edit for row {esc(repr(r)[:20])}, which is not a row number", {}
        if not 0 <= row < n_rows or str(row) != str(r).strip():
            return f"the grid sent an edit for row {esc(repr(r)[:20])}, but it has rows 1 to {n_rows}", {}
        if not isinstance(cells, dict):
            return f"the grid's edit of row {row + 1} is not a set of cells", {}
        for c, value in cells.items():
            if c not in col_index:
                return f"the grid sent an edit for column {esc(repr(c)[:40])}, which it does not have", {}
            if value is not None and not isinstance(value, str):  # the grids' columns are text columns
                return f"the grid sent {type(value).__name__} for row {row + 1}, column {esc(c)}", {}
            out[(row, col_index[c])] = value
    return None, out
