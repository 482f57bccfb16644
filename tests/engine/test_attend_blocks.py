"""The model's attention in blocks of query rows (attention/model/attend.py ``weigh``) against a loop written out by
hand, one head and one query row at a time, in float64: every mask a layer may have (causal, a sliding window, an
evicted cache's own per head, rows that see nothing, a cache before the new rows), with blocks of one row, of a few
rows and of every row, keeping the n × n arrays or not (then the scores become the weights in place, in the block's
own array).

The loop sums a row's 16 products in its own order and its softmax over the row's visible keys only; the blocks
multiply through BLAS and their softmax also adds the masked keys' exact zeros. Values of order 1 agree to ~1e-15; the
bound, 1e-12, is a thousand times that, and a wrong key, row, head or mask moves them by far more (a mask that lets
one more key in moves a weight by ~0.1).
"""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import attend

H, G, DH = 6, 2, 16
TOL = 1e-12


def _loop(q: np.ndarray, K: np.ndarray, V: np.ndarray, allowed: np.ndarray, factor: float) -> tuple:
    """(scores, scaled, weights, heads) written out: query head h reads key/value head h // (H/G)."""
    m, s = q.shape[1], K.shape[1]
    S, scaled, A = np.zeros((H, m, s)), np.full((H, m, s), -np.inf), np.zeros((H, m, s))
    out = np.zeros((H, m, V.shape[-1]))
    sees = np.broadcast_to(allowed, (H, m, s))
    for h in range(H):
        g = h // (H // G)
        for i in range(m):
            for j in range(s):
                S[h, i, j] = sum(q[h, i, c] * K[g, j, c] for c in range(DH))
            seen = np.flatnonzero(sees[h, i])
            if seen.size == 0:
                continue  # a row that sees nothing: weights 0, output 0
            scaled[h, i, seen] = S[h, i, seen] * factor
            e = np.exp(scaled[h, i, seen] - scaled[h, i, seen].max())
            A[h, i, seen] = e / e.sum()
            out[h, i] = sum(A[h, i, j] * V[g, j] for j in seen)
    return S, scaled, A, out


def _masks(m: int, s: int) -> dict[str, np.ndarray]:
    start = s - m  # the new rows' first position (after a cache of ``start`` rows)
    causal = attend.visible(start, m, s)  # (m, s)
    rng = np.random.RandomState(4)
    evicted = rng.rand(H, m, s) < 0.4  # (H, m, s): each head's own keys, as an evicted cache's
    evicted[:, 2] = False  # a row that sees nothing
    return {"causal": causal, "window 3": attend.visible(start, m, s, 3), "evicted, per head": evicted}


@pytest.mark.parametrize("cells", [1, 50, 1 << 30], ids=["one row a block", "a few rows a block", "one block"])
@pytest.mark.parametrize("past", [0, 4], ids=["full pass", "after a cache of 4"])
@pytest.mark.parametrize("mask", ["causal", "window 3", "evicted, per head"])
def test_blocks_equal_the_loop_written_out(cells: int, past: int, mask: str, monkeypatch) -> None:
    rng = np.random.RandomState(1)
    m = 11
    s = m + past
    q, K, V = rng.normal(0, 1, (H, m, DH)), rng.normal(0, 1, (G, s, DH)), rng.normal(0, 1, (G, s, DH))
    allowed = _masks(m, s)[mask]
    before = [x.copy() for x in (q, K, V, allowed)]
    want = _loop(q, K, V, allowed, 0.3)
    monkeypatch.setattr(attend, "BLOCK_CELLS", cells)
    kept = attend.weigh(q, K, V, allowed, 0.3)
    lean = attend.weigh(q, K, V, allowed, 0.3, keep=False)
    assert lean[:3] == (None, None, None)
    for got, expected in zip((*kept, lean[3]), (*want, want[3]), strict=True):
        assert got.shape == expected.shape
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(expected))  # −inf exactly where masked
        finite = np.isfinite(expected)
        np.testing.assert_allclose(np.where(finite, got, 0), np.where(finite, expected, 0), rtol=0, atol=TOL)
    for x, y in zip((q, K, V, allowed), before, strict=True):
        np.testing.assert_array_equal(x, y)  # the inputs are left as they were (in place means the block's own)


def test_a_float32_pass_stays_float32_in_every_block(monkeypatch) -> None:
    rng = np.random.RandomState(2)
    q, K, V = (rng.normal(0, 1, shape).astype(np.float32) for shape in ((H, 9, DH), (G, 9, DH), (G, 9, DH)))
    monkeypatch.setattr(attend, "BLOCK_CELLS", 40)
    for keep in (True, False):
        out = attend.weigh(q, K, V, attend.visible(0, 9, 9), 0.25, keep=keep)
        assert {a.dtype for a in out if a is not None} == {np.dtype(np.float32)}
    want = _loop(*(x.astype(np.float64) for x in (q, K, V)), attend.visible(0, 9, 9), 0.25)[3]
    np.testing.assert_allclose(out[3], want, rtol=0, atol=1e-5)  # float32 rounding of values of order 1
