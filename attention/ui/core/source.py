"""Cross-attention's inputs from the session: the source sentence's rows of X_kv, and the options that apply to it.

The source's embeddings: a word that is also in the first sentence takes its row of X (so shared words match); any
other word gets a vector drawn from a seed made of its text (the same word always gets the same vector), scaled to
X's spread (:mod:`attention.source`, shared with preset files and exported code). Options follow PyTorch's SDPA
for a rectangular L × S: the causal and window masks are top-left aligned (query i sees keys j <= i); the padding
flags and the custom grid belong to the first sentence (one per query token, n × n) and are left out; learned
positions (a P for one sentence) become none.
"""

from __future__ import annotations

import numpy as np

from ... import source
from ...source import cross_options
from ...trace import Options
from .session import Session

__all__ = ["cross_options", "left_out", "note", "source_rows"]


def source_rows(s: Session, words: tuple[str, ...]) -> np.ndarray:
    """X_kv (S, d_model) for the session's X and tokens (see :func:`attention.source.source_rows`)."""
    return source.source_rows(s.matrices["X"], s.tokens, words)


def left_out(o: Options) -> str:
    """What the session's options ask for that cross-attention leaves out, as a sentence ("" when nothing)."""
    dropped = [p for p in o.mask if p in ("padding", "custom")]
    note = (
        f"The {' and '.join(dropped)} mask belongs to the first sentence (n × n, one flag per query token) and is "
        "left out of cross-attention. "
        if dropped
        else ""
    )
    if o.positions == "learned":
        note += "Learned positions (P) belong to one sentence: cross-attention uses none. "
    return note.strip()


def note(s: Session) -> str:
    """The sidebar's sentence about cross-attention ("" without a source): what it is and what applies."""
    if not s.source:
        return ""
    parts = s.options.mask
    aligned = (
        " The causal and window masks are top-left aligned, as PyTorch's SDPA does for L × S: query i may attend "
        "keys j ≤ i (source positions counted from 0)."
        if "causal" in parts or "window" in parts
        else ""
    )
    return (
        f"Cross-attention: queries from the sentence ({len(s.tokens)} tokens), keys and values from the source "
        f"sentence ({len(s.source)} tokens), set on the Tokens page; every step shows {len(s.tokens)} × "
        f"{len(s.source)} weights.{aligned} {left_out(s.options)}"
    ).strip()
