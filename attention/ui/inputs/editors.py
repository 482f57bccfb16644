"""Matrix editors: each input matrix in the one matrix editor, its edits checked cell by cell in its callback.

The editor is :mod:`attention.ui.widgets.matrix_grid`; edits are applied through
:func:`attention.ui.state.edits.edit_cells`.

A valid cell goes straight into the session's matrices (and so to every page); a bad cell (blank, NaN,
infinite, not a number) is named under the grid and keeps its previous value, while every other edit sent with it is
kept. The payload itself is checked against the grid: an edit to a row or column the grid does not have, or an added
or deleted row (the grids have a fixed size), is refused with a message and nothing is applied. An edit typed over
numbers that are no longer those in force (another preset or head opened meanwhile) is refused and named.
Large matrices are edited a window of rows and columns at a time.
"""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from ... import charts
from ...errors import cell_name
from ...io.parse.cells import cell_number
from ..core import keys, models, session
from ..core.text import esc
from ..state import core as state_core
from ..state import edits as state_edits
from ..widgets import matrix_grid
from ..widgets.cells import check_payload, not_a_number, to_text
from ..widgets.common import show_messages
from ..widgets.number_tables import columns_that_fit
from ..widgets.windows import EDIT_COLS, EDIT_COLS_BESIDE, EDIT_ROWS, window_controls


def editor_key(name: str, s: session.Session, r0: int = 0, c0: int = 0) -> str:
    """The grid's key: one per matrix and window, kept across reruns (the page keeps what was typed there)."""
    return keys.grid(name, r0, c0)


def numbers_drawn(s: session.Session) -> str:
    """Which numbers the grids are drawn over: an edit sent with another is refused (typed over numbers gone)."""
    return f"{s.version}.{s.sheet}"


def matrix_editor(name: str, s: session.Session, beside: bool = False) -> None:
    """Draw the editor for one of the state's matrices: X, W_q, W_k, W_v, and W_o or P when the state has them
    (``beside`` a result: a narrower window of columns, so every column shown is seen whole); its edits reach the
    session through :func:`_on_edit`."""
    m = s.matrices[name]
    rows, cols = s.axis_labels(name, m.shape)
    st.markdown(f"**{name}** · shape {m.shape[0]} × {m.shape[1]}")
    if _locked(name, s):
        st.caption(f":material/lock: {_locked(name, s)}")
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

    # Cells are shown in the digits setting and edited as text: text keeps exactly what was typed (1e-15 too); it
    # is parsed (and checked) in the callback. A copy takes every digit.
    part = m[r0:r1, c0:c1]  # (rows shown, columns shown)
    key = editor_key(name, s, r0, c0)
    matrix_grid.draw(
        key,
        name,
        rows[r0:r1],
        cols[c0:c1],
        to_text(part, grid_format(name, s)),
        to_text(part),
        lambda: _on_edit(name, key, r0, c0, per),
        changed=_changed(name, s, (r0, r1, c0, c1)),
        locked=_locked(name, s),
        ver=numbers_drawn(s),
    )
    show_messages(f"edit.{name}")


def _locked(name: str, s: session.Session) -> str:
    """What the grid says when a running challenge locks the matrix ("" when it is editable)."""
    if s.challenge is not None and name not in s.challenge.editable:
        return f"{name} is locked by the challenge: an edit here is refused."
    return ""


def _changed(name: str, s: session.Session, window: tuple[int, int, int, int]) -> np.ndarray | None:
    """Which cells of the window differ from the preset (None when the preset's matrix has another shape)."""
    r0, r1, c0, c1 = window
    base = None if s.origin is None else s.origin.base.get(name)
    m = s.matrices[name]
    if base is None or base.shape != m.shape:
        return None
    return (m[r0:r1, c0:c1] != base[r0:r1, c0:c1]) | (np.signbit(m[r0:r1, c0:c1]) != np.signbit(base[r0:r1, c0:c1]))


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
    """The editor's callback: the page's pending values, checked against the grid, then cell by cell; the good ones
    applied. A send already taken (the page repeats one not echoed yet) does nothing again. An edit typed over numbers
    that are not those in force now (another preset or head was opened, or the matrix replaced, meanwhile) is refused
    and named: it was typed over numbers that are no longer there."""
    s = session.get()
    payload = matrix_grid.sent(key)
    if payload is None or not matrix_grid.fresh(key, payload):
        return
    if name not in s.matrices or (isinstance(payload, dict) and payload.get("ver") != numbers_drawn(s)):
        said = f"{name}: {_typed(payload, r0)}typed over numbers no longer shown; nothing was applied."
        again = " Retype it in the grid now shown." if name in s.matrices else ""
        state_core.say(f"edit.{name}", "error", said + again)
        return
    m = s.matrices[name]
    r1, c1 = min(m.shape[0], r0 + EDIT_ROWS), min(m.shape[1], c0 + per)
    rows, cols = s.axis_labels(name, m.shape)
    problem, edits = check_payload(payload, r1 - r0, {c: j for j, c in enumerate(cols[c0:c1])})
    if problem:
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
    before = state_edits.edit_cells(name, good)  # the cells that changed, with their old values
    if before:  # named under the grid as well as marked in it
        done = [f"{esc(cell_name(rc, rows, cols))} {_pair(fmt, was, good[rc])}" for rc, was in before.items()]
        more = f" and {len(done) - 3} more" if len(done) > 3 else ""
        state_core.say(f"edit.{name}.last", "caption", f":material/edit: Changed {name} " + "; ".join(done[:3]) + more)
    if bad:
        more = len(bad) - 5
        state_core.say(
            f"edit.{name}", "error", "\n\n".join(bad[:5]) + (f"\n\n…and {more} more such cells." if more > 0 else "")
        )


def _typed(payload: object, r0: int = 0) -> str:
    """What a refused edit held, to retype ("5 in row 2, column d1 was ": 3 cells at most), or "that edit was "."""
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
