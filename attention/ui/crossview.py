"""Cross-attention on the Tokens page: a second sentence (the source) gives the keys and values, the first the queries.

The source's embeddings: a word that is also in the first sentence takes its row of X (so shared words match); any
other word gets a vector drawn from a seed made of its text (the same word always gets the same vector), scaled to
X's spread. The engine's :func:`attention.cross_attention` does the rest with the current W_q, W_k, W_v and options
(masks that belong to one sentence, padding and a custom grid, are left out).
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import streamlit as st

from .. import charts, masks, names
from ..errors import AttentionError
from ..trace import Trace, cross_attention
from . import frames, session, state, views
from .arrays import per_head
from .widgets import show_messages


def source_rows(s: session.Session, words: tuple[str, ...]) -> np.ndarray:
    """X_kv (S, d_model): each source word's row of X where the first sentence has it, else its own drawn vector."""
    X = np.asarray(names.squeeze_batch(s.matrices["X"]), dtype=np.float64)  # (n, d_model)
    spread = float(X.std()) or 1.0
    rows = []
    for w in words:
        if w in s.tokens:
            rows.append(X[s.tokens.index(w)])  # (d_model,)
        else:
            rng = np.random.default_rng([s.seed or 0, zlib.crc32(w.encode("utf-8"))])
            rows.append(rng.standard_normal(X.shape[1]) * spread)  # (d_model,)
    return np.array(rows)  # (S, d_model)


def cross_trace(s: session.Session, words: tuple[str, ...]) -> Trace | AttentionError:
    """The cross-attention of the session's sentence (queries) over ``words`` (keys and values)."""
    o = s.options
    kept = [p for p in masks.parts(o.mask) if p in ("causal", "window")]
    opts = o.replace(mask=masks.join(kept), padding=(), custom_mask=())
    if opts.positions == "learned":
        opts = opts.replace(positions="none")
    m = s.matrices
    try:
        return cross_attention(
            names.squeeze_batch(m["X"]),
            source_rows(s, words),
            m["W_q"],
            m["W_k"],
            m["W_v"],
            opts,
            W_o=m.get("W_o"),
            tokens=s.tokens,
            tokens_kv=words,
        )
    except AttentionError as exc:
        return exc


def source(s: session.Session) -> None:
    """The source sentence box and, when it has words, the cross-attention heatmap and output."""
    words = s.source
    key = f"cross.source.{s.grids}"
    if key not in st.session_state:
        st.session_state[key] = " ".join(words)
    st.text_input(
        "Source sentence for cross-attention (optional: keys and values come from it)",
        key=key,
        on_change=lambda: state.set_source(st.session_state[key], (names.MAX_TOKENS, names.MAX_TOKEN_CHARS)),
        help="Cross-attention, as a translation model's decoder reads its source: each token of the sentence above "
        "asks (its query) and the source's tokens answer (their keys and values). Leave empty for self-attention.",
    )
    show_messages("cross.source")
    if not words:
        return
    t = cross_trace(s, words)
    if not isinstance(t, Trace):
        views.show_error(t)
        return
    src = names.token_labels(words)
    left_out = [p for p in masks.parts(s.options.mask) if p in ("padding", "custom")]
    st.caption(
        f"Queries: the {len(s.tokens)} tokens above; keys and values: the {len(words)} source tokens. A source word "
        "that is also in the sentence uses its row of X; any other gets its own vector, drawn from its text."
        + (f" The {' and '.join(left_out)} mask belongs to one sentence and is left out here." if left_out else "")
        + (" Learned positions belong to one sentence: none here." if s.options.positions == "learned" else "")
    )
    weights = per_head(t.weights)[0]  # (L, S): head 1
    spec = charts.heatmap_spec(
        weights,
        s.labels,
        src,
        kind="weights",
        title="Cross-attention weights" + (" (head 1)" if t.options.heads > 1 else "") + ": queries × source keys",
        allowed=t.allowed,
        digits=s.digits,
    )
    st.vega_lite_chart(spec, width="content")
    out = np.asarray(names.squeeze_batch(t.output))  # (L, d_out)
    st.markdown("**Cross-attention output** (one row per query token; each mixes the source's values)")
    frames.number_table(
        pd.DataFrame(out[:, :16], index=s.labels, columns=names.dimension_labels("v", min(out.shape[1], 16))),
        charts.decimals_for(out, s.digits),
    )
