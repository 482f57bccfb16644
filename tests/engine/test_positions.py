"""Positions: sinusoidal values against the formula, RoPE keeps norms and makes q·k depend on the offset only, and
word order matters with positions and not without (the engine and the app's shuffle)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attention
from attention import positions


@pytest.mark.parametrize(("n", "d"), [(1, 1), (4, 6), (7, 5), (16, 16)])
def test_sinusoidal_is_the_formula_cell_by_cell(n: int, d: int) -> None:
    pe = positions.sinusoidal(n, d)
    for pos in range(n):
        for c in range(d):
            i = c // 2
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, c] == pytest.approx(math.sin(angle) if c % 2 == 0 else math.cos(angle), abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 12), d=st.integers(1, 16), seed=st.integers(0, 10_000))
def test_rotary_keeps_norms_and_q_dot_k_depends_only_on_the_offset(n: int, d: int, seed: int) -> None:
    rs = np.random.RandomState(seed)
    x = rs.randn(n, d)
    np.testing.assert_allclose(np.linalg.norm(positions.rotary(x), axis=1), np.linalg.norm(x, axis=1), rtol=1e-12)
    q, k = rs.randn(d), rs.randn(d)
    shift = int(rs.randint(1, n))
    i, j = 0, int(rs.randint(0, n - shift))
    # the same q and k placed at (i, j) and at (i + s, j + s)
    Q, K = np.zeros((n, d)), np.zeros((n, d))
    Q[i], K[j] = q, k
    a = positions.rotary(Q)[i] @ positions.rotary(K)[j]
    Q2, K2 = np.zeros((n, d)), np.zeros((n, d))
    Q2[i + shift], K2[j + shift] = q, k
    b = positions.rotary(Q2)[i + shift] @ positions.rotary(K2)[j + shift]
    assert a == pytest.approx(b, rel=1e-9, abs=1e-9)


def _run(X, W, pos: str, heads: int = 1):
    return attention.self_attention(X, *W, positions=pos, heads=heads)


@pytest.mark.parametrize("heads", [1, 2])
def test_without_positions_a_shuffle_permutes_the_rows_and_with_positions_it_does_not(heads: int) -> None:
    rs = np.random.RandomState(3)
    X, W = rs.randn(5, 4), [rs.randn(4, 4) for _ in range(3)]
    perm = np.array([3, 0, 4, 1, 2])
    plain, shuffled = _run(X, W, "none", heads), _run(X[perm], W, "none", heads)
    np.testing.assert_allclose(shuffled.output, plain.output[perm], rtol=1e-12, atol=1e-12)
    for kind in ("sinusoidal", "rotary"):
        a, b = _run(X, W, kind, heads), _run(X[perm], W, kind, heads)
        assert not np.allclose(b.output, a.output[perm], atol=1e-6), kind


def test_sinusoidal_adds_pe_to_x_and_rotary_rotates_each_heads_q_and_k() -> None:
    rs = np.random.RandomState(4)
    X, W = rs.randn(3, 4), [rs.randn(4, 4) for _ in range(3)]
    t = _run(X, W, "sinusoidal")
    np.testing.assert_array_equal(t.X_in, X + positions.sinusoidal(3, 4))
    np.testing.assert_allclose(t.Q, (X + positions.sinusoidal(3, 4)) @ W[0], rtol=1e-12)
    r = _run(X, W, "rotary", heads=2)
    np.testing.assert_allclose(r.Q[:, :2], positions.rotary((X @ W[0])[:, :2]), rtol=1e-12)
    np.testing.assert_allclose(r.Q[:, 2:], positions.rotary((X @ W[0])[:, 2:]), rtol=1e-12)
    np.testing.assert_allclose(r.Q_raw, X @ W[0], rtol=1e-12)
    with pytest.raises(attention.AttentionError, match="positions must be one of none, sinusoidal, learned, rotary"):
        attention.self_attention(X, *W, positions="absolute")
