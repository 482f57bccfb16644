"""What a page shows of a trace: labelled tables, heatmaps, the reading, the tutorial check and errors.

Changed cells are highlighted in the tables. Each view is a function of the session and the trace; the specs
name them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts, names
from ...errors import AttentionError
from ...io import tables
from ...trace import Trace
from ..core import compute, keys, session
from ..core.shown import key_labels, per_head, reading_lines, shown, top_keys, what_changed
from ..core.text import esc
from ..widgets import downloads, number_tables
from ..widgets.chart_files import chart_files
from ..widgets.common import chart_gap, vega_chart
from ..widgets.windows import VIEW_COLS, VIEW_ROWS, window_controls
from . import cell, family, heads, qk_norm, rotation

_FIX_ON = {"X": "Tokens & embeddings", "W_q": "Weights", "W_k": "Weights", "W_v": "Weights"}


def show_error(exc: AttentionError) -> None:
    where = _FIX_ON.get(exc.matrix or "", "")
    st.error(
        esc(exc.message, 2000) + (f"\n\nFix it on the **{where}** page." if where else ""), icon=":material/error:"
    )


def show_matrix(
    name: str, s: session.Session, trace: Trace, base: Trace | None, page_key: str, download: bool = True
) -> None:
    """A labelled DataFrame with its shape; cells that differ from the unedited preset are highlighted; its CSV below
    (``download``; a step page offers it with the page's other downloads instead)."""
    full = getattr(trace, name)
    m, rows, cols = shown(s, trace, name)
    shape_note = f"shape {m.shape[0]} × {m.shape[1]}" + (
        f" (the engine's array is {full.shape})" if full.ndim > 2 else ""
    )
    st.markdown(f"**{name}** · {shape_note}")
    base_m = None if base is None else shown(s, base, name)[0]
    r0, c0 = window_controls(keys.view_window(page_key, name), *m.shape, VIEW_ROWS, VIEW_COLS)
    win = m[r0 : r0 + VIEW_ROWS, c0 : c0 + VIEW_COLS]
    df = pd.DataFrame(win, index=rows[r0 : r0 + VIEW_ROWS], columns=cols[c0 : c0 + VIEW_COLS])
    fmt = charts.decimals_for(m, s.digits)
    highlight = None
    if base_m is not None and base_m.shape == m.shape:
        flips = compute.mask_flips(trace, base, m.shape) if name == "weights" else None  # masked weights are 0s
        value, masked, big = compute.changes(m, base_m, flips)
        notes = []
        if value.any():
            notes.append(
                f"{int(value.sum())} of {value.size} cells differ from the unedited preset (highlighted); "
                f"largest change {big:.4g}"
            )
        if masked.any():
            notes.append(
                f"{int(masked.sum())} cells are masked here and not in the unedited preset, or the other way round "
                "(−∞ in the scaled scores, weight 0): a mask, not a change of value"
            )
        if notes:
            st.caption("; ".join(notes) + ".")  # ours: counts and our wording
            highlight = (value | masked)[r0 : r0 + VIEW_ROWS, c0 : c0 + VIEW_COLS]
    elif base is not None:
        st.caption("The shape differs from the unedited preset, so there is nothing to compare cell by cell.")
    # the window is at most VIEW_ROWS × VIEW_COLS cells; in blocks of whole columns where the column is too narrow
    number_tables.number_table(df, fmt, highlight=highlight, fit_px=number_tables.RESULTS_PX)
    if m.shape[0] > VIEW_ROWS or m.shape[1] > VIEW_COLS:
        st.caption(
            f"Showing rows {r0 + 1}–{min(m.shape[0], r0 + VIEW_ROWS)} and columns "
            f"{c0 + 1}–{min(m.shape[1], c0 + VIEW_COLS)}; the CSV has every cell."
        )
    if download:
        downloads.matrix(name, s, page_key)


# a short title (a chart's title is cut to its width) and what the colours mean below it
_TITLES = {"scores": ("Raw scores QKᵀ", ""), "weights": ("Attention weights", "each row sums to 1")}


def _titles(name: str, trace: Trace) -> tuple[str, str]:
    if name == "scaled":
        masked = trace.allowed is not None and not np.asarray(trace.allowed).all()
        return "Scaled scores", "masked cells grey" if masked else ""
    return _TITLES[name]


def show_heatmap(name: str, s: session.Session, trace: Trace, page_key: str) -> None:
    """The heatmap of ``name`` (scores, scaled or weights): one chart per head when there are several; else one
    chart whose cells a click explains, or, beyond ``charts.RECT_MAX`` tokens, blocks of tokens and a zoom window."""
    stack = per_head(getattr(trace, name))  # (h, n, n); (h, n, S) in cross-attention
    kind = "weights" if name == "weights" else "scores"
    title, subtitle = _titles(name, trace)
    allowed = None if trace.allowed is None else names.squeeze_batch(np.asarray(trace.allowed))
    if stack.shape[0] > 1:  # one chart per head, on one colour scale; at most heads.MAX_HEADS_DRAWN at a time
        heads.show(stack, s, trace, page_key, kind, title, subtitle, allowed)
    elif max(stack.shape[-2:]) <= charts.RECT_MAX:
        _clickable_heatmap(stack[0], s, page_key, kind, title, subtitle, allowed)
    else:
        _pooled_heatmap(stack[0], s, page_key, kind, title, allowed)


def _clickable_heatmap(
    m: np.ndarray, s: session.Session, page_key: str, kind: str, title: str, subtitle: str, allowed: np.ndarray | None
) -> None:
    """``m`` (n, S) cell by cell; a click on a cell explains it (see views/cell.py). The spec is a plain dict (fast)."""
    toks, key_toks = s.labels, key_labels(s)
    style = charts.Style(kind=kind, title=title, subtitle=subtitle, digits=s.digits, select=True)
    spec = charts.heatmap(m, toks, key_toks, style, allowed)
    chart_gap()
    vega_chart(
        spec,
        width="stretch",
        on_select=functools.partial(cell.on_heatmap_click, page_key),
        selection_mode="cell",
        key=keys.heatmap(page_key),
    )
    chart_files(spec, f"{s.preset_id}_{kind}", f"{page_key}.{kind}")


def _pooled_heatmap(
    m: np.ndarray, s: session.Session, page_key: str, kind: str, title: str, allowed: np.ndarray | None
) -> None:
    """``m`` (n, S), too large to draw cell by cell: blocks of tokens, then a window of it to read cell by cell."""
    n = max(m.shape)
    toks, key_toks = s.labels, key_labels(s)
    chart_gap()
    style = charts.Style(kind=kind, title=title, digits=s.digits)
    spec = charts.heatmap(m, toks, key_toks, style, allowed)
    vega_chart(spec, width="stretch")
    chart_files(spec, f"{s.preset_id}_{kind}_blocks", f"{page_key}.{kind}.blocks")
    pooled = "the largest weight" if kind == "weights" else "the mean score"
    st.caption(
        f"{n} × {n} is drawn in blocks of tokens (each block shows {pooled} in it; hover for its range and value; "
        "grey = masked). Choose a window below to read every cell with tooltips."
    )
    c1, c2, c3 = st.columns(3)
    size = int(c3.selectbox("zoom window (tokens)", [16, 32, 64], index=0, key=keys.zoom(page_key, "size")))
    r0 = int(c1.number_input("first query row", 1, n, 1, key=keys.zoom(page_key, "r0"))) - 1
    c0 = int(c2.number_input("first key column", 1, n, 1, key=keys.zoom(page_key, "c0"))) - 1
    chart_gap()
    window = style.but(title=f"rows {r0 + 1}–{min(n, r0 + size)}, columns {c0 + 1}–{min(n, c0 + size)}")
    vega_chart(charts.heatmap(m, toks, key_toks, window, allowed, charts.Window(r0, c0, size)), width="stretch")


def show_reading_lines(s: session.Session, trace: Trace, page_key: str) -> None:
    n = len(s.tokens)
    for head in range(trace.options.heads):
        lead = f"Head {head + 1}: " if trace.options.heads > 1 else "Reading the rows: "
        st.markdown(  # ours: reading_lines escapes the tokens
            lead + "; ".join(reading_lines(trace, s.tokens, range(min(n, 8)), head)) + ("; …" if n > 8 else ".")
        )


def show_reading_table(s: session.Session, trace: Trace, page_key: str) -> None:
    r = trace.reading
    toks = np.asarray(s.labels, dtype=object)
    key_toks = np.asarray(key_labels(s), dtype=object)  # the source's tokens in cross-attention
    n, h = len(toks), trace.options.heads
    parts = []
    for head in range(h):
        pick = (lambda a, k=head: a[k]) if h > 1 else (lambda a: a)
        top, second, masked = pick(r.top), pick(r.second), pick(r.fully_masked)
        most = key_toks[top].copy()
        for i in np.flatnonzero(pick(r.top_count) > 1):  # keys that tie are all named
            most[i] = ", ".join(key_toks[top_keys(trace, int(i), head)])
        parts.append(
            pd.DataFrame(
                {
                    **({"head": np.full(n, head + 1)} if h > 1 else {}),
                    "token": toks,
                    "attends most to": np.where(masked, "(fully masked)", most),
                    "weight": pick(r.top_weight),
                    "then": np.where(masked | (len(key_toks) < 2), "", key_toks[second]),
                    "weight 2": pick(r.second_weight),
                    "entropy (bits)": pick(r.entropy),
                    "max possible (bits)": np.full(n, r.max_entropy),
                    "reading": np.where(masked, "", [f"{a} → {b}" for a, b in zip(toks, most, strict=True)]),
                }
            )
        )
    df = pd.concat(parts, ignore_index=True)
    # shown beside the inputs: the columns that repeat others (the CSV has them) are left out, so the rest fit
    shown_df = df.head(512).drop(columns=["max possible (bits)", "reading"])
    numbers = [c for c in shown_df.columns if c in ("weight", "weight 2", "entropy (bits)")]
    fmt = charts.decimals_for(shown_df[numbers].to_numpy(dtype=float), s.digits)
    st.dataframe(
        shown_df.style.format(fmt.format, subset=numbers),
        width="stretch",
        hide_index=True,
        height=number_tables.fit_height(len(shown_df)),
    )
    if n > 512:
        st.caption(f"First 512 of {n} tokens shown; the CSV has them all.")
    st.caption(
        "“attends most to” is the key with the largest weight in the row (all of them when several tie, equal up to "
        "rounding), “weight” that weight; “then” is the key with the second largest weight and “weight 2” its "
        f"weight; entropy 0 bits = all on one key, log₂(n) = {r.max_entropy:.3f} bits = spread evenly over all {n} "
        "keys (the most possible)."
    )
    st.download_button(
        "Download reading.csv",
        data=downloads.payload(s, lambda: tables.table_csv(df)),
        file_name=f"{s.preset_id}_reading.csv",
        mime="text/csv",
        key=keys.reading_download(s.version),
        on_click="ignore",
    )
    note = s.origin.preset.notes.get("reading") if session.is_unedited(s) else None
    if isinstance(note, str):
        st.info(esc(note, 2000))


def show_concat(s: session.Session, trace: Trace, page_key: str) -> None:
    """With W_o in use: the heads' outputs side by side (concat, before W_o) and W_o, whose product is the output."""
    if "W_o" not in s.matrices or trace.concat is None:
        return
    concat = names.squeeze_batch(np.asarray(trace.concat))  # (n, d_v)
    w_o = s.matrices["W_o"]  # (d_v, d_out)
    st.markdown("**output = concat · W_o** · the heads' outputs side by side, then mixed by W_o (Weights page)")
    # side by side while both are narrow; a model's head (16 × 16, then 16 × 32) is stacked, each table the page's width
    left, right = st.columns([3, 2]) if concat.shape[1] + w_o.shape[1] <= 8 else (st.container(), st.container())
    for where, label, m in ((left, "concat", concat), (right, "W_o", w_o)):
        index, cols = s.axis_labels("output" if label == "concat" else "W_o", m.shape)  # concat's columns: d_v
        where.caption(f"{label} · {m.shape[0]} × {m.shape[1]}")  # ours: concat or W_o
        number_tables.number_table(
            pd.DataFrame(m[:VIEW_ROWS, :VIEW_COLS], index=index[:VIEW_ROWS], columns=cols[:VIEW_COLS]),
            charts.decimals_for(m, s.digits),
            where=where,
        )
    if concat.shape[0] > VIEW_ROWS or max(concat.shape[1], w_o.shape[1]) > VIEW_COLS:
        st.caption(f"The first {VIEW_ROWS} rows and {VIEW_COLS} columns; the zip download has concat.csv in full.")


VIEWS: dict[str, Callable[[session.Session, Trace, str], None]] = {
    "concat": show_concat,
    "reading_lines": show_reading_lines,
    "reading_table": show_reading_table,
    "explain_cell": cell.explain,
    "softmax_steps": cell.softmax_steps,
    "takes_q_k": cell.context(("Q", "K")),
    "takes_scores": cell.context(("scores",)),
    "takes_scaled": cell.context(("scaled",)),
    "takes_v_weights": cell.context(("weights", "V")),
    "kv_groups": family.kv_groups,
    "kv_cache": family.kv_cache,
    "qk_norm": qk_norm.qk_norm,
    "rotation": rotation.rotation,
}


@dataclass(frozen=True)
class Opened:
    """A view a step page draws only while the learner has it open (an expander with this ``label``, closed at
    first), and only where it ``applies`` to the state. A view without one (the reading lines, the reading table) is
    drawn at once. The heatmap, the input grid and the explanation are always drawn; each of these is a few messages
    more for every edit, and the browser renders every message of a run before it shows the new heatmap."""

    label: str
    applies: Callable[[session.Session, Trace], bool] = lambda s, trace: True


OPENED: dict[str, Opened] = {
    "concat": Opened(
        "output = concat · W_o: the heads' outputs side by side, then mixed by W_o",
        lambda s, trace: "W_o" in s.matrices and trace.concat is not None,
    ),
    "explain_cell": Opened("Explain a cell: one weight taken apart (or click a cell of the heatmap)"),
    "softmax_steps": Opened("Softmax, step by step: subtract, exp, divide by the row sum"),
    "takes_q_k": Opened("What this step takes in: Q and K"),
    "takes_scores": Opened("What this step takes in: the scores S"),
    "takes_scaled": Opened("What this step takes in: the scaled scores S'"),
    "takes_v_weights": Opened("What this step takes in: the weights A and V"),
    "kv_groups": Opened(
        "Key/value heads: which query heads share each block of W_k and W_v", lambda s, trace: trace.options.heads > 1
    ),
    "kv_cache": Opened("KV cache: the bytes it holds per token, for this state and a model you describe"),
}


_TABLE_NAMES = {
    "scores": "The scores S",
    "scaled": "The scaled scores S'",
    "weights": "The weights A",
    "output": "The output",
}


def table_label(name: str) -> str:
    """The expander of a step's result ``name`` as a table, beside the page's heatmap."""
    return f"{_TABLE_NAMES.get(name, name)} as a table: every number, the cells changed from the preset highlighted"


def doc_check(s: session.Session, trace: Trace) -> None:
    """A small badge saying whether the numbers are the ones the preset's tutorial prints (details on hover)."""
    preset = s.origin.preset
    if not preset.source.get("document") or not s.origin.kind.documented:
        return
    where = f"the tutorial {esc(preset.source['document'])}"
    if not session.is_unedited(s) and not compute.same_numbers(s, trace):
        changed = what_changed(s)  # ours: plain words and matrix names
        st.caption(
            ("Changed: " + ", ".join(changed) + "; so" if changed else "Edited:")
            + " these numbers are no longer the tutorial's. “Reset to preset” brings them back."
        )
        return
    if preset.random is not None and preset.seed != preset.random.seed:
        st.caption(f"Seed changed: the tutorial's printed numbers are for seed {preset.random.seed}.")
        return
    ok, detail = compute.document_match(s.preset_id, s.seed, s.blank_shape)
    same = "" if session.is_unedited(s) else " (an option changed, but only rounding moved)"
    if preset.expected:
        text, hover = (
            ("Same numbers as its tutorial" + same, f"Checked against {where}: {detail}")
            if ok
            else ("Numbers differ from its tutorial", f"{where}: {detail}")
        )
    elif preset.expected_shapes:
        note = preset.notes.get("seed")
        text = ("Same shapes as its tutorial" if ok else "Shapes differ from its tutorial") + same
        hover = f"{where}: {detail}" + (f" {esc(note, 1000)}" if isinstance(note, str) else "")
    else:
        return
    st.badge(text, icon=":material/check:" if ok else ":material/error:", color="green" if ok else "red", help=hover)
