"""A grid's cells as text: numbers in a table's format, an edit payload checked, why a cell is refused.

Shared by the matrix editors and the small grid of a step (QK-norm's gains), so every grid takes and refuses a cell
in the same words."""

from __future__ import annotations

import numpy as np

from ...io.parse.cells import number_too_long
from ...names import MAX_NUMBER_CHARS
from ..core.text import esc


def to_text(values: np.ndarray, pattern: str = "{!r}") -> np.ndarray:
    """Each number as text in the table's format (``"{!r}"``: its shortest exact text, what is stored). A rounded
    display is safe to edit: the grid sends only the cells a person changes, so the others keep every digit."""
    return (
        np.vectorize(lambda v: pattern.format(float(v)), otypes=[object])(values)
        if values.size
        else values.astype(object)
    )


def not_a_number(raw: object, value: float | None) -> str:
    """Why a cell's text is refused (``value``: what :func:`cell_number` read from it, None or not finite), short:
    the grid may sit in a narrow column."""
    if number_too_long(raw):
        return f"is {len(str(raw)):,} characters long; a number has at most {MAX_NUMBER_CHARS:,}"
    if raw is None or not str(raw).strip():
        return "is blank"
    if str(raw).strip().lower() == "nan":
        return "is NaN"
    return f"is {esc(repr(str(raw)[:40]))}, which is " + ("infinite" if value is not None else "not a number")


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
            return f"the grid sent an edit for row {esc(str(r)[:20])}, but it has rows 1 to {n_rows}", {}
        if not isinstance(cells, dict):
            return f"the grid's edit of row {row + 1} is not a set of cells", {}
        for c, value in cells.items():
            if c not in col_index:
                return f"the grid sent an edit for column {esc(repr(c)[:40])}, which it does not have", {}
            if value is not None and not isinstance(value, str):  # the grids' columns are text columns
                return f"the grid sent {type(value).__name__} for row {row + 1}, column {esc(c)}", {}
            out[(row, col_index[c])] = value
    return None, out
