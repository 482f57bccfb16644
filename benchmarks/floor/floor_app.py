"""The floor: the least a Streamlit page does for "edit a number, see the heatmap": a 4 × 4 editor, a 3 × 3 heatmap."""

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

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
df = pd.DataFrame([(q, k, a[i, j]) for i, q in enumerate("abc") for j, k in enumerate("abc")], columns=["q", "k", "v"])
st.altair_chart(
    alt.Chart(df).mark_rect().encode(x="k:N", y="q:N", color="v:Q")
    + alt.Chart(df).mark_text().encode(x="k:N", y="q:N", text=alt.Text("v:Q", format=".4f"))
)
