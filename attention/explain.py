"""Why one cell has its value: a score or weight taken apart into the sums and steps that make it.

For query i and key j: the score is the dot product S_ij = Σ_c q_ic · k_jc (one product per dimension c); the
scaled score is S'_ij = S_ij · s (or −∞ where masked); the weight is A_ij = exp(S'_ij/T − m) / Σ_l exp(S'_il/T − m),
where m is what the softmax subtracts from the row (its max, the whole matrix's max, or 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import positions
from .errors import AttentionError
from .heads import kv_block
from .names import squeeze_batch
from .trace import Trace


@dataclass(frozen=True, kw_only=True)
class CellExplanation:
    """Every number between q_i, k_j and A_ij. Shapes: q, k, products (d,); row, shifted, exps (n,)."""

    i: int
    j: int
    q: np.ndarray  # query i (the head's columns of Q)
    k: np.ndarray  # key j
    products: np.ndarray  # q_c · k_c, one per dimension
    score: float  # S_ij = Σ products
    scale: float
    scaled: float  # S'_ij (−inf when masked)
    masked: bool
    temperature: float
    row: np.ndarray  # S'_i· / T: what the softmax sees
    shift: float  # m, subtracted from the row (0 for "none"; 0 for a fully masked row)
    shifted: np.ndarray  # row − m
    exps: np.ndarray  # exp(row − m)
    row_sum: float  # Σ exps
    weight: float  # A_ij as the trace has it
    bias: float = 0.0  # ALiBi's −m_h·(i − j), added to S · scale (0 without ALiBi)


def explain_cell(trace: Trace, i: int, j: int, head: int = 0) -> CellExplanation:
    """Take cell (i, j) of head ``head`` apart; the result's ``weight`` is the trace's own A_ij, and the steps
    recompute it (a test checks they agree)."""
    Q, K = squeeze_batch(trace.Q), squeeze_batch(trace.K)
    scores, scaled, weights = (squeeze_batch(getattr(trace, n)) for n in ("scores", "scaled", "weights"))
    h = trace.options.heads
    if scores.ndim == 3:  # (h, n, n): one matrix per head
        if not 0 <= head < h:
            raise AttentionError(f"head must be 1 to {h}; got {head + 1}")
        scores, scaled, weights = scores[head], scaled[head], weights[head]
    n, n_keys = scores.shape  # queries × keys (n × S in cross-attention)
    if not (0 <= i < n and 0 <= j < n_keys):
        raise AttentionError(
            f"the cell must be a query from 1 to {n} and a key from 1 to {n_keys}; got ({i + 1}, {j + 1})"
        )
    width = Q.shape[-1] // h
    block = kv_block(head, h, trace.options.kv)  # the key block this head reads (itself unless grouped)
    q, k = Q[i, head * width : (head + 1) * width], K[j, block * width : (block + 1) * width]  # (d,), (d,)
    bias = 0.0
    if trace.options.positions == "alibi":  # the head's distance penalty, added after scaling
        bias = -float(positions.alibi_slopes(h)[head]) * (i - j)
    products = q * k  # (d,)
    row = scaled[i] / trace.options.temperature  # (n,)
    finite = row[np.isfinite(row)]
    variant = trace.options.softmax
    if variant == "row_max":
        shift = float(finite.max()) if finite.size else 0.0
    elif variant == "global_max":
        every = scaled[np.isfinite(scaled)] / trace.options.temperature
        shift = float(every.max()) if every.size else 0.0
    else:
        shift = 0.0
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        shifted = row - shift  # (n,)
        exps = np.exp(shifted)  # (n,)
    return CellExplanation(
        i=i,
        j=j,
        q=q,
        k=k,
        products=products,
        score=float(scores[i, j]),
        scale=float(trace.scale),
        scaled=float(scaled[i, j]),
        masked=bool(np.isneginf(scaled[i, j])),
        temperature=float(trace.options.temperature),
        row=row,
        shift=shift,
        shifted=shifted,
        exps=exps,
        row_sum=float(exps.sum()),
        weight=float(weights[i, j]),
        bias=bias,
    )
