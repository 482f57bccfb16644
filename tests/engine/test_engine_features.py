"""Multi-head with W_o, learned and sinusoidal positions, combined masks: against naive loops on column blocks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attention
from attention import AttentionError, positions


def naive_head(X, Wq, Wk, Wv, projection, allowed, scale=None, temperature=1.0, rotary=False):
    """One head with plain Python loops: Q = X W, S = Q Kᵀ · s, masked softmax (a fully masked row is 0), O = A V."""
    n = len(X)

    def proj(W):
        W = W if projection == "x_w" else [list(c) for c in zip(*W, strict=True)]
        return [[sum(X[i][c] * W[c][j] for c in range(len(W))) for j in range(len(W[0]))] for i in range(n)]

    Q, K, V = proj(Wq), proj(Wk), proj(Wv)
    d = len(Q[0])
    if rotary:  # turn each pair (2i, 2i+1) of row p by p · 10000^(-2i/d)
        for M in (Q, K):
            for p in range(n):
                for i in range(d // 2):
                    a = p * 10000.0 ** (-2 * i / d)
                    x, y = M[p][2 * i], M[p][2 * i + 1]
                    M[p][2 * i], M[p][2 * i + 1] = x * math.cos(a) - y * math.sin(a), x * math.sin(a) + y * math.cos(a)
    s = 1 / math.sqrt(d) if scale is None else scale
    A = []
    for i in range(n):
        row = [sum(Q[i][c] * K[j][c] for c in range(d)) * s / temperature for j in range(n)]
        live = [j for j in range(n) if allowed[i][j]]
        if not live:
            A.append([0.0] * n)
            continue
        m = max(row[j] for j in live)
        e = [math.exp(row[j] - m) if allowed[i][j] else 0.0 for j in range(n)]
        A.append([v / sum(e) for v in e])
    O = [[sum(A[i][j] * V[j][c] for j in range(n)) for c in range(len(V[0]))] for i in range(n)]
    return A, O


def blocks(W, h, i, projection):
    W = np.asarray(W)
    if projection == "x_w":
        w = W.shape[1] // h
        return W[:, i * w : (i + 1) * w].tolist()
    w = W.shape[0] // h
    return W[i * w : (i + 1) * w, :].tolist()


@settings(max_examples=40, deadline=None)
@given(
    h=st.integers(1, 3),
    n=st.integers(1, 5),
    d_model=st.integers(1, 4),
    per_k=st.integers(1, 3),
    per_v=st.integers(1, 2),
    projection=st.sampled_from(["x_w", "x_wt"]),
    with_w_o=st.booleans(),
    rotary=st.booleans(),
    mask=st.sampled_from(["none", "causal", "custom", "causal+padding+custom"]),
    seed=st.integers(0, 10_000),
)
def test_heads_are_independent_heads_on_column_blocks_mixed_by_w_o(
    h, n, d_model, per_k, per_v, projection, with_w_o, rotary, mask, seed
):
    rs = np.random.RandomState(seed)
    d_k, d_v = h * per_k, h * per_v
    X = rs.randn(n, d_model)
    shape = (lambda d: (d_model, d)) if projection == "x_w" else (lambda d: (d, d_model))
    W_q, W_k, W_v = rs.randn(*shape(d_k)), rs.randn(*shape(d_k)), rs.randn(*shape(d_v))
    W_o = rs.randn(d_v, d_v) if with_w_o else None
    padding = tuple(bool(b) for b in rs.rand(n) < 0.3)
    grid = tuple(tuple(bool(b) for b in r) for r in rs.rand(n, n) < 0.6)
    opts = attention.Options(
        projection=projection,
        heads=h,
        mask=mask,
        padding=padding,
        custom_mask=grid,
        positions="rotary" if rotary else "none",
    )
    t = attention.self_attention(X, W_q, W_k, W_v, W_o=W_o, options=opts)
    parts = attention.masks.parts(mask)
    allowed = [
        [
            ("causal" not in parts or j <= i)
            and ("padding" not in parts or not padding[j])
            and ("custom" not in parts or grid[i][j])
            for j in range(n)
        ]
        for i in range(n)
    ]
    concat = [[] for _ in range(n)]
    for i in range(h):
        A, O = naive_head(
            X.tolist(), *(blocks(W, h, i, projection) for W in (W_q, W_k, W_v)), projection, allowed, rotary=rotary
        )
        np.testing.assert_allclose(t.weights[i] if h > 1 else t.weights, A, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(t.head(i).weights, A, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(t.head(i).output, O, rtol=1e-9, atol=1e-12)
        for r in range(n):
            concat[r] += O[r]
    np.testing.assert_allclose(t.concat, concat, rtol=1e-9, atol=1e-12)
    mixed = concat if W_o is None else [[sum(c[a] * W_o[a, b] for a in range(d_v)) for b in range(d_v)] for c in concat]
    np.testing.assert_allclose(t.output, mixed, rtol=1e-9, atol=1e-12)
    assert (t.W_o is None) == (W_o is None)
    assert t.d_k == per_k and t.scale == pytest.approx(1 / math.sqrt(per_k))
    assert t.Q.shape == (n, d_k) and t.V.shape == (n, d_v)


def test_w_o_rows_must_match_d_v_and_a_missing_head_is_named():
    with pytest.raises(AttentionError, match=r"W_o has 3 rows but the heads concatenate to width 2 \(d_v\)") as exc:
        attention.self_attention(np.eye(2), np.eye(2), np.eye(2), np.eye(2), W_o=np.eye(3))
    assert exc.value.matrix == "W_o"
    t = attention.self_attention(np.eye(2), np.eye(2), np.eye(2), np.eye(2), heads=2)
    with pytest.raises(AttentionError, match=r"there is no head 2: this trace has 2 head\(s\), numbered 0 to 1"):
        t.head(2)


def test_learned_positions_are_added_to_x_and_named_when_missing_or_misshapen():
    rs = np.random.RandomState(0)
    X, P, W = rs.randn(4, 3), rs.randn(4, 3), [rs.randn(3, 2) for _ in range(3)]
    t = attention.self_attention(X, *W, P=P, positions="learned")
    np.testing.assert_array_equal(t.X, X)  # X stays the embeddings as given
    np.testing.assert_array_equal(t.positions_added, P)
    np.testing.assert_array_equal(t.X_in, X + P)
    A, O = naive_head((X + P).tolist(), *(w.tolist() for w in W), "x_w", [[True] * 4] * 4)
    np.testing.assert_allclose(t.weights, A, rtol=1e-12)
    np.testing.assert_allclose(t.output, O, rtol=1e-12)
    with pytest.raises(
        AttentionError,
        match=r"positions are 'learned' but no position matrix P was given; give P of "
        r"shape \(4, 3\)",
    ) as exc:
        attention.self_attention(X, *W, positions="learned")
    assert exc.value.matrix == "P"
    with pytest.raises(
        AttentionError,
        match=r"P has shape \(3, 3\) but X has 4 tokens of width 3; P must be n × "
        r"d_model = \(4, 3\)",
    ):
        attention.self_attention(X, *W, P=P[:3], positions="learned")
    with pytest.raises(AttentionError, match=r"P row 1, column 1 is NaN"):
        attention.self_attention(X, *W, P=np.where(np.eye(4, 3) > 0, np.nan, 0.0), positions="learned")
    with pytest.raises(AttentionError, match=r"a position matrix P was given but positions are 'none'"):
        attention.self_attention(X, *W, P=P)


def test_sinusoidal_positions_added_and_nothing_added_without_positions():
    rs = np.random.RandomState(1)
    X, W = rs.randn(5, 4), [rs.randn(4, 4) for _ in range(3)]
    t = attention.self_attention(X, *W, positions="sinusoidal")
    np.testing.assert_array_equal(t.positions_added, positions.sinusoidal(5, 4))
    np.testing.assert_array_equal(t.X, X)
    plain = attention.self_attention(X, *W)
    assert plain.positions_added is None and plain.X_in is None and plain.Q_raw is None
    np.testing.assert_array_equal(plain.concat, plain.output)


@pytest.mark.parametrize("kind", ["sinusoidal", "learned", "rotary"])
def test_a_shuffle_permutes_rows_without_positions_and_not_with_them(kind: str) -> None:
    rs = np.random.RandomState(7)
    X, W, P = rs.randn(6, 4), [rs.randn(4, 4) for _ in range(3)], rs.randn(6, 4)
    perm = np.array([2, 5, 0, 1, 4, 3])
    a, b = attention.self_attention(X, *W), attention.self_attention(X[perm], *W)
    np.testing.assert_allclose(b.output, a.output[perm], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.weights, a.weights[perm][:, perm], rtol=1e-12, atol=1e-12)
    extra = {"P": P} if kind == "learned" else {}
    a, b = (attention.self_attention(x, *W, positions=kind, **extra) for x in (X, X[perm]))
    assert not np.allclose(b.output, a.output[perm], atol=1e-6)


def test_positions_with_a_batch_and_heads():
    rs = np.random.RandomState(2)
    X, P, W = rs.randn(2, 3, 4), rs.randn(3, 4), [rs.randn(4, 4) for _ in range(3)]
    t = attention.self_attention(X, *W, P=P, positions="learned", heads=2, W_o=rs.randn(4, 4))
    for b in range(2):
        one = attention.self_attention(X[b], *W, P=P, positions="learned", heads=2, W_o=t.W_o)
        np.testing.assert_allclose(t.output[b], one.output, rtol=1e-12)
        np.testing.assert_allclose(t.weights[b], one.weights, rtol=1e-12)
