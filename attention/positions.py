"""Word order: sinusoidal or learned positions added to X, and rotary positions (RoPE) applied to Q and K.

Attention alone cannot see order: permute the tokens and the outputs are the same rows permuted. Sinusoidal
positions ("Attention is all you need", section 3.5) add PE to each row of X:

    PE[pos, 2i] = sin(pos / 10000^(2i/d_model)),   PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model)).

Learned positions add a matrix P (n, d_model) of free parameters instead. Rotary positions (RoPE, Su et al. 2021)
turn each pair of columns (2i, 2i+1) of a query or key at position pos by the angle θ = pos · base^(−2i/d), within
each head, so q·k depends on the two positions only through their offset.

ALiBi (Press et al. 2022, "Train short, test long") adds nothing to X, Q or K: each head h adds a fixed linear
bias −m_h · (i − j) to the scaled score of query i and key j, so a key d tokens back loses m_h · d. The slopes
m_h are a geometric sequence, steeper for the first heads (see :func:`alibi_slopes`).
"""

from __future__ import annotations

import numpy as np

KINDS = ("none", "sinusoidal", "learned", "rotary", "alibi")
ADDED = ("sinusoidal", "learned")  # the kinds that add a matrix to X (rotary turns Q and K instead)


def sinusoidal(n: int, d_model: int) -> np.ndarray:
    """PE (n, d_model): column 2i is sin(pos / 10000^(2i/d_model)), column 2i+1 the cosine of the same angle.
    With an odd d_model the last column is a sine with no cosine partner (its angle uses 2i = d_model − 1)."""
    pos = np.arange(n)[:, None]  # (n, 1)
    i2 = np.arange(0, d_model, 2)[None, :]  # (1, ceil(d/2)): the even column indices 2i
    angle = pos / np.power(10000.0, i2 / d_model)  # (n, ceil(d/2))
    pe = np.zeros((n, d_model))
    pe[:, 0::2] = np.sin(angle)  # (n, ceil(d/2))
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])  # (n, floor(d/2))
    return pe


def angles(n: int, d: int, base: float = 10000.0) -> np.ndarray:
    """The rotation angle of each position and column pair: (n, d // 2), θ[pos, i] = pos · base^(−2i/d)."""
    return np.arange(n)[:, None] * np.power(base, -np.arange(0, d - d % 2, 2)[None, :] / d)  # (n, d//2)


def rotary(x: np.ndarray, base: float = 10000.0, inverse: bool = False) -> np.ndarray:
    """x (..., n, d) with each column pair (2i, 2i+1) of row pos turned by θ = ``angles(n, d)[pos, i]``:

        (x_2i, x_2i+1) -> (x_2i cos θ − x_2i+1 sin θ, x_2i sin θ + x_2i+1 cos θ).

    With an odd d the last column is left as it is. Norms are kept; (R_i q)·(R_j k) depends only on j − i.
    ``inverse=True`` turns by −θ (the transpose of the rotation: what the backward pass applies)."""
    n, d = x.shape[-2:]
    theta = angles(n, d, base)  # (n, d//2)
    cos, sin = np.cos(theta), np.sin(theta)  # (n, d//2)
    if inverse:
        sin = -sin
    even, odd = x[..., 0 : d - d % 2 : 2], x[..., 1 : d - d % 2 : 2]  # (..., n, d//2) each
    out = x.copy()
    out[..., 0 : d - d % 2 : 2] = even * cos - odd * sin  # (..., n, d//2)
    out[..., 1 : d - d % 2 : 2] = even * sin + odd * cos  # (..., n, d//2)
    return out


def _power_of_two_slopes(h: int) -> list[float]:
    """2^(−8/h), 2^(−16/h), …, 2^(−8): the paper's slopes when h is a power of two."""
    start = 2.0 ** (-8.0 / h)
    return [start ** (k + 1) for k in range(h)]


def alibi_slopes(h: int) -> np.ndarray:
    """The ALiBi slope of each head, (h,). For h a power of two: the geometric sequence that starts at
    2^(−8/h) with that same ratio (h = 8: 1/2, 1/4, …, 1/256). For other h, the paper's rule (its reference code):
    the slopes for the power of two p just below h, then every other slope of the sequence for 2p, until h
    (h = 6: the 4 slopes 2^−2, 2^−4, 2^−6, 2^−8, then 2^−1 and 2^−3)."""
    if h & (h - 1) == 0:
        return np.array(_power_of_two_slopes(h))  # (h,)
    p = 2 ** int(np.floor(np.log2(h)))
    return np.array(_power_of_two_slopes(p) + _power_of_two_slopes(2 * p)[0::2][: h - p])  # (h,)


def alibi_bias(slope: float, n_queries: int, n_keys: int | None = None) -> np.ndarray:
    """One head's ALiBi bias (L, S): −slope · (i − j) for query i and key j, added to the scaled scores.
    Keys before the query lose slope per token of distance; the query's own key gets 0. (Without a causal
    mask, keys after the query get +slope · (j − i): the formula as written, as the paper applies it only causally.)"""
    n_keys = n_queries if n_keys is None else n_keys
    offset = np.arange(n_queries)[:, None] - np.arange(n_keys)[None, :]  # (L, S): i − j
    return -float(slope) * offset  # (L, S)
