"""The "Attribution" page: each head's, each MLP's, the embeddings' and the biases' direct share of one logit.

With the final norm's scale held at its value at the chosen position, the norm and the unembedding are affine, and
the logit of a token splits into what each part wrote into the stream (:func:`attention.model.attribute`):

    logit = embeddings + biases + Σ_l Σ_h head(l, h) + Σ_l mlp(l)

The page draws the heads as a layers × heads heatmap centred at 0 (a click opens a head on the step pages), the MLPs
as bars, and writes the sum out with its numbers.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...model import Attribution
from ...model.config import Config
from ..core import keys, session
from ..core.text import esc
from ..headpages import every_head, first_token
from ..modelpages import choose, readout, runs
from ..state import inside
from ..widgets.common import chart_gap, vega_chart
from .lens import layer_names

MLP_HEIGHT = 260  # px: the MLPs' bars


def body(s: session.Session) -> None:
    """Choose a model and a text (shared with Every head), a position and a token; each part's share of its logit."""
    choose.chooser()
    every_head.choose_text()
    shares()


@st.fragment
def shares() -> None:
    """The controls, the held scale, the sum, the heads' heatmap, the MLPs' bars: a choice here reruns this part."""
    _, att, token = readout.fragment_start()
    _, position, ablations = inside.current()
    if isinstance(att, str):  # the engine refused this run (a patched stream): said plainly, nothing drawn
        st.error(esc(att, 400))
        return
    if ablations:
        st.caption("With the heads ablated on the Every head page: " + first_token.runs_names(ablations) + ".")
    st.markdown(held(att))  # ours: numbers
    fmt = charts.decimals_for(np.r_[att.heads.ravel(), att.mlps, att.embeddings, att.biases, att.total], digits())
    st.markdown(the_sum(att, position, fmt.format))  # ours: numbers, tokens escaped
    st.markdown(largest(att, fmt.format))  # ours: head names and numbers
    heads_map(att, token)
    pick_head(att, fmt.format)
    mlps(att, fmt.format)


def digits() -> int | None:
    return session.get().digits


def held(att: Attribution) -> str:
    """How this model reads its logits, and what is held to split the logit into parts (the same words as the Logit
    lens: :mod:`attention.ui.modelpages.readout`)."""
    c = runs.model().config
    return readout.read_off(c) + " " + readout.attribution_rule(c, att.scale)


def the_sum(att: Attribution, position: int, fmt) -> str:  # noqa: ANN001 - a str.format
    """The sum written out: embeddings + biases + Σ heads + Σ MLPs = the logit, with the model's own logit."""
    c = runs.model().config
    parts = att.embeddings + att.biases + float(att.heads.sum()) + float(att.mlps.sum())
    terms = [f"embeddings {fmt(att.embeddings)}"]
    terms += [f"biases {fmt(att.biases)}"] if readout.has_biases(c) else []
    terms += [f"Σ heads {fmt(float(att.heads.sum()))}"]
    terms += [] if c.attention_only else [f"Σ MLPs {fmt(float(att.mlps.sum()))}"]
    return (
        f"**The sum.** At {readout.where(position, att.token)}: {' + '.join(terms)} = **{fmt(parts)}**, the logit "
        f"(the model's own: {fmt(att.total)})."
    )


def largest(att: Attribution, fmt) -> str:  # noqa: ANN001 - a str.format
    """Which head has the largest share, and which the most negative."""
    layer, head = (int(k) for k in np.unravel_index(np.argmax(att.heads), att.heads.shape))
    said = f"The largest share of a head: **{runs.name(layer, head)}**, {fmt(att.heads[layer, head])}"
    low = np.unravel_index(np.argmin(att.heads), att.heads.shape)
    if att.heads[low] < 0:
        said += f"; the most negative: {runs.name(*(int(k) for k in low))}, {fmt(att.heads[low])}"
    return said + " (positive pushes the token's logit up; negative pushes it down)."


def head_labels(att: Attribution) -> tuple[list[str], list[str]]:
    L, H = att.heads.shape
    return [f"layer {k + 1}" for k in range(L)], [f"head {k + 1}" for k in range(H)]


def heads_map(att: Attribution, token: int) -> None:
    """Every head's share on a diverging scale centred at 0; a click on a head opens it on the step pages."""
    rows, cols = head_labels(att)
    colour = charts.colour_for("scores", att.heads)
    style = charts.Style(
        kind="scores",
        title=f"Each head's share of the logit of “{readout.piece(token)}”",
        subtitle="through its W_o; click a head to open it on the step pages",
        row_title="layer",
        col_title="head",
        digits=digits(),
        select=not every_head.shut(),
        colour=charts.Colour(colour.domain, colour.colours, "share of the logit"),
        row_height=max(22, min(60, 480 // len(rows))),  # 2 layers: rows of 60 px; 30 layers: 22 px, every label shown
    )
    spec = charts.heatmap(att.heads, rows, cols, style)
    chart_gap()
    if style.select:
        vega_chart(spec, width="stretch", on_select=on_click, selection_mode="cell", key=keys.READOUT_HEADS)
    else:
        vega_chart(spec, width="stretch", key=keys.READOUT_HEADS)
        st.caption(every_head.qk_norm_note())


def on_click() -> None:
    """A head was clicked in the heatmap: it opens on the step pages, on this text and with these ablations."""
    event = st.session_state.get(keys.READOUT_HEADS)
    picked = (((event or {}).get("selection") or {}).get("cell") or [None])[0]
    c = runs.model().config
    rows, cols = [f"layer {k + 1}" for k in range(c.n_layers)], [f"head {k + 1}" for k in range(c.n_heads)]
    if isinstance(picked, dict) and picked.get("query") in rows and picked.get("key") in cols:
        inside.open_on_steps(rows.index(picked["query"]), cols.index(picked["key"]))


def pick_head(att: Attribution, fmt) -> None:  # noqa: ANN001 - a str.format
    """The same without the mouse: the heads by share, largest first, and a button; then where to go."""
    L, H = att.heads.shape
    order = np.argsort(-att.heads, axis=None, kind="stable")
    names = [runs.name(*divmod(int(k), H)) for k in order]
    shares = {runs.name(*divmod(int(k), H)): fmt(att.heads.ravel()[k]) for k in order}
    disabled = every_head.shut()
    left, right = st.columns([3, 2], gap="medium", vertical_alignment="bottom")
    with left:
        st.selectbox(
            "Or choose a head (largest share first)",
            names,
            format_func=lambda n: f"{n} ({shares[n]})",
            key=keys.READOUT_PICK,
            disabled=disabled,
        )
    with right:
        st.button("Open it on the step pages", key=keys.READOUT_OPEN, on_click=open_picked, disabled=disabled)
    by_name = {runs.name(*divmod(int(k), H)): divmod(int(k), H) for k in order}
    chosen = by_name.get(st.session_state.get(keys.READOUT_PICK))
    if chosen is not None:
        readout.head(*chosen)  # what the head chosen pushes toward, as tokens
    opened = inside.now().opened
    if opened is not None:
        every_head.opened(*opened)


def open_picked() -> None:
    """The head chosen in the box opens on the step pages."""
    c = runs.model().config
    names = {runs.name(layer, head): (layer, head) for layer in range(c.n_layers) for head in range(c.n_heads)}
    chosen = names.get(st.session_state.get(keys.READOUT_PICK))
    if chosen is not None:
        inside.open_on_steps(*chosen)


def mlps_note(c: Config) -> str:
    """What an attention-only model's logit is made of, said where the MLPs' bars would be."""
    rest = "the heads, the embeddings and the biases" if readout.has_biases(c) else "the heads and the embeddings"
    return f"This model is attention-only: it has no MLPs; {rest} are all" + (
        "." if readout.has_biases(c) else " (it has no biases)."
    )


def mlps(att: Attribution, fmt) -> None:  # noqa: ANN001 - a str.format
    """Each MLP's share as a bar (none for an attention-only model, said so)."""
    if runs.model().config.attention_only:
        st.caption(mlps_note(runs.model().config))
        return
    names = layer_names(len(att.mlps))[1:]
    df = pd.DataFrame({"layer": names, "share": att.mlps, "shown": [fmt(v) for v in att.mlps]})
    df["sign"] = np.where(att.mlps >= 0, "up", "down")
    chart = (
        alt.Chart(df)
        .mark_bar()
        .encode(
            alt.X("layer:N", sort=names, title="MLP of", axis=alt.Axis(labelAngle=-45)),
            alt.Y("share:Q", title="share of the logit"),
            alt.Color(
                "sign:N",
                scale=alt.Scale(domain=["down", "up"], range=[charts.DIVERGING[0], charts.DIVERGING[2]]),
                legend=None,
            ),
            tooltip=[alt.Tooltip("layer:N"), alt.Tooltip("share:Q", format=".6~g")],
        )
        .properties(title="Each MLP's share of the logit")
    )
    chart_gap()
    st.altair_chart(chart, width="stretch", height=MLP_HEIGHT, key=keys.READOUT_MLPS)
    readout.pick_mlp()
