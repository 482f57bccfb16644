"""FlashAttention's online softmax: the same output as the full softmax, computed tile by tile.

The full path builds the whole n × n matrix of scores, then softmax, then A V. FlashAttention (Dao et al. 2022;
the loop order here is FlashAttention-2's) never holds it: it cuts the queries into blocks of ``block_q`` rows
and the keys into blocks of ``block_k``, and for each query block walks the key blocks in order, keeping per row
a running max m, a running sum ℓ and an unnormalised output accumulator O. For each tile of scores Z (B_q, B_k):

    m_new = max(m_old, rowmax(Z))               the largest score seen so far in the row
    r     = exp(m_old − m_new)                  the rescale: what was summed so far was relative to m_old
    P     = exp(Z − m_new)                      this tile's unnormalised weights
    ℓ     = r · ℓ + rowsum(P)
    O     = r · O + P V_j

and after the row's last tile the output is O / ℓ. Every exp is of a number ≤ 0 (never overflows), and the result
is softmax(Z) V exactly in real arithmetic. A row whose keys are all masked keeps m = −inf and ℓ = 0: its output is
0, as the engine's full path gives (PyTorch's safe softmax). Here every tile's intermediate values are kept, so a
page can walk them (:class:`Tile`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import positions, steps
from .errors import AttentionError
from .heads import kv_block, merge_heads, split_heads
from .names import is_whole
from .trace import Trace

MAX_TILE = 2048


@dataclass(frozen=True)
class Tile:
    """One tile's step: query rows ``rows`` = (start, stop) of query block ``q_block``, key columns ``cols`` of key
    block ``k_block``. Shapes for B_q rows, B_k keys, d_v value columns (plus any leading head/batch dims):
    ``scores`` (..., B_q, B_k) the tile's scaled, biased, masked scores over T (−inf where masked);
    ``m_old``, ``m_new``, ``rescale`` = exp(m_old − m_new), ``l`` (the running sum after this tile): (..., B_q);
    ``p`` = exp(scores − m_new) (..., B_q, B_k); ``acc`` the unnormalised output after this tile (..., B_q, d_v);
    ``partial`` = acc / ℓ, the row block's output if this were its last tile (0 where ℓ = 0); ``last``: it is."""

    q_block: int
    k_block: int
    rows: tuple[int, int]
    cols: tuple[int, int]
    scores: np.ndarray
    m_old: np.ndarray
    m_new: np.ndarray
    rescale: np.ndarray
    p: np.ndarray
    l: np.ndarray  # noqa: E741 (ℓ, the name the paper uses)
    acc: np.ndarray
    partial: np.ndarray
    last: bool


@dataclass(frozen=True)
class Flash:
    """The tiled pass: ``output`` (..., L, d_v), the final ``m`` and ``l`` per row (..., L), every tile in the
    order computed (query block by query block, key blocks in order within each), and the block sizes."""

    output: np.ndarray
    m: np.ndarray
    l: np.ndarray  # noqa: E741
    tiles: tuple[Tile, ...]
    block_q: int
    block_k: int

    @property
    def grid(self) -> tuple[int, int]:
        """(query blocks, key blocks)."""
        return (1 + max(t.q_block for t in self.tiles), 1 + max(t.k_block for t in self.tiles))


def _block(value: object, name: str) -> int:
    if not is_whole(value) or not 1 <= value <= MAX_TILE:
        raise AttentionError(f"{name} must be a whole number from 1 to {MAX_TILE}; got {value!r}", field=name)
    return int(value)


def tiled(
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    *,
    block_q: int,
    block_k: int,
    scale: float | None = None,
    temperature: float = 1.0,
    allowed: np.ndarray | None = None,
    bias: np.ndarray | None = None,
) -> Flash:
    """softmax(mask((Q Kᵀ) · scale + bias) / T) V, tile by tile. Q (..., L, d), K (..., S, d), V (..., S, d_v);
    ``allowed`` a boolean mask broadcastable to (..., L, S) (True = may attend); ``bias`` a float one added after
    scaling (ALiBi); scale 1/√d by default. Block sizes need not divide L or S (the last blocks are smaller)."""
    block_q, block_k = _block(block_q, "block_q"), _block(block_k, "block_k")
    L, S = Q.shape[-2], K.shape[-2]
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    factor = steps.default_scale(Q.shape[-1]) if scale is None else float(scale)
    full = lead + (L, S)
    allowed_full = None if allowed is None else np.broadcast_to(allowed, full)  # (..., L, S)
    bias_full = None if bias is None else np.broadcast_to(bias, full)  # (..., L, S)
    out = np.zeros(lead + (L, V.shape[-1]))  # (..., L, d_v)
    m_all, l_all = np.full(lead + (L,), -np.inf), np.zeros(lead + (L,))  # (..., L) each
    tiles: list[Tile] = []
    for qb, r0 in enumerate(range(0, L, block_q)):
        r1 = min(r0 + block_q, L)
        q = Q[..., r0:r1, :]  # (..., B_q, d)
        m = np.full(lead + (r1 - r0,), -np.inf)  # (..., B_q): the running max
        l = np.zeros(lead + (r1 - r0,))  # noqa: E741  (..., B_q): the running sum
        acc = np.zeros(lead + (r1 - r0, V.shape[-1]))  # (..., B_q, d_v): the unnormalised output
        for kb, c0 in enumerate(range(0, S, block_k)):
            c1 = min(c0 + block_k, S)
            with np.errstate(over="ignore", invalid="ignore"):
                z = steps.scale(steps.scores(q, K[..., c0:c1, :]), factor)  # (..., B_q, B_k)
                z = steps.mask(
                    z,
                    None if allowed_full is None else allowed_full[..., r0:r1, c0:c1],
                    None if bias_full is None else bias_full[..., r0:r1, c0:c1],
                )  # (..., B_q, B_k)
                if temperature != 1:
                    z = z / temperature  # (..., B_q, B_k)
            m_new = np.maximum(m, z.max(axis=-1))  # (..., B_q)
            seen = np.isfinite(m_new)  # rows with at least one key allowed so far
            safe = np.where(seen, m_new, 0.0)  # (..., B_q): −inf − (−inf) would be NaN
            rescale = np.where(seen, np.exp(np.where(seen, m - safe, 0.0)), 1.0)  # (..., B_q): exp(m_old − m_new)
            p = np.exp(z - safe[..., None])  # (..., B_q, B_k): 0 where masked
            l_new = rescale * l + p.sum(axis=-1)  # (..., B_q)
            acc = rescale[..., None] * acc + p @ V[..., c0:c1, :]  # (..., B_q, d_v)
            partial = np.divide(acc, l_new[..., None], out=np.zeros_like(acc), where=l_new[..., None] > 0)
            tiles.append(Tile(qb, kb, (r0, r1), (c0, c1), z, m, m_new, rescale, p, l_new, acc, partial, c1 == S))
            m, l = m_new, l_new
        out[..., r0:r1, :] = tiles[-1].partial  # (..., B_q, d_v): O / ℓ after the row block's last tile
        m_all[..., r0:r1], l_all[..., r0:r1] = m, l
    return Flash(out, m_all, l_all, tuple(tiles), block_q, block_k)


def from_trace(trace: Trace, block_q: int, block_k: int | None = None, head: int | None = None) -> Flash:
    """The tiled pass over a trace's own Q, K, V, scale, temperature, mask and ALiBi bias, every head at once:
    arrays get a head axis (h, L, ...) when the trace has h > 1 heads (key/value blocks repeated for grouped
    heads). Its ``output`` (..., L, d_v) is the heads' outputs side by side, the trace's ``concat`` (before W_o).
    With ``head`` = i only query head i is tiled, against the key/value block it reads: no head axis, and
    ``output`` (..., L, d_v/h) is head i's columns of ``concat``."""
    o = trace.options
    h, g = o.heads, o.kv
    L, S = trace.Q.shape[-2], trace.K.shape[-2]
    if head is not None:
        return _one_head(trace, block_q, block_q if block_k is None else block_k, head)
    Q = split_heads(trace.Q, h)  # (..., h, L, d_k/h)
    K = np.repeat(split_heads(trace.K, g), h // g, axis=-3)  # (..., h, S, d_k/h): block i // (h/g) for head i
    V = np.repeat(split_heads(trace.V, g), h // g, axis=-3)  # (..., h, S, d_v/g)
    bias = None
    if o.positions == "alibi":
        slopes = positions.alibi_slopes(h)  # (h,)
        bias = np.stack([positions.alibi_bias(m, L, S) for m in slopes])  # (h, L, S)
    f = tiled(
        Q,
        K,
        V,
        block_q=block_q,
        block_k=block_q if block_k is None else block_k,
        scale=trace.scale,
        temperature=float(o.temperature),
        allowed=trace.allowed,
        bias=bias,
    )
    if h == 1:  # drop the head axis of one: shapes as the trace's
        f = Flash(
            f.output[..., 0, :, :],
            f.m[..., 0, :],
            f.l[..., 0, :],
            tuple(_squeeze(t) for t in f.tiles),
            f.block_q,
            f.block_k,
        )
        return f
    return Flash(merge_heads(f.output), f.m, f.l, f.tiles, f.block_q, f.block_k)


def _one_head(trace: Trace, block_q: int, block_k: int, head: object) -> Flash:
    """The tiled pass of query head ``head`` alone (see :func:`from_trace`)."""
    o = trace.options
    h, g = o.heads, o.kv
    if not is_whole(head) or not 0 <= head < h:
        raise AttentionError(f"head must be a whole number from 0 to {h - 1}; got {head!r}", field="head")
    L, S = trace.Q.shape[-2], trace.K.shape[-2]
    Q = split_heads(trace.Q, h)  # (..., h, L, d_k/h): views
    q = Q[..., head, :, :]  # (..., L, d_k/h)
    k = split_heads(trace.K, g)[..., kv_block(head, h, g), :, :]  # (..., S, d_k/h): the block head i reads
    v = split_heads(trace.V, g)[..., kv_block(head, h, g), :, :]  # (..., S, d_v/h)
    allowed = None if trace.allowed is None else np.broadcast_to(trace.allowed, Q.shape[:-2] + (L, S))[..., head, :, :]
    bias = None
    if o.positions == "alibi":
        bias = positions.alibi_bias(positions.alibi_slopes(h)[head], L, S)  # (L, S)
    return tiled(
        q,
        k,
        v,
        block_q=block_q,
        block_k=block_k,
        scale=trace.scale,
        temperature=float(o.temperature),
        allowed=allowed,
        bias=bias,
    )


def kept_numbers(L: int, S: int, d_v: int, block_q: int, block_k: int, heads: int = 1) -> int:
    """The numbers a tiled pass keeps in its tiles (:class:`Tile`) for ``heads`` heads, L queries, S keys, values
    d_v wide: per tile of r rows and c keys, ``scores`` and ``p`` (2·r·c), ``acc`` and ``partial`` (2·r·d_v) and
    ``m_old``, ``m_new``, ``rescale``, ``l`` (4·r). Summed over the tiles: 2·L·S + (2·d_v + 4)·L·⌈S / block_k⌉
    per head (block_q drops out: the row blocks add up to L)."""
    return heads * (2 * L * S + (2 * d_v + 4) * L * math.ceil(S / block_k))


def nbytes(f: Flash) -> int:
    """The bytes a tiled pass holds: its output, m, ℓ and every tile's arrays."""
    arrays = [f.output, f.m, f.l]
    for t in f.tiles:
        arrays += [t.scores, t.m_old, t.m_new, t.rescale, t.p, t.l, t.acc, t.partial]
    return sum(a.nbytes for a in arrays)


def _squeeze(t: Tile) -> Tile:
    """A tile with its head axis of one dropped."""

    def one(a: np.ndarray, core: int) -> np.ndarray:
        return a[(..., 0) + (slice(None),) * core]

    return Tile(
        t.q_block,
        t.k_block,
        t.rows,
        t.cols,
        one(t.scores, 2),
        one(t.m_old, 1),
        one(t.m_new, 1),
        one(t.rescale, 1),
        one(t.p, 2),
        one(t.l, 1),
        one(t.acc, 2),
        one(t.partial, 2),
        t.last,
    )


def memory(n: int, d: int, block_q: int, block_k: int, bytes_per_value: int = 8, s: int | None = None) -> dict:
    """Numbers held at once, and bytes, for one head: the full path's score matrix n × S against the tiled
    path's working set, one tile of scores (B_q × B_k) and of weights (the same), the query block (B_q × d), the
    key and value blocks (2 · B_k × d), the accumulator (B_q × d) and m, ℓ (2 · B_q). The full path also holds
    the n × S weights; the tiled path's grows with the block sizes only, never with n."""
    s = n if s is None else s
    full = n * s  # the scores (the weights take as much again)
    tiles = 2 * block_q * block_k + block_q * d + 2 * block_k * d + block_q * d + 2 * block_q
    return {
        "full_numbers": full,
        "full_bytes": full * bytes_per_value,
        "tile_numbers": tiles,
        "tile_bytes": tiles * bytes_per_value,
        "ratio": full / tiles if tiles else math.inf,
    }
