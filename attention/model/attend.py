"""One layer's attention on new rows of a text: the full pass runs it on every row, the cached step on one.

For m new rows at positions start .. start + m − 1, with the keys and values of the ``start`` rows before them from
a cache (none in the full pass), H query heads of width dₕ sharing G key/value heads:

    q, k, v = X W_q, X W_k, X W_v                  (H, m, dₕ), (G, m, dₕ), (G, m, dₕ)   [X = [h, 1] with biases]
    q, k = RMS(q), RMS(k)                          QK-norm: per head (Qwen3, Gemma 3), or across all heads before
                                                   the split (OLMo-2: RMS over H·dₕ columns of q, G·dₕ of k)
    q, k = rotate(q), rotate(k)                    RoPE at their own positions
    K, V = [K_cache; k], [V_cache; v]              (G, s, dₕ), s = start + m
    S = q Kᵀ, query head i reading key/value head i // (H/G)                      (H, m, s)
    A = softmax(S · scale, where key j ≤ query position, and > it − w on a sliding layer)   (H, m, s)
    concat = [A V per head] (m, H·dₕ);  output = concat W_o (m, d)

Every step is the project's own (:mod:`attention.steps`), and the full pass's arrays become the layer's
:class:`~attention.Trace`, so each head is a Trace with its group's K and V (:meth:`~attention.Trace.head`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .. import positions, steps
from .. import rotation as rotations
from ..heads import kv_block, merge_heads, split_heads
from ..options import Options
from ..trace import Trace
from .config import Config
from .interventions import NO_HOOKS, Hooks
from .layers import rms_norm

Params = dict[str, np.ndarray]
Weights = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # W_q, W_k, W_v (bias as last row), W_o


class Attended(NamedTuple):
    """One layer's attention on m new rows (s keys in all): per-head arrays, the heads' outputs and the weights used.
    q_raw/k_raw are q and k before the rotation (after QK-norm); None without rotary positions."""

    X: np.ndarray  # (..., m, d [+1]): a leading batch axis, when there is one, on every array but W and allowed
    W: Weights
    q_raw: np.ndarray | None  # (..., H, m, dₕ)
    k_raw: np.ndarray | None  # (..., G, m, dₕ): this pass's rows only
    q: np.ndarray  # (..., H, m, dₕ)
    K: np.ndarray  # (..., G, s, dₕ): the cache's rows, then these
    V: np.ndarray  # (..., G, s, dₕ)
    scores: np.ndarray | None  # (..., H, m, s); None when not kept (see :func:`weigh`)
    scaled: np.ndarray | None  # (..., H, m, s): scaled, -inf where masked
    weights: np.ndarray | None  # (..., H, m, s)
    concat: np.ndarray  # (..., m, H·dₕ)
    output: np.ndarray  # (..., m, d): concat W_o
    allowed: np.ndarray  # (m, s), or (H, m, s) for an evicted cache
    scale: float


def rotation(config: Config, layer: int) -> dict[str, object]:
    """How a layer turns its queries and keys, as the options name it (see :class:`~attention.rotation.Rotation`):
    the config's rotation, or on a "sliding" layer with rope_local_theta that base, unscaled."""
    c = config
    local = c.layer_type(layer) == "sliding" and c.rope_local_theta is not None
    turn = dataclasses.replace(c.rotation, rope_theta=c.rope_local_theta, rope_scaling="none") if local else c.rotation
    return rotations.to_json(turn)


def frequencies(config: Config, layer: int) -> np.ndarray | None:
    """The rotation frequencies of a layer (rotated columns / 2,), as its options compute them (one formula for the
    model and the step pages); None without rotary positions."""
    if config.positions != "rotary":
        return None
    return rotations.Rotation(**rotation(config, layer)).frequencies(config.d_head)  # type: ignore[arg-type]


def visible(start: int, m: int, s: int, window: int = 0) -> np.ndarray:
    """Which keys each new row may attend, (m, s): key j ≤ the row's position, and within the last ``window``
    positions (the row itself and the window − 1 before it) when window > 0."""
    query = np.arange(start, start + m)[:, None]  # (m, 1): each row's position
    key = np.arange(s)[None, :]  # (1, s)
    allowed = key <= query  # (m, s)
    return allowed & (query - key < window) if window else allowed


def replaced(config: Config, W: Weights, interventions: Sequence) -> Weights:
    """The weights with head blocks replaced: W_q's columns of query head i, W_k's and W_v's of the key/value head
    it reads (shared by its group: every head of the group changes), W_o's rows of head i."""
    if not interventions:
        return W
    # copies in the same memory layout, so a block left as it was computes the same bits as before
    out = dict(zip(("W_q", "W_k", "W_v", "W_o"), (w.copy(order="K") for w in W), strict=True))
    dh, H, G = config.d_head, config.n_heads, config.kv_heads
    for iv in interventions:
        block = kv_block(iv.head, H, G) if iv.matrix in ("W_k", "W_v") else iv.head
        cols = slice(block * dh, (block + 1) * dh)
        if iv.matrix == "W_o":
            out["W_o"][cols, :] = iv.value  # (dₕ, d): the head's rows
        else:
            out[str(iv.matrix)][:, cols] = iv.value  # (d [+1], dₕ): the block's columns
    return out["W_q"], out["W_k"], out["W_v"], out["W_o"]


def qk_normed(config: Config, params: Params, layer: int, q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, ...]:
    """q (..., m, H·dₕ) and k (..., m, G·dₕ) split into heads, (..., H, m, dₕ) and (..., G, m, dₕ), QK-normed as
    the config says: each head's d_head columns with the shared d_head-wide gains ("head"), or every head's columns
    at once with gains H·dₕ and G·dₕ wide, before the split ("all", OLMo-2); as they are without QK-norm."""
    c, H, G = config, config.n_heads, config.kv_heads
    gq, gk = (params[f"{layer}.q_norm.g"], params[f"{layer}.k_norm.g"]) if c.qk_norm else (None, None)
    if c.qk_norm and c.qk_norm_scope == "all":
        q, k = rms_norm(q, gq, c.ln_eps, c.norm_offset), rms_norm(k, gk, c.ln_eps, c.norm_offset)  # before the split
    q, k = split_heads(q, H), split_heads(k, G)  # (..., H, m, dₕ), (..., G, m, dₕ)
    if c.qk_norm and c.qk_norm_scope == "head":
        q, k = rms_norm(q, gq, c.ln_eps, c.norm_offset), rms_norm(k, gk, c.ln_eps, c.norm_offset)  # per head
    return q, k


def attend(
    config: Config,
    params: Params,
    layer: int,
    X: np.ndarray,
    W: Weights,
    start: int = 0,
    past: tuple[np.ndarray, np.ndarray] | None = None,
    hooks: Hooks = NO_HOOKS,
    keep: bool = True,
    allowed: np.ndarray | None = None,
) -> Attended:
    """Layer ``layer``'s attention on the new rows X (..., m, d [+1]) at positions start .. start + m − 1, after the
    cache's keys and values ``past`` ((G, start, dₕ) each, shared by a batch, or (..., G, start, dₕ)). A leading
    batch axis of X runs through every step. ``hooks`` may read or replace the layer's named activations
    (``blocks.{layer}.attn.hook_q`` ...; see :mod:`.interventions`). Without ``keep`` the scores, scaled scores
    and weights are not kept (None; see :func:`weigh`). ``allowed`` (m, s) or (H, m, s), when given, replaces the
    positions' mask (:func:`visible`): a cache that no longer holds every earlier position (an evicted one,
    :mod:`.eviction`) says itself which of its keys each row may attend."""
    H, at = config.n_heads, f"blocks.{layer}.attn."
    q_raw, k_raw, q, K, V, allowed, factor = project(config, params, layer, X, W, start, past, hooks, allowed)
    S, scaled, A, heads = weigh(q, K, V, allowed, factor, hooks, at, keep)  # (..., H, m, s) × 3 or None, heads
    concat = _hooked(merge_heads(heads), H, hooks, at + "hook_z")  # (..., m, H·dₕ)
    return Attended(X, W, q_raw, k_raw, q, K, V, S, scaled, A, concat, _output(concat, W[3], H, hooks, at), allowed,
                    factor)


def project(
    config: Config,
    params: Params,
    layer: int,
    X: np.ndarray,
    W: Weights,
    start: int = 0,
    past: tuple[np.ndarray, np.ndarray] | None = None,
    hooks: Hooks = NO_HOOKS,
    allowed: np.ndarray | None = None,
) -> tuple:
    """The first lines of :func:`attend`: (q_raw, k_raw, q, K, V, allowed, scale), the queries, keys and values
    (QK-normed, rotated; K and V after the cache's), which keys each row may see (``allowed`` when given), and the
    score scale."""
    c, (W_q, W_k, W_v, _) = config, W
    H, G, at = c.n_heads, c.kv_heads, f"blocks.{layer}.attn."
    q = _hooked(linear(X, W_q), H, hooks, at + "hook_q")  # (..., m, H·dₕ)
    k = _hooked(linear(X, W_k), G, hooks, at + "hook_k")  # (..., m, G·dₕ)
    q, k = qk_normed(c, params, layer, q, k)  # (..., H, m, dₕ), (..., G, m, dₕ)
    v = split_heads(_hooked(linear(X, W_v), G, hooks, at + "hook_v"), G)  # (..., G, m, dₕ)
    omega = frequencies(c, layer)
    q_raw, k_raw = (q, k) if omega is not None else (None, None)
    if omega is not None:
        q = _by_position(positions.rotate(q, omega, start, c.rotary_layout), hooks, at + "hook_rot_q")  # as before
        k = _by_position(positions.rotate(k, omega, start, c.rotary_layout), hooks, at + "hook_rot_k")
    K, V = (k, v) if past is None else (_after(past[0], k), _after(past[1], v))  # (..., G, s, dₕ) each
    if allowed is None:
        allowed = visible(start, X.shape[-2], K.shape[-2], window(c, layer))  # (m, s)
    return q_raw, k_raw, q, K, V, allowed, c.scale(layer)


def window(config: Config, layer: int) -> int:
    """The sliding window of a layer (0: none)."""
    return config.sliding_window if config.layer_type(layer) == "sliding" else 0


BLOCK_CELLS = 1 << 24  # a block of query rows holds about this many scores (64 MB in float32): few, large products


def weigh(
    q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    allowed: np.ndarray,
    factor: float,
    hooks: Hooks = NO_HOOKS,
    at: str = "",
    keep: bool = True,
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None, np.ndarray]:
    """The attention of queries q (..., H, m, dₕ) on keys K and values V (..., G, s, dₕ): the scores S, the scaled
    and masked scores, the weights A (each (..., H, m, s), or None unless ``keep``) and the heads' outputs A V
    (..., H, m, dₕ). A long text runs in blocks of query rows (about BLOCK_CELLS scores each), each block only over
    the keys from the first any of its rows sees to the last (:func:`_span`), so the n × n arrays of every head never
    exist at once unless kept; the rows of a block are computed exactly as the whole would compute them (the same
    steps on the same numbers; the mask only where some row of the block may not see a key; without ``keep``, in
    place in the block's own array unless a hook sees it). A hook on the scores or the pattern sees the whole array:
    then one block."""
    *lead, H, m, _ = q.shape
    s = K.shape[-2]
    whole = at + "hook_attn_scores" in hooks or at + "hook_pattern" in hooks
    rows = m if whole else max(1, BLOCK_CELLS // (H * s * int(np.prod(lead, dtype=np.int64))))
    heads = np.empty((*lead, H, m, V.shape[-1]), dtype=np.result_type(q, V))  # (..., H, m, dₕ)
    kept = [np.empty((*lead, H, m, s), dtype=heads.dtype) for _ in range(3)] if keep else None
    here = not (keep or whole)  # nothing kept and no hook sees them: each block's scores become its weights in place
    for r in range(0, m, rows):
        b = slice(r, min(r + rows, m))
        sees = allowed[..., b, :]  # (rows, s) or (H, rows, s)
        keys, band = _span(sees, whole=rows >= m)  # the keys computed; among them, those to mask
        S = _grouped(steps.scores, q[..., b, :], K[..., keys, :])  # (..., H, rows, k): head i on key head i // (H/G)
        scaled = steps.scale(S, factor, out=S if here else None)  # (..., H, rows, k)
        near = scaled[..., band]  # (..., H, rows, k'): the keys some row of the block may not see
        steps.mask(near, sees[..., keys][..., band], out=near)  # in place: −inf where not seen
        scaled = hooks(at + "hook_attn_scores", scaled)  # (..., H, rows, k)
        A = hooks(at + "hook_pattern", steps.softmax(scaled, out=scaled if here else None))  # (..., H, rows, k)
        heads[..., b, :] = _grouped(steps.weighted_sum, A, V[..., keys, :])  # (..., H, rows, dₕ)
        if kept is None:
            continue
        if rows >= m:  # one block: the arrays themselves (a hook's replacement included)
            return S, scaled, A, heads
        for whole_array, part in zip(kept, (S, scaled, A), strict=True):
            whole_array[..., b, keys] = part
        rest = np.ones(s, dtype=bool)
        rest[keys] = False  # (s,): the keys no row of the block sees
        kept[0][..., b, rest] = _grouped(steps.scores, q[..., b, :], K[..., rest, :])  # their raw scores
        kept[1][..., b, rest], kept[2][..., b, rest] = -np.inf, 0.0  # masked keys: −inf, weight 0
    return (*kept, heads) if kept is not None else (None, None, None, heads)


def _span(sees: np.ndarray, whole: bool = False) -> tuple[slice, slice]:
    """For a block's visible keys ``sees`` (rows, s) or (H, rows, s): the keys from the first any row sees to the
    last (at least one; every key when ``whole``), and, counted from the first, the span of those some row may not
    see (the only ones masking changes: a key every row sees, below the diagonal, is left as it is)."""
    seen = sees.reshape(-1, sees.shape[-1])  # (rows·[H], s)
    some = np.flatnonzero(seen.any(axis=0))  # the keys any row sees
    first, last = int(some.min(initial=0)), max(int(some.max(initial=0)) + 1, 1)
    first, last = (0, seen.shape[-1]) if whole else (first, last)
    partly = np.flatnonzero(~seen[:, first:last].all(axis=0))  # among them, the keys a row may not see
    return slice(first, last), slice(int(partly.min(initial=0)), int(partly.max(initial=-1)) + 1)


def _grouped(step, x: np.ndarray, kv: np.ndarray) -> np.ndarray:
    """``step`` (scores or weighted_sum) of each query head's rows x (..., H, rows, w) with the keys or values
    kv (..., G, k, e) of the group it reads: the H/G heads of a group stacked as one matrix (one product per group,
    as BLAS runs it fastest): (..., H, rows, ·)."""
    *lead, H, rows, w = x.shape
    G = kv.shape[-3]
    stacked = x.reshape(*lead, G, H // G * rows, w)  # (..., G, H/G·rows, w)
    return step(stacked, kv).reshape(*lead, H, rows, -1)  # (..., H, rows, k or e)


def linear(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """x W for rows x (..., m, k) and a weight W (k, o): (..., m, o). A batch's rows go through one matrix product
    (numpy multiplies a stack of matrices one at a time, without BLAS: many times slower for short texts)."""
    if x.ndim <= 2:
        return x @ W  # (m, o)
    return (x.reshape(-1, x.shape[-1]) @ W).reshape(*x.shape[:-1], W.shape[-1])  # (..., m, o)


def _hooked(y: np.ndarray, h: int, hooks: Hooks, name: str) -> np.ndarray:
    """Heads side by side (..., m, h·w) through the hook ``name``, which sees them as (..., m, h, w)."""
    if name not in hooks:
        return y
    return hooks(name, y.reshape(*y.shape[:-1], h, -1)).reshape(y.shape)  # (..., m, h·w)


def _by_position(x: np.ndarray, hooks: Hooks, name: str) -> np.ndarray:
    """Per-head rows (..., h, m, w) through the hook ``name``, which sees them as (..., m, h, w)."""
    if name not in hooks:
        return x
    return np.swapaxes(hooks(name, np.swapaxes(x, -3, -2)), -3, -2)  # (..., h, m, w)


def _after(past: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The cache's rows (G, start, dₕ) or (..., G, start, dₕ), then the new rows (..., G, m, dₕ)."""
    if past.ndim == new.ndim:
        return np.concatenate([past, new], axis=-2)
    return np.concatenate([np.broadcast_to(past, (*new.shape[:-2], past.shape[-2], new.shape[-1])), new], axis=-2)


def _output(concat: np.ndarray, W_o: np.ndarray, H: int, hooks: Hooks, at: str) -> np.ndarray:
    """concat W_o (..., m, d); with a hook on ``hook_result``, the sum over heads of each head's z_h W_o^h."""
    if at + "hook_result" not in hooks:
        return linear(concat, W_o)  # (..., m, d)
    z = concat.reshape(*concat.shape[:-1], H, -1)  # (..., m, H, dₕ)
    result = np.einsum("...mhe,hed->...mhd", z, W_o.reshape(H, z.shape[-1], -1))  # (..., m, H, d)
    return hooks(at + "hook_result", result).sum(axis=-2)  # (..., m, d)


def layer_options(config: Config, layer: int, n: int | None = None, params: Params | None = None) -> Options:
    """The options a layer's trace records, so that the generic engine recomputes each head exactly: n_heads causal
    heads sharing kv_heads, the score scale (None when it is 1/√d_head), rotary or no positions with the layer's
    rotation (:func:`rotation`; left at the defaults without rotary positions), the window on a "sliding" layer
    when it is shorter than the n keys, and with ``params`` a per-head QK-norm's gains as applied (offset + γ) and
    its ε. A QK-norm across all heads (OLMo-2) is not an option: one head's q is not normed by its own columns."""
    c = config
    norms = {}
    if params is not None and c.qk_norm and c.qk_norm_scope == "head":
        gains = {w: c.norm_offset + params[f"{layer}.{w}.g"] for w in ("q_norm", "k_norm")}  # as rms_norm applies
        norms = {w: tuple(float(g) for g in v) for w, v in gains.items()} | {"qk_norm_eps": c.ln_eps}
    plain = c.query_pre_attn_scalar is None and c.scale_attn and not c.scale_by_layer
    window = c.sliding_window if c.layer_type(layer) == "sliding" else 0
    bites = window > 0 and (n is None or window < n)
    return Options(
        heads=c.n_heads,
        kv_heads=None if c.kv_heads == c.n_heads else c.kv_heads,
        mask=("causal", "window") if bites else ("causal",),
        window=window if bites else Options.window,
        positions="rotary" if c.positions == "rotary" else "none",
        scale=None if plain else c.scale(layer),
        **(rotation(c, layer) if c.positions == "rotary" else {}),  # type: ignore[arg-type]
        **norms,  # type: ignore[arg-type]
    )


def to_trace(a: Attended, options: Options, tokens: Sequence[str] | None = None) -> Trace:
    """The full pass's attention as the layer's Trace: Q, K, V and the heads' outputs side by side, the scores,
    scaled scores and weights (H, n, n) ((n, n) for one head), W_o, and Q, K before the rotation as Q_raw, K_raw."""
    one = options.heads == 1

    def square(x: np.ndarray) -> np.ndarray:
        return x[..., 0, :, :] if one else x  # (..., n, n) or (..., H, n, n)

    return Trace(
        X=a.X,
        W_q=a.W[0],
        W_k=a.W[1],
        W_v=a.W[2],
        Q=merge_heads(a.q),  # (n, H·dₕ)
        K=merge_heads(a.K),  # (n, G·dₕ)
        V=merge_heads(a.V),  # (n, G·dₕ)
        scores=square(a.scores),
        scaled=square(a.scaled),
        weights=square(a.weights),
        output=a.output,  # (n, d)
        scale=a.scale,
        d_k=a.q.shape[-1],
        options=options,
        allowed=a.allowed,
        tokens=tuple(tokens or ()),
        Q_raw=None if a.q_raw is None else merge_heads(a.q_raw),
        K_raw=None if a.k_raw is None else merge_heads(a.k_raw),
        W_o=a.W[3],
        concat=a.concat,
    )
