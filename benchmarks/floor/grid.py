"""What both floor apps share: a 4 × 4 editor of W and the 3 × 3 attention weights it gives,
A = softmax((X W)(X W)ᵀ / 2) over each row, for a fixed 3 × 4 X. The benchmarks compute the same numbers with
:func:`weights` to know what a heatmap shows after an edit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

X = np.array([[1.0, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]])  # (3, 4)


def start() -> np.ndarray:
    """W before any edit: (4, 4), seed 0."""
    return np.random.RandomState(0).rand(4, 4)


def weights(w: np.ndarray) -> np.ndarray:
    """The (3, 3) attention weights of X with W = ``w`` as both W_q and W_k."""
    s = (X @ w) @ (X @ w).T / 2  # (3, 3)
    a = np.exp(s - s.max(axis=1, keepdims=True))
    return a / a.sum(axis=1, keepdims=True)


def _on_edit() -> None:
    for r, cells in st.session_state["grid"]["edited_rows"].items():
        for c, v in cells.items():
            st.session_state.w[int(r), int(c[1:]) - 1] = float(v)


def edited_weights() -> np.ndarray:
    """Draw W's editor (columns c1..c4, its edits written in its callback) and return the weights of W as it stands."""
    if "w" not in st.session_state:
        st.session_state.w = start()
    st.data_editor(
        pd.DataFrame(st.session_state.w.astype(str), columns=["c1", "c2", "c3", "c4"]), key="grid", on_change=_on_edit
    )
    return weights(st.session_state.w)
