"""Cross-attention's source sentence as numbers: the rows of X_kv for its words, and the options that apply.

The options are those of a rectangular L × S attention; the dashboard, preset files and exported code share this
module, so they agree bit for bit.

A source word that is also in the first sentence takes its row of X (so shared words match); any other word gets a
vector drawn from a seed made of its text alone (the same word always gets the same vector), scaled to X's spread.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from .names import squeeze_batch
from .options import Options


def source_rows(X: np.ndarray, tokens: Sequence[str], words: Sequence[str]) -> np.ndarray:
    """X_kv (S, d_model), or (1, S, d_model) for a batch of one: each word's row of X where ``tokens`` has it, else
    standard normal draws seeded by the word's CRC-32, times X's standard deviation (1 when X is all equal)."""
    X2 = np.asarray(squeeze_batch(np.asarray(X, dtype=np.float64)))  # (n, d_model)
    spread = float(X2.std()) or 1.0
    tokens = list(tokens)
    rows = [
        X2[tokens.index(w)]
        if w in tokens  # (d_model,)
        else np.random.default_rng(zlib.crc32(w.encode("utf-8"))).standard_normal(X2.shape[1]) * spread
        for w in words
    ]
    out = np.array(rows, dtype=np.float64).reshape(len(words), X2.shape[1])  # (S, d_model)
    return out.reshape(np.shape(X)[:-2] + out.shape)


def cross_options(o: Options) -> Options:
    """The options cross-attention runs with, PyTorch SDPA's semantics for L × S: the causal and window masks kept
    (top-left aligned: query i sees keys j ≤ i), the padding flags and the custom grid left out (they are one per
    query token, n × n), learned positions (a P for one sequence) switched to none."""
    kept = tuple(p for p in o.mask if p in ("causal", "window"))
    opts = o.replace(mask=kept, padding=(), custom_mask=())
    return opts.replace(positions="none") if opts.positions == "learned" else opts
