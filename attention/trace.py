"""The trace: every intermediate array of one attention pass, and the function that runs all steps.

In prose: add positions to the embeddings if asked, X' = X + P; project, Q = X' W_q, K = X' W_k, V = X' W_v
(QK-norm then divides each row of a head's Q and K by its root mean square and scales it by the gains, and rotary
positions turn Q and K); score every query against every key, S = Q Kᵀ; scale, S' = S · s
(s = 1/√d_k unless told otherwise), add the ALiBi bias if asked, and mask forbidden cells to -inf; turn each
row into weights, A = softmax(S' / T); mix the values, O = A V. With h heads each head does this on its own block
of d_k/h columns of W_q and W_k (d_v/h of W_v), the heads' outputs are concatenated, and W_o (if given) mixes them.
With kv_heads = g < h (grouped-query attention) W_k and W_v have only g blocks, and query heads
i·h/g … (i+1)·h/g − 1 share block i (g = 1: multi-query attention). Cross-attention takes the keys and values
from a second sequence X_kv (:func:`cross_attention`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from . import masks, names, positions, steps
from .errors import AttentionError, as_matrix, check_finite
from .heads import head_weights, kv_block
from .options import Options, finite
from .reading import Reading, read

MASK_KINDS = masks.KINDS  # as files spell them: "none", "causal", ..., then combinations ("causal+padding"...)
ARRAY_NAMES = names.ARRAYS  # the eleven arrays of a trace, in pipeline order


@dataclass(frozen=True, kw_only=True)
class Trace:
    """Every array of one pass. Shapes for n tokens and h heads (plus any leading batch dims):
    X (n, d_model); W_q, W_k (d_model, d_k) or transposed; W_v (d_model, d_v);
    Q, K (n, d_k); V (n, d_v); scores, scaled, weights (n, n), or (h, n, n) when h > 1;
    concat (n, d_v): the heads' outputs side by side; output (n, d_v): concat @ W_o, or concat without W_o.

    ``scores`` is QKᵀ before scaling; ``scaled`` is after scaling and masking (masked cells are -inf);
    ``weights`` is after softmax (rows sum to 1; a fully masked row is all 0). ``allowed`` is the boolean
    mask in force (True = may attend) or None; ``fully_masked`` lists rows that may attend nothing.
    ``scale`` is the factor the scores were multiplied by; ``d_k`` the query/key width one head sees (d_k/h).

    Grouped-query attention (``options.kv_heads`` = g < h): W_k, W_v, K and V have g blocks of d_k/h (d_v/g)
    columns, block i shared by query heads i·h/g … (i+1)·h/g − 1; scores/scaled/weights still have h heads.
    ALiBi positions: ``scaled`` includes each head's bias −m_h·(i − j) (``scores`` is QKᵀ alone).
    Cross-attention (:func:`cross_attention`): ``X_kv`` (S, d_model) is the sequence the keys and values come
    from, and ``tokens_kv`` its tokens; K, V have S rows and scores/scaled/weights are (L, S). None for self-attention.

    Positions: ``positions_added`` is the (n, d_model) matrix added to X (the sinusoidal PE, or the learned P)
    and ``X_in`` = X + positions_added what the projections saw; both None when nothing is added (X stays the
    embeddings as given). With rotary positions ``Q_raw`` and ``K_raw`` are Q and K before the rotation (Q and K
    are after it: what the scores use); None otherwise. ``W_o`` is the output mixing matrix or None.
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
    X_in: np.ndarray | None = None  # (..., n, d_model): X + positions_added; None when no positions are added
    Q_raw: np.ndarray | None = None  # (..., n, d_k): Q and K before the rotation (rotary positions); None otherwise
    K_raw: np.ndarray | None = None
    positions_added: np.ndarray | None = None  # (n, d_model): the PE or learned P added to X; None otherwise
    W_o: np.ndarray | None = None  # (d_v, d_out) or None
    concat: np.ndarray | None = None  # (..., n, d_v): the heads' outputs side by side, before W_o
    X_kv: np.ndarray | None = None  # (..., S, d_model): cross-attention's key/value sequence; None otherwise
    tokens_kv: tuple[str, ...] = ()

    def arrays(self) -> dict[str, np.ndarray]:
        """The eleven named arrays, in pipeline order."""
        return {name: getattr(self, name) for name in ARRAY_NAMES}

    @functools.cached_property
    def reading(self) -> Reading:
        """Top key, second key and entropy per query row (per head: arrays (h, n) when h > 1), computed once
        (see :mod:`attention.reading`). With a leading batch, the first batch item's."""
        batched = self.X.ndim == 3
        return read(self.weights[0] if batched else self.weights, self.allowed)

    def head(self, i: int) -> Trace:
        """Head i on its own, as a single-head trace: its blocks of W_q, W_k, W_v, its columns of Q, K, V and of
        the concatenation (its output), its (n, n) scores and weights; no W_o."""
        h, g, proj = self.options.heads, self.options.kv, self.options.projection
        if not (isinstance(i, (int, np.integer)) and 0 <= i < h):
            raise AttentionError(f"there is no head {i!r}: this trace has {h} head(s), numbered 0 to {h - 1}")
        kv = kv_block(i, h, g)  # the key/value block head i reads (i itself unless grouped)
        dk, dv = self.Q.shape[-1] // h, self.V.shape[-1] // g
        concat = self.output if self.concat is None else self.concat

        def cols(a: np.ndarray | None, w: int, block: int = i) -> np.ndarray | None:
            return None if a is None else a[..., block * w : (block + 1) * w]  # (..., n, w)

        def square(a: np.ndarray) -> np.ndarray:
            return a if h == 1 else a[..., i, :, :]  # (..., n, n)

        return replace(
            self,
            W_q=head_weights(self.W_q, h, i, proj),
            W_k=head_weights(self.W_k, g, kv, proj),
            W_v=head_weights(self.W_v, g, kv, proj),
            Q=cols(self.Q, dk),
            K=cols(self.K, dk, kv),
            V=cols(self.V, dv, kv),
            scores=square(self.scores),
            scaled=square(self.scaled),
            weights=square(self.weights),
            output=cols(concat, dv),
            concat=cols(concat, dv),
            W_o=None,
            Q_raw=cols(self.Q_raw, dk),
            K_raw=cols(self.K_raw, dk, kv),
            options=replace(self.options, heads=1, kv_heads=None),
        )


def check_inputs(
    X: object, W_q: object, W_k: object, W_v: object, options: Options, tokens: Sequence[str] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate the four input matrices against each other and the options; return them as float arrays."""
    rows = list(tokens) if tokens else None
    X = as_matrix("X", X, ndim=(2, 3), rows=rows)
    n, d_model = X.shape[-2:]
    if tokens is not None and len(tokens) != n:
        raise AttentionError(
            f"X has {n} rows but there are {len(tokens)} tokens; there must be one row per token", matrix="X"
        )
    Ws = {name: as_matrix(name, W) for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v))}
    out = names.out_axis(options.projection)  # the axis that gives Q's, K's or V's width; the other is d_model
    layout = "d_model × d_k (X @ W)" if options.projection == "x_w" else "d_k × d_model (X @ W.T)"
    for name, W in Ws.items():
        if W.shape[1 - out] != d_model:
            side = "columns" if out == 0 else "rows"
            want = names.weight_shape(int(d_model), W.shape[out], options.projection)
            raise AttentionError(
                f"{name} has {W.shape[1 - out]} {side} but X has {d_model} columns (d_model); {name} must be "
                f"{layout}, got {W.shape}; expected {want}",
                matrix=name,
            )
    check_widths(Ws["W_q"].shape[out], Ws["W_k"].shape[out], Ws["W_v"].shape[out], options)
    if "custom" in options.mask and len(options.custom_mask) != n:
        raise AttentionError(
            f"the custom mask is {len(options.custom_mask)} × {len(options.custom_mask)} but there are {n} tokens; "
            "give one row and one column per token",
            matrix="mask",
        )
    if "padding" in options.mask and len(options.padding) != n:
        raise AttentionError(
            f"the padding flags list {len(options.padding)} tokens but X has {n}; give one flag per token",
            matrix="mask",
        )
    return X, Ws["W_q"], Ws["W_k"], Ws["W_v"]


def check_widths(d_q: int, d_k: int, d_v: int, options: Options) -> None:
    """The widths W_q, W_k and W_v give fit the heads: W_q's splits into h query heads of d_q/h columns; W_k's is
    one such block per key/value head (kv_heads · d_q/h, i.e. d_q itself without grouping); W_v's splits into
    kv_heads blocks."""
    h, g = options.heads, options.kv
    if d_q % h:
        raise AttentionError(
            f"W_q gives width {d_q}, which does not divide into {h} heads; choose a width that is a multiple of {h}",
            matrix="W_q",
        )
    if g == h and d_q != d_k:
        raise AttentionError(
            f"W_q gives queries of width {d_q} but W_k gives keys of width {d_k}; QKᵀ needs them equal (d_k)",
            matrix="W_k",
        )
    if d_k != g * (d_q // h):
        raise AttentionError(
            f"W_k gives keys of width {d_k} but {g} key/value head(s) of the query heads' width {d_q // h} "
            f"(d_k/h = {d_q}/{h}) need width {g * (d_q // h)}: W_k has one block of {d_q // h} columns per "
            "key/value head",
            matrix="W_k",
        )
    r = options.rotary_dims
    if options.positions == "rotary" and r is not None and r > d_q // h:
        raise AttentionError(
            f"rotary_dims = {r} is wider than a head: each head's queries and keys have {d_q // h} columns "
            f"(d_k/h = {d_q}/{h}); rotary_dims must be an even number of them at most {d_q // h}",
            field="rotary_dims",
        )
    for name, gains in (("q_norm", options.q_norm), ("k_norm", options.k_norm)):
        if gains and len(gains) != d_q // h:
            raise AttentionError(
                f"{name} has {len(gains)} gains but each head's queries and keys have {d_q // h} columns "
                f"(d_k/h = {d_q}/{h}); QK-norm needs one gain per column",
                field=name,
            )
    if d_v % g:
        raise AttentionError(
            f"W_v gives width {d_v}, which does not divide into {g} "
            + ("heads" if g == h else "key/value heads")
            + f"; choose a width that is a multiple of {g}",
            matrix="W_v",
        )


def check_output_weights(W_o: object, d_v: int) -> np.ndarray | None:
    """W_o (d_v, d_out) as a float array, or None; its rows must match the heads' concatenated width d_v."""
    if W_o is None:
        return None
    W_o = as_matrix("W_o", W_o)
    if W_o.shape[0] != d_v:
        raise AttentionError(
            f"W_o has {W_o.shape[0]} rows but the heads concatenate to width {d_v} (d_v); W_o must have {d_v} rows "
            f"(d_v × d_out, e.g. {(d_v, W_o.shape[1])})",
            matrix="W_o",
        )
    return W_o


def check_positions(P: object, options: Options, n: int, d_model: int) -> np.ndarray | None:
    """The learned position matrix P (n, d_model) as a float array when positions are "learned"; None otherwise.
    A missing P, or a P given while positions are not "learned", is an error naming P."""
    if options.positions != "learned":
        if P is not None:
            raise AttentionError(
                f"a position matrix P was given but positions are {options.positions!r}; "
                "set positions to 'learned' to add P to X",
                matrix="P",
            )
        return None
    want = names.Dims(int(n), int(d_model), 1, 1).shape("P")
    if P is None:
        raise AttentionError(
            f"positions are 'learned' but no position matrix P was given; give P of shape {want} (n × d_model)",
            matrix="P",
        )
    P = as_matrix("P", P)
    if P.shape != want:
        raise AttentionError(
            f"P has shape {P.shape} but X has {n} tokens of width {d_model}; P must be n × d_model = {want}",
            matrix="P",
        )
    return P


def build_mask(options: Options, n: int, n_keys: int | None = None) -> np.ndarray | None:
    """The boolean mask (n, n) the options ask for (its parts combined with AND), or None. With ``n_keys``
    (cross-attention) it is (n, n_keys): causal and window top-left aligned, padding flags one per key."""
    parts, s = options.mask, n if n_keys is None else n_keys
    return masks.combine(
        masks.causal(n, s) if "causal" in parts else None,
        masks.padding(options.padding, n) if "padding" in parts else None,
        masks.custom(np.array(options.custom_mask, dtype=bool).reshape(n, s), n, s) if "custom" in parts else None,
        masks.window(n, options.window, s) if "window" in parts else None,
    )


def self_attention(
    X: object,
    W_q: object,
    W_k: object,
    W_v: object,
    *,
    W_o: object = None,
    P: object = None,
    tokens: Sequence[str] | None = None,
    options: Options | None = None,
    attn_mask: np.ndarray | None = None,
    **option_values: object,
) -> Trace:
    """Run every step and return the trace. Options may be given as an ``Options`` or as keywords
    (``projection="x_wt"``, ``softmax="none"``, ``scale=1.0``, ``mask="causal"``, ``temperature=2``...).
    ``W_o`` (d_v, d_out) mixes the heads' concatenation (with one head too); ``P`` (n, d_model) is the learned
    position matrix, required when ``positions="learned"``. ``attn_mask`` adds a custom boolean mask
    (True = may attend), ANDed with the options' mask. ``tokens`` (one per row of X) only improves error
    messages and labels.

    With ``heads > 1`` scores/scaled/weights have a head axis, (..., h, n, n); :meth:`Trace.head` gives one head.
    """
    opts = (options or Options()).replace(**option_values) if option_values else (options or Options())
    opts.validate()
    X, W_q, W_k, W_v = check_inputs(X, W_q, W_k, W_v, opts, tokens)
    W_o = check_output_weights(W_o, opts.heads * (W_v.shape[names.out_axis(opts.projection)] // opts.kv))
    P = check_positions(P, opts, *X.shape[-2:])
    return run_steps(X, W_q, W_k, W_v, opts, W_o=W_o, P=P, tokens=tokens, attn_mask=attn_mask)


def cross_attention(
    X_q: object,
    X_kv: object,
    W_q: object,
    W_k: object,
    W_v: object,
    options: Options | None = None,
    *,
    W_o: object = None,
    tokens: Sequence[str] | None = None,
    tokens_kv: Sequence[str] | None = None,
    attn_mask: np.ndarray | None = None,
    **option_values: object,
) -> Trace:
    """Cross-attention: queries from X_q (L, d_model), keys and values from X_kv (S, d_model), S may differ from L
    (a decoder reading an encoder, a sentence reading its translation). Q = X_q W_q, K = X_kv W_k, V = X_kv W_v;
    then the same steps as :func:`self_attention`, with scores (L, S). Returns the same Trace, with ``X_kv``
    and ``tokens_kv`` set.

    Options mean what they mean in self-attention: causal and window masks are top-left aligned (query i sees
    keys j <= i), the padding flags are one per key (S), a custom mask is ``attn_mask`` (L, S) (or the options'
    grid when L = S); sinusoidal positions number each sequence from 0, rotary positions turn Q by the query's
    position and K by the key's, ALiBi uses i − j. Learned positions (a P for one sequence) are refused.
    """
    opts = (options or Options()).replace(**option_values) if option_values else (options or Options())
    opts.validate()
    if opts.positions == "learned":
        raise AttentionError(
            "cross-attention cannot use learned positions (P belongs to one sequence); choose none, sinusoidal, "
            "rotary or alibi",
            field="positions",
        )
    X_kv_arr = as_matrix("X_kv", X_kv, ndim=(2, 3), rows=list(tokens_kv) if tokens_kv else None)
    X_q_arr, W_q, W_k, W_v = check_inputs(X_q, W_q, W_k, W_v, opts.replace(mask="none"), tokens)
    (L, d_model), (S, d_kv) = X_q_arr.shape[-2:], X_kv_arr.shape[-2:]
    if d_kv != d_model or X_kv_arr.shape[:-2] != X_q_arr.shape[:-2]:
        raise AttentionError(
            f"X_kv has shape {X_kv_arr.shape} but X_q has {X_q_arr.shape}; both need the same width d_model "
            f"({d_model}) and batch, with any number of rows",
            matrix="X_kv",
        )
    if tokens_kv is not None and len(tokens_kv) != S:
        raise AttentionError(
            f"X_kv has {S} rows but there are {len(tokens_kv)} source tokens; there must be one row per token",
            matrix="X_kv",
        )
    parts = opts.mask
    if "padding" in parts and len(opts.padding) != S:
        raise AttentionError(
            f"the padding flags list {len(opts.padding)} tokens but X_kv has {S}; in cross-attention give one flag "
            "per key (source token)",
            matrix="mask",
        )
    if "custom" in parts and (L != S or len(opts.custom_mask) != L):
        raise AttentionError(
            f"the options' custom mask is square ({len(opts.custom_mask)} × {len(opts.custom_mask)}) but "
            f"cross-attention here is {L} × {S} (queries × keys); give the custom mask as attn_mask of shape "
            f"({L}, {S})",
            matrix="mask",
        )
    W_o = check_output_weights(W_o, opts.heads * (W_v.shape[names.out_axis(opts.projection)] // opts.kv))
    return run_steps(
        X_q_arr, W_q, W_k, W_v, opts, W_o=W_o, tokens=tokens, attn_mask=attn_mask, X_kv=X_kv_arr, tokens_kv=tokens_kv
    )


class _Head(NamedTuple):
    """One head's arrays (see :func:`attend`)."""

    Q_raw: np.ndarray | None
    K_raw: np.ndarray | None
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    scores: np.ndarray
    scaled: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    scale: float


def attend(
    X_in: np.ndarray,
    W_q: np.ndarray,
    W_k: np.ndarray,
    W_v: np.ndarray,
    opts: Options,
    allowed: np.ndarray | None,
    rows: list[str] | None = None,
    bias: np.ndarray | None = None,
    X_kv: np.ndarray | None = None,
) -> _Head:
    """One head on validated inputs: W_q, W_k, W_v are this head's blocks (shapes in the trailing comments).
    ``bias`` (n, S): a float added to the scaled scores (ALiBi); ``X_kv`` (..., S, d_model): where keys and
    values come from (cross-attention), X_in itself when None."""
    X_kv = X_in if X_kv is None else X_kv
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked below and raised with a clear message
        Q = steps.project(X_in, W_q, opts.projection)  # (..., n, d_k)
        K = steps.project(X_kv, W_k, opts.projection)  # (..., S, d_k)
        V = steps.project(X_kv, W_v, opts.projection)  # (..., S, d_v)
        Q, K = qk_normed(Q, K, opts)  # (..., n, d_k), (..., S, d_k): QK-norm, when the options have its gains
        Q_raw, K_raw = (Q, K) if opts.positions == "rotary" else (None, None)
        if opts.positions == "rotary":
            Q, K = opts.rotate(Q), opts.rotate(K)  # (..., n, d_k) each: base, pairs, width and scaling as opts say
        for name, M, w in (("Q", Q, "W_q"), ("K", K, "W_k"), ("V", V, "W_v")):
            check_finite(name, M, f"the values of X and {w}", rows)
        d_k = Q.shape[-1]
        factor = steps.default_scale(d_k) if opts.scale is None else float(opts.scale)
        S = steps.scores(Q, K)  # (..., n, n)
        check_finite("scores", S, "the values of Q and K", rows, rows)
        S_scaled = steps.scale(S, factor)  # (..., n, n)
        if factor > 1:  # only a factor above 1 can push a finite score past the float64 range
            check_finite("scaled", S_scaled, f"the scores times the scale {factor:g}", rows, rows)
        S_scaled = steps.mask(S_scaled, allowed, bias)  # (..., n, n): + the ALiBi bias, then -inf where masked
        A = steps.softmax(
            S_scaled if opts.temperature == 1 else S_scaled / opts.temperature, opts.softmax, rows
        )  # (..., n, n)
    O = steps.weighted_sum(A, V)  # (..., n, d_v)
    return _Head(Q_raw=Q_raw, K_raw=K_raw, Q=Q, K=K, V=V, scores=S, scaled=S_scaled, weights=A, output=O, scale=factor)


def qk_normed(Q: np.ndarray, K: np.ndarray, opts: Options) -> tuple[np.ndarray, np.ndarray]:
    """One head's q and k after QK-norm (:func:`steps.rms_norm` with the options' gains); as they are without it."""
    if opts.q_norm:
        Q = steps.rms_norm(Q, np.asarray(opts.q_norm, dtype=Q.dtype), float(opts.qk_norm_eps))  # (..., n, d_k)
    if opts.k_norm:
        K = steps.rms_norm(K, np.asarray(opts.k_norm, dtype=K.dtype), float(opts.qk_norm_eps))  # (..., S, d_k)
    return Q, K


def run_steps(
    X: np.ndarray,
    W_q: np.ndarray,
    W_k: np.ndarray,
    W_v: np.ndarray,
    opts: Options,
    *,
    W_o: np.ndarray | None = None,
    P: np.ndarray | None = None,
    tokens: Sequence[str] | None = None,
    attn_mask: np.ndarray | None = None,
    X_kv: np.ndarray | None = None,
    tokens_kv: Sequence[str] | None = None,
) -> Trace:
    """The steps themselves, on already validated inputs: positions, each head (:func:`attend`), the heads
    side by side, W_o. With h > 1 heads the per-head arrays are stacked on a head axis (shapes in comments).
    Query head i reads key/value block i // (h / kv_heads). ``X_kv`` (S, d_model): cross-attention's source."""
    rows = list(tokens) if tokens else None
    n, s = X.shape[-2], (X if X_kv is None else X_kv).shape[-2]
    added = added_positions(opts, P, *X.shape[-2:])  # (n, d_model) or None
    X_in = X if added is None else X + added  # (..., n, d_model)
    X_kv_in = source_positions(opts, X_kv)  # (..., S, d_model) or None
    allowed = masks.combine(build_mask(opts, n, s), None if attn_mask is None else masks.custom(attn_mask, n, s))
    r = all_heads(X_in, W_q, W_k, W_v, opts, allowed, rows, X_kv_in)  # weights (..., n, S) or (..., h, n, S)
    output = mix_heads(r.output, W_o, rows)  # (..., n, d_out)
    return Trace(
        X=X,
        W_q=W_q,
        W_k=W_k,
        W_v=W_v,
        Q=r.Q,
        K=r.K,
        V=r.V,
        scores=r.scores,
        scaled=r.scaled,
        weights=r.weights,
        output=output,
        scale=r.scale,
        d_k=r.Q.shape[-1] // opts.heads,
        options=opts,
        allowed=allowed,
        fully_masked=tuple(int(i) for i in masks.fully_masked_rows(allowed)),
        tokens=tuple(tokens or ()),
        X_in=None if added is None else X_in,
        Q_raw=r.Q_raw,
        K_raw=r.K_raw,
        positions_added=added,
        W_o=W_o,
        concat=r.output,
        X_kv=X_kv,
        tokens_kv=tuple(tokens_kv or ()),
    )


def added_positions(opts: Options, P: np.ndarray | None, n: int, d_model: int) -> np.ndarray | None:
    """What is added to X before the projections: the sinusoidal PE, the learned P, or None. Shape (n, d_model)."""
    return positions.sinusoidal(n, d_model) if opts.positions == "sinusoidal" else P


def source_positions(opts: Options, X_kv: np.ndarray | None) -> np.ndarray | None:
    """Cross-attention's source (..., S, d_model) as the projections see it: with its own sinusoidal PE (a learned
    P belongs to one sequence), else as given; None for self-attention."""
    if X_kv is None or opts.positions != "sinusoidal":
        return X_kv
    return X_kv + positions.sinusoidal(*X_kv.shape[-2:])  # (..., S, d_model)


def alibi_bias(opts: Options, head: int, n: int, s: int) -> np.ndarray | None:
    """Head ``head``'s ALiBi bias −m_h·(i − j), (n, S); None without ALiBi positions. Made per head as it runs,
    so only one (n, S) bias is alive at a time."""
    if opts.positions != "alibi":
        return None
    return positions.alibi_bias(positions.alibi_slopes(opts.heads)[head], n, s)  # (n, S)


def all_heads(
    X_in: np.ndarray,
    W_q: np.ndarray,
    W_k: np.ndarray,
    W_v: np.ndarray,
    opts: Options,
    allowed: np.ndarray | None,
    rows: list[str] | None,
    X_kv: np.ndarray | None,
) -> _Head:
    """Every head (:func:`attend`) on its blocks of W_q, W_k, W_v; one head as it is, several side by side
    (:func:`stack_heads`). Query head i reads key/value block i // (h / kv_heads)."""
    h, g, proj = opts.heads, opts.kv, opts.projection
    n, s = X_in.shape[-2], (X_in if X_kv is None else X_kv).shape[-2]
    if h == 1:
        return attend(X_in, W_q, W_k, W_v, opts, allowed, rows, alibi_bias(opts, 0, n, s), X_kv)
    heads = []
    for i in range(h):
        kv = kv_block(i, h, g)  # the key/value block query head i reads (i itself unless grouped)
        W_q_i = head_weights(W_q, h, i, proj)  # (d_model, d_k/h) under X·W, transposed under X·Wᵀ
        W_k_i = head_weights(W_k, g, kv, proj)  # (d_model, d_k/h)
        W_v_i = head_weights(W_v, g, kv, proj)  # (d_model, d_v/h), d_v the heads' concatenated width
        heads.append(attend(X_in, W_q_i, W_k_i, W_v_i, opts, allowed, rows, alibi_bias(opts, i, n, s), X_kv))
    return stack_heads(heads, group=h // g, rotary=opts.positions == "rotary")


def stack_heads(heads: Sequence[_Head], group: int, rotary: bool) -> _Head:
    """The heads as one: Q, K, V and the outputs side by side on the last axis (K and V once per key/value
    block, from the first head of each group of ``group``), scores/scaled/weights stacked on a head axis."""

    def cat(name: str) -> np.ndarray:
        chosen = heads[::group] if name in ("K_raw", "K", "V") else heads
        return np.concatenate([getattr(t, name) for t in chosen], axis=-1)  # (..., n, width of all heads)

    def stack(name: str) -> np.ndarray:
        return np.stack([getattr(t, name) for t in heads], axis=-3)  # (..., h, n, S)

    return _Head(
        Q_raw=cat("Q_raw") if rotary else None,  # (..., n, d_k)
        K_raw=cat("K_raw") if rotary else None,  # (..., S, g·d_k/h)
        Q=cat("Q"),  # (..., n, d_k)
        K=cat("K"),  # (..., S, g·d_k/h)
        V=cat("V"),  # (..., S, g·d_v/h)
        scores=stack("scores"),  # (..., h, n, S)
        scaled=stack("scaled"),  # (..., h, n, S)
        weights=stack("weights"),  # (..., h, n, S)
        output=cat("output"),  # (..., n, d_v)
        scale=heads[0].scale,
    )


def mix_heads(concat: np.ndarray, W_o: np.ndarray | None, rows: list[str] | None = None) -> np.ndarray:
    """The output: the heads' concatenation (..., n, d_v) times W_o (d_v, d_out), or the concatenation itself."""
    if W_o is None:
        return concat  # (..., n, d_v)
    with np.errstate(over="ignore", invalid="ignore"):
        output = concat @ W_o  # (..., n, d_v) @ (d_v, d_out) -> (..., n, d_out)
    check_finite("output", output, "the heads' outputs and the values of W_o", rows)
    return output


def scaled_dot_product_attention(
    q: object,
    k: object,
    v: object,
    attn_mask: object = None,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's ``scaled_dot_product_attention`` in numpy: returns ``(output, weights)``.

    q (..., L, E), k (..., S, E), v (..., S, Ev) -> output (..., L, Ev), weights (..., L, S).
    ``attn_mask``: boolean (True = may attend) or float (added to the scaled scores), broadcastable to
    (..., L, S). ``is_causal``: top-left causal mask; not together with ``attn_mask``. ``scale``: default
    1/√E. A fully masked row gets weights 0 and output 0 (PyTorch's math path gives NaN before 2.5).
    ``enable_gqa``: q (..., Hq, L, E) and k, v (..., Hkv, S, E) with Hkv dividing Hq; key/value head j serves query
    heads j·Hq/Hkv … (j+1)·Hq/Hkv − 1 (k and v repeated along the head axis, as PyTorch does).
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
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        hq, hkv = q.shape[-3], k.shape[-3]
        if hq % hkv or v.shape[-3] != hkv:
            raise AttentionError(
                f"with enable_gqa the {hkv} key/value heads (k and v) must divide the {hq} query heads", matrix="k"
            )
        k, v = np.repeat(k, hq // hkv, axis=-3), np.repeat(v, hq // hkv, axis=-3)  # (..., Hq, S, E) each
    if is_causal and attn_mask is not None:
        raise AttentionError("give either attn_mask or is_causal=True, not both", matrix="mask")
    if scale is not None and not finite(scale):
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


@dataclass(frozen=True, kw_only=True)
class MultiHeadTrace:
    """Per-head traces, their concatenation, and the final output.

    ``heads[i]`` is head i as a single-head Trace (:meth:`Trace.head`); ``concat`` is (..., n, d_v); ``output``
    is concat @ W_o (or concat when W_o is None). ``combined`` is the one Trace over all heads: Q, K, V full
    width, scores/scaled/weights stacked as (..., h, n, n) (a head axis even when h = 1), output the final output.
    """

    heads: tuple[Trace, ...]
    concat: np.ndarray
    W_o: np.ndarray | None
    output: np.ndarray
    combined: Trace


def multi_head(
    X: object,
    W_q: object,
    W_k: object,
    W_v: object,
    options: Options,
    *,
    W_o: object = None,
    P: object = None,
    tokens: Sequence[str] | None = None,
    attn_mask: np.ndarray | None = None,
) -> MultiHeadTrace:
    """Multi-head attention with ``options.heads`` heads, its heads also as separate traces.

    head_i = Attention(X W_q^i, X W_k^i, X W_v^i), where W^i is the i-th block of d_k/h columns of W;
    MultiHead(X) = Concat(head_1, ..., head_h) W_o (W_o optional, d_v × d_out). Each head scales by 1/√(d_k/h)
    unless a scale is given. The same computation as :func:`self_attention`, which returns ``combined``.
    """
    t = self_attention(X, W_q, W_k, W_v, W_o=W_o, P=P, tokens=tokens, options=options, attn_mask=attn_mask)
    heads = tuple(t.head(i) for i in range(t.options.heads))
    if t.options.heads == 1:  # the combined trace always has a head axis here
        t = replace(
            t, scores=t.scores[..., None, :, :], scaled=t.scaled[..., None, :, :], weights=t.weights[..., None, :, :]
        )
    concat = t.output if t.concat is None else t.concat
    return MultiHeadTrace(heads=heads, concat=concat, W_o=t.W_o, output=t.output, combined=t)
