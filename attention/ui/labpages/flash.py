"""The "FlashAttention" lab: the current scores cut into tiles, walked one tile at a time by the online softmax.

Every number comes from :mod:`attention.flash` on the session's own trace; the step, the tile size, the head and the
sizes typed for the memory table are display settings (:mod:`attention.ui.state.family`), changed in callbacks.
"""

from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from ... import charts, flash, kvcache, names
from ...trace import Trace
from ..core import compute, keys, session
from ..core.cache import TraceCache
from ..core.shown import key_labels
from ..state import family
from ..views.family import setting_box
from ..views.steps import show_error
from ..widgets import number_tables
from ..widgets.chart_files import chart_files
from ..widgets.common import chart_gap, show_messages

MAX_TILES = 4096  # tiles walked on this page; a larger tile size is asked for beyond
MAX_KEPT = 2**24  # numbers the chosen head's tiles keep together (scores, p, acc, partial...: 128 MiB in float64)
MAX_CHART = 64  # cells per side drawn in the tile chart
COLS_SHOWN = 8  # output columns shown per row
AXIS_PX = 90  # px below the tile chart's plot: the key labels (turned) and the axis title
# the tiled runs of (trace content, head, tile size), shared by reruns and sessions: a click walks, it does not retile
FLASHES = TraceCache(max_bytes=MAX_KEPT * 8, max_entries=4, ttl=1800, measure=flash.nbytes)


def tile_chart(
    scores: np.ndarray, f: flash.Flash, k: int, labels: list[str], keys: list[str] | None = None
) -> alt.LayerChart:
    """The head's scores (masked cells grey) with the tiles already done at full colour, those still ahead faded,
    and the current tile outlined. ``keys``: the keys' labels when they are not the queries' (cross-attention)."""
    keys = labels if keys is None else keys
    t = f.tiles[k]
    n, s_len = scores.shape
    m = min(n, MAX_CHART)
    cols = min(s_len, MAX_CHART)
    order = {(x.q_block, x.k_block): i for i, x in enumerate(f.tiles)}
    rows = []
    for i in range(m):
        for j in range(cols):
            idx = order[(i // f.block_q, j // f.block_k)]
            v = scores[i, j]
            rows.append(
                {
                    "query": labels[i],
                    "key": keys[j],
                    "score": None if not np.isfinite(v) else float(v),
                    "masked": not np.isfinite(v),
                    "walked": "done" if idx < k else "this tile" if idx == k else "ahead",
                }
            )
    df = pd.DataFrame(rows)
    x = alt.X("key:N", sort=keys[:cols], title="keys")
    y = alt.Y("query:N", sort=labels[:m], title="queries")
    base = (
        alt.Chart(df)
        .mark_rect()
        .encode(
            x=x,
            y=y,
            color=alt.condition("datum.masked", alt.value("#d0d0d0"), alt.Color("score:Q", title="score")),
            opacity=alt.condition("datum.walked == 'ahead'", alt.value(0.25), alt.value(1.0)),
            tooltip=["query", "key", "score", "walked"],
        )
    )
    box = pd.DataFrame(
        [{"query": labels[i], "key": keys[j]} for i in range(*t.rows) if i < m for j in range(*t.cols) if j < cols]
    )
    outline = alt.Chart(box).mark_rect(fill=None, stroke="black", strokeWidth=2).encode(x=x, y=y)
    cell = max(14, min(48, 480 // max(m, 1)))  # px per row: the plot grows with n up to about 480 px high
    # the column's whole width; the height also holds the key axis (labels and title), as the chart is fitted to it
    return alt.layer(base, outline).properties(width="container", height=cell * m + AXIS_PX)


def body(s: session.Session) -> None:
    trace = compute.current_trace(s)
    if not isinstance(trace, Trace):
        show_error(trace)
        return
    cfg = family.settings()
    o = trace.options
    h = o.heads
    n, s_len = trace.Q.shape[-2], trace.K.shape[-2]
    st.markdown(
        "For each block of query rows, FlashAttention walks the blocks of keys in order and keeps, per row, the "
        "largest score so far **m**, the running sum **ℓ** of exp(score − m) and an unnormalised output. When a new "
        "tile raises m, everything summed so far is multiplied by the **rescale** exp(m_old − m_new) ≤ 1. After the "
        "row block's last tile, output = accumulator / ℓ: exactly softmax(S) V, without ever holding the n × n "
        "matrix."
    )
    c1, c2 = st.columns(2)
    setting_box("Tile size", "tile", s, c1, "flash.tile")
    if h > 1:
        c2.selectbox(
            "Head",
            list(range(h)),
            index=min(cfg["flash_head"], h - 1),
            format_func=lambda i: f"head {i + 1}",
            key=keys.flash_head(s.grids, cfg["flash_head"]),
            on_change=lambda key: family.set_setting("flash_head", st.session_state[key]),
            args=(keys.flash_head(s.grids, cfg["flash_head"]),),
        )
    show_messages("flash.tile")
    b = cfg["tile"]
    head = min(cfg["flash_head"], h - 1)
    d_v = trace.V.shape[-1] // o.kv  # d_v/h: the chosen head's value width
    if not _fits(n, s_len, d_v, b):
        st.warning(_too_much(n, s_len, d_v, b, head), icon=":material/warning:")  # ours: numbers only
        _memory(s, trace, b, cfg)
        return
    f = _tiled(s, trace, b, head, flash.kept_numbers(n, s_len, d_v, b, b))
    k = min(cfg["step"], len(f.tiles) - 1)
    _steps(s, k, len(f.tiles))
    t = f.tiles[k]
    scaled = np.asarray(names.squeeze_batch(trace.scaled))
    scores = (scaled if h == 1 else scaled[head]) / float(o.temperature)  # (n, S): what the tiles see
    labels = s.labels
    st.markdown(
        f"**Tile {k + 1} of {len(f.tiles)}** · query block {t.q_block + 1} (rows {t.rows[0] + 1}–{t.rows[1]}), "
        f"key block {t.k_block + 1} (keys {t.cols[0] + 1}–{t.cols[1]})"
        + (" · the row block's last tile: its output is final." if t.last else ".")
    )
    chart_gap()
    chart = tile_chart(scores, f, k, labels, key_labels(s))
    st.altair_chart(chart, width="stretch")
    chart_files(chart, f"flash_tile{k + 1}", "flash.tiles")
    if max(n, s_len) > MAX_CHART:
        st.caption(f"The chart shows the first {MAX_CHART} queries and keys; the tables below are complete.")
    _row_table(t, labels, s.digits)
    _difference(f, trace, head)
    _memory(s, trace, b, cfg)


def _fits(n: int, s_len: int, d_v: int, b: int) -> bool:
    """At most MAX_TILES tiles of b × b, and at most MAX_KEPT numbers kept by them for one head."""
    tiles = math.ceil(n / b) * math.ceil(s_len / b)
    return tiles <= MAX_TILES and flash.kept_numbers(n, s_len, d_v, b, b) <= MAX_KEPT


def _too_much(n: int, s_len: int, d_v: int, b: int, head: int) -> str:
    """Why tiles of b × b are not walked here, and the smallest tile size that would be."""
    tiles = math.ceil(n / b) * math.ceil(s_len / b)
    kept = flash.kept_numbers(n, s_len, d_v, b, b)
    least = next((c for c in range(b + 1, flash.MAX_TILE + 1) if _fits(n, s_len, d_v, c)), None)
    advice = (
        f"Choose a tile size of at least {least}."
        if least is not None
        else "No tile size fits these many tokens: use fewer tokens."
    )
    return (
        f"Tiles of {b} × {b} cut these {n:,} queries × {s_len:,} keys into {tiles:,} tiles, which keep "
        f"{kept:,} numbers ({kvcache.readable(kept * 8)}) for head {head + 1}; this page walks at most "
        f"{MAX_TILES:,} tiles keeping at most {MAX_KEPT:,} numbers ({kvcache.readable(MAX_KEPT * 8)}). " + advice
    )


def _tiled(s: session.Session, trace: Trace, b: int, head: int, kept: int) -> flash.Flash:
    """The chosen head's tiled run, computed once per trace content, head and tile size."""
    state_key = compute.content_key(s.tokens, s.matrices, s.options)  # with the source: cross-attention differs
    key = f"{state_key}/source {s.source!r}/head {head}/tile {b}"
    return FLASHES.get(key, lambda: flash.from_trace(trace, b, b, head=head), expected_bytes=kept * 8)


def _steps(s: session.Session, k: int, total: int) -> None:
    """First / previous / next / last buttons and a slider over the tiles, in the order they are computed."""
    cols = st.columns(4)
    steps = (  # Material icons: the fonts a browser has may lack ⏮ and ⏭ (drawn as empty boxes)
        ("First tile", ":material/first_page:", 0),
        ("Previous tile", ":material/chevron_left:", max(0, k - 1)),
        ("Next tile", ":material/chevron_right:", min(total - 1, k + 1)),
        ("Last tile", ":material/last_page:", total - 1),
    )
    for col, (label, icon, target) in zip(cols, steps, strict=True):
        col.button(  # ours: the four labels above
            label,
            icon=icon,
            key=keys.flash_go(label),
            width="stretch",
            disabled=target == k,
            on_click=family.set_setting,
            args=("step", target),
        )
    if total > 1:
        key = keys.flash_step(s.grids, k)
        st.slider(
            "Tile",
            1,
            total,
            value=k + 1,
            key=key,
            on_change=lambda: family.set_setting("step", st.session_state[key] - 1),
        )
    show_messages("flash.step")


def _row_table(t: flash.Tile, labels: list[str], digits: int | None) -> None:
    """Per query row of the tile: m before and after, the rescale, ℓ, and the partial output so far."""
    partial = names.squeeze_batch(t.partial)  # (B_q, d_v/h)
    table = {
        "m before": names.squeeze_batch(t.m_old),
        "m after": names.squeeze_batch(t.m_new),
        "rescale exp(m_old − m_new)": names.squeeze_batch(t.rescale),
        "ℓ": names.squeeze_batch(t.l),
    }
    for c in range(min(partial.shape[-1], COLS_SHOWN)):
        table[f"output v{c + 1}"] = partial[:, c]
    df = pd.DataFrame(table, index=labels[t.rows[0] : t.rows[1]])
    st.markdown("**This row block after the tile** (m = −∞ and ℓ = 0 while every key so far is masked)")
    number_tables.number_table(df, charts.decimals_for(df.to_numpy(), digits))


def _difference(f: flash.Flash, trace: Trace, head: int) -> None:
    tiled = np.asarray(names.squeeze_batch(f.output))  # (n, d_v/h): the chosen head's output
    dv = tiled.shape[-1]
    whole = np.asarray(names.squeeze_batch(trace.concat if trace.concat is not None else trace.output))
    full = whole[..., head * dv : (head + 1) * dv]  # (n, d_v/h): the same head's columns of the full path
    diff = float(np.abs(tiled - full).max(initial=0.0))
    scale = float(np.abs(full).max(initial=0.0))
    rel = diff / scale if scale else 0.0
    st.markdown(
        f"**Difference from the full softmax** (head {head + 1}, every row, after the last tile): largest "
        f"|tiled − full| = {diff:.3g}, relative {rel:.3g}: "
        + ("equal to float64 rounding." if rel <= 1e-12 else "larger than float64 rounding.")
    )


def _memory(s: session.Session, trace: Trace, b: int, cfg: dict[str, int]) -> None:
    """Numbers held for one head: the n × n scores of the full path against the tiles' working set."""
    st.markdown("**Memory for one head** · the full path holds the n × n scores; the tiled path only its blocks.")
    c1, c2, c3 = st.columns(3)
    setting_box("Sequence length n", "flash_n", s, c1, "flash.memory")
    setting_box("Head width d", "flash_d", s, c2, "flash.memory")
    setting_box("Bytes per number", "bytes", s, c3, "flash.memory")
    show_messages("flash.memory")
    d_here = trace.Q.shape[-1] // trace.options.heads
    rows = []
    for what, n, d in (
        ("this state", trace.Q.shape[-2], d_here),
        ("the size you typed", cfg["flash_n"], cfg["flash_d"]),
    ):
        m = flash.memory(n, d, b, b, cfg["bytes"])
        rows.append(
            {
                "for": f"{what}: n = {n:,}, d = {d:,}",
                "full n × n scores": kvcache.readable(m["full_bytes"]),
                f"tiles of {b} × {b}": kvcache.readable(m["tile_bytes"]),
                "full ÷ tiles": f"{m['ratio']:,.1f}×",
            }
        )
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
