"""Matrix editors: labelled ``st.data_editor`` grids whose edits are checked cell by cell in their callback.

Each edit is checked in the grid's ``on_change`` callback and applied through
:func:`attention.ui.state.edits.edit_cells`.

A valid cell goes straight into the session's matrices (and so to every page); a bad cell (blank, NaN,
infinite, not a number) is named and keeps its previous value, while every other edit in the grid is kept.
The grid's payload itself is checked against the grid: an edit to a row or column the grid does not have,
or an added or deleted row (the grids have a fixed size), is refused with a message and nothing is applied.
Large matrices are edited a window of rows and columns at a time.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from ... import charts
from ...errors import cell_name
from ...io.parse.cells import cell_number
from ..core import compute, keys, models, session
from ..core.text import esc
from ..state import core as state_core
from ..state import edits as state_edits
from ..state import pins
from ..widgets.cells import check_payload, not_a_number, to_text
from ..widgets.common import show_messages
from ..widgets.number_tables import columns_that_fit, fit_height
from ..widgets.windows import EDIT_COLS, EDIT_COLS_BESIDE, EDIT_ROWS, window_controls


def editor_key(name: str, s: session.Session, r0: int = 0, c0: int = 0) -> str:
    """The grid's key: the one its last edit kept (:func:`attention.ui.state.pins.keep_grid`) while the matrix is as
    that edit left it, so the grid stays mounted and an edit typed right after lands. Without a kept edit, a fresh one
    from the version and ``grids``; once the matrix has moved on from a kept edit (or the window has), one that no
    grid holding that edit had (it names the numbers in force), so those edits are never shown over other numbers."""
    fresh = keys.grid(name, s.version, s.grids, r0, c0)
    kept = s.kept_grids.get(name)
    if kept is None:
        return fresh
    now = compute.matrix_digest(s.matrices[name])
    if kept[1] == now and keys.same_window(kept[0], fresh):
        return kept[0]
    return keys.grid(name, s.version, f"{s.grids}-{now[:12]}", r0, c0)


def matrix_editor(name: str, s: session.Session, beside: bool = False) -> None:
    """Draw the editor for one of the state's matrices: X, W_q, W_k, W_v, and W_o or P when the state has them
    (``beside`` a result: a narrower window of columns, so every column shown is seen whole); its edits reach the
    session through :func:`_on_edit`."""
    m = s.matrices[name]
    rows, cols = s.axis_labels(name, m.shape)
    st.markdown(f"**{name}** · shape {m.shape[0]} × {m.shape[1]}")
    if s.challenge is not None and name not in s.challenge.editable:
        st.caption(f":material/lock: {name} is locked by the challenge: an edit here is refused.")
    if name in ("W_k", "W_v") and s.model_head is not None and (group := models.group_of(s.model_head)):
        st.caption(shared_note(name, s.model_head.layer, group))  # ours: numbers
    per = _beside_columns(name, s) if beside else EDIT_COLS
    r0, c0 = window_controls(keys.edit_window(name, per), *m.shape, EDIT_ROWS, per)
    r1, c1 = min(m.shape[0], r0 + EDIT_ROWS), min(m.shape[1], c0 + per)
    if (r0, c0, r1, c1) != (0, 0, *m.shape):
        st.caption(
            f"Editing rows {r0 + 1}–{r1} and columns {c0 + 1}–{c1} of {m.shape[1]}; move the window to edit the rest "
            "(or upload a CSV)."
        )

    # Cells are edited as text: the grid's number editor drops the "e" of 1e-15 and keeps only ~12
    # decimals, while text keeps exactly what was typed; it is parsed (and checked) in the callback.
    text = to_text(m[r0:r1, c0:c1], grid_format(name, s))
    df = pd.DataFrame(text, index=list(rows[r0:r1]), columns=list(cols[c0:c1]))
    key = editor_key(name, s, r0, c0)
    st.data_editor(
        df,
        key=key,
        num_rows="fixed",
        width="stretch",
        height=fit_height(len(df)),
        on_change=_on_edit,
        args=(name, key, r0, c0, per),
        column_config={c: st.column_config.TextColumn(c) for c in df.columns},
    )
    show_messages(f"edit.{name}")


# the inputs panel's grid at 1280 px (310 px inside); a character and a column's margins, fitted to Chromium: 4
# columns of "0.0055262846" took 396 px, 3 of them 313 px
BESIDE_PX, EDITOR_CHAR_PX, EDITOR_PAD_PX = 308, 5.9, 24


def _beside_columns(name: str, s: session.Session) -> int:
    """How many columns the editor beside a result shows (up to EDIT_COLS_BESIDE): as many as fit the panel whole in
    the digits control's format (4 at 4 digits, 2 at 8), so no grid there needs sideways scrolling."""
    m = s.matrices[name]
    rows, cols = s.axis_labels(name, m.shape)
    sample = to_text(m[:EDIT_ROWS, :EDIT_COLS_BESIDE], grid_format(name, s)).tolist()
    labels, index = list(cols[:EDIT_COLS_BESIDE]), list(rows[:EDIT_ROWS])
    return columns_that_fit(sample, labels, index, BESIDE_PX, EDITOR_PAD_PX, EDITOR_CHAR_PX)


def cut_beside(name: str, s: session.Session) -> bool:
    """Whether the editor beside a result shows fewer columns than the matrix has, though a page-wide editor would
    show them all (at 8 digits, 3 of W_q's 4 columns fit the inputs panel)."""
    n = s.matrices[name].shape[1]
    return _beside_columns(name, s) < n <= EDIT_COLS


def shared_note(name: str, layer: int, group: tuple[int, ...]) -> str:
    """What an edit of a shared key/value block does: it reaches every query head of the group."""
    heads = ", ".join(str(h + 1) for h in group)
    return (
        f":material/group: This {name} block is shared: query heads {heads} of layer {layer + 1} all read it "
        f"(grouped-query attention). An edit here changes every head of that group in the model."
    )


def grid_format(name: str, s: session.Session) -> str:
    """The one number format of a matrix's grid and of its edit notes: the digits control's significant digits, the
    same for every cell whatever an edit makes of its size (1e300 is written 1.000e+300)."""
    return charts.decimals_for(s.matrices[name], s.digits)


def _pair(fmt: str, old: float, new: float) -> str:
    """“old → new” in the grid's format (every digit when the format would write both alike)."""
    a, b = fmt.format(old), fmt.format(new)
    return f"{a} → {b}" if a != b else f"{old!r} → {new!r}"


def _on_edit(name: str, key: str, r0: int, c0: int, per: int = EDIT_COLS) -> None:
    """The grid's callback: check the payload against the grid, then each edited cell; apply the good ones. An edit
    from a grid that is not the one drawn for the numbers in force now (another preset or head was opened, or the
    matrix was replaced, by a change sent with it) is refused: it was typed over numbers that are no longer there. A
    grid kept mounted after its last edit sends that edit again with the next: it is the one drawn for those numbers."""
    s = session.get()
    if name not in s.matrices or key != editor_key(name, s, r0, c0):
        pins.renew_grids()
        said = (
            f"{name}: {_typed(st.session_state.get(key), r0)}typed over numbers no longer shown; nothing was applied."
        )
        again = " Retype it in the grid now shown." if name in s.matrices else ""
        state_core.say(f"edit.{name}", "error", said + again)
        return
    m = s.matrices[name]
    r1, c1 = min(m.shape[0], r0 + EDIT_ROWS), min(m.shape[1], c0 + per)
    rows, cols = s.axis_labels(name, m.shape)
    col_index = {c: j for j, c in enumerate(cols[c0:c1])}
    problem, edits = check_payload(st.session_state.get(key), r1 - r0, col_index)
    if problem:
        pins.renew_grids()  # the grid is drawn afresh from the numbers in force: a refused text must not stay in it
        state_core.say(f"edit.{name}", "error", f"{name}: {problem}; nothing was applied.")
        return
    fmt = grid_format(name, s)
    good: dict[tuple[int, int], float] = {}
    bad: list[str] = []
    for (r, c), raw in edits.items():
        value = cell_number(raw)
        where = cell_name((r0 + r, c0 + c), rows, cols)
        if value is None or not math.isfinite(value):
            bad.append(f"{name} {esc(where)} {not_a_number(raw, value)}; it keeps {fmt.format(m[r0 + r, c0 + c])}.")
        else:
            good[(r0 + r, c0 + c)] = value
    if not bad:  # every cell sent is valid now: an error about this grid goes (a challenge's lock may say another)
        state_core.unsay(f"edit.{name}")
    renewed = s.grids
    before = state_edits.edit_cells(name, good)  # the cells that changed, with their old values
    if bad:
        pins.renew_grids()  # the grid is drawn afresh from the numbers in force: a refused text must not stay in it
    elif s.grids == renewed:  # every cell was taken (none refused, no lock): the grid stays mounted as it is
        pins.keep_grid(name, key)
    if before:  # named under the grid: the grid itself cannot mark the edited cell
        done = [f"{esc(cell_name(rc, rows, cols))} {_pair(fmt, was, good[rc])}" for rc, was in before.items()]
        more = f" and {len(done) - 3} more" if len(done) > 3 else ""
        state_core.say(f"edit.{name}.last", "caption", f":material/edit: Changed {name} " + "; ".join(done[:3]) + more)
    if bad:
        more = len(bad) - 5
        state_core.say(
            f"edit.{name}", "error", "\n\n".join(bad[:5]) + (f"\n\n…and {more} more such cells." if more > 0 else "")
        )


def _typed(payload: object, r0: int = 0) -> str:
    """What a refused grid edit held, to retype ("5 in row 2, column d1 was ": 3 cells at most), or "that edit was "."""
    if not isinstance(payload, dict) or not isinstance(payload.get("edited_rows"), dict):
        return "that edit was "
    cells = [
        f"{esc(str(v)[:20])} in row {r0 + int(r) + 1}, column {esc(str(c)[:20])}"
        for r, row in payload["edited_rows"].items()
        if isinstance(row, dict) and str(r).isdigit()
        for c, v in row.items()
    ]
    if not cells:
        return "that edit was "
    return (
        "; ".join(cells[:3])
        + (f" and {len(cells) - 3} more" if len(cells) > 3 else "")
        + (" were " if len(cells) > 1 else " was ")
    )
