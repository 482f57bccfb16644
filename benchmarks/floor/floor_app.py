"""The floor: the least a Streamlit page does for "edit a number, see the heatmap": a 4 × 4 editor, a 3 × 3 heatmap."""

import altair as alt
import pandas as pd
import streamlit as st

from benchmarks.floor import grid

a = grid.edited_weights()
df = pd.DataFrame([(q, k, a[i, j]) for i, q in enumerate("abc") for j, k in enumerate("abc")], columns=["q", "k", "v"])
st.altair_chart(
    alt.Chart(df).mark_rect().encode(x="k:N", y="q:N", color="v:Q")
    + alt.Chart(df).mark_text().encode(x="k:N", y="q:N", text=alt.Text("v:Q", format=".4f"))
)
