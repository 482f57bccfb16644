"""The "Logit lens" page: every layer's residual stream at a chosen position, read as if it were the last one.

Row l of :func:`attention.model.lens` is the stream entering layer l + 1 (row 0: the embeddings; the last row: after
every layer, the model's own logits) through the final norm (when the model has one) and the
unembedding. The page shows each row's top tokens
with their probabilities, the chosen token's probability row by row, and the first row whose top token is the
model's final prediction.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from ..core import keys, session
from ..core.text import esc
from ..headpages import every_head, first_token
from ..modelpages import answers, choose, readout
from ..state import inside
from ..widgets.common import chart_gap

LINE_HEIGHT = 300  # px: the probability line
MANY = 13  # beyond this many rows (12 layers), the line takes the page's width and its labels stand upright


def body(s: session.Session) -> None:
    """Choose a model and a text (shared with Every head), a position and a token; the lens, layer by layer."""
    choose.chooser()
    every_head.choose_text()
    reading()


def layer_names(layers: int) -> list[str]:
    """The lens's rows as the page names them: "embeddings", then "layer 1" .. "layer L" (after that layer)."""
    return ["embeddings"] + [f"layer {k}" for k in range(1, layers + 1)]


@st.fragment
def reading() -> None:
    """The controls, the sentence, the table of top tokens and the line: a choice here reruns only this part."""
    seen, _, token = readout.fragment_start()
    _, position, ablations = inside.current()
    names = layer_names(seen.probs.shape[0] - 1)
    if ablations:
        st.caption("With the heads ablated on the Every head page: " + first_token.runs_names(ablations) + ".")
    st.markdown(first_top(seen, names, position))  # ours: names and numbers, tokens escaped
    st.markdown(f"**The top {readout.TOP} tokens at each layer** (read after it)")
    st.dataframe(top_table(seen, names, token), width="stretch", height="content")
    left, _ = st.columns([3, 1]) if len(names) <= MANY else (st.container(), None)
    with left:
        chart_gap()
        st.altair_chart(line(seen, names, token), width="stretch", height=LINE_HEIGHT, key=keys.LENS_LINE)
    c = inside.model().config
    st.caption(
        "Each row reads the residual stream at this position after the embeddings or after a layer, "
        f"{readout.through(c)}, as if no layer came after it: the logit lens. The last row is the model's own "
        f"prediction. {readout.read_off(c)} {readout.lens_rule(c)}"
    )


def first_top(seen: readout.Lensed, names: list[str], position: int) -> str:
    """The sentence: the model's prediction at ``position`` and the first row where it is the top token."""
    read = f"Read {readout.through(inside.model().config)}"
    pred, top = seen.prediction, seen.top[:, 0]
    first = int(np.argmax(top == pred))  # the last row's top token is the prediction: there is always one
    fmt = answers.prob_pattern(seen.probs[:, pred]).format
    said = f"At {readout.where(position, pred)} is the model's prediction (probability {fmt(seen.probs[-1, pred])}). "
    if first == 0:
        said += f"{read}, it is **already the top token after the embeddings**"
    else:
        said += f"{read}, **it first becomes the top token at {names[first]}**"
        said += f" (before it, at {names[first - 1]}, the top token is “{esc(readout.piece(int(top[first - 1])), 40)}”)"
    lost = [names[k] for k in range(first, len(top)) if top[k] != pred]
    return said + (f"; it is not the top token again at {', '.join(lost)}." if lost else ", and stays so.")


def top_table(seen: readout.Lensed, names: list[str], token: int) -> pd.DataFrame:
    """One row per layer: its top tokens, each with its probability, and the chosen token's probability and rank."""
    probs = seen.probs
    fmt = answers.prob_pattern(np.r_[np.take_along_axis(probs, seen.top, -1).ravel(), probs[:, token]]).format
    rows: dict[str, list[str]] = {}
    for k in range(readout.TOP):
        rows[f"top {k + 1}"] = [f"{readout.piece(int(t))}  {fmt(probs[r, t])}" for r, t in enumerate(seen.top[:, k])]
    rank = seen.rank(token)  # (L + 1,): off the logits, in float64
    rows[f"“{readout.piece(token)}”"] = [f"{fmt(p)} (rank {r:,})" for p, r in zip(probs[:, token], rank, strict=True)]
    return pd.DataFrame(rows, index=pd.Index(names, name="read after"))


def line(seen: readout.Lensed, names: list[str], token: int) -> alt.LayerChart:
    """The chosen token's probability at each layer (and the prediction's, when another token is chosen)."""
    followed = [(token, f"“{readout.piece(token)}”")]
    if token != seen.prediction:
        followed.append((seen.prediction, f"“{readout.piece(seen.prediction)}” (the prediction)"))
    df = pd.DataFrame(
        [
            {"layer": n, "probability": float(seen.probs[r, t]), "token": label}
            for t, label in followed
            for r, n in enumerate(names)
        ]
    )
    upright = len(names) > MANY  # every layer's label shown, one beside the other
    axis = alt.Axis(labelAngle=-90 if upright else -45, labelLimit=120, labelOverlap=False)
    x = alt.X("layer:N", sort=names, title="read after", axis=axis)
    y = alt.Y("probability:Q", title="probability", scale=alt.Scale(domain=[0, 1]))
    colour = alt.Color(
        "token:N",
        title=None,
        sort=[label for _, label in followed],
        scale=alt.Scale(range=["#1f77b4", "#d62728"]),
        legend=alt.Legend(orient="bottom", labelLimit=260),
    )
    tip = [alt.Tooltip("token:N"), alt.Tooltip("layer:N"), alt.Tooltip("probability:Q", format=".6~g")]
    drawn = alt.Chart(df).mark_line(point=True, strokeWidth=2).encode(x, y, colour, tooltip=tip)
    return alt.layer(drawn).properties(title=f"{followed[0][1]}: its probability, layer by layer")
