"""What the Generate page shows of one step: the next tokens, the new query, its attention row, the cache's rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...model import Config
from ...names import token_labels
from ..core import keys
from ..core.text import esc
from ..modelpages import answers, runs, walks
from ..state import generation as gen
from ..widgets import common as widgets

STATES = ("the prompt (one forward pass)", "generated before", "added by this step")
STATE_COLOURS = ("#9ecae1", "#3182bd", "#e6550d")  # light and dark blue, orange: apart in every colour vision


def next_tokens(w: walks.Walk) -> None:
    """The top next tokens after the last token fed, with their probabilities; the one Next token will add."""
    m = runs.model()
    said = w.said[-1]
    st.subheader("The next token")
    where = f"After token {said.position + 1} ({esc(runs.pieces([said.token])[0])})"
    answers.prob_table(
        {"next token": runs.pieces([int(i) for i in said.top]), "probability": np.asarray(said.probs, dtype=float)},
        ["probability"],
        key=keys.GEN_TOP,
    )
    if len(w.tokens) < m.config.n_ctx:
        p = answers.prob_pattern(said.probs[0]).format(said.probs[0])  # the digits control's format
        st.markdown(
            f"{where} the most likely token is **{esc(runs.pieces([int(said.top[0])])[0])}** ({p}): "
            "*Next token* adds it (greedy generation), and feeds it through the cache."
        )  # ours: tokens escaped
    else:
        st.markdown(f"{where}: the context of {m.config.n_ctx} tokens is full; nothing more is fed.")


def _layers(w: walks.Walk) -> list[int]:
    chosen = gen.now().layer
    return list(range(len(w.cache))) if chosen == gen.EVERY_LAYER else [chosen]


def query_and_row(w: walks.Walk) -> None:
    """The new token's query and its attention row over the cache, one heatmap row per head of the chosen layer(s)."""
    m = runs.model()
    c = m.config
    step = w.step
    t = step.position
    st.subheader(f"Token {t + 1} ({esc(runs.pieces([step.token])[0])}): its query and its attention over the cache")
    options = ([gen.EVERY_LAYER] if c.n_layers * c.n_heads <= 48 else []) + list(range(c.n_layers))
    widgets.bind(keys.GEN_LAYER, gen.now().layer, once=True)
    st.selectbox(
        "Layer",
        options,
        format_func=lambda v: "every layer" if v == gen.EVERY_LAYER else f"layer {v + 1}",
        key=keys.GEN_LAYER,
        on_change=gen.on_gen_layer,
    )
    layers = _layers(w)
    heads = [runs.name(layer, h) for layer in layers for h in range(c.n_heads)]
    q = np.concatenate([step.queries[layer] for layer in layers])  # (len(layers) · H, d_head)
    rows = np.concatenate([step.weights[layer] for layer in layers])  # (len(layers) · H, t + 1)
    st.markdown(
        f"Only this token's query is computed: q = LN(x) W_q, {c.d_head} numbers per head (a row below). It meets "
        f"the **{t + 1}** cached keys (the earlier tokens' and its own): softmax(q Kᵀ · scale) is one row of weights "
        "per head, the last row of the causal attention matrix a full forward pass would compute."
    )
    widgets.chart_gap()  # room for the chart's toolbar above it
    limit = max(abs(float(q.max())), abs(float(q.min())), 1e-12)
    style = charts.Style(
        kind="q",
        title=f"The query of token {t + 1}",
        row_title="head",
        col_title="dimension of q",
        colour=charts.Colour((-limit, 0.0, limit), charts.DIVERGING, "q"),
    )
    spec = charts.heatmap(q, heads, [str(k + 1) for k in range(c.d_head)], style)
    widgets.vega_chart(spec, width="stretch", key=keys.gen_chart("q"))
    widgets.chart_gap()
    labels = token_labels(runs.pieces(list(w.tokens)))
    style = charts.Style(
        kind="weights",
        title=f"Token {t + 1}'s attention over the {t + 1} cached keys",
        row_title="head",
        col_title="cached key (token)",
    )
    spec = charts.heatmap(rows, heads, labels, style)
    widgets.vega_chart(spec, width="stretch", key=keys.gen_chart("row"))
    best = rows.argmax(axis=-1)  # (heads,)
    st.caption(
        "Where each head looks most: "
        + "; ".join(
            f"{h} → {esc(labels[b])} ({rows[k, b]:.2f})" for k, (h, b) in enumerate(zip(heads, best, strict=True))
        )
        + "."
    )  # ours: head names, tokens escaped


def cache_rows(w: walks.Walk) -> None:
    """Every layer's K and V rows: the prompt's, the ones generated before, and the one this step added; then the
    numbers of the new row for the chosen layer(s)."""
    m = runs.model()
    c = m.config
    P, t = len(w.prompt), len(w.tokens)
    st.subheader("The cache, one row longer per layer at every step")
    parts = (P if w.steps else P - 1, max(w.steps - 1, 0), 1)
    records = [
        {"row": f"layer {layer + 1} · {kv}", "what": name, "rows": count, "order": k}
        for layer in range(c.n_layers)
        for kv in ("K", "V")
        for k, (name, count) in enumerate(zip(STATES, parts, strict=True))
        if count
    ]
    spec = {
        "data": {"values": records},
        "mark": {"type": "bar", "stroke": "white", "strokeWidth": 0.5},
        "height": {"step": 24},
        "padding": {"left": 12, "top": 5, "right": 5, "bottom": 5},  # the axis labels' font is wider than Vega measures
        "title": {"text": f"Rows in the cache: {t} of the context's {c.n_ctx}", "anchor": "start"},
        "encoding": {
            "y": {"field": "row", "type": "nominal", "sort": None, "title": None, "axis": {"labelOverlap": False}},
            "x": {
                "field": "rows",
                "type": "quantitative",
                "stack": "zero",
                "scale": {"domain": [0, c.n_ctx]},
                "title": "rows (one per token)",
            },
            "color": {
                "field": "what",
                "type": "nominal",
                "scale": {"domain": list(STATES), "range": list(STATE_COLOURS)},
                "legend": {"title": None, "orient": "bottom", "labelLimit": 0},
            },
            "order": {"field": "order", "type": "quantitative"},
            "tooltip": [{"field": "row"}, {"field": "what"}, {"field": "rows", "type": "quantitative"}],
        },
    }
    widgets.chart_gap()
    widgets.vega_chart(spec, width="stretch", key=keys.gen_chart("cache"))
    st.caption(
        f"Each layer's K and V have {t} rows of {c.kv_heads} {_kv_heads(c)} × {c.d_head} numbers: "
        + (
            f"the prompt's {P} from one forward pass and {w.steps} fed one at a time."
            if w.steps
            else f"the prompt's {P}, from one forward pass (its last token is highlighted). Press *Next token*."
        )
    )
    with st.expander(f"The new row's numbers (token {t}, {'every layer' if len(_layers(w)) > 1 else 'this layer'})"):
        table = {}
        for layer in _layers(w):
            K, V = w.cache[layer]  # (G, t, d_head) each: one per key/value head
            for g in range(c.kv_heads):
                table[f"{_kv_name(c, layer, g)} · K"] = K[g, -1]
                table[f"{_kv_name(c, layer, g)} · V"] = V[g, -1]
        frame = pd.DataFrame(table, index=[f"{k + 1}" for k in range(c.d_head)]).T
        st.dataframe(frame.round(4), width="stretch", key=keys.GEN_NEWROW)


def _kv_heads(c: Config) -> str:
    """What one of the cache's heads is: a head, or a key/value head its group of query heads shares (GQA)."""
    group = c.n_heads // c.kv_heads
    return "heads" if group == 1 else f"key/value heads (each shared by {group} query heads)"


def _kv_name(c: Config, layer: int, g: int) -> str:
    """Key/value head ``g`` of ``layer`` as a person counts it: its query head, or the query heads sharing it."""
    group = c.n_heads // c.kv_heads
    if group == 1:
        return runs.name(layer, g)
    return f"layer {layer + 1} · K/V head {g + 1} (heads {g * group + 1}–{(g + 1) * group})"


def history(w: walks.Walk) -> None:
    """Every step so far: the token fed, where, and its top next tokens."""
    with st.expander(f"Every step so far ({len(w.said)})"):
        answers.prob_table(
            {
                "position": [s.position + 1 for s in w.said],
                "token fed": runs.pieces([s.token for s in w.said]),
                "cache rows": [s.position + 1 for s in w.said],
                "most likely next": runs.pieces([int(s.top[0]) for s in w.said]),
                "probability": [float(s.probs[0]) for s in w.said],
                "top 5": [", ".join(runs.pieces([int(i) for i in s.top])) for s in w.said],
            },
            ["probability"],
            key=keys.GEN_HISTORY,
        )
