"""Why √d_k: score variance, the largest weight, entropy and the softmax gradient as d_k grows, scaled or not.

In prose: for q, k in R^{d_k} with independent unit-variance entries, q·k is a sum of d_k terms of variance 1,
so Var(q·k) = d_k. Unscaled, the scores spread as √d_k and softmax saturates: the largest weight goes to 1,
the row entropy to 0 bits, and the softmax Jacobian J = diag(a) − a aᵀ to 0, so almost no gradient flows back.
Multiplying by 1/√d_k keeps Var = 1 for every d_k, and with it the weights, the entropy and the gradient.

Everything here runs the engine's own steps (:func:`steps.scores`, :func:`steps.scale`, :func:`steps.softmax`)
and its reading (top weight and entropy per row). Results are plain numpy arrays in small dataclasses; a page
turns :meth:`SqrtDkCurves.long` into a DataFrame for Altair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import steps
from ..errors import AttentionError
from ..names import is_whole
from ..reading import read
from ..trace import Trace

DIMS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)  # powers of 2 and the halves between
MAX_DIM, MAX_N, MAX_SEEDS = 4096, 1024, 256
SCALINGS = ("scaled by 1/√d_k", "not scaled")  # the two lines of every chart


@dataclass(frozen=True)
class SqrtDkCurves:
    """Means over ``seeds`` draws of n × d_k standard-normal Q and K, one entry per d_k (shape (m,) each).

    var_*: variance of the score entries; max_weight_*: mean over rows of the largest softmax weight;
    entropy_*: mean row entropy in bits (log₂ n is the most, all weights equal); jacobian_*: mean over rows of
    ‖diag(a) − a aᵀ‖_F, the size of the gradient through softmax. ``_raw`` is unscaled QKᵀ, ``_scaled`` is QKᵀ/√d_k.
    """

    d_k: np.ndarray
    var_raw: np.ndarray
    var_scaled: np.ndarray
    max_weight_raw: np.ndarray
    max_weight_scaled: np.ndarray
    entropy_raw: np.ndarray
    entropy_scaled: np.ndarray
    jacobian_raw: np.ndarray
    jacobian_scaled: np.ndarray
    n: int
    seeds: int
    seed: int

    @property
    def max_entropy(self) -> float:
        """log₂ n: the entropy of a row that weighs every key equally."""
        return float(np.log2(self.n))

    def long(self) -> dict[str, np.ndarray]:
        """Tidy columns for a chart: d_k, measure ("variance", "max_weight", "entropy", "jacobian"), scaling
        (one of :data:`SCALINGS`) and value; 8 rows per d_k."""
        d_k, measure, scaling, value = [], [], [], []
        for name in ("var", "max_weight", "entropy", "jacobian"):
            for label, suffix in zip(SCALINGS, ("scaled", "raw"), strict=True):
                d_k.append(self.d_k)
                measure.append(np.full(self.d_k.shape, "variance" if name == "var" else name))
                scaling.append(np.full(self.d_k.shape, label))
                value.append(getattr(self, f"{name}_{suffix}"))
        return {
            "d_k": np.concatenate(d_k),
            "measure": np.concatenate(measure),
            "scaling": np.concatenate(scaling),
            "value": np.concatenate(value),
        }


def softmax_jacobian(a: np.ndarray) -> np.ndarray:
    """∂a_i/∂x_j for a = softmax(x): J_ij = a_i (δ_ij − a_j), that is J = diag(a) − a aᵀ. a (..., n) -> (..., n, n).

    J is symmetric, its rows sum to 0, and it vanishes as a tends to a one-hot vector (a saturated row).
    """
    return a[..., :, None] * np.eye(a.shape[-1]) - a[..., :, None] * a[..., None, :]  # (..., n, n)


def jacobian_norm(weights: np.ndarray) -> np.ndarray:
    """The Frobenius norm of each row's softmax Jacobian: weights (..., n) -> (...). √(n−1)/n for a uniform row.

    Without building J (n × n per row): for a row a summing to 1, ‖J‖² = Σ_i a_i² (o_i² + s_i), with
    o_i = Σ_{j≠i} a_j = 1 − a_i (the diagonal's a_i − a_i²) and s_i = Σ_{j≠i} a_j² (the off-diagonal a_i a_j).
    Both are sums over the other entries, taken from exclusive prefix and suffix sums, so a saturated row
    (a_i ≈ 1) keeps full relative precision instead of cancelling 1 − 1.
    """
    a = np.asarray(weights, dtype=np.float64)
    others, others_sq = _sum_of_others(a), _sum_of_others(a * a)  # (..., n) each
    return np.sqrt(np.sum(a * a * (others * others + others_sq), axis=-1))  # (...)


def _sum_of_others(x: np.ndarray) -> np.ndarray:
    """Σ_{j≠i} x_j for every i of the last axis, by exclusive prefix plus suffix sums (no x_i added then taken)."""
    zero = np.zeros(x.shape[:-1] + (1,))
    before = np.concatenate([zero, np.cumsum(x, axis=-1)[..., :-1]], axis=-1)  # (..., n): Σ_{j<i}
    after = np.concatenate([np.cumsum(x[..., ::-1], axis=-1)[..., ::-1][..., 1:], zero], axis=-1)  # Σ_{j>i}
    return before + after


def row_stats(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of a weights array (..., n): the largest weight, the entropy in bits, the Jacobian norm."""
    r = read(weights)
    return r.top_weight, r.entropy, jacobian_norm(weights)  # (...) each


def sqrt_dk_curves(dims: Sequence[int] = DIMS, n: int = 16, seeds: int = 8, seed: int = 0) -> SqrtDkCurves:
    """The statistics of :class:`SqrtDkCurves` for each d_k in ``dims``, averaged over ``seeds`` draws.

    The draw for one d_k depends only on (seed, d_k), so a value does not change when the grid does.
    """
    dims = _check_sizes(dims, n, seeds, seed)
    out: dict[str, list[float]] = {k: [] for k in ("var", "max_weight", "entropy", "jacobian")}
    stats = {f"{k}_{s}": [] for k in out for s in ("raw", "scaled")}
    for d_k in dims:
        rng = np.random.default_rng((seed, d_k))
        Q = rng.standard_normal((seeds, n, d_k))  # (seeds, n, d_k)
        K = rng.standard_normal((seeds, n, d_k))  # (seeds, n, d_k)
        S = steps.scores(Q, K)  # (seeds, n, n)
        for suffix, s in (("raw", S), ("scaled", steps.scale(S, steps.default_scale(d_k)))):
            top, entropy, jac = row_stats(steps.softmax(s))  # (seeds, n) each
            stats[f"var_{suffix}"].append(float(s.var()))
            stats[f"max_weight_{suffix}"].append(float(top.mean()))
            stats[f"entropy_{suffix}"].append(float(entropy.mean()))
            stats[f"jacobian_{suffix}"].append(float(jac.mean()))
    arrays = {k: np.array(v) for k, v in stats.items()}
    return SqrtDkCurves(d_k=np.array(dims), n=n, seeds=seeds, seed=seed, **arrays)


def variance_spread(d_k: int, n: int, seeds: int) -> float:
    """How far the measured variance of the scores strays from d_k by chance: the standard deviation, over sets of
    ``seeds`` draws of n × d_k standard-normal Q and K, of the mean of their n² scores squared.

    One draw's sum of squares is ‖QKᵀ‖² = tr(AB) with A = QᵀQ and B = KᵀK, independent Wishart(n, I_d); given A it
    is a sum over K's n rows of kᵀAk, of mean n·tr(A) and variance 2n·tr(A²), so with E tr(A²) = n·d(n + d + 1) and
    var tr(A) = 2nd: var ‖QKᵀ‖² = 2n²d(2n + d + 1). Divided by n² and averaged over the draws:
    sd = √(2d(2n + d + 1) / (seeds · n²)). (The scores of one draw share rows of Q and K, so they are not n²
    independent numbers: the spread is larger than √(2d² / (seeds · n²)) would say.)"""
    return float(np.sqrt(2 * d_k * (2 * n + d_k + 1) / (seeds * n * n)))


def saturation_curve(n: int = 16, points: int = 61, max_gap: float = 24.0) -> dict[str, np.ndarray]:
    """Gradient size against the largest weight, as one score pulls ahead of the other n − 1 (all 0).

    Row x = (g, 0, ..., 0) for gaps g from 0 to ``max_gap``: the largest weight is e^g / (e^g + n − 1), from 1/n
    towards 1, while ‖J‖_F and the largest |J_ij| fall towards 0. Columns (shape (points,)): gap, max_weight,
    jacobian_norm, largest_entry.
    """
    if not (isinstance(n, int) and 2 <= n <= MAX_N and isinstance(points, int) and 2 <= points <= 10_000):
        raise AttentionError(f"n must be 2 to {MAX_N} and points 2 to 10000; got n={n!r}, points={points!r}")
    gap = np.linspace(0.0, float(max_gap), points)  # (points,)
    x = np.zeros((points, n))
    x[:, 0] = gap  # (points, n)
    a = steps.softmax(x)  # (points, n)
    diagonal = a * _sum_of_others(a)  # (points, n): J_ii = a_i (1 − a_i), the largest entries of their rows
    top2 = np.sort(a, axis=-1)[:, -2:]  # (points, 2): the largest off-diagonal |J_ij| = a_i a_j is the top two's
    return {
        "gap": gap,
        "max_weight": a.max(axis=-1),
        "jacobian_norm": jacobian_norm(a),
        "largest_entry": np.maximum(diagonal.max(axis=-1), top2[:, 0] * top2[:, 1]),
    }


@dataclass(frozen=True)
class TracePoint:
    """The same statistics for one trace, to mark on the curves. Means are over the rows that attend something.

    q_variance, k_variance: of the entries of Q and K (1 in the random model); score_variance: of QKᵀ;
    scaled_variance: of the scaled, unmasked scores; is_default_scale: the trace multiplies by 1/√d_k.
    q_mean, k_mean: the means of Q's and K's entries (0 in the random model); q_positive, k_positive: the share of
    their entries above 0; score_mean: the mean of QKᵀ (d_k · q_mean · k_mean for independent entries).
    """

    d_k: int
    n: int
    scale: float
    is_default_scale: bool
    q_variance: float
    k_variance: float
    score_variance: float
    scaled_variance: float
    mean_max_weight: float
    mean_entropy: float
    mean_jacobian: float
    q_mean: float = 0.0
    k_mean: float = 0.0
    q_positive: float = 0.5
    k_positive: float = 0.5
    score_mean: float = 0.0


def trace_point(trace: Trace) -> TracePoint:
    """The current preset's own values: its d_k (per head), score variances, mean largest weight, entropy, gradient."""
    w = trace.weights.reshape(-1, trace.weights.shape[-1])  # (rows, n): heads and batch flattened
    live = w.sum(axis=-1) > 0  # fully masked rows attend nothing and are left out
    top, entropy, jac = row_stats(w[live])
    scaled = trace.scaled[np.isfinite(trace.scaled)]  # masked cells are -inf
    return TracePoint(
        d_k=int(trace.d_k),
        n=int(trace.weights.shape[-1]),
        scale=float(trace.scale),
        is_default_scale=bool(np.isclose(trace.scale, steps.default_scale(trace.d_k), rtol=1e-12)),
        q_variance=float(trace.Q.var()),
        k_variance=float(trace.K.var()),
        score_variance=float(trace.scores.var()),
        scaled_variance=float(scaled.var()) if scaled.size else float("nan"),
        mean_max_weight=float(top.mean()) if top.size else float("nan"),
        mean_entropy=float(entropy.mean()) if entropy.size else float("nan"),
        mean_jacobian=float(jac.mean()) if jac.size else float("nan"),
        q_mean=float(trace.Q.mean()),
        k_mean=float(trace.K.mean()),
        q_positive=float((trace.Q > 0).mean()),
        k_positive=float((trace.K > 0).mean()),
        score_mean=float(trace.scores.mean()),
    )


def _check_sizes(dims: Sequence[int], n: int, seeds: int, seed: int) -> tuple[int, ...]:
    def whole(v: object, lo: int, hi: int) -> bool:
        return is_whole(v) and lo <= v <= hi

    if not whole(n, 2, MAX_N):
        raise AttentionError(f"n (tokens) must be a whole number from 2 to {MAX_N}; got {n!r}", field="n")
    if not whole(seeds, 1, MAX_SEEDS):
        raise AttentionError(f"seeds must be a whole number from 1 to {MAX_SEEDS}; got {seeds!r}", field="seeds")
    if not whole(seed, 0, 2**32 - 1):
        raise AttentionError(f"seed must be a whole number from 0 to {2**32 - 1}; got {seed!r}", field="seed")
    dims = tuple(dims)
    if not dims or not all(whole(d, 1, MAX_DIM) for d in dims):
        raise AttentionError(f"every d_k must be a whole number from 1 to {MAX_DIM}; got {dims!r}", field="dims")
    return tuple(int(d) for d in dims)
