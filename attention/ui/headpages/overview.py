"""Every layer × head at once, for a model with many heads: one layers × heads heatmap per score, a layer to open.

GPT-2 small has 12 × 12 = 144 heads: 144 attention heatmaps of a 64-token text would take the page seconds to draw
and scroll for screens. A model with more than :data:`DRAW_ALL` heads (or more than :data:`PER_ROW` per layer) shows
instead each score as one layers × heads heatmap (every head's number written in its cell), and one layer's heads
as attention heatmaps, that layer chosen here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...model import roles
from ..core import keys
from ..state import inside
from ..widgets.common import bind, chart_gap, vega_chart

DRAW_ALL = 16  # a model with at most this many heads (and at most PER_ROW a layer) draws every head's heatmap
PER_ROW = 4  # heatmaps side by side
# One layer's heads of a wide model, laid out so each cell stays readable on a 1280 px screen with the sidebar open:
MAIN_PX, GAP_PX, LABELS_PX = 820, 32, 70  # the main column, the gap between columns, a heatmap's labels and titles
CELL_PX = 10  # the narrowest cell drawn: a text of n tokens gets as many heads a row as leave each cell this wide
ROW_PX = 12  # each row of a wide model's head heatmap: near-square cells (labels Vega would overlap are thinned)


def draws_all(layers: int, heads: int) -> bool:
    """Whether every head's heatmap is drawn (a small model), or one layer at a time after the overview."""
    return layers * heads <= DRAW_ALL and heads <= PER_ROW


def per_row(n: int) -> int:
    """How many of one layer's head heatmaps go side by side for an n-token text: at most PER_ROW, and as many as
    keep each of the drawn columns (:func:`charts.drawn_rows`) at least CELL_PX wide."""
    need = charts.drawn_rows(n) * CELL_PX + LABELS_PX + GAP_PX  # px: one heatmap and its share of the gaps
    return max(1, min(PER_ROW, (MAIN_PX + GAP_PX) // need))


def grid_spec(values: np.ndarray, title: str, subtitle: str = "") -> dict:
    """A layers × heads heatmap on the 0–1 weights scale, rows "layer k", columns "head k" (counted from 1)."""
    L, H = values.shape
    return charts.heatmap(
        np.nan_to_num(values, nan=0.0),
        [f"layer {k + 1}" for k in range(L)],
        [f"head {k + 1}" for k in range(H)],
        charts.Style(kind="weights", title=title, subtitle=subtitle, row_title="layer", col_title="head", image=True),
    )


def scores(scores_by_kind: dict[str, np.ndarray], role_of: np.ndarray, key: str) -> None:
    """The three scores of every head, each a layers × heads heatmap, side by side; every head's role and score as a
    table below."""
    chart_gap()
    for kind, col in zip(roles.ROLES, st.columns(len(roles.ROLES), gap="medium"), strict=True):
        with col:
            values = scores_by_kind[kind]
            note = "" if np.isfinite(values).all() else "n/a: no token of the text occurs twice"
            vega_chart(grid_spec(values, f"{kind} score", note), width="stretch", key=keys.scores_chart(key, kind))
    L, H = role_of.shape
    table = st.expander("Every head's role and score, as a table", key=keys.scores_table(key), on_change="rerun")
    if not table.open:  # built only while open: a wide model's table cost its page a grid it rarely reads
        return
    with table:
        cells = [
            [
                "—"
                if role_of[la, h] == "none"
                else f"{role_of[la, h]} {scores_by_kind[str(role_of[la, h])][la, h]:.2f}"
                for h in range(H)
            ]
            for la in range(L)
        ]
        table = pd.DataFrame(
            cells, index=[f"layer {k + 1}" for k in range(L)], columns=[f"head {k + 1}" for k in range(H)]
        )
        st.dataframe(table, width="stretch")


def layer_chooser(layers: int) -> int:
    """Choose the layer whose heads are drawn; the layer (0-based)."""
    bind(keys.INSIDE_LAYER_SHOWN, inside.now().layer_shown, once=True)
    st.selectbox(
        "Layer whose heads are drawn below",
        list(range(layers)),
        format_func=lambda k: f"layer {k + 1}",
        key=keys.INSIDE_LAYER_SHOWN,
        on_change=inside.on_layer_shown,
    )
    return min(inside.now().layer_shown, layers - 1)
