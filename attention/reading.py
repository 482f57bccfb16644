"""Reading the weights: for each query row, the key it attends to most, the next one, and how spread out it is.

For row i of A: top(i) = argmax_j A_ij; second(i) = the argmax once top(i) is set aside; the entropy
H_i = −Σ_j A_ij log₂ A_ij (0 bits: all on one key; log₂ n bits: spread evenly). A fully masked row (every key
masked, weights all 0) attends to nothing. Computed once per trace (``Trace.reading``), with two argmaxes over
the rows, never a full sort.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Reading:
    """Per query row (shape (n,), or (h, n) with h heads): top key and its weight, second key and its weight,
    entropy in bits, and whether the row is fully masked. ``max_entropy`` is log₂ n."""

    top: np.ndarray
    top_weight: np.ndarray
    second: np.ndarray
    second_weight: np.ndarray
    entropy: np.ndarray
    fully_masked: np.ndarray
    max_entropy: float


def read(w: np.ndarray, allowed: np.ndarray | None = None) -> Reading:
    """The reading of a weights matrix (n, n), or a per-head stack (h, n, n); ``allowed`` is the mask in force."""
    n = w.shape[-1]
    top = np.argmax(w, axis=-1)  # (..., n)
    top_weight = np.take_along_axis(w, top[..., None], axis=-1)[..., 0]  # (..., n)
    rest = w.copy()
    np.put_along_axis(rest, top[..., None], -np.inf, axis=-1)
    second = np.argmax(rest, axis=-1) if n > 1 else top  # (..., n)
    second_weight = np.take_along_axis(w, second[..., None], axis=-1)[..., 0] if n > 1 else np.zeros_like(top_weight)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(w > 0, w * np.log2(w), 0.0), axis=-1)  # bits; 0 · log 0 counts as 0
    fully_masked = ~(w > 0).any(axis=-1) if allowed is None else ~np.broadcast_to(allowed, w.shape).any(axis=-1)
    return Reading(top, top_weight, second, second_weight, entropy, fully_masked, float(np.log2(n)) if n > 1 else 0.0)
