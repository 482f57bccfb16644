"""The Q·K·V page's rotation step: with rotary positions, Q and K are X·W turned by position (RoPE), and the page says
so, with q and k before the rotation beside the columns it turns.

The rotation turns each head's first r columns in pairs (r = rotary_dims: every column, or a share as GPT-NeoX
does) by an angle that grows with the token's position; the other columns pass unchanged. The scores use the turned
Q and K, so the page shows both: Q_raw = X·W_q (before) and Q (after), as the trace computed them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...names import dimension_labels, token_labels
from ...trace import Trace
from ..core import session
from ..widgets import number_tables

SHOWN_COLS, ROWS = 8, 64  # the part of q and k shown before the rotation (the zip download has them all)


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
    st.markdown(
        f"**The rotation (RoPE).** Q and K above are X·W_q and X·W_k **after** the rotation: each row is turned by "
        f"an angle that grows with its token's position, on {which}, so that q·k depends on how far apart the two "
        "tokens are. The scores use these turned rows. Before the rotation:"
    )
    rows = token_labels(list(s.tokens))[:ROWS]
    cols = min(SHOWN_COLS, width)
    whose = "head 1's " if o.heads > 1 else ""
    left, right = st.columns(2, gap="medium")
    for where, name, m in ((left, "Q", trace.Q_raw), (right, "K", trace.K_raw)):
        m = np.asarray(m)
        m = (m[0] if m.ndim == 3 else m)[: len(rows), :cols]  # (≤ 64, ≤ 8): batch item 1, head 1's first columns
        where.caption(f"{name} before the rotation (X·W_{name.lower()}) · {whose}first {cols} columns")  # ours
        frame = pd.DataFrame(m, index=rows, columns=dimension_labels("c", cols))
        number_tables.number_table(frame, charts.decimals_for(m, s.digits), where=where)
