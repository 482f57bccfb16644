"""The floor app with this app's heatmap: the same 4 × 4 editor and 3 × 3 weights, drawn by the Softmax page's own
chart code (``charts.rect_spec`` through ``widgets.common.vega_chart``: title, legend, text, tooltips, a cell click).
Beside the floor app it measures what the chart alone costs an edit; beside the Softmax page, what the rest does."""

import numpy as np
import pandas as pd
import streamlit as st

from attention import charts
from attention.ui.widgets.common import vega_chart

if "w" not in st.session_state:
    st.session_state.w = np.random.RandomState(0).rand(4, 4)


def _on_edit() -> None:
    for r, cells in st.session_state["grid"]["edited_rows"].items():
        for c, v in cells.items():
            st.session_state.w[int(r), int(c[1:]) - 1] = float(v)


st.data_editor(
    pd.DataFrame(st.session_state.w.astype(str), columns=["c1", "c2", "c3", "c4"]), key="grid", on_change=_on_edit
)
x = np.array([[1.0, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]])
s = (x @ st.session_state.w) @ (x @ st.session_state.w).T / 2
a = np.exp(s - s.max(axis=1, keepdims=True))
a /= a.sum(axis=1, keepdims=True)
spec = charts.rect_spec(a, list("abc"), list("abc"), kind="weights", title="Attention weights", digits=4, select=True)
vega_chart(spec, width="stretch", on_select=lambda: None, selection_mode="cell", key="heatmap")
