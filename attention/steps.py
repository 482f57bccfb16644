"""One small pure function per step of scaled dot-product attention.

Shapes use n = tokens, d_model = embedding width, d_k = query/key width, d_v = value width; every
function also accepts leading batch dimensions (written ``...``) and uses ``@``, which batches
correctly (``np.dot`` on 3-D arrays does not: see :mod:`attention.shapes`).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .errors import AttentionError
from .names import SOFTMAX_WORDS

Projection = Literal["x_w", "x_wt"]
SoftmaxVariant = Literal["row_max", "global_max", "none"]  # names.SOFTMAX_VARIANTS, spelled out for type checkers

# exp(x) overflows float64 above this, and is exactly 0 below -745.13.
EXP_MAX = float(np.log(np.finfo(np.float64).max))  # 709.78...


def project(X: np.ndarray, W: np.ndarray, projection: Projection = "x_w") -> np.ndarray:
    """Q, K or V from embeddings: ``X @ W`` (W is d_model × d_k) or ``X @ W.T`` (W is d_k × d_model)."""
    return X @ (W if projection == "x_w" else W.T)  # (..., n, d_model) @ (d_model, d_k) -> (..., n, d_k)


def rms_norm(x: np.ndarray, gains: np.ndarray, eps: float) -> np.ndarray:
    """QK-norm (Qwen3, Gemma 3): each row of one head's q or k divided by its root mean square, then scaled per
    column, x / √(mean(x²) + ε) · g. (..., n, d) -> (..., n, d)."""
    mean_square = np.mean(x * x, axis=-1, keepdims=True)  # (..., n, 1)
    return x / np.sqrt(mean_square + eps) * gains  # (..., n, d)


def scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Raw scores: entry (i, j) is the dot product of query i with key j."""
    return Q @ np.swapaxes(K, -1, -2)  # (..., n, d_k) @ (..., d_k, n) -> (..., n, n)


def default_scale(d_k: int) -> float:
    """PyTorch's default: 1/√d_k, which keeps the scores' variance near 1 for unit-variance Q and K."""
    return 1.0 / float(np.sqrt(d_k))


def scale(S: np.ndarray, factor: float, out: np.ndarray | None = None) -> np.ndarray:
    """Multiply every score by ``factor`` (1/√d_k by default; 1 means no scaling); into ``out`` when given (S
    itself: in place)."""
    return np.multiply(S, factor, out=out)  # (..., n, n)


def mask(
    S: np.ndarray, allowed: np.ndarray | None = None, additive: np.ndarray | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Apply masks to scaled scores: a boolean ``allowed`` sets forbidden cells to -inf; a float
    ``additive`` mask is added (PyTorch's float attn_mask). Returns ``S`` itself when there is no mask; with
    ``out`` (S itself: in place), the masked scores are written there and it is returned."""
    if out is not None:
        if additive is not None:
            np.add(S, additive, out=out)  # (..., n, n)
        elif out is not S:
            np.copyto(out, S)
        if allowed is not None:
            np.copyto(out, -np.inf, where=~allowed)  # (..., n, n)
        return out
    if additive is not None:
        S = S + additive  # (..., n, n)
    if allowed is not None:
        S = np.where(allowed, S, -np.inf)  # (..., n, n)
    return S


def softmax(
    x: np.ndarray, variant: SoftmaxVariant = "row_max", rows: list[str] | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Row-wise softmax over the last axis: ``exp(x - m) / sum(exp(x - m))``.

    ``variant`` chooses m: ``"row_max"`` (each row's own max; never overflows, the default and what the
    'I am Batman', 'The cat sat' and 'Random, seed 42' examples compute), ``"global_max"`` (the max of the whole
    matrix: a row far below it underflows to 0/0), or ``"none"`` (m = 0, the 'She likes coffee' example: exp
    overflows above 709.78).
    The unsafe variants raise AttentionError naming the row instead of returning NaN.

    A row whose entries are all -inf (fully masked) gets all-zero weights, not NaN, as PyTorch's
    safe softmax does; its output row is then 0.

    ``out`` (x itself: in place) receives the weights when nothing can fail (the row max subtracted, every row's
    max finite: each row then sums to at least 1); otherwise a new array is returned as without it.
    """
    if variant == "row_max":
        m = x.max(axis=-1, keepdims=True)  # (..., n, 1)
    elif variant == "global_max":
        m = x.max(axis=(-2, -1), keepdims=True) if x.ndim >= 2 else x.max(keepdims=True)  # (..., 1, 1)
    elif variant == "none":
        m = np.zeros((1,) * x.ndim)
    else:
        raise AttentionError(f"softmax variant must be 'row_max', 'global_max' or 'none'; got {variant!r}")
    finite = np.isfinite(m)  # (..., n, 1)
    safe = out is not None and variant == "row_max" and bool(finite.all())  # then no row can fail: x may be overwritten
    m = m if safe else np.where(finite, m, 0.0)  # a fully masked row has max -inf: use 0 so exp(-inf) = 0
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        e = np.subtract(x, m, out=out if safe else None)  # (..., n, n): exp and the division then work in place
        np.exp(e, out=e)
    total = e.sum(axis=-1, keepdims=True)  # (..., n, 1)
    ok = (total > 0) & np.isfinite(total)
    if ok.all():
        e /= total
        return e  # (..., n, n)
    _raise_for_rows(x, m, total, ok, variant, rows)
    return np.divide(e, total, out=np.zeros_like(e), where=ok)  # fully masked rows -> 0


def _raise_for_rows(
    x: np.ndarray, m: np.ndarray, total: np.ndarray, ok: np.ndarray, variant: str, rows: list[str] | None
) -> None:
    """Raise for the first row that over- or underflowed; fully masked rows are allowed through."""
    flat_x = x.reshape(-1, x.shape[-1])
    flat_total = total.reshape(-1)
    for r in np.flatnonzero(~ok.reshape(-1)):
        row = flat_x[r]
        if np.isneginf(row).all():
            continue  # fully masked: weights 0 by definition
        i = int(r % x.shape[-2]) if x.ndim >= 2 else 0
        name = f"row {i + 1}" + (f" ({rows[i]!r})" if rows and i < len(rows) else "")
        said = SOFTMAX_WORDS[variant].aside  # "row max subtracted"...
        live = row[~np.isneginf(row)]  # the cells not masked out
        if not np.isfinite(live).all():
            j = int(np.flatnonzero(~np.isneginf(row) & ~np.isfinite(row))[0])
            raise AttentionError(
                f"softmax ({said}) cannot weigh {name}: the score in column {j + 1} is {row[j]} "
                "(the scaled scores are too large for 64-bit floats). Use smaller values, a smaller scale or a "
                "higher temperature.",
                matrix="weights",
                cell=(i, j),
            )
        finite = live
        hi, lo = float(finite.max()), float(finite.min())
        shift = float(np.broadcast_to(m, x.shape).reshape(-1, x.shape[-1])[r, 0])
        if not np.isfinite(flat_total[r]):
            raise AttentionError(
                f"softmax ({said}) overflows on {name}: the largest score there is {hi:.6g}, "
                f"and exp({hi - shift:.6g}) is infinite (float64 overflows above exp({EXP_MAX:.2f})). "
                "Subtract the row max (the default variant) or use smaller values.",
                matrix="weights",
                cell=(i, int(np.argmax(row))),
            )
        raise AttentionError(
            f"softmax ({said}) underflows on {name}: every score there (at most {hi:.6g}, "
            f"at least {lo:.6g}) is so far below the subtracted value {shift:.6g} that every exp() is 0, and 0/0 "
            "is NaN. Subtract each row's own max (the default variant) instead.",
            matrix="weights",
            cell=(i, int(np.argmax(row))),
        )


def weighted_sum(weights: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Output row i is the weights of row i mixing the value vectors."""
    return weights @ V  # (..., n, n) @ (..., n, d_v) -> (..., n, d_v)
