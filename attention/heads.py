"""Splitting into heads and merging them back: the pure reshapes multi-head attention is built from.

head_i = Attention(X W_q^i, X W_k^i, X W_v^i), where W^i is the i-th block of d_k/h columns of W; the heads are
run and concatenated by :func:`attention.trace.multi_head`.
"""

from __future__ import annotations

import numpy as np

from .errors import AttentionError


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


def head_weights(W: np.ndarray, h: int, i: int, projection: str) -> np.ndarray:
    """The block of W that produces head i's columns of Q, K or V."""
    if projection == "x_w":
        dh = W.shape[1] // h
        return W[:, i * dh : (i + 1) * dh]  # (d_model, d_k/h)
    dh = W.shape[0] // h
    return W[i * dh : (i + 1) * dh, :]  # (d_k/h, d_model)
