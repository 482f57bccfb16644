"""Multi-head attention: split d_k and d_v into h heads, attend per head, concatenate, optionally mix.

head_i = Attention(X W_q^i, X W_k^i, X W_v^i), where W^i is the i-th block of d_k/h columns of W;
MultiHead(X) = Concat(head_1, ..., head_h) W_o (W_o optional, d_v × d_out).
Each head scales by 1/√(d_k/h) unless a scale is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from .errors import AttentionError, as_matrix
from .trace import Options, Trace, check_inputs, run_steps


def split_heads(x: np.ndarray, h: int) -> np.ndarray:
    """(..., n, d) -> (..., h, n, d/h): head i holds columns i*d/h .. (i+1)*d/h - 1."""
    *lead, n, d = x.shape
    if d % h:
        raise AttentionError(f"width {d} does not divide into {h} heads", matrix="heads")
    return np.moveaxis(x.reshape(*lead, n, h, d // h), -2, -3)  # (..., n, h, d/h) -> (..., h, n, d/h)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(..., h, n, d/h) -> (..., n, d): the inverse of :func:`split_heads` (concatenation of heads)."""
    *lead, h, n, dh = x.shape
    return np.moveaxis(x, -3, -2).reshape(*lead, n, h * dh)  # (..., n, h, d/h) -> (..., n, d)


def head_weights(W: np.ndarray, h: int, i: int, projection: str) -> np.ndarray:
    """The block of W that produces head i's columns of Q, K or V."""
    if projection == "x_w":
        dh = W.shape[1] // h
        return W[:, i * dh:(i + 1) * dh]  # (d_model, d_k/h)
    dh = W.shape[0] // h
    return W[i * dh:(i + 1) * dh, :]  # (d_k/h, d_model)


@dataclass(frozen=True)
class MultiHeadTrace:
    """Per-head traces, their concatenation, and the final output.

    ``heads[i]`` is a full Trace for head i; ``concat`` is (..., n, d_v); ``output`` is concat @ W_o
    (or concat when W_o is None). ``combined`` is one Trace over all heads: Q, K, V full width,
    scores/scaled/weights stacked as (..., h, n, n), output the final output.
    """

    heads: tuple[Trace, ...]
    concat: np.ndarray
    W_o: np.ndarray | None
    output: np.ndarray
    combined: Trace


def multi_head(X: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray, options: Options, *,
               W_o: object = None, tokens: Sequence[str] | None = None, attn_mask: np.ndarray | None = None) -> MultiHeadTrace:
    """Multi-head attention with ``options.heads`` heads; inputs are validated here too."""
    options.validate()
    X, W_q, W_k, W_v = check_inputs(X, W_q, W_k, W_v, options, tokens)
    h = options.heads
    per_head = tuple(
        run_steps(X, *(head_weights(W, h, i, options.projection) for W in (W_q, W_k, W_v)), options, tokens=tokens, attn_mask=attn_mask)
        for i in range(h)
    )
    concat = np.concatenate([t.output for t in per_head], axis=-1)  # (..., n, d_v)
    W_o_arr = None
    output = concat
    if W_o is not None:
        W_o_arr = as_matrix("W_o", W_o)
        if W_o_arr.shape[0] != concat.shape[-1]:
            raise AttentionError(f"W_o has {W_o_arr.shape[0]} rows but the heads concatenate to width {concat.shape[-1]}", matrix="W_o")
        output = concat @ W_o_arr  # (..., n, d_v) @ (d_v, d_out) -> (..., n, d_out)

    def stack(name: str) -> np.ndarray:
        return np.stack([getattr(t, name) for t in per_head], axis=-3)  # (..., h, n, n)

    first = per_head[0]
    combined = replace(
        first, W_q=W_q, W_k=W_k, W_v=W_v,
        Q=np.concatenate([t.Q for t in per_head], axis=-1), K=np.concatenate([t.K for t in per_head], axis=-1),
        V=np.concatenate([t.V for t in per_head], axis=-1),
        scores=stack("scores"), scaled=stack("scaled"), weights=stack("weights"), output=output,
    )
    return MultiHeadTrace(per_head, concat, W_o_arr, output, combined)
