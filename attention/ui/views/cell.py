"""The "why" views: explain one cell (chosen, or clicked in the heatmap), a step's inputs, softmax's middle steps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts, names
from ...explain import explain_cell
from ...trace import Trace
from ..core import keys, session
from ..core.shown import key_labels, shown
from ..core.text import esc
from ..state import pins
from ..widgets import number_tables
from ..widgets.common import bind, open_tab, open_view

SIDE_BY_SIDE_COLS = 4  # input tables wider than this are shown one under the other


def on_heatmap_click(page_key: str, head: int | None = None) -> None:
    """The heatmap's selection callback: a clicked cell becomes the explained cell (of ``head``, for a head's
    heatmap)."""
    event = st.session_state.get(keys.heatmap(page_key, head))
    picked = (((event or {}).get("selection") or {}).get("cell") or [None])[0]
    if not isinstance(picked, dict):
        return
    labels, key_toks = session.get().labels, key_labels(session.get())
    q, k = picked.get("query"), picked.get("key")
    if q in labels and k in key_toks:
        pins.set_view(cell=(labels.index(q), key_toks.index(k)), head=head)
        open_view("view.explain_cell")  # the click asks for the cell's explanation: it opens


def _on_pick(page_key: str) -> None:
    labels, key_toks = session.get().labels, key_labels(session.get())
    q, k = st.session_state.get(keys.cell(page_key, "q")), st.session_state.get(keys.cell(page_key, "k"))
    if q in labels and k in key_toks:
        pins.set_view(cell=(labels.index(q), key_toks.index(k)))


def explain(s: session.Session, trace: Trace, page_key: str) -> None:
    """Cell (i, j) taken apart: q_i and k_j side by side, each product, the sum, × scale, minus the row's shift,
    exp, the row sum and the share, each number the engine's own."""
    labels, key_toks = s.labels, key_labels(s)  # key_toks: the source's tokens in cross-attention
    i, j = min(s.cell[0], len(labels) - 1), min(s.cell[1], len(key_toks) - 1)
    where = "a head's heatmap" if trace.options.heads > 1 else "the heatmap"
    st.markdown(f"**Explain a cell** · click a cell of {where}, or choose it here")
    c1, c2 = st.columns(2)
    for col, key, idx, what, options in ((c1, "q", i, "query (row)", labels), (c2, "k", j, "key (column)", key_toks)):
        bind(keys.cell(page_key, key), options[idx])
        col.selectbox(what, options, key=keys.cell(page_key, key), on_change=_on_pick, args=(page_key,))
    head = min(s.head, trace.options.heads - 1)
    if trace.options.heads > 1:
        bind(keys.cell(page_key, "head"), head + 1)
        st.selectbox(
            "head",
            list(range(1, trace.options.heads + 1)),
            key=keys.cell(page_key, "head"),
            on_change=lambda: pins.set_view(head=st.session_state[keys.cell(page_key, "head")] - 1),
        )
    e = explain_cell(trace, i, j, head)
    fmt = charts.decimals_for(np.concatenate([e.q, e.k, e.products]), s.digits).format
    d = len(e.q)
    cols = [f"q{c + 1}·k{c + 1}" for c in range(d)]
    table = pd.DataFrame(
        {
            f"q ({labels[i]})": [fmt(v) for v in e.q],
            f"k ({key_toks[j]})": [fmt(v) for v in e.k],
            "q × k": [fmt(v) for v in e.products],
        },
        index=cols,
    )
    st.dataframe(table, width="stretch", height=number_tables.fit_height(len(table)))
    qi, kj = esc(labels[i]), esc(key_toks[j])
    g = f".{s.digits}g"  # the digits control's significant digits, as in every table
    lines = [
        f"1. Score: the sum of the {d} products, S = **{e.score:{g}}** (how well {kj}'s key matches what {qi} looks "
        f"for)."
    ]
    if e.masked:
        lines.append(f"2. Masked: {qi} may not attend to {kj}, so S' = −∞ and its weight is 0 whatever the score.")
    else:
        lines.append(
            f"2. Scaled: S' = S × {e.scale:{g}}"
            + (f" + ALiBi's {e.bias:{g}}" if e.bias else "")
            + f" = **{e.scaled:{g}}**"
            + (f", divided by the temperature {e.temperature:g}: {e.row[j]:{g}}" if e.temperature != 1 else "")
            + "."
        )
        what = names.SOFTMAX_WORDS[trace.options.softmax].one_row
        lines.append(
            f"3. Subtract {what}, {e.shift:{g}}: {e.shifted[j]:{g}}; exp of that: **{e.exps[j]:{g}}** "
            "(subtracting a constant from the whole row changes no weight, it only keeps exp from overflowing)."
        )
        lines.append(
            f"4. The row's exps add up to {e.row_sum:{g}}, so {qi}'s weight on {kj} is {e.exps[j]:{g}} / "
            f"{e.row_sum:{g}} = **{e.exps[j] / e.row_sum:{g}}** ({e.weight:.1%} of {qi}'s attention)."
        )
    st.markdown("\n".join(lines))


def softmax_steps(s: session.Session, trace: Trace, page_key: str) -> None:
    """Softmax's middle steps for every row: the scaled scores minus the row's shift, their exp, the row sums."""
    st.markdown("**Softmax, step by step** (each row: subtract, exp, divide by the row sum)")
    rows = s.labels
    head = min(s.head, trace.options.heads - 1)
    steps = [explain_cell(trace, i, 0, head) for i in range(min(len(rows), 16))]
    if trace.options.heads > 1:
        st.caption(f"Head {head + 1} (choose the head under “Explain a cell”).")
    shifted = np.array([e.shifted for e in steps])
    exps = np.array([e.exps for e in steps])
    for tab in open_tab("softmax_steps", ["S'/T − shift", "exp(…)", "row sums"], s):
        if tab == "row sums":
            sums = {"shift subtracted": [e.shift for e in steps], "sum of exps": [e.row_sum for e in steps]}
            table = pd.DataFrame(sums, index=rows[: len(steps)])
            number_tables.number_table(table, charts.decimals_for(table.to_numpy(), s.digits))  # the digits setting
            continue
        values = shifted if tab.startswith("S'") else exps
        number_tables.number_table(
            pd.DataFrame(values, index=rows[: len(steps)], columns=key_labels(s)),
            charts.decimals_for(values, s.digits),
            fit_px=number_tables.RESULTS_PX,
        )
    if len(rows) > 16:
        st.caption(f"The first 16 of {len(rows)} rows.")


def context(names: tuple[str, ...]):
    """A view showing the arrays a step takes in (Q and K for the scores...), as compact tables."""

    def view(s: session.Session, trace: Trace, page_key: str) -> None:
        st.markdown("**What this step takes in**")
        arrays = [shown(s, trace, name) for name in names]
        wide = any(a[0].shape[1] > SIDE_BY_SIDE_COLS for a in arrays)  # side by side they would hide columns
        places = [st.container() for _ in names] if wide else st.columns(len(names))
        for col, name, (m, rows, cols) in zip(places, names, arrays, strict=True):
            fmt = charts.decimals_for(m, s.digits)
            col.caption(f"{name} · {m.shape[0]} × {m.shape[1]}")
            fit = number_tables.RESULTS_PX if wide else number_tables.RESULTS_PX // len(names) - 16  # its column
            frame = pd.DataFrame(m[:16, :16], index=rows[:16], columns=cols[:16])
            number_tables.number_table(frame, fmt, where=col, fit_px=fit)

    return view
