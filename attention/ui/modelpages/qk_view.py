"""A QK-norm model's heads, their queries and keys step by step, read-only (Every head).

Qwen3 and Gemma 3 normalise each head's q and k (RMSNorm with its own gains) before the rotation, so a head's q is not
X·W_q: the step pages, which recompute q from X and W alone, cannot edit such a head yet and refuse to open it. Here
any head's q and k after each step the model takes (X·W, after QK-norm, after the rotation) are shown with the
model's own numbers (:func:`attention.model.qk_steps.qk_steps`, recomputed from the head's blocks and gains), and the
weights they give are checked against the model's on the page.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...model.interventions import ablate
from ...model.qk_steps import qk_steps
from ...names import dimension_labels, token_labels
from ..core import keys, models
from ..state import inside
from ..widgets import number_tables
from ..widgets.common import bind, on_value
from . import runs

SHOWN_COLS = 8  # each step's first columns (the head is d_head wide)


def section(now: runs.Measured) -> None:
    """For a QK-norm model: a head chosen, its q and k after each step, side by side; nothing for another model."""
    m = runs.model()
    c = m.config
    if not c.qk_norm:
        return
    st.subheader("A head's queries and keys, step by step (read-only)")
    st.markdown(
        "This model normalises each head's queries and keys (QK-norm: RMSNorm with the head's own gains) before the "
        "rotation, so its q is **not** X·W_q: the step pages cannot edit these heads yet. Here is what the model "
        "does, with its own numbers: q and k after each step, the scores then made from the last."
    )
    heads = [(layer, head) for layer in range(c.n_layers) for head in range(c.n_heads)]
    layer, head = inside.now().qk_head if inside.now().qk_head in heads else (0, 0)
    bind(keys.INSIDE_QK_HEAD, (layer, head))
    st.selectbox("Head", heads, format_func=lambda lh: runs.name(*lh), key=keys.INSIDE_QK_HEAD,
                 on_change=on_value(inside.on_qk_head, keys.INSIDE_QK_HEAD))  # fmt: skip
    with models.LOCK:
        run = m.run(list(now.ids), [ablate(*a) for a in now.ablations])
    s = qk_steps(run, layer, head)
    rows = token_labels(runs.pieces(now.ids))
    cols = min(SHOWN_COLS, c.d_head)
    for name in s.names:
        left, right = st.columns(2, gap="medium")
        for where, which, x in ((left, "q", s.q[name]), (right, f"k (key/value head {s.kv_head + 1})", s.k[name])):
            where.caption(f"{which} {name} · first {cols} of {c.d_head} columns")  # ours: fixed names, numbers
            frame = pd.DataFrame(x[:, :cols], index=rows, columns=dimension_labels("c", cols))
            number_tables.number_table(frame, charts.decimals_for(x[:, :cols], 4), where=where)
    gap = float(np.max(np.abs(s.weights - now.weights[layer, head])))
    turned = "every column" if s.rotated_columns >= c.d_head else f"the first {s.rotated_columns} columns"
    st.caption(
        f"The rotation turns {turned} of q and k. The weights softmax(q kᵀ · {c.scale(layer):.4g}) made from the last "
        f"q and k differ from the model's own by at most {gap:.1e}."
    )
