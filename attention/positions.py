"""Word order: sinusoidal or learned positions added to X, and rotary positions (RoPE) applied to Q and K.

Attention alone cannot see order: permute the tokens and the outputs are the same rows permuted. Sinusoidal
positions ("Attention is all you need", section 3.5) add PE to each row of X:

    PE[pos, 2i] = sin(pos / 10000^(2i/d_model)),   PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model)).

Learned positions add a matrix P (n, d_model) of free parameters instead. Rotary positions (RoPE, Su et al. 2021)
turn each pair of columns (2i, 2i+1) of a query or key at position pos by the angle θ = pos · base^(−2i/d), within
each head, so q·k depends on the two positions only through their offset. Checkpoints vary this (:func:`rotate`):
the base θ, the pairs (i, i + r/2) instead of (2i, 2i+1) (Hugging Face's ``rotate_half``), only the first r columns
of each head (GPT-NeoX's ``rotary_pct``), and frequencies stretched for longer contexts (:func:`scaled_frequencies`).

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


LAYOUTS = ("interleaved", "halves")  # which columns are turned together: (2i, 2i+1), or (i, i + r/2)
SCALINGS = ("none", "linear", "llama3")  # how the frequencies are stretched for a longer context


def frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """The turning speed of each column pair, (d // 2,): ω_i = base^(−2i/d); at position pos pair i turns by
    pos · ω_i."""
    return np.power(base, -np.arange(0, d - d % 2, 2) / d)  # (d//2,)


def scaled_frequencies(
    omega: np.ndarray, kind: str, factor: float = 1.0, low: float = 1.0, high: float = 4.0, context: int = 8192
) -> np.ndarray:
    """The frequencies stretched for a longer context, as Hugging Face's ``rope_scaling`` does (d // 2,):

    - "none": ω as it is;
    - "linear": ω / factor (position interpolation: every position counts as pos / factor);
    - "llama3": pairs whose wavelength 2π/ω is shorter than context/high keep ω, those longer than context/low get
      ω / factor, and those in between mix the two, (1 − s) ω / factor + s ω with s = (context/λ − low)/(high − low).
    """
    if kind == "none":
        return omega
    if kind == "linear":
        return omega / factor
    wavelength = 2 * np.pi / omega  # (d//2,)
    s = (context / wavelength - low) / (high - low)  # (d//2,): 0 at the long end of the band, 1 at the short end
    between = (1 - s) * omega / factor + s * omega  # (d//2,)
    return np.where(wavelength < context / high, omega, np.where(wavelength > context / low, omega / factor, between))


def angles(n: int, d: int, base: float = 10000.0) -> np.ndarray:
    """The rotation angle of each position and column pair: (n, d // 2), θ[pos, i] = pos · base^(−2i/d)."""
    return np.arange(n)[:, None] * frequencies(d, base)[None, :]  # (n, d//2)


def rotary(x: np.ndarray, base: float = 10000.0, inverse: bool = False) -> np.ndarray:
    """x (..., n, d) with each column pair (2i, 2i+1) of row pos turned by θ = ``angles(n, d)[pos, i]``:

        (x_2i, x_2i+1) -> (x_2i cos θ − x_2i+1 sin θ, x_2i sin θ + x_2i+1 cos θ).

    With an odd d the last column is left as it is. Norms are kept; (R_i q)·(R_j k) depends only on j − i.
    ``inverse=True`` turns by −θ (the transpose of the rotation: what the backward pass applies)."""
    return rotate(x, frequencies(x.shape[-1], base), inverse=inverse)


def rotate(
    x: np.ndarray, omega: np.ndarray, start: int = 0, layout: str = "interleaved", inverse: bool = False
) -> np.ndarray:
    """x (..., n, d) with row k, at position start + k, turned by θ_i = (start + k) · ω_i on its column pairs: the
    pairs (2i, 2i+1) ("interleaved", the paper's) or (i, i + r/2) ("halves", Hugging Face's ``rotate_half``), where
    r = 2 · len(ω) ≤ d; columns r .. d − 1 are left as they are (a partial rotation, GPT-NeoX's ``rotary_pct``):

        (a, b) -> (a cos θ − b sin θ, a sin θ + b cos θ).

    cos and sin are computed in float64 and rounded to x's dtype. ``inverse=True`` turns by −θ."""
    n, r = x.shape[-2], 2 * len(omega)
    theta = np.arange(start, start + n)[:, None] * omega[None, :]  # (n, r/2)
    cos, sin = np.cos(theta).astype(x.dtype), np.sin(theta).astype(x.dtype)  # (n, r/2) each
    if inverse:
        sin = -sin
    first, second = (
        (slice(0, r, 2), slice(1, r, 2)) if layout == "interleaved" else (slice(0, r // 2), slice(r // 2, r))
    )
    a, b = x[..., first], x[..., second]  # (..., n, r/2) each
    out = x.copy()
    out[..., first] = a * cos - b * sin  # (..., n, r/2)
    out[..., second] = a * sin + b * cos  # (..., n, r/2)
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
