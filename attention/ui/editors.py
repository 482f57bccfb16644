"""Matrix editors: ``st.data_editor`` grids with token/dimension labels, validated cell by cell.

A valid edit goes straight into the session's matrices (and so to every page); a bad cell (blank,
NaN, infinite) is reported by name and the matrix keeps its previous value there, while every
other edit in the grid is kept. Large matrices are edited a window of rows at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from ..errors import cell_name
from . import state

EDIT_ROWS = 64  # rows per editor page for large matrices
EDIT_COLS = 64  # columns per editor page


def window_controls(key: str, n_rows: int, n_cols: int, rows_per: int = EDIT_ROWS, cols_per: int = EDIT_COLS) -> tuple[int, int]:
    """Row/column offsets of the window shown for a large matrix (0, 0 when it fits)."""
    if n_rows <= rows_per and n_cols <= cols_per:
        return 0, 0
    c1, c2 = st.columns(2)
    r0 = c1.number_input(f"first row (of {n_rows})", 1, max(1, n_rows - rows_per + 1), 1, step=rows_per, key=f"{key}.r0") - 1 \
        if n_rows > rows_per else 0
    c0 = c2.number_input(f"first column (of {n_cols})", 1, max(1, n_cols - cols_per + 1), 1, step=cols_per, key=f"{key}.c0") - 1 \
        if n_cols > cols_per else 0
    return int(r0), int(c0)


def matrix_editor(name: str, rows: Sequence[str], cols: Sequence[str]) -> None:
    """Draw the editor for one of X, W_q, W_k, W_v and apply its valid edits to the session."""
    s = state.get()
    m = s.matrices[name]
    st.markdown(f"**{name}** · shape {m.shape[0]} × {m.shape[1]}")
    if (len(rows), len(cols)) != m.shape:  # a state bug must not become a traceback
        st.error(f"{name} has shape {m.shape} but there are {len(rows)} × {len(cols)} labels; press “Reset to preset”.")
        return
    r0, c0 = window_controls(f"edwin.{name}", *m.shape)
    r1, c1 = min(m.shape[0], r0 + EDIT_ROWS), min(m.shape[1], c0 + EDIT_COLS)
    if (r0, c0, r1, c1) != (0, 0, *m.shape):
        st.caption(f"Editing rows {r0 + 1}–{r1} and columns {c0 + 1}–{c1}; move the window to edit the rest (or upload a CSV).")
    window = m[r0:r1, c0:c1]
    # Cells are edited as text: the grid's number editor drops the "e" of 1e-15 and keeps only ~12
    # decimals, while text keeps exactly what was typed; it is parsed (and checked) in apply_edits.
    df = pd.DataFrame(to_text(window), index=list(rows[r0:r1]), columns=list(cols[c0:c1]))
    edited = st.data_editor(
        df, key=f"ed.{name}.{s.version}.{r0}.{c0}", num_rows="fixed", width="stretch",
        column_config={c: st.column_config.TextColumn(c) for c in df.columns},
    )
    apply_edits(name, edited, r0, c0, rows, cols)


def to_text(values: np.ndarray) -> np.ndarray:
    """Each number as its shortest exact text (``repr``), so what is shown is what is stored."""
    return np.vectorize(lambda v: repr(float(v)), otypes=[object])(values) if values.size else values.astype(object)


def apply_edits(name: str, edited: pd.DataFrame, r0: int, c0: int, rows: Sequence[str], cols: Sequence[str]) -> None:
    """Copy every finite changed cell of the editor's window into the matrix; report bad cells."""
    s = state.get()
    m = s.matrices[name]
    raw = pd.DataFrame(edited).to_numpy(dtype=object)
    values = pd.DataFrame(raw).apply(lambda col: pd.to_numeric(col.map(_clean), errors="coerce")).to_numpy(dtype=np.float64, na_value=np.nan)
    window = m[r0:r0 + values.shape[0], c0:c0 + values.shape[1]]
    if values.shape != window.shape:
        st.error(f"{name}: the editor returned shape {values.shape}, expected {window.shape}; the edit was not applied.")
        return
    bad = ~np.isfinite(values)
    changed = ~bad & (values != window)
    if changed.any():
        new = m.copy()
        new[r0:r0 + values.shape[0], c0:c0 + values.shape[1]][changed] = values[changed]
        state.set_matrix(name, new)
    if bad.any():
        messages = []
        for r, c in np.argwhere(bad)[:5]:
            text = _clean(raw[r, c])
            if text is None:
                what = "blank"
            elif np.isnan(values[r, c]):
                what = f"{str(raw[r, c])[:40]!r}, which is not a number" if str(text).lower() != "nan" else "NaN"
            else:
                what = f"{str(raw[r, c])[:40]!r}, which is infinite"
            messages.append(f"{name} {cell_name((r0 + r, c0 + c), rows, cols)} is {what}; "
                            f"it keeps its previous value {window[r, c]:.8g} until you enter a finite number.")
        more = int(bad.sum()) - len(messages)
        st.error("\n\n".join(messages) + (f"\n\n…and {more} more such cells." if more > 0 else ""), icon=":material/warning:")


def _clean(v: object) -> object:
    """Blank cells become None; text is stripped; numbers pass through."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    if isinstance(v, str):
        v = v.strip()
        return v or None
    return v
