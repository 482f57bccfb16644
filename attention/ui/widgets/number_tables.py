"""Tables of numbers on a page: one format per table, applied by the browser, or by a Styler when cells need it.

A pandas Styler is formatted on the server cell by cell (about a fifth of a run, for a page's few tables), so a
table whose numbers are all finite and need no highlight is sent as numbers with a printf format per column, which
the browser applies. A Styler is kept where it earns its cost: highlighted cells, −∞ written as such, every digit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

_HIGHLIGHT = "background-color: #fff3b0; font-weight: 600"
SHOWN_ROWS = 16  # a table of up to this many rows is shown whole; a longer one scrolls, showing whole rows
ROW_PX = 35  # the data grid's row (and header) height


def fit_height(n_rows: int) -> int | str:
    """A table's height: all its rows up to SHOWN_ROWS, else exactly SHOWN_ROWS whole rows (never a row cut in
    half, as the grid's default of ten and a bit rows does)."""
    return "content" if n_rows <= SHOWN_ROWS else ROW_PX * (SHOWN_ROWS + 1) + 2


def number_table(df: pd.DataFrame, pattern: str, where=st, highlight: np.ndarray | None = None, **kwargs) -> None:
    """Show ``df`` (all numbers) with ``pattern`` (a ``str.format`` pattern from :func:`attention.charts.decimals_for`,
    e.g. ``"{:.4f}"``); ``highlight`` (a boolean array of df's shape) marks cells; −∞ is written "−∞"."""
    values = df.to_numpy(dtype=float)
    marked = highlight is not None and bool(np.any(highlight))
    if not marked and pattern != "{!r}" and np.isfinite(values).all():
        printf = "%" + pattern[2:-1]  # "{:.4f}" -> "%.4f"
        config = {c: st.column_config.NumberColumn(format=printf) for c in df.columns}
        where.dataframe(df, width="stretch", column_config=config, **{"height": fit_height(len(df)), **kwargs})
        return
    styler = df.style.format(lambda v: "−∞" if np.isneginf(v) else pattern.format(v))
    if marked:
        styler = styler.apply(lambda _: np.where(highlight, _HIGHLIGHT, ""), axis=None)
    where.dataframe(styler, width="stretch", **{"height": fit_height(len(df)), **kwargs})
