"""Numerical stability of softmax, computed live: the three variants as scores grow, mask fills, and float widths.

In prose: softmax(x)_j = exp(x_j − m) / Σ_k exp(x_k − m) gives the same weights for any m, but not the same
numbers. exp overflows to inf above log(finfo.max) (709.78 in float64, 88.72 in float32, 11.09 in float16) and
underflows to 0 below log(smallest subnormal / 2). With m = 0 ("none") a large score overflows and inf/inf is
NaN; with m = the whole matrix's max ("global_max") a row far below it underflows to 0/0; with m = the row's own
max ("row_max") the largest term is exp(0) = 1, so the sum is between 1 and n and nothing breaks.

Every limit here is derived from ``np.finfo`` and measured by running the engine (:func:`steps.softmax`) or plain
numpy in the dtype; nothing is typed in. Results are small dataclasses of numpy arrays and strings.
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import names, steps
from ..errors import AttentionError
from ..trace import Trace

DTYPES = ("float16", "float32", "float64")
VARIANTS = names.SOFTMAX_VARIANTS  # the three softmaxes the lab compares
FILLS = ("-inf", "-1e9", "finfo.min")  # what a masked cell is set to
METHODS = ("replace", "add")  # the cell replaced by the fill (np.where), or the fill added (PyTorch's float mask)
MAGNITUDES = np.logspace(0, 4, 41)  # 1 to 1e4, ten per decade
# Two rows: one whose max is positive, and one lying 2 units below it (a row "far below" once magnified).
BASE = np.array([[1.0, 0.5, 0.0, -0.5], [-1.0, -1.5, -2.0, -2.5]])
MASK_ROW = np.array([3.0, 1.0, -20.0, 0.5])  # the scores of the masking examples
MASK_ALLOWED = np.array([True, True, False, False])  # its last two keys are masked in the "normal" row


def overflow_limit(dtype: str = "float64") -> float:
    """log(finfo.max): exp(x) is inf in this dtype for x above it (709.78 for float64)."""
    return float(np.log(float(np.finfo(dtype).max)))


def underflow_limit(dtype: str = "float64") -> float:
    """log(smallest subnormal / 2): exp(x) rounds to 0 in this dtype for x below it (−745.13 for float64)."""
    return float(np.log(float(np.finfo(dtype).smallest_subnormal)) - np.log(2.0))


def tolerance(dtype: str = "float64", n: int = 4) -> float:
    """How far from the exact weights a correct softmax may be: 4·n·eps. The rounding of x − m is amplified by
    exp to a relative error |x − m|·eps in a weight a = e^{−|x − m|}/Σ, whose absolute size is at most eps/e."""
    return 4.0 * n * float(np.finfo(dtype).eps)


def numpy_softmax(x: np.ndarray, variant: str = "row_max") -> np.ndarray:
    """What plain numpy gives, warnings silenced and nothing special-cased, computed in x's dtype: m = the row's
    max, the matrix's max or 0, then exp(x − m) / Σ exp(x − m). NaN, inf and 0/0 come through as they are."""
    if variant not in VARIANTS:
        raise AttentionError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}", field="variant")
    with np.errstate(all="ignore"):
        if variant == "row_max":
            m = x.max(axis=-1, keepdims=True)  # (..., n, 1)
        elif variant == "global_max":
            m = x.max(axis=(-2, -1), keepdims=True)  # (..., 1, 1)
        else:
            m = np.zeros((1,) * x.ndim, dtype=x.dtype)
        e = np.exp(x - m)  # (..., n, n)
        return e / e.sum(axis=-1, keepdims=True)  # (..., n, n)


def engine_softmax(x: np.ndarray, variant: str = "row_max") -> np.ndarray:
    """The engine's :func:`steps.softmax`, as the trace runs it: numpy's warnings silenced (the engine raises
    AttentionError naming the row when a variant fails, instead of returning NaN)."""
    with np.errstate(all="ignore"):
        return steps.softmax(x, variant)  # (..., n, n)


def reference_softmax(x: np.ndarray) -> np.ndarray:
    """The exact weights, rounded to float64: each exp in 50-digit decimal arithmetic (no overflow, no underflow
    for any float64 input), -inf cells weight 0, a row of only -inf all 0. x (..., n) -> (..., n) float64."""
    flat = np.asarray(x, dtype=np.float64).reshape(-1, x.shape[-1])
    out = np.zeros(flat.shape)
    with decimal.localcontext(decimal.Context(prec=50, Emax=10**9, Emin=-(10**9))):
        for r, row in enumerate(flat):
            e = [decimal.Decimal(0) if v == -np.inf else decimal.Decimal(float(v)).exp() for v in row]
            total = sum(e)
            if total:
                out[r] = [float(v / total) for v in e]
    return out.reshape(x.shape)


@dataclass(frozen=True)
class VariantResult:
    """One softmax variant over the magnitudes (m of them); the score matrix is magnitude × base (r × n).

    ok (m,): the engine returned weights within :func:`tolerance` of the exact ones. error (m,): the largest
    |numpy's weight − exact| (NaN when numpy gave NaN). message (m,): the engine's AttentionError text, or None when
    it returned weights. raw (m, r, n): numpy's own result. first_failure: the smallest magnitude on the grid that
    fails (None: none does); predicted: the magnitude where it must fail by the float64 limits (None: never).
    """

    variant: str
    ok: np.ndarray
    error: np.ndarray
    message: tuple[str | None, ...]
    raw: np.ndarray
    first_failure: float | None
    predicted: float | None


@dataclass(frozen=True)
class VariantSweep:
    """The three variants on magnitude × base, against the exact weights ``reference`` (m, r, n)."""

    magnitudes: np.ndarray
    base: np.ndarray
    reference: np.ndarray
    results: dict[str, VariantResult]
    overflow_limit: float
    underflow_limit: float
    tolerance: float


def predicted_failure(base: np.ndarray, variant: str) -> float | None:
    """The smallest magnitude t at which softmax(t · base) must break in float64, from the limits alone.

    "none": a row overflows when log Σ exp(t·b) > log(max) (found by bisection: the sum can overflow before
    any one term), or underflows to 0/0 when its max t·max(b) < the underflow limit. "global_max": a row
    underflows when t·(max(b) − max(base)) < the underflow limit. "row_max": never (None).
    """
    base = np.asarray(base, dtype=np.float64)
    hi, lo = overflow_limit(), underflow_limit()
    found: list[float] = []
    for row in base.reshape(-1, base.shape[-1]):
        top = float(row.max())
        if variant == "none" and top > 0:
            found.append(_bisect(lambda t, r=row, c=top: t * c + np.log(np.exp(t * (r - c)).sum()) > hi, hi / top))
        elif variant == "none" and top < 0:
            found.append(lo / top)
        elif variant == "global_max" and top < base.max():
            found.append(lo / (top - float(base.max())))
    return min(found) if found else None


def variant_sweep(base: np.ndarray | None = None, magnitudes: Sequence[float] | None = None) -> VariantSweep:
    """Run the engine's three softmax variants on magnitude × base for every magnitude (float64)."""
    base = BASE if base is None else _finite_matrix(base, "base")
    mags = MAGNITUDES if magnitudes is None else _positive_vector(magnitudes, "magnitudes")
    X = mags[:, None, None] * base  # (m, r, n)
    ref = reference_softmax(X)  # (m, r, n)
    tol = tolerance("float64", base.shape[-1])
    results = {}
    for variant in VARIANTS:
        raw = numpy_softmax(X, variant)  # (m, r, n)
        with np.errstate(invalid="ignore"):
            error = np.abs(raw - ref).max(axis=(-2, -1))  # (m,)
        ok, messages = [], []
        for x, r in zip(X, ref, strict=True):
            try:
                w = engine_softmax(x, variant)  # (r, n)
                ok.append(bool(np.abs(w - r).max() <= tol))
                messages.append(None)
            except AttentionError as exc:
                ok.append(False)
                messages.append(exc.message)
        ok_arr = np.array(ok)
        fails = np.flatnonzero(~ok_arr)
        results[variant] = VariantResult(
            variant,
            ok_arr,
            error,
            tuple(messages),
            raw,
            float(mags[fails[0]]) if fails.size else None,
            predicted_failure(base, variant),
        )
    return VariantSweep(mags, base, ref, results, overflow_limit(), underflow_limit(), tol)


@dataclass(frozen=True)
class MaskCase:
    """One masked row under one fill, method and dtype, and what three softmaxes make of it (each (n,)).

    fill_stored: the fill as the dtype holds it (−1e9 is −inf in float16). scores: the row after masking.
    naive: numpy with nothing subtracted; stable: numpy with the row max subtracted; engine: :func:`steps.softmax`
    (row max, and a row of only −inf gets 0) or None with ``engine_message`` when it raised. The ``*_says`` fields
    name the outcome: "correct", "NaN", "all 0", "uniform 1/n", "masked keys get weight" or "wrong".
    """

    dtype: str
    fill: str
    method: str
    row: str  # "normal" (some keys masked) or "fully masked"
    fill_stored: float
    scores: np.ndarray
    naive: np.ndarray
    stable: np.ndarray
    engine: np.ndarray | None
    engine_message: str | None
    naive_says: str
    stable_says: str
    engine_says: str


def fill_value(fill: str, dtype: str) -> np.generic:
    """The value a masked cell gets: −inf, −1e9 cast to the dtype (it overflows to −inf in float16), finfo.min."""
    with np.errstate(over="ignore"):
        if fill == "-inf":
            return np.dtype(dtype).type(-np.inf)
        if fill == "-1e9":
            return np.asarray(-1e9).astype(dtype)[()]
        if fill == "finfo.min":
            return np.finfo(dtype).min
    raise AttentionError(f"fill must be one of {', '.join(FILLS)}; got {fill!r}", field="fill")


def mask_cases(
    dtypes: Sequence[str] = DTYPES, row: np.ndarray | None = None, allowed: np.ndarray | None = None
) -> list[MaskCase]:
    """Every (dtype, fill, method, row kind): the normal row masks the keys where ``allowed`` is False, the fully
    masked row masks every key."""
    row = MASK_ROW if row is None else _finite_matrix(np.atleast_2d(row), "row")[0]
    allowed = MASK_ALLOWED if allowed is None else np.asarray(allowed, dtype=bool)
    if allowed.shape != row.shape:
        raise AttentionError(f"allowed must have one flag per score ({row.shape[0]}); got {allowed.shape}")
    cases = []
    for dtype in dtypes:
        x = row.astype(dtype)  # (n,)
        for fill in FILLS:
            f = fill_value(fill, dtype)
            for method in METHODS:
                for kind, keep in (("normal", allowed), ("fully masked", np.zeros_like(allowed))):
                    cases.append(_mask_case(x, keep, f, dtype, fill, method, kind))
    return cases


def _mask_case(x: np.ndarray, keep: np.ndarray, f: np.generic, dtype: str, fill: str, method: str, kind: str):
    with np.errstate(over="ignore", invalid="ignore"):
        s = np.where(keep, x, f) if method == "replace" else np.where(keep, x, x + f)  # (n,), in the dtype
    s = s.astype(dtype)
    naive = numpy_softmax(s[None], "none")[0]
    stable = numpy_softmax(s[None], "row_max")[0]
    try:
        engine, message = engine_softmax(s[None])[0], None
    except AttentionError as exc:
        engine, message = None, exc.message
    expect = reference_softmax(np.where(keep, x.astype(np.float64), -np.inf))  # (n,): only the allowed keys
    unmasked = reference_softmax(x.astype(np.float64))  # (n,): as if nothing were masked
    tol = tolerance(dtype, x.shape[-1])

    def says(w: np.ndarray | None) -> str:
        return "error" if w is None else outcome(w, keep, expect, unmasked, tol)

    return MaskCase(
        dtype, fill, method, kind, float(f), s, naive, stable, engine, message, says(naive), says(stable), says(engine)
    )


def outcome(w: np.ndarray, keep: np.ndarray, expect: np.ndarray, unmasked: np.ndarray, tol: float) -> str:
    """Name what a softmax gave for one masked row: "NaN", "all 0", "uniform 1/n", "correct" (within ``tol`` of
    ``expect`` with every masked key at exactly 0), "as if unmasked" (within ``tol`` of ``unmasked``: the fill
    shifted every score alike and cancelled), "masked keys get weight" or "wrong". A fully masked row has no
    correct weights: NaN, all 0 and uniform are the usual answers."""
    w = np.asarray(w, dtype=np.float64)
    if np.isnan(w).any():
        return "NaN"
    if (w == 0).all():
        return "all 0"
    if np.allclose(w, 1.0 / w.shape[-1], rtol=0, atol=tol):
        return "uniform 1/n"
    if keep.any() and (w[~keep] == 0).all() and np.abs(w - expect).max() <= tol:
        return "correct"
    if np.abs(w - unmasked).max() <= tol:
        return "as if unmasked"
    return "masked keys get weight" if (w[~keep] > 0).any() else "wrong"


@dataclass(frozen=True)
class DtypeLimits:
    """Where one float width breaks. Limits derived from finfo, and measured by bisection on the dtype's values:
    measured_overflow is the smallest x with exp(x) = inf, measured_underflow the largest x with exp(x) = 0.
    Over the magnitudes (m,), the row magnitude × base_row computed in the dtype: fits (every score is finite in
    the dtype), naive_ok (nothing subtracted: within tolerance of the exact weights), stable_ok (the engine's softmax,
    row max subtracted). naive_breaks_at / stable_breaks_at: the first magnitude that fails (None: none does)."""

    dtype: str
    max: float
    eps: float
    overflow_limit: float
    underflow_limit: float
    measured_overflow: float
    measured_underflow: float
    magnitudes: np.ndarray
    fits: np.ndarray
    naive_ok: np.ndarray
    stable_ok: np.ndarray
    naive_breaks_at: float | None
    stable_breaks_at: float | None


def dtype_limits(
    dtypes: Sequence[str] = DTYPES, base_row: np.ndarray | None = None, magnitudes: Sequence[float] | None = None
) -> list[DtypeLimits]:
    """For each dtype: its exp limits, derived and measured, and where a naive and a stable softmax break."""
    base_row = BASE[0] if base_row is None else _finite_matrix(np.atleast_2d(base_row), "base_row")[0]
    mags = MAGNITUDES if magnitudes is None else _positive_vector(magnitudes, "magnitudes")
    out = []
    for dtype in dtypes:
        info = np.finfo(dtype)
        with np.errstate(over="ignore"):
            X = (mags[:, None] * base_row).astype(dtype)  # (m, n), rounded to the dtype (inf when it does not fit)
        fits = np.isfinite(X).all(axis=-1)
        ref = reference_softmax(np.where(fits[:, None], X.astype(np.float64), 0.0))  # (m, n): of the stored scores
        tol = tolerance(dtype, base_row.shape[-1])
        with np.errstate(invalid="ignore"):
            naive_ok = fits & (np.abs(numpy_softmax(X, "none") - ref).max(axis=-1) <= tol)
        stable_ok = np.array([f and _engine_close(x, r, tol) for f, x, r in zip(fits, X, ref, strict=True)])
        out.append(
            DtypeLimits(
                dtype,
                float(info.max),
                float(info.eps),
                overflow_limit(dtype),
                underflow_limit(dtype),
                _smallest_positive(lambda t: np.isinf(np.exp(t)), dtype),
                -_smallest_positive(lambda t: np.exp(-t) == 0, dtype),
                mags,
                fits,
                naive_ok,
                stable_ok,
                _first(mags, ~naive_ok),
                _first(mags, ~stable_ok),
            )
        )
    return out


@dataclass(frozen=True)
class DtypeHeadroom:
    """The current softmax input in one dtype. headroom: overflow limit − largest score (how much the largest may
    grow before exp overflows with nothing subtracted); factor: overflow limit / largest score (inf when it is ≤ 0).
    fits: every score is finite in the dtype; *_ok: that variant, computed in the dtype, gives finite weights
    that sum to 1 in every row that attends something."""

    dtype: str
    overflow_limit: float
    headroom: float
    factor: float
    fits: bool
    none_ok: bool
    global_max_ok: bool
    row_max_ok: bool


@dataclass(frozen=True)
class Headroom:
    """Where a trace's softmax input sits. max_abs_score and max_score are over the unmasked cells; largest_gap is
    the most any row's max lies below the whole matrix's max (what "global_max" subtracts beyond the row's own)."""

    max_abs_score: float
    max_score: float
    largest_gap: float
    dtypes: tuple[DtypeHeadroom, ...]


def trace_headroom(trace: Trace, dtypes: Sequence[str] = DTYPES) -> Headroom:
    """Where the trace's softmax input (scaled, masked scores / temperature) sits against each dtype's limits."""
    x = trace.scaled / trace.options.temperature  # (..., n, n), masked cells -inf
    live = np.isfinite(x)
    if not live.any():
        raise AttentionError("every score is masked, so softmax has nothing to weigh", matrix="scaled")
    top, biggest = float(x[live].max()), float(np.abs(x[live]).max())
    row_max = np.where(live, x, -np.inf).max(axis=-1)  # (..., n)
    matrix_max = row_max.max(axis=-1, keepdims=True)  # (..., 1)
    gaps = (matrix_max - row_max)[np.isfinite(row_max)]
    attends = live.any(axis=-1)  # (..., n): rows that attend something
    rooms = []
    for dtype in dtypes:
        limit = overflow_limit(dtype)
        with np.errstate(over="ignore"):
            xd = x.astype(dtype)
        fits = bool(np.isfinite(xd[live]).all())
        ok = {v: fits and _sums_to_one(numpy_softmax(xd, v), attends, tolerance(dtype, x.shape[-1])) for v in VARIANTS}
        rooms.append(
            DtypeHeadroom(
                dtype,
                limit,
                limit - top,
                limit / top if top > 0 else float("inf"),
                fits,
                ok["none"],
                ok["global_max"],
                ok["row_max"],
            )
        )
    return Headroom(biggest, top, float(gaps.max()) if gaps.size else 0.0, tuple(rooms))


def _sums_to_one(w: np.ndarray, attends: np.ndarray, tol: float) -> bool:
    rows = w[attends]  # (rows, n)
    with np.errstate(invalid="ignore"):
        return bool(np.isfinite(rows).all() and (np.abs(rows.astype(np.float64).sum(axis=-1) - 1) <= tol).all())


def _engine_close(x: np.ndarray, ref: np.ndarray, tol: float) -> bool:
    try:
        w = engine_softmax(x[None])[0]  # (n,), in x's dtype
    except AttentionError:
        return False
    return bool(np.abs(w.astype(np.float64) - ref).max() <= tol)


def _smallest_positive(pred, dtype: str) -> float:
    """The smallest positive value t of the dtype with pred(t) true (pred monotone in t, false at 0, true at inf):
    bisection on the bit patterns, which are ordered as the positive values are."""
    uint = np.dtype(f"u{np.dtype(dtype).itemsize}")
    lo, hi = 0, int(np.array(np.inf, dtype=dtype).view(uint))
    with np.errstate(over="ignore", under="ignore"):
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if pred(np.array(mid, dtype=uint).view(dtype)):
                hi = mid
            else:
                lo = mid
    return float(np.array(hi, dtype=uint).view(dtype))


def _bisect(pred, hi: float) -> float:
    """The smallest t in (0, hi] where pred turns true, to float64 precision (pred(hi) is assumed true)."""
    lo = 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (lo, mid) if pred(mid) else (mid, hi)
    return hi


def _first(mags: np.ndarray, failed: np.ndarray) -> float | None:
    idx = np.flatnonzero(failed)
    return float(mags[idx[0]]) if idx.size else None


def _finite_matrix(value: object, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 2 or 0 in arr.shape or not np.isfinite(arr).all():
        raise AttentionError(f"{name} must be a non-empty 2-D array of finite numbers; got shape {arr.shape}")
    return arr


def _positive_vector(value: object, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if arr.size == 0 or not (np.isfinite(arr) & (arr > 0)).all():
        raise AttentionError(f"{name} must be finite numbers > 0", field=name)
    return arr
