"""The Q·K·V page's rotation step (RoPE), and a QK-norm head's q and k step by step, read-only.

With rotary positions, Q and K are X·W turned by position, and the page says so, with q and k before the rotation
beside the columns it turns.

The rotation turns each head's first r columns in pairs (r = rotary_dims: every column, or a share as GPT-NeoX
does) by an angle that grows with the token's position; the other columns pass unchanged. The scores use the turned
Q and K, so the page shows both: Q_raw = X·W_q (before) and Q (after), as the trace computed them.

A QK-norm model (Qwen3, Gemma 3; OLMo-2 across all heads) also normalises q and k (RMSNorm with the gains) before the
rotation, so its q is not X·W_q: the step pages, which recompute q from X and W alone, cannot edit such a head and
refuse to open it. For those, Every head shows any head's q and k after each step the model takes (X·W, after
QK-norm, after the rotation), with the model's own numbers (:func:`attention.model.qk_steps.qk_steps`, recomputed
from the head's blocks and gains), read-only, and checks the weights they give against the model's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...model.interventions import ablate
from ...model.qk_steps import HOW, PROJECTED, WHAT, qk_steps
from ...names import dimension_labels, token_labels
from ...trace import Trace
from ..core import keys, models, session
from ..state import inside
from ..widgets import number_tables
from ..widgets.common import bind, on_value

SHOWN_COLS, ROWS = 8, 64  # the part of q and k shown before the rotation (the zip download has them all)
OPENS = {  # where a head's norm can be edited, by qk_norm_scope
    "head": ": open a head on the step pages and the Q·K·V page shows this step, its gains editable",
    "all": ": one head's q is normed with every head's columns, so the step pages cannot open these heads",
}
STEP_COLS = 6  # each step's first columns of a QK-norm head (the head is d_head wide): what half the page shows


def turned(trace: Trace) -> int:
    """How many of each head's columns the rotation turns."""
    o = trace.options
    width = trace.Q.shape[-1] // o.heads
    return width if o.rotary_dims is None else min(int(o.rotary_dims), width)


def rotation(s: session.Session, trace: Trace, page_key: str) -> None:
    """Q and K before the rotation (Q_raw = X·W_q, K_raw = X·W_k), and which columns the rotation turned, when the
    positions are rotary; nothing otherwise."""
    if trace.Q_raw is None or trace.K_raw is None:
        return
    o = trace.options
    width, r = trace.Q.shape[-1] // o.heads, turned(trace)
    which = "every column" if r >= width else f"columns 1–{r} of each head's {width} (the others pass unchanged)"
    normed = ", normed (QK-norm, above)," if o.q_norm or o.k_norm else ""
    st.markdown(
        f"**The rotation (RoPE).** Q and K above are X·W_q and X·W_k{normed} **after** the rotation: each row is "
        f"turned by an angle that grows with its token's position, on {which}, so that q·k depends on how far apart "
        "the two tokens are. The scores use these turned rows. Before the rotation:"
    )
    rows = token_labels(list(s.tokens))[:ROWS]
    cols = min(SHOWN_COLS, width)
    whose = "head 1's " if o.heads > 1 else ""
    for name, m in (("Q", trace.Q_raw), ("K", trace.K_raw)):  # one under the other: the results column is narrow
        m = np.asarray(m)
        m = (m[0] if m.ndim == 3 else m)[: len(rows), :cols]  # (≤ 64, ≤ 8): batch item 1, head 1's first columns
        made = f"X·W_{name.lower()}" + (" after the norm" if normed else "")
        st.caption(f"{name} before the rotation ({made}) · {whose}first {cols} columns")  # ours
        frame = pd.DataFrame(m, index=rows, columns=dimension_labels("c", cols))
        number_tables.number_table(frame, charts.decimals_for(m, s.digits))


def qk_norm_steps(
    ids: tuple[int, ...], ablations: tuple, weights: Callable[[int, int], np.ndarray], rows: list[str]
) -> None:
    """For a QK-norm model (the one chosen on the model pages): a head chosen, its q and k after each step, side by
    side, on the text ``ids`` (labels ``rows``) with these ablations; the weights the page shows (``weights(layer,
    head)``, (n, n)) are the check. Nothing for another model."""
    m = inside.model()
    c = m.config
    if not c.qk_norm:
        return
    st.subheader("A head's queries and keys, step by step (read-only)")
    st.markdown(
        f"This model normalises {WHAT[c.qk_norm_scope]} (QK-norm: {HOW[c.qk_norm_scope]}) "
        f"before the rotation, so its q is **not** X·W_q{OPENS[c.qk_norm_scope]}. Here is what the model does, with "
        "its own numbers: q and k after each step, the scores then made from the last."
    )
    heads = [(layer, head) for layer in range(c.n_layers) for head in range(c.n_heads)]
    layer, head = inside.now().qk_head if inside.now().qk_head in heads else (0, 0)
    bind(keys.INSIDE_QK_HEAD, (layer, head))
    st.selectbox("Head", heads, format_func=lambda lh: inside.name(*lh), key=keys.INSIDE_QK_HEAD,
                 on_change=on_value(inside.on_qk_head, keys.INSIDE_QK_HEAD))  # fmt: skip
    with models.LOCK:
        run = m.run(list(ids), [ablate(*a) for a in ablations])
    s = qk_steps(run, layer, head)
    cols = min(STEP_COLS, c.d_head)
    for name in s.names:
        left, right = st.columns(2, gap="medium")
        for where, which, x in ((left, "q", s.q[name]), (right, f"k (key/value head {s.kv_head + 1})", s.k[name])):
            step = f"= {name}" if name == PROJECTED else name
            where.caption(f"{which} {step} · first {cols} of {c.d_head} columns")  # ours: fixed names, numbers
            frame = pd.DataFrame(x[:, :cols], index=rows, columns=dimension_labels("c", cols))
            number_tables.number_table(frame, charts.decimals_for(x[:, :cols], 4), where=where)
    gap = float(np.max(np.abs(s.weights - weights(layer, head))))
    turned = "every column" if s.rotated_columns >= c.d_head else f"the first {s.rotated_columns} columns"
    st.caption(
        f"The rotation turns {turned} of q and k. The weights softmax(q kᵀ · {c.scale(layer):.4g}) made from the last "
        f"q and k differ from the model's own by at most {gap:.1e}."
    )
