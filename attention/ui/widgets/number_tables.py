"""Tables of numbers on a page: one format per table, applied by the browser, or by a Styler when cells need it.

A pandas Styler is formatted on the server cell by cell (about a fifth of a run, for a page's few tables), so a
table whose numbers are all finite, need no highlight and have fixed decimals is sent as numbers with a printf format
per column, which the browser applies. A Styler is kept where it earns its cost: highlighted cells, −∞ written as
such, every digit, and significant digits (the digits control's format, which printf cannot write with its trailing
zeros).
That Styler (:func:`_given`) is handed its cell texts and highlighted cells ready-made: Streamlit reads a Styler's
computed styles and display texts, and pandas' general machinery for them (every cell's style computed, matched
and grouped) was most of a highlighted table's cost; tests/app/test_number_tables.py checks that Streamlit receives
exactly what pandas' own Styler gives it.

A plain table reaches Streamlit as the Arrow table it would have made of the frame (:func:`arrow_table`): the
frame's schema, which depends on its labels only, is made once per set of labels, so an edit converts only the
numbers (0.22 -> 0.04 ms for 3 x 3; tests/app/test_number_tables.py checks the bytes are Streamlit's own).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa  # Streamlit's own table format (a dependency of streamlit)
import streamlit as st
from pandas.io.formats.style import Styler

from ..core.cache import kept

_HIGHLIGHT = "background-color: #fff3b0; font-weight: 600"
_HIGHLIGHT_PROPS = [tuple(part.strip() for part in prop.split(":")) for prop in _HIGHLIGHT.split(";")]
SHOWN_ROWS = 16  # a table of up to this many rows is shown whole; a longer one scrolls, showing whole rows
ROW_PX = 35  # the data grid's row (and header) height


def fit_height(n_rows: int) -> int | str:
    """A table's height: all its rows up to SHOWN_ROWS, else exactly SHOWN_ROWS whole rows (never a row cut in
    half, as the grid's default of ten and a bit rows does)."""
    return "content" if n_rows <= SHOWN_ROWS else ROW_PX * (SHOWN_ROWS + 1) + 2


CHAR_PX, CELL_PAD_PX = 7.0, 18  # the grid at 14 px, a little generous: a digit and a cell's margins
INDEX_MIN_PX = 52  # the grid's label column is never narrower (measured beside three-letter tokens)
RESULTS_PX = 470  # a results column beside the inputs at 1280 px (its grids are 474 px wide inside)


def columns_that_fit(
    texts: list[list[str]], columns: list[str], index: list[str], fit_px: float, pad: float, char_px: float = CHAR_PX
) -> int:
    """How many of a grid's first columns fit ``fit_px`` beside its index (each column as wide as its widest text or
    label, ``char_px`` a character and ``pad`` its margins): at least 1."""
    used = max(INDEX_MIN_PX, char_px * max((len(str(i)) for i in index), default=0) + pad)
    for j, label in enumerate(columns):
        used += char_px * max([len(str(label))] + [len(row[j]) for row in texts]) + pad
        if used > fit_px:
            return max(1, j)
    return len(columns)


def column_blocks(df: pd.DataFrame, pattern: str, fit_px: float) -> list[range]:
    """The table's columns in blocks that each fit ``fit_px`` whole (as numpy prints a wide array), so no block
    needs sideways scrolling."""
    texts = [["−∞" if np.isneginf(v) else pattern.format(v) for v in row] for row in df.to_numpy(dtype=float).tolist()]
    blocks, start, labels = [], 0, [str(c) for c in df.columns]
    while start < len(labels):
        width = columns_that_fit([r[start:] for r in texts], labels[start:], list(df.index), fit_px, CELL_PAD_PX)
        blocks.append(range(start, start + width))
        start += width
    return blocks


def number_table(
    df: pd.DataFrame,
    pattern: str,
    where=st,
    highlight: np.ndarray | None = None,
    fit_px: float | None = None,
    **kwargs,
) -> None:
    """Show ``df`` (all numbers) with ``pattern`` (a ``str.format`` pattern from :func:`attention.charts.decimals_for`,
    e.g. ``"{:#.4g}"``, or fixed decimals such as ``"{:.4f}"``);
    ``highlight`` (a boolean array of df's shape) marks cells; −∞ is written "−∞". ``fit_px``: the width it has; a
    table wider than that is shown in blocks of whole columns, one under the other, each named by its columns."""
    blocks = column_blocks(df, pattern, fit_px) if fit_px else []
    if len(blocks) > 1:
        for cols in blocks:
            where.caption(f"Columns {cols.start + 1}–{cols.stop} of {df.shape[1]}")
            part = None if highlight is None else highlight[:, cols.start : cols.stop]
            number_table(df.iloc[:, cols.start : cols.stop], pattern, where, part, **kwargs)
        return
    values = df.to_numpy(dtype=float)
    marked = highlight is not None and bool(np.any(highlight))
    if not marked and _fixed(pattern) and np.isfinite(values).all():
        printf = "%" + pattern[2:-1]  # "{:.4f}" -> "%.4f"
        config = {c: st.column_config.NumberColumn(format=printf) for c in df.columns}
        table = arrow_table(df, values)
        where.dataframe(table, width="stretch", column_config=config, **{"height": fit_height(len(df)), **kwargs})
        return
    texts = [["−∞" if np.isneginf(v) else pattern.format(v) for v in row] for row in values.tolist()]
    styler = _given(df, texts, highlight if marked else None)
    where.dataframe(styler, width="stretch", **{"height": fit_height(len(df)), **kwargs})


def _fixed(pattern: str) -> bool:
    """Whether the browser can apply ``pattern`` itself: fixed decimals ("{:.4f}" is printf's "%.4f"). A pattern of
    significant digits (:class:`attention.charts.Digits`, "1.000" beside "0.4330") has no printf form the grid
    keeps trailing zeros with, so its texts are written here."""
    return pattern.startswith("{:.") and pattern.endswith("f}")


def arrow_table(df: pd.DataFrame, values: np.ndarray) -> pa.Table | pd.DataFrame:
    """``df`` (its numbers ``values``, (rows, cols) float) as ``pa.Table.from_pandas(df)``, the table Streamlit makes
    of a frame, from a schema made once per set of labels; ``df`` itself for other frames (labels that repeat, a
    range or multi-level index, numbers not float64), to which Streamlit's own conversion applies."""
    if type(df.index) is not pd.Index or type(df.columns) is not pd.Index or any(t != np.float64 for t in df.dtypes):
        return df
    labels = (tuple(df.columns), df.columns.dtype, df.columns.name, tuple(df.index), df.index.dtype, df.index.name)
    frame = _frame(labels)
    if frame is None:
        return df
    schema, index = frame
    columns = [pa.array(col) for col in np.ascontiguousarray(values.T)]  # (cols, rows): one array per column
    return pa.Table.from_arrays(columns + index, schema=schema)


@kept(64)
def _frame(labels: tuple) -> tuple[pa.Schema, list[pa.ChunkedArray]] | None:
    """The schema and index columns of a float frame with these labels: (columns, their dtype and name, index,
    its dtype and name); None when labels repeat."""
    if len(set(labels[0])) < len(labels[0]) or len(set(labels[3])) < len(labels[3]):
        return None
    cols = pd.Index(labels[0], dtype=labels[1], name=labels[2])
    index = pd.Index(labels[3], dtype=labels[4], name=labels[5])
    table = pa.Table.from_pandas(pd.DataFrame(np.zeros((len(index), len(cols))), index=index, columns=cols))
    return table.schema, [table.column(k) for k in range(len(cols), table.num_columns)]


class _Shown(pd.DataFrame):
    """A frame of numbers that holds the texts its cells are shown as (``shown``, a frame of str of the same labels):
    ``astype(str)`` gives them. Streamlit makes a Styler's display texts as ``data.astype(str)`` and then writes each
    cell's text from ``_translate()`` into it, column by column (most of a highlighted table's cost); with the texts
    already in place no cell is written. Anything else made from it is a plain DataFrame."""

    _metadata = ["shown"]

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        return pd.DataFrame

    def astype(self, dtype, *args, **kwargs):  # noqa: ANN001, ANN201 - pandas' own signature
        if dtype is str and getattr(self, "shown", None) is not None:
            return self.shown
        return super().astype(dtype, *args, **kwargs)


def _given(df: pd.DataFrame, texts: list[list[str]], highlight: np.ndarray | None) -> Styler:
    """A Styler of ``df`` whose cell texts (rows of str) and highlighted cells (a boolean array, or None) are given:
    what Streamlit reads of a Styler (``_compute()``, then ``_translate()``'s cell styles and display values) is
    built directly, the same as ``df.style.format(...).apply(...)`` would compute it. (A pandas Styler itself, not a
    subclass: Streamlit recognises a Styler by its exact type.) The texts travel in the data (:class:`_Shown`)."""
    marked = [] if highlight is None else [f"row{r}_col{c}" for r, c in np.argwhere(highlight)]
    translated = {
        "table_styles": [],
        "cellstyle": [{"props": _HIGHLIGHT_PROPS, "selectors": marked}] if marked else [],
        "body": [],  # no cell to write: the texts are already those of data.astype(str)
    }
    data = _Shown(df)
    data.shown = pd.DataFrame(texts, index=df.index, columns=df.columns, dtype=str)
    styler = Styler(data)
    styler._compute = lambda: styler  # type: ignore[method-assign]
    styler._translate = lambda *args, **kwargs: translated  # type: ignore[method-assign]
    return styler
