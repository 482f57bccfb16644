"""The trace: every intermediate array of one attention pass, and the function that runs all steps.

In prose: project the embeddings, Q = X W_q, K = X W_k, V = X W_v; score every query against
every key, S = Q Kᵀ; scale, S' = S · s (s = 1/√d_k unless told otherwise) and mask forbidden cells to
-inf; turn each row into weights, A = softmax(S' / T); mix the values, O = A V.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from . import masks, names, positions, steps
from .errors import AttentionError, as_matrix, check_finite
from .heads import head_weights
from .reading import Reading, read

MASK_KINDS = masks.kinds()  # "none", "causal", "padding", "custom", then their combinations ("causal+padding"...)


@dataclass(frozen=True)
class Options:
    """The conventions of one computation (the documents differ in these, so they are options).

    projection: "x_w" (Q = X @ W_q, W is d_model × d_k) or "x_wt" (Q = X @ W_q.T, document 001).
    softmax: "row_max" (default), "global_max" or "none" (document 000); see :func:`steps.softmax`.
    scale: the factor applied to the scores; None means 1/√d_k, 1.0 means no scaling.
    temperature: T > 0 in softmax(S'/T); 1 leaves the weights as they are, T > 1 flattens them.
    mask: "none", "causal" (token i sees tokens 0..i), "padding" (no token attends a padding token), "custom"
    (``custom_mask``), or a combination joined with "+" ("causal+custom"): a cell may be attended only where
    every part allows it.
    padding: one flag per token, True where the token is padding (used when mask == "padding").
    heads: number of heads h; d_k and d_v must divide by h (1 = single-head attention).
    custom_mask: an n × n grid of flags (query × key), True where the query may attend the key.
    positions: "none", "sinusoidal" (PE added to X) or "rotary" (RoPE on each head's Q and K); see
    :mod:`attention.positions`.
    """

    projection: steps.Projection = "x_w"
    softmax: steps.SoftmaxVariant = "row_max"
    scale: float | None = None
    temperature: float = 1.0
    mask: str = "none"
    padding: tuple[bool, ...] = ()
    heads: int = 1
    custom_mask: tuple[tuple[bool, ...], ...] = ()
    positions: str = "none"

    def validate(self) -> Options:
        """Raise AttentionError naming the first option that is out of range (its ``field`` is the option's name).
        The one check of options: the preset files' validator calls it too."""

        def fail(name: str, message: str) -> AttentionError:
            return AttentionError(f"{name} {message}; got {_short(getattr(self, name))}", field=name)

        if self.projection not in names.PROJECTIONS:
            raise fail("projection", "must be 'x_w' (X @ W) or 'x_wt' (X @ W.T)")
        if self.softmax not in ("row_max", "global_max", "none"):
            raise fail("softmax", "must be 'row_max', 'global_max' or 'none'")
        if self.scale is not None and not _positive(self.scale):
            raise fail("scale", "must be a finite number > 0 (or None for 1/√d_k)")
        if not _positive(self.temperature):
            raise fail("temperature", "must be a finite number > 0")
        if self.mask not in MASK_KINDS:
            raise fail("mask", f"must be one of {', '.join(MASK_KINDS)}")
        if not (
            isinstance(self.heads, (int, np.integer))
            and not isinstance(self.heads, bool)
            and 1 <= self.heads <= names.MAX_DIM
        ):
            raise fail("heads", f"must be a whole number from 1 to {names.MAX_DIM}")
        if not (isinstance(self.padding, tuple) and all(isinstance(p, (bool, np.bool_)) for p in self.padding)):
            raise fail("padding", "must be true/false flags, one per token")
        if self.positions not in positions.KINDS:
            raise fail("positions", f"must be one of {', '.join(positions.KINDS)}")
        grid = self.custom_mask
        if not (
            isinstance(grid, tuple)
            and all(isinstance(r, tuple) and len(r) == len(grid) for r in grid)
            and all(isinstance(v, (bool, np.bool_)) for r in grid for v in r)
        ):
            raise fail("custom_mask", "must be a square grid of true/false (query × key, true = may attend)")
        return self

    def replace(self, **changes: object) -> Options:
        return replace(self, **changes)


def _positive(value: object) -> bool:
    """A finite real number > 0 (a Python int too large for a float is not finite here, and never a TypeError)."""
    if not _is_real(value):
        return False
    try:
        return math.isfinite(float(value)) and float(value) > 0  # type: ignore[arg-type]
    except OverflowError:
        return False


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_real(value: object) -> bool:
    """A real number (numpy scalars included), but not a bool (True is not a scale)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


@dataclass(frozen=True)
class Trace:
    """Every array of one pass. Shapes for n tokens (plus any leading batch dims):
    X (n, d_model); W_q, W_k (d_model, d_k) or transposed; W_v (d_model, d_v);
    Q, K (n, d_k); V (n, d_v); scores, scaled, weights (n, n); output (n, d_v).

    ``scores`` is QKᵀ before scaling; ``scaled`` is after scaling and masking (masked cells are -inf);
    ``weights`` is after softmax (rows sum to 1; a fully masked row is all 0). ``allowed`` is the boolean
    mask in force (True = may attend) or None; ``fully_masked`` lists rows that may attend nothing.
    """

    X: np.ndarray
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    scores: np.ndarray
    scaled: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    scale: float
    d_k: int
    options: Options = field(default_factory=Options)
    allowed: np.ndarray | None = None
    fully_masked: tuple[int, ...] = ()
    tokens: tuple[str, ...] = ()
    X_in: np.ndarray | None = None  # X + PE, what the projections saw (sinusoidal positions); None otherwise
    Q_raw: np.ndarray | None = None  # Q and K before the rotation (rotary positions); None otherwise
    K_raw: np.ndarray | None = None

    def arrays(self) -> dict[str, np.ndarray]:
        """The eleven named arrays, in pipeline order."""
        return {name: getattr(self, name) for name in ARRAY_NAMES}

    @functools.cached_property
    def reading(self) -> Reading:
        """Top key, second key and entropy per query row, computed once (see :mod:`attention.reading`)."""
        return read(self.weights[0] if self.X.ndim == 3 else self.weights, self.allowed)


ARRAY_NAMES = names.ARRAYS


def check_inputs(
    X: object, W_q: object, W_k: object, W_v: object, options: Options, tokens: Sequence[str] | None = None
):
    """Validate the four input matrices against each other and the options; return them as float arrays."""
    rows = list(tokens) if tokens else None
    X = as_matrix("X", X, ndim=(2, 3), rows=rows)
    n, d_model = X.shape[-2:]
    if tokens is not None and len(tokens) != n:
        raise AttentionError(
            f"X has {n} rows but there are {len(tokens)} tokens; there must be one row per token", matrix="X"
        )
    Ws = {name: as_matrix(name, W) for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v))}
    in_axis = 0 if options.projection == "x_w" else 1
    layout = "d_model × d_k (X @ W)" if in_axis == 0 else "d_k × d_model (X @ W.T)"
    for name, W in Ws.items():
        if W.shape[in_axis] != d_model:
            side = "rows" if in_axis == 0 else "columns"
            raise AttentionError(
                f"{name} has {W.shape[in_axis]} {side} but X has {d_model} columns (d_model); {name} must be "
                f"{layout}, got {W.shape}",
                matrix=name,
            )
    d_q, d_k = Ws["W_q"].shape[1 - in_axis], Ws["W_k"].shape[1 - in_axis]
    if d_q != d_k:
        raise AttentionError(
            f"W_q gives queries of width {d_q} but W_k gives keys of width {d_k}; QKᵀ needs them equal (d_k)",
            matrix="W_k",
        )
    for name in ("W_q", "W_v"):
        width = Ws[name].shape[1 - in_axis]
        if width % options.heads:
            raise AttentionError(
                f"{name} gives width {width}, which does not divide into {options.heads} heads; "
                f"choose a width that is a multiple of {options.heads}",
                matrix=name,
            )
    if "custom" in masks.parts(options.mask) and len(options.custom_mask) != n:
        raise AttentionError(
            f"the custom mask is {len(options.custom_mask)} × {len(options.custom_mask)} but there are {n} tokens; "
            "give one row and one column per token",
            matrix="mask",
        )
    if "padding" in masks.parts(options.mask) and len(options.padding) != n:
        raise AttentionError(
            f"the padding flags list {len(options.padding)} tokens but X has {n}; give one flag per token",
            matrix="mask",
        )
    return X, Ws["W_q"], Ws["W_k"], Ws["W_v"]


def build_mask(options: Options, n: int) -> np.ndarray | None:
    """The boolean mask (n, n) the options ask for (its parts combined with AND), or None."""
    parts = masks.parts(options.mask)
    return masks.combine(
        masks.causal(n) if "causal" in parts else None,
        masks.padding(options.padding, n) if "padding" in parts else None,
        masks.custom(np.array(options.custom_mask, dtype=bool).reshape(n, n), n, n) if "custom" in parts else None,
    )


def self_attention(
    X: object,
    W_q: object,
    W_k: object,
    W_v: object,
    *,
    tokens: Sequence[str] | None = None,
    options: Options | None = None,
    attn_mask: np.ndarray | None = None,
    **option_values: object,
) -> Trace:
    """Run every step and return the trace. Options may be given as an ``Options`` or as keywords
    (``projection="x_wt"``, ``softmax="none"``, ``scale=1.0``, ``mask="causal"``, ``temperature=2``...).
    ``attn_mask`` adds a custom boolean mask (True = may attend), ANDed with the options' mask.
    ``tokens`` (one per row of X) only improves error messages and labels.

    With ``heads > 1`` the per-head traces are computed by :func:`multi_head` and this
    returns their concatenation (scores/weights then have a head axis: (..., h, n, n)).
    """
    opts = (options or Options()).replace(**option_values) if option_values else (options or Options())
    opts.validate()
    X, W_q, W_k, W_v = check_inputs(X, W_q, W_k, W_v, opts, tokens)
    if opts.heads > 1:
        return multi_head(X, W_q, W_k, W_v, opts, tokens=tokens, attn_mask=attn_mask).combined
    return run_steps(X, W_q, W_k, W_v, opts, tokens=tokens, attn_mask=attn_mask)


def run_steps(
    X: np.ndarray,
    W_q: np.ndarray,
    W_k: np.ndarray,
    W_v: np.ndarray,
    opts: Options,
    *,
    tokens: Sequence[str] | None = None,
    attn_mask: np.ndarray | None = None,
) -> Trace:
    """The steps themselves, on already validated inputs (shapes in the trailing comments)."""
    rows = list(tokens) if tokens else None
    n = X.shape[-2]
    X_in = X + positions.sinusoidal(n, X.shape[-1]) if opts.positions == "sinusoidal" else X  # (..., n, d_model)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked below and raised with a clear message
        Q = steps.project(X_in, W_q, opts.projection)  # (..., n, d_k)
        K = steps.project(X_in, W_k, opts.projection)  # (..., n, d_k)
        V = steps.project(X_in, W_v, opts.projection)  # (..., n, d_v)
        Q_raw, K_raw = (Q, K) if opts.positions == "rotary" else (None, None)
        if opts.positions == "rotary":  # per head: run_steps sees one head's columns at a time
            Q, K = positions.rotary(Q), positions.rotary(K)  # (..., n, d_k) each
        for name, M, w in (("Q", Q, "W_q"), ("K", K, "W_k"), ("V", V, "W_v")):
            check_finite(name, M, f"the values of X and {w}", rows)
        d_k = Q.shape[-1]
        factor = steps.default_scale(d_k) if opts.scale is None else float(opts.scale)
        S = steps.scores(Q, K)  # (..., n, n)
        check_finite("scores", S, "the values of Q and K", rows, rows)
        allowed = masks.combine(build_mask(opts, n), None if attn_mask is None else masks.custom(attn_mask, n, n))
        S_scaled = steps.scale(S, factor)  # (..., n, n)
        if factor > 1:  # only a factor above 1 can push a finite score past the float64 range
            check_finite("scaled", S_scaled, f"the scores times the scale {factor:g}", rows, rows)
        S_scaled = steps.mask(S_scaled, allowed)  # (..., n, n)
        A = steps.softmax(
            S_scaled if opts.temperature == 1 else S_scaled / opts.temperature, opts.softmax, rows
        )  # (..., n, n)
    O = steps.weighted_sum(A, V)  # (..., n, d_v)
    return Trace(
        X,
        W_q,
        W_k,
        W_v,
        Q,
        K,
        V,
        S,
        S_scaled,
        A,
        O,
        factor,
        d_k,
        opts,
        allowed,
        tuple(int(i) for i in masks.fully_masked_rows(allowed)),
        tuple(tokens or ()),
        X_in if opts.positions == "sinusoidal" else None,
        Q_raw,
        K_raw,
    )


def scaled_dot_product_attention(
    q: object, k: object, v: object, attn_mask: object = None, is_causal: bool = False, scale: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's ``scaled_dot_product_attention`` in numpy: returns ``(output, weights)``.

    q (..., L, E), k (..., S, E), v (..., S, Ev) -> output (..., L, Ev), weights (..., L, S).
    ``attn_mask``: boolean (True = may attend) or float (added to the scaled scores), broadcastable to
    (..., L, S). ``is_causal``: top-left causal mask; not together with ``attn_mask``. ``scale``: default
    1/√E. A fully masked row gets weights 0 and output 0 (PyTorch's math path gives NaN before 2.5).
    """
    q = as_matrix("q", q, ndim=(2, 3, 4))
    k = as_matrix("k", k, ndim=(2, 3, 4))
    v = as_matrix("v", v, ndim=(2, 3, 4))
    if q.shape[-1] != k.shape[-1]:
        raise AttentionError(
            f"q has width {q.shape[-1]} but k has width {k.shape[-1]}; they must match (E)", matrix="k"
        )
    if k.shape[-2] != v.shape[-2]:
        raise AttentionError(
            f"k has {k.shape[-2]} rows but v has {v.shape[-2]}; one value per key is needed", matrix="v"
        )
    if is_causal and attn_mask is not None:
        raise AttentionError("give either attn_mask or is_causal=True, not both", matrix="mask")
    if scale is not None and not (_is_real(scale) and np.isfinite(scale)):
        raise AttentionError(f"scale must be a finite number (or None for 1/√E); got {scale!r}")
    L, S_len = q.shape[-2], k.shape[-2]
    factor = steps.default_scale(q.shape[-1]) if scale is None else float(scale)
    allowed, additive = None, None
    if is_causal:
        allowed = masks.causal(L, S_len)
    elif attn_mask is not None:
        m = np.asarray(attn_mask)
        try:
            np.broadcast_shapes(m.shape, (L, S_len))
        except ValueError:
            raise AttentionError(
                f"attn_mask of shape {m.shape} does not broadcast to (L, S) = ({L}, {S_len})", matrix="mask"
            ) from None
        if m.dtype == bool:
            allowed = m
        else:
            # -inf is allowed (it masks the cell, as in PyTorch); NaN, +inf and text are not.
            as_matrix(
                "attn_mask", np.where(np.isneginf(m), 0.0, m) if m.dtype.kind == "f" else m, ndim=tuple(range(0, 5))
            )
            additive = m.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked and raised with a clear message
        raw = steps.scores(q, k)  # (..., L, S)
        check_finite("scores", raw, "the values of q and k")
        S = steps.mask(steps.scale(raw, factor), allowed, additive)  # (..., L, S)
        weights = steps.softmax(S)  # (..., L, S)
    return steps.weighted_sum(weights, v), weights  # (..., L, Ev), (..., L, S)


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


def multi_head(
    X: np.ndarray,
    W_q: np.ndarray,
    W_k: np.ndarray,
    W_v: np.ndarray,
    options: Options,
    *,
    W_o: object = None,
    tokens: Sequence[str] | None = None,
    attn_mask: np.ndarray | None = None,
) -> MultiHeadTrace:
    """Multi-head attention with ``options.heads`` heads; inputs are validated here too.

    head_i = Attention(X W_q^i, X W_k^i, X W_v^i), where W^i is the i-th block of d_k/h columns of W;
    MultiHead(X) = Concat(head_1, ..., head_h) W_o (W_o optional, d_v × d_out). Each head scales by 1/√(d_k/h)
    unless a scale is given.
    """
    options.validate()
    X, W_q, W_k, W_v = check_inputs(X, W_q, W_k, W_v, options, tokens)
    h = options.heads
    per_head = tuple(
        run_steps(
            X,
            *(head_weights(W, h, i, options.projection) for W in (W_q, W_k, W_v)),
            options,
            tokens=tokens,
            attn_mask=attn_mask,
        )
        for i in range(h)
    )
    concat = np.concatenate([t.output for t in per_head], axis=-1)  # (..., n, d_v)
    W_o_arr = None
    output = concat
    if W_o is not None:
        W_o_arr = as_matrix("W_o", W_o)
        if W_o_arr.shape[0] != concat.shape[-1]:
            raise AttentionError(
                f"W_o has {W_o_arr.shape[0]} rows but the heads concatenate to width {concat.shape[-1]}", matrix="W_o"
            )
        output = concat @ W_o_arr  # (..., n, d_v) @ (d_v, d_out) -> (..., n, d_out)

    def stack(name: str) -> np.ndarray:
        return np.stack([getattr(t, name) for t in per_head], axis=-3)  # (..., h, n, n)

    first = per_head[0]
    combined = replace(
        first,
        W_q=W_q,
        W_k=W_k,
        W_v=W_v,
        Q=np.concatenate([t.Q for t in per_head], axis=-1),
        K=np.concatenate([t.K for t in per_head], axis=-1),
        V=np.concatenate([t.V for t in per_head], axis=-1),
        scores=stack("scores"),
        scaled=stack("scaled"),
        weights=stack("weights"),
        output=output,
        Q_raw=None if first.Q_raw is None else np.concatenate([t.Q_raw for t in per_head], axis=-1),
        K_raw=None if first.K_raw is None else np.concatenate([t.K_raw for t in per_head], axis=-1),
    )
    return MultiHeadTrace(per_head, concat, W_o_arr, output, combined)
