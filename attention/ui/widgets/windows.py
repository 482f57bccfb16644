"""The window of a large matrix that a table or an editor shows (64 × 64 at a time), and its controls."""

from __future__ import annotations

import streamlit as st

from ..core import keys

VIEW_ROWS, VIEW_COLS = 64, 64  # tables larger than this are shown a window at a time
EDIT_ROWS, EDIT_COLS = 64, 8  # editors: 8 columns fit a page's width whole (a grid's columns cannot shrink)
EDIT_COLS_BESIDE = 4  # ... and 4 in the inputs panel beside a result


def window_controls(
    key: str, n_rows: int, n_cols: int, rows_per: int = EDIT_ROWS, cols_per: int = EDIT_COLS
) -> tuple[int, int]:
    """Row/column offsets of the window shown for a large matrix (0, 0 when it fits)."""
    if n_rows <= rows_per and n_cols <= cols_per:
        return 0, 0
    c1, c2 = st.columns(2)
    r0 = (
        c1.number_input(
            f"first row (of {n_rows})", 1, max(1, n_rows - rows_per + 1), 1, step=rows_per, key=keys.window(key, "r0")
        )
        - 1
        if n_rows > rows_per
        else 0
    )
    c0 = (
        c2.number_input(
            f"first column (of {n_cols})",
            1,
            max(1, n_cols - cols_per + 1),
            1,
            step=cols_per,
            key=keys.window(key, "c0"),
        )
        - 1
        if n_cols > cols_per
        else 0
    )
    return int(r0), int(c0)
