"""Cross-attention on the Tokens page: a second sentence (the source) gives the keys and values, the first the queries.

The source's embeddings: a word that is also in the first sentence takes its row of X (so shared words match); any
other word gets a vector drawn from a seed made of its text (the same word always gets the same vector), scaled to
X's spread (:mod:`attention.ui.core.source`). The session's trace is then cross-attention on every step page; this
view shows its weights and output beside the sentence.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts, names
from ...errors import AttentionError
from ...trace import Trace
from ..core import compute, keys, session
from ..core.shown import per_head
from ..core.source import left_out, source_rows
from ..state import family
from ..widgets import number_tables
from ..widgets.chart_files import chart_files
from ..widgets.common import bind, show_messages, vega_chart
from .steps import show_error

__all__ = ["source", "source_rows", "cross_trace"]


def cross_trace(s: session.Session, words: tuple[str, ...]) -> Trace | AttentionError:
    """The cross-attention of the session's sentence (queries) over ``words`` (keys and values): the session's
    trace when ``words`` is its source (see :func:`attention.ui.core.compute.session_trace`)."""
    return compute.current_trace(s if words == s.source else replace(s, source=words))


def source(s: session.Session) -> None:
    """The source sentence box and, when it has words, the cross-attention heatmap and output."""
    words = s.source
    key = keys.cross_source(s.grids)
    bind(key, " ".join(words), once=True)
    st.text_input(
        "Source sentence for cross-attention (optional: keys and values come from it)",
        key=key,
        on_change=lambda: family.set_source(st.session_state[key], (names.MAX_TOKENS, names.MAX_TOKEN_CHARS)),
        help="Cross-attention, as a translation model's decoder reads its source: each token of the sentence above "
        "asks (its query) and the source's tokens answer (their keys and values). Leave empty for self-attention.",
    )
    show_messages("cross.source")
    if not words:
        return
    t = cross_trace(s, words)
    if not isinstance(t, Trace):
        show_error(t)
        return
    src = names.token_labels(words)
    st.caption(
        f"Queries: the {len(s.tokens)} tokens above; keys and values: the {len(words)} source tokens. A source word "
        "that is also in the sentence uses its row of X; any other gets its own vector, drawn from its text. Every "
        "step page now shows this cross-attention (queries × source keys)."
        + (f" {left_out(s.options)}" if left_out(s.options) else "")
    )
    weights = per_head(t.weights)[0]  # (L, S): head 1
    title = "Cross-attention weights" + (" (head 1)" if t.options.heads > 1 else "") + ": queries × source keys"
    spec = charts.heatmap(weights, s.labels, src, charts.Style(kind="weights", title=title, digits=s.digits), t.allowed)
    vega_chart(spec, width="content")
    chart_files(spec, f"{s.preset_id}_cross_weights", "cross.weights")
    out = np.asarray(names.squeeze_batch(t.output))  # (L, d_out)
    st.markdown("**Cross-attention output** (one row per query token; each mixes the source's values)")
    columns = s.axis_labels("output", out.shape)[1]  # v1.., or o1.. through a model head's W_o
    number_tables.number_table(
        pd.DataFrame(out[:, :16], index=s.labels, columns=columns[:16]), charts.decimals_for(out, s.digits)
    )
    if out.shape[1] > 16:
        st.caption(f"The first 16 of its {out.shape[1]} columns; the zip download has output.csv in full.")
