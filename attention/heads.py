"""Splitting into heads and merging them back: the pure reshapes multi-head attention is built from.

head_i = Attention(X W_q^i, X W_k^i, X W_v^i), where W^i is the i-th block of d_k/h columns of W; the heads are
run and concatenated by :func:`attention.trace.multi_head`.
"""

from __future__ import annotations

import numpy as np

from .errors import AttentionError
from .names import out_axis


def split_heads(x: np.ndarray, h: int) -> np.ndarray:
    """(..., n, d) -> (..., h, n, d/h): head i holds columns i*d/h .. (i+1)*d/h - 1."""
    if h == 1:
        return x[..., None, :, :]  # (..., 1, n, d): a view
    *lead, n, d = x.shape
    if d % h:
        raise AttentionError(f"width {d} does not divide into {h} heads", matrix="heads")
    return np.moveaxis(x.reshape(*lead, n, h, d // h), -2, -3)  # (..., n, h, d/h) -> (..., h, n, d/h)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(..., h, n, d/h) -> (..., n, d): the inverse of :func:`split_heads` (concatenation of heads)."""
    *lead, h, n, dh = x.shape
    if h == 1:
        return x[..., 0, :, :]  # (..., n, d): a view
    return np.moveaxis(x, -3, -2).reshape(*lead, n, h * dh)  # (..., n, h, d/h) -> (..., n, d)


def divisors(h: int) -> list[int]:
    """The divisors of h, ascending: the numbers of key/value heads h query heads can share, and (of gcd(d_k, d_v))
    the numbers of heads a state can be split into."""
    return [g for g in range(1, h + 1) if h % g == 0]


def head_weights(W: np.ndarray, h: int, i: int, projection: str) -> np.ndarray:
    """The block of W that produces head i's columns of Q, K or V."""
    if projection == "x_w":
        dh = W.shape[1] // h
        return W[:, i * dh : (i + 1) * dh]  # (d_model, d_k/h)
    dh = W.shape[0] // h
    return W[i * dh : (i + 1) * dh, :]  # (d_k/h, d_model)


def regroup(W: np.ndarray, h: int, kv_from: int, kv_to: int, projection: str = "x_w") -> np.ndarray:
    """W_k or W_v taken from kv_from key/value blocks to kv_to (both dividing h): each block is first copied to the
    h / kv_from query heads it serves, then each new group of h / kv_to heads keeps the mean of its blocks (the
    GQA paper's conversion of a multi-head model, Ainslie et al. 2023). When kv_to is a multiple of kv_from every
    new group holds copies of one old block and keeps it exactly, so no output changes; otherwise a group mixes
    different blocks (6 heads, 2 -> 3 key/value heads: the middle group has two heads of each old block) and gets
    their mean, an approximation like shrinking.
    (d_model, kv_from · w) -> (d_model, kv_to · w); blocks are rows instead with the projection "x_wt"."""
    ax = out_axis(projection)
    blocks = [b for b in np.split(W, kv_from, axis=ax) for _ in range(h // kv_from)]  # h blocks, one per query head
    size = h // kv_to
    groups = [blocks[i * size : (i + 1) * size] for i in range(kv_to)]
    pooled = [g[0] if all(b is g[0] for b in g) else np.mean(g, axis=0) for g in groups]  # (d_model, w) each
    return np.concatenate(pooled, axis=ax)  # (d_model, kv_to · w)


def kv_block(head: int, heads: int, kv: int) -> int:
    """The key/value block query head ``head`` reads (0-based), with ``heads`` query heads and ``kv`` key/value heads:
    each block serves heads / kv consecutive query heads (``head`` itself when kv == heads)."""
    return head // (heads // kv)


def kind_of(heads: int, kv: int) -> str:
    """Multi-head (MHA), grouped-query (GQA) or multi-query (MQA) attention, for h heads and kv key/value heads."""
    if kv == heads:
        return "multi-head attention (MHA): every query head has its own keys and values"
    if kv == 1:
        return f"multi-query attention (MQA): all {heads} query heads share one key/value head"
    return f"grouped-query attention (GQA): each key/value head serves {heads // kv} query heads"
