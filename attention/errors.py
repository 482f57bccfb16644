"""The project's one exception type, and the checks that raise it.

Every message names the matrix, the cell or dimension, and what was expected, so a page can show it
as is (for example: "W_q row 2, column 'd3' is NaN; every value must be a finite number").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class AttentionError(ValueError):
    """Bad input or a numerical failure, with a message fit to show a person.

    ``matrix`` names the matrix at fault (``"X"``, ``"W_q"``, ``"scores"`` ...) when there is one and
    ``cell`` gives the (row, column) index of the first bad cell, so a UI can point at it.
    """

    def __init__(
        self, message: str, *, matrix: str | None = None, cell: tuple[int, ...] | None = None, field: str | None = None
    ):
        super().__init__(message)
        self.message = message
        self.matrix = matrix
        self.cell = cell
        self.field = field  # an option's name, when an option is at fault


def cell_name(index: tuple[int, ...], rows: Sequence[str] | None = None, cols: Sequence[str] | None = None) -> str:
    """Human name of a cell: ``row 2 ('sat'), column 3`` (1-based, as a person counts)."""
    *lead, r, c = index
    row = f"row {r + 1}" + (f" ({rows[r]!r})" if rows is not None and r < len(rows) else "")
    col = f"column {c + 1}" + (f" ({cols[c]!r})" if cols is not None and c < len(cols) else "")
    batch = "".join(f"batch item {i + 1}, " for i in lead)
    return f"{batch}{row}, {col}"


def as_matrix(
    name: str,
    value: object,
    *,
    ndim: tuple[int, ...] = (2,),
    rows: Sequence[str] | None = None,
    cols: Sequence[str] | None = None,
) -> np.ndarray:
    """Return ``value`` as a float64 array, or raise AttentionError naming what is wrong and where.

    Checks, in order: it converts to numbers (the first non-numeric cell is named), it has one of the
    allowed numbers of dimensions, no dimension is empty, and every value is finite.
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = _first_non_numeric(name, value, rows, cols)
    if arr.ndim not in ndim:
        want = " or ".join(f"{d}-D" for d in ndim)
        raise AttentionError(f"{name} must be a {want} matrix; got shape {arr.shape}", matrix=name)
    if 0 in arr.shape:
        raise AttentionError(
            f"{name} is empty (shape {arr.shape}); it needs at least one row and one column", matrix=name
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        what = "NaN (blank or not a number)" if np.isnan(arr[idx]) else f"{arr[idx]} (infinite)"
        raise AttentionError(
            f"{name} {cell_name(idx, rows, cols)} is {what}; every value must be a finite number",
            matrix=name,
            cell=idx,
        )
    return arr


def _first_non_numeric(name: str, value: object, rows: Sequence[str] | None, cols: Sequence[str] | None) -> np.ndarray:
    """Raise the most precise error for a value numpy could not turn into floats."""
    if isinstance(value, (str, bytes)):
        raise AttentionError(f"{name} must be a matrix of numbers, not text ({str(value)[:40]!r})", matrix=name)
    try:
        items = list(value)  # type: ignore[call-overload]
    except TypeError:
        raise AttentionError(f"{name} must be a matrix of numbers; got {type(value).__name__}", matrix=name) from None
    widths: set[int] = set()
    _walk_cells(name, items, (), widths, rows, cols)
    if len(widths) > 1:
        raise AttentionError(
            f"{name} has rows of different lengths ({sorted(widths)}); every row needs the same number of columns",
            matrix=name,
        )
    raise AttentionError(f"{name} could not be read as a matrix of numbers", matrix=name)


def _is_seq(value: object) -> bool:
    return isinstance(value, (list, tuple, np.ndarray))


def _walk_cells(
    name: str,
    items: list,
    lead: tuple[int, ...],
    widths: set[int],
    rows: Sequence[str] | None,
    cols: Sequence[str] | None,
) -> None:
    """Name the first non-numeric cell (batch items of a 3-D value are walked too); collect row widths."""
    for r, row in enumerate(items):
        if _is_seq(row) and any(_is_seq(cell) for cell in row):  # a batch item: a matrix of its own
            _walk_cells(name, list(row), lead + (r,), widths, rows, cols)
            continue
        cells = list(row) if _is_seq(row) else [row]
        widths.add(len(cells))
        for c, cell in enumerate(cells):
            try:
                float(cell)
            except (TypeError, ValueError):
                raise AttentionError(
                    f"{name} {cell_name(lead + (r, c), rows, cols)} is {str(cell)[:40]!r}, which is not a number",
                    matrix=name,
                    cell=lead + (r, c),
                ) from None


def check_finite(
    name: str, arr: np.ndarray, cause: str, rows: Sequence[str] | None = None, cols: Sequence[str] | None = None
) -> None:
    """Raise if a computed array overflowed; ``cause`` says which inputs were too large."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.sum(arr)
    if np.isfinite(total):  # one cheap pass: a sum is finite only if every term is (the full check is the fallback)
        return
    if np.isfinite(arr).all():  # finite values whose sum overflowed
        return
    idx = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
    raise AttentionError(
        f"{name} overflows at {cell_name(idx, rows, cols)} (value {arr[idx]}): {cause} are too large for 64-bit floats",
        matrix=name,
        cell=idx,
    )
