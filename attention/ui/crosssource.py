"""Cross-attention's inputs from the session: the source sentence's rows of X_kv, and the options that apply to it.

The source's embeddings: a word that is also in the first sentence takes its row of X (so shared words match); any
other word gets a vector drawn from a seed made of its text (the same word always gets the same vector), scaled to
X's spread. Options follow PyTorch's SDPA for a rectangular L × S: the causal and window masks are top-left aligned
(query i sees keys j <= i); the padding flags and the custom grid belong to the first sentence (one per query
token, n × n) and are left out; learned positions (a P for one sentence) become none.
"""

from __future__ import annotations

import zlib

import numpy as np

from .. import masks, names
from ..trace import Options
from .session import Session


def source_rows(s: Session, words: tuple[str, ...]) -> np.ndarray:
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
    return np.array(rows).reshape(len(words), X.shape[1])  # (S, d_model)


def cross_options(o: Options) -> Options:
    """The options cross-attention runs with: causal and window kept (top-left aligned, as torch SDPA's is_causal
    for L × S), padding and the custom grid left out, learned positions switched to none."""
    kept = [p for p in masks.parts(o.mask) if p in ("causal", "window")]
    opts = o.replace(mask=masks.join(kept), padding=(), custom_mask=())
    return opts.replace(positions="none") if opts.positions == "learned" else opts


def left_out(o: Options) -> str:
    """What the session's options ask for that cross-attention leaves out, as a sentence ("" when nothing)."""
    dropped = [p for p in masks.parts(o.mask) if p in ("padding", "custom")]
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
    parts = masks.parts(s.options.mask)
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
