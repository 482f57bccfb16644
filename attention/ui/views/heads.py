"""Attention with heads: each head's heatmap in its own chart, on one colour scale, with what the head mostly does."""

from __future__ import annotations

import functools

import numpy as np
import streamlit as st

from ... import charts
from ...trace import Trace
from ..core import keys, session
from ..core.shown import habit_line, key_labels
from ..widgets.chart_files import chart_files
from ..widgets.common import TOOLBAR_GAP, chart_gap, vega_chart
from . import cell

MAX_HEADS_DRAWN = 8  # more heads are drawn a window at a time (256 heads of small multiples took ~44 s)
HEADS_PER_ROW = 2


def heads_per_row(n_rows: int, n_cols: int) -> int:
    """One head to a row while its cells can carry their numbers (up to charts.TEXT_MAX tokens): two in a results
    column beside the inputs were about 145 px wide at 1280 px, too narrow for any number and for every key label;
    beyond that size no number is written, and two to a row keep a long page shorter."""
    return 1 if max(n_rows, n_cols) <= charts.TEXT_MAX else HEADS_PER_ROW


def _heads_drawn(h: int, page_key: str) -> range:
    """The heads drawn: all of them, or, past :data:`MAX_HEADS_DRAWN`, the window of them a menu chooses."""
    if h <= MAX_HEADS_DRAWN:
        return range(h)
    first = st.selectbox(
        f"Heads drawn ({MAX_HEADS_DRAWN} at a time)",
        list(range(0, h, MAX_HEADS_DRAWN)),
        format_func=lambda a: f"heads {a + 1}–{min(h, a + MAX_HEADS_DRAWN)}",
        key=keys.heads_window(page_key),
    )
    return range(first, min(h, first + MAX_HEADS_DRAWN))


def show(
    stack: np.ndarray,
    s: session.Session,
    trace: Trace,
    page_key: str,
    kind: str,
    title: str,
    subtitle: str,
    allowed: np.ndarray | None,
) -> None:
    """Each head's heatmap in its own chart, two to a row, all on one colour scale, each with a line on what the
    head mostly does (the engine's reading of its weights); a click on a cell explains that cell of that head."""
    h, n_rows, n = stack.shape  # (h, n, S)
    heads = _heads_drawn(h, page_key)
    clickable = n <= charts.RECT_MAX
    st.markdown(  # ours: the view's title and counts
        f"**{title}**" + (f" ({subtitle})" if subtitle else "") + f" · {h} heads, each on its own "
        f"{trace.Q.shape[-1] // h} columns of Q and K, all on one colour scale"
        + (f" (heads {heads.start + 1}–{heads.stop} of {h} shown; the CSV has every head)" if len(heads) < h else "")
        + (
            ". Click a cell of a head's heatmap to explain it below."
            if clickable
            else f". {n} × {n} is drawn in blocks of tokens; hover a block for its tokens and value."
        )
    )
    per_row = heads_per_row(n_rows, n)
    style = charts.HEAD.but(
        kind=kind,
        digits=s.digits,
        select=clickable,
        colour=charts.colour_for(kind, stack, allowed),  # one scale, fitted to every head
        # two to a row: shorter rows, as in half a column
        row_height=max(4, min(40, 240 // charts.drawn_rows(n_rows))) if per_row > 1 else None,
    )
    toks, key_toks = s.labels, key_labels(s)
    specs = [charts.heatmap(stack[k], toks, key_toks, style.but(title=f"head {k + 1}"), allowed) for k in heads]
    # one to a row: each head in a container of its own, in one keyed container (printed two to a row)
    outer = st.container(key=keys.heads_view(page_key)) if per_row == 1 else st.container()
    for start in range(0, len(specs), per_row):
        if per_row == 1:
            columns = [outer.container()]
            columns[0].space(TOOLBAR_GAP)
        else:
            with outer:
                chart_gap()
            columns = outer.columns(per_row, gap="medium")
        for col, k, spec in zip(columns, heads[start : start + per_row], specs[start:], strict=False):
            with col:
                if clickable:
                    vega_chart(
                        spec,
                        width="stretch",
                        on_select=functools.partial(cell.on_heatmap_click, page_key, k),
                        selection_mode="cell",
                        key=keys.heatmap(page_key, k),
                    )
                else:
                    vega_chart(spec, width="stretch")
                chart_files(spec, f"{s.preset_id}_{kind}_head{k + 1}", f"{page_key}.{kind}.head{k + 1}")
                st.markdown(f"**head {k + 1}**: " + habit_line(trace, s.tokens, k))  # ours: tokens escaped
