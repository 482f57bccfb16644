"""Property tests: the engine against independent oracles written here (pure Python loops, math.exp).

Nothing here is compared with numbers captured from the engine: every expected value comes from an
oracle in this file or from an algebraic property (rows sum to 1, permutation equivariance...).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attention
from attention import steps

SETTINGS = settings(max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "50")), deadline=None)  # more: set it

# ---------------------------------------------------------------- naive oracles (lists, loops, math.exp)


def matmul(A, B):
    return [[sum(A[i][m] * B[m][j] for m in range(len(B))) for j in range(len(B[0]))] for i in range(len(A))]


def transpose(A):
    return [list(col) for col in zip(*A, strict=True)]


def naive_softmax(rows, variant="row_max"):
    """Row-wise softmax; -inf cells get weight 0; a row of only -inf gets all zeros."""
    finite = [x for row in rows for x in row if x != -math.inf]
    gmax = max(finite) if finite else 0.0
    out = []
    for row in rows:
        live = [x for x in row if x != -math.inf]
        if not live:
            out.append([0.0] * len(row))
            continue
        m = max(live) if variant == "row_max" else gmax if variant == "global_max" else 0.0
        e = [0.0 if x == -math.inf else math.exp(x - m) for x in row]
        total = sum(e)
        out.append([v / total for v in e])
    return out


def naive_attention(X, W_q, W_k, W_v, projection="x_w", variant="row_max", scale=None, temperature=1.0, allowed=None):
    """One head, one item: returns dict of Q, K, V, scores, scaled, weights, output as nested lists."""
    X = np.asarray(X).tolist()
    Ws = [np.asarray(W).tolist() for W in (W_q, W_k, W_v)]
    if projection == "x_wt":
        Ws = [transpose(W) for W in Ws]
    Q, K, V = (matmul(X, W) for W in Ws)
    n, d_k = len(Q), len(Q[0])
    S = [[sum(Q[i][c] * K[j][c] for c in range(d_k)) for j in range(n)] for i in range(n)]
    s = 1.0 / math.sqrt(d_k) if scale is None else scale
    scaled = [[S[i][j] * s if allowed is None or allowed[i][j] else -math.inf for j in range(n)] for i in range(n)]
    A = naive_softmax([[x / temperature for x in row] for row in scaled], variant)
    O = [[sum(A[i][j] * V[j][c] for j in range(n)) for c in range(len(V[0]))] for i in range(n)]
    return {"Q": Q, "K": K, "V": V, "scores": S, "scaled": scaled, "weights": A, "output": O}


def naive_sdpa(q, k, v, allowed=None, additive=None, scale=None):
    L, S_len, E = len(q), len(k), len(q[0])
    s = 1.0 / math.sqrt(E) if scale is None else scale
    rows = []
    for i in range(L):
        row = []
        for j in range(S_len):
            x = sum(q[i][c] * k[j][c] for c in range(E)) * s
            if additive is not None:
                x += additive[i][j]
            if allowed is not None and not allowed[i][j]:
                x = -math.inf
            row.append(x)
        rows.append(row)
    A = naive_softmax(rows)
    O = [[sum(A[i][j] * v[j][c] for j in range(S_len)) for c in range(len(v[0]))] for i in range(L)]
    return O, A


# ---------------------------------------------------------------- what float64 gives: first-order error bounds
#
# The engine (numpy, BLAS) and the oracles above (Python loops) both compute in float64, in different orders. Each
# sum of k products is within gamma(k)·(|a|·|b|) of the exact value, whatever the order (Higham, "Accuracy and
# Stability of Numerical Algorithms", 3.1), so the two differ by at most twice that, plus what the differences of
# the earlier steps carry forward. Each bound below is that propagation, step by step, on the magnitudes of this
# very input (times SAFETY for second-order terms): a few ulps times the lengths and the magnitudes, instead of one
# fixed 1e-9 that any result within a millionth of a percent would pass.

U = np.finfo(np.float64).eps / 2  # unit roundoff, 2**-53
ETA = np.finfo(np.float64).smallest_subnormal  # 2**-1074: what an operation may lose absolutely in the subnormal range
SAFETY = 2.0


def gamma(k: int) -> float:
    return k * U / (1 - k * U)


def softmax_bound(z_abs: np.ndarray, dz: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """|engine − oracle| for softmax weights, given the magnitudes of its inputs and how far the two sides' inputs
    differ. The exact softmax moves log w_ij by at most 2·max_l |dz_il| (d log w_ij / d z_il = [j = l] − w_il);
    each side rounds z − m (absolutely u·|z − m| <= 2u·max|z|, relatively in exp), exp (2u), the row sum
    (gamma(n)) and the division (u)."""
    n = weights.shape[-1]
    zmax = float(np.max(z_abs, initial=0.0))
    row = np.max(dz, axis=-1, keepdims=True, initial=0.0)
    return SAFETY * weights * (2 * row + 2 * (2 * U * zmax + 3 * U + gamma(n)))


def sdpa_bounds(Q_abs, K_abs, V_abs, dQ, dK, dV, factor, weights, additive=None) -> dict[str, np.ndarray]:
    """Bounds for scores, scaled (times ``factor`` = scale / temperature), weights and output from Q, K, V given with
    magnitudes ``*_abs`` and side-to-side differences ``d*`` (zero when both sides start from the same arrays)."""
    d_k, n = Q_abs.shape[-1], K_abs.shape[-2]
    S_abs = Q_abs @ K_abs.T  # (L, S)
    dS = SAFETY * (2 * gamma(d_k) * S_abs + dQ @ K_abs.T + Q_abs @ dK.T)
    Z_abs = abs(factor) * S_abs + (0.0 if additive is None else np.abs(np.where(np.isfinite(additive), additive, 0)))
    dZ = abs(factor) * dS + SAFETY * 2 * 3 * U * Z_abs  # scale, temperature and mask: one rounding each per side
    W = np.asarray(weights, dtype=float)
    dW = softmax_bound(Z_abs, dZ, W)
    dO = SAFETY * (dW @ V_abs + W @ dV + 2 * gamma(n) * (W @ V_abs))
    return {"scores": dS, "scaled": dZ, "weights": dW, "output": dO}


def attention_bounds(X, W_q, W_k, W_v, projection, weights, scale=None, temperature=1.0) -> dict[str, np.ndarray]:
    """Bounds for every array of :func:`naive_attention` against the engine, ``weights`` the oracle's weights."""
    Ws = [np.abs(np.asarray(W, dtype=float)) for W in (W_q, W_k, W_v)]
    Ws = [W.T for W in Ws] if projection == "x_wt" else Ws
    X_abs = np.abs(np.asarray(X, dtype=float))
    Q_abs, K_abs, V_abs = (X_abs @ W for W in Ws)
    dQ, dK, dV = (SAFETY * 2 * gamma(X_abs.shape[-1]) * M for M in (Q_abs, K_abs, V_abs))
    s = 1 / math.sqrt(Q_abs.shape[-1]) if scale is None else scale
    out = sdpa_bounds(Q_abs, K_abs, V_abs, dQ, dK, dV, s / temperature, weights)
    return {"Q": dQ, "K": dK, "V": dV, **out}


def row_sum_bound(n: int) -> float:
    """How far a row of computed weights can sum from 1: each weight is e_j / fl(sum e) (the sum within gamma(n),
    the division within u), then n of them are summed again."""
    return SAFETY * gamma(2 * n + 1)


def exact_qkv_bounds(q, k, v, scale, weights, additive=None) -> dict[str, np.ndarray]:
    """Bounds for scaled_dot_product_attention against naive_sdpa: both sides start from the same q, k, v."""
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    zero = [np.zeros_like(a) for a in (q, k, v)]
    full = None if additive is None else np.broadcast_to(np.asarray(additive, dtype=float), (q.shape[0], k.shape[0]))
    return sdpa_bounds(np.abs(q), np.abs(k), np.abs(v), *zero, s, weights, full)


def assert_close(actual, expected, bound, what=""):
    """|actual − expected| <= bound in every cell (infinities equal), plus 64 subnormal steps for underflow (the
    relative model above holds only down to 2**-1022); the message gives the worst excess."""
    a, e = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    e = np.broadcast_to(e, a.shape) if e.ndim == 0 else e  # a number: every cell
    assert a.shape == e.shape, (what, a.shape, e.shape)
    b = np.broadcast_to(np.asarray(bound, dtype=float), e.shape) + 64 * ETA
    finite = np.isfinite(e)
    assert np.array_equal(a[~finite], e[~finite]), what
    gap = np.abs(a - e)[finite]
    worst = int(np.argmax(gap - b[finite])) if gap.size else 0
    assert np.all(gap <= b[finite]), f"{what}: off by {gap[worst]:.3g}, bound {b[finite][worst]:.3g}"


# ---------------------------------------------------------------- strategies

small = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
dims = st.integers(1, 5)


def mat(shape, elements=small):
    return arrays(np.float64, shape, elements=elements)


@st.composite
def problems(draw, projection=None, n=None, d_model=None, d_k=None, d_v=None):
    n = draw(dims) if n is None else n
    dm = draw(dims) if d_model is None else d_model
    dk = draw(dims) if d_k is None else d_k
    dv = draw(dims) if d_v is None else d_v
    proj = draw(st.sampled_from(["x_w", "x_wt"])) if projection is None else projection

    def w(out):
        return draw(mat((dm, out) if proj == "x_w" else (out, dm)))

    return draw(mat((n, dm))), w(dk), w(dk), w(dv), proj


# ---------------------------------------------------------------- the whole pipeline vs the loop oracle


@SETTINGS
@given(problems(), st.sampled_from(["row_max", "global_max", "none"]), st.one_of(st.none(), st.floats(0.05, 3.0)))
def test_self_attention_matches_naive_oracle(problem, variant, scale):
    # |values| <= 1 and widths <= 5 keep scaled scores below 125: no variant over- or underflows.
    X, W_q, W_k, W_v, proj = problem
    t = attention.self_attention(X, W_q, W_k, W_v, projection=proj, softmax=variant, scale=scale)
    ref = naive_attention(X, W_q, W_k, W_v, proj, variant, scale)
    bound = attention_bounds(X, W_q, W_k, W_v, proj, ref["weights"], scale)
    for name, value in ref.items():
        assert_close(getattr(t, name), value, bound[name], name)
    assert t.scale == pytest.approx(1 / math.sqrt(len(ref["Q"][0])) if scale is None else scale, rel=1e-15)


@SETTINGS
@given(problems())
def test_weight_rows_sum_to_one(problem):
    X, W_q, W_k, W_v, proj = problem
    w = attention.self_attention(X, W_q, W_k, W_v, projection=proj).weights
    assert np.all(w >= 0)
    assert_close(w.sum(axis=-1), 1.0, row_sum_bound(w.shape[-1]))


@SETTINGS
@given(problems(), st.randoms(use_true_random=False))
def test_permuting_tokens_permutes_output(problem, rnd):
    X, W_q, W_k, W_v, proj = problem
    perm = list(range(X.shape[0]))
    rnd.shuffle(perm)
    base = attention.self_attention(X, W_q, W_k, W_v, projection=proj)
    moved = attention.self_attention(X[perm], W_q, W_k, W_v, projection=proj)
    bound = attention_bounds(X, W_q, W_k, W_v, proj, base.weights)  # two float64 runs: as engine against oracle
    assert_close(moved.output, base.output[perm], bound["output"][perm])
    assert_close(moved.weights, base.weights[np.ix_(perm, perm)], bound["weights"][np.ix_(perm, perm)])


@SETTINGS
@given(st.data(), st.sampled_from(["row_max", "global_max", "none"]))
def test_softmax_ignores_a_constant_added_to_a_row(data, variant):
    n, m = data.draw(dims), data.draw(dims)
    x = data.draw(mat((n, m), st.floats(-50, 50)))
    c = data.draw(mat((n, 1), st.floats(-50, 50)))
    # |x + c| <= 100 and spreads <= 200: exp never overflows (none) nor underflows to 0/0 (global_max).
    # the exact softmax ignores c; only the rounding of x + c (u·|x + c|) reaches the weights
    w = steps.softmax(x, variant)
    shifted = np.abs(x) + np.abs(c)
    assert_close(steps.softmax(x + c, variant), w, softmax_bound(shifted, SAFETY * U * shifted, w), "shifted")
    ref = np.array(naive_softmax(x.tolist(), variant))
    assert_close(steps.softmax(x, variant), ref, softmax_bound(np.abs(x), np.zeros_like(x), ref))


@SETTINGS
@given(problems())
def test_adding_a_constant_to_a_score_row_via_self_attention_is_the_same(problem):
    # Shift each row of the engine's own scaled scores by a different constant: its weights are unchanged.
    X, W_q, W_k, W_v, proj = problem
    t = attention.self_attention(X, W_q, W_k, W_v, projection=proj)
    shifted = t.scaled + np.arange(t.scaled.shape[0])[:, None] * 3.0
    z_abs = np.abs(t.scaled) + np.abs(shifted)
    assert_close(steps.softmax(shifted), t.weights, softmax_bound(z_abs, SAFETY * U * z_abs, t.weights))


# ---------------------------------------------------------------- masks


@SETTINGS
@given(problems())
def test_causal_mask_zero_above_diagonal(problem):
    X, W_q, W_k, W_v, proj = problem
    t = attention.self_attention(X, W_q, W_k, W_v, projection=proj, mask="causal")
    n = X.shape[0]
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    assert np.all(t.weights[upper] == 0.0)
    assert np.all(np.isneginf(t.scaled[upper]))
    assert_close(t.weights.sum(axis=-1), 1.0, row_sum_bound(n))
    ref = naive_attention(X, W_q, W_k, W_v, proj, allowed=np.tril(np.ones((n, n), dtype=bool)).tolist())
    bound = attention_bounds(X, W_q, W_k, W_v, proj, ref["weights"])
    assert_close(t.weights, ref["weights"], bound["weights"])
    assert_close(t.output, ref["output"], bound["output"])
    assert t.fully_masked == ()


@SETTINGS
@given(st.data())
def test_padding_mask_zero_weight_on_padding_keys(data):
    X, W_q, W_k, W_v, proj = data.draw(problems())
    n = X.shape[0]
    pad = data.draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(lambda p: not all(p)))
    t = attention.self_attention(X, W_q, W_k, W_v, projection=proj, mask="padding", padding=tuple(pad))
    assert np.all(t.weights[:, np.array(pad)] == 0.0)
    assert_close(t.weights.sum(axis=-1), 1.0, row_sum_bound(n))
    allowed = [[not pad[j] for j in range(n)] for _ in range(n)]
    ref = naive_attention(X, W_q, W_k, W_v, proj, allowed=allowed)
    assert_close(t.output, ref["output"], attention_bounds(X, W_q, W_k, W_v, proj, ref["weights"])["output"])


def test_all_padding_masks_every_row():
    X = np.arange(6.0).reshape(3, 2) / 10
    t = attention.self_attention(X, np.eye(2), np.eye(2), np.eye(2), mask="padding", padding=(True, True, True))
    assert np.array_equal(t.weights, np.zeros((3, 3)))
    assert np.array_equal(t.output, np.zeros((3, 2)))
    assert t.fully_masked == (0, 1, 2)


@SETTINGS
@given(st.data())
def test_fully_masked_row_gives_zero_weights_and_output(data):
    X, W_q, W_k, W_v, proj = data.draw(problems())
    n = X.shape[0]
    allowed = data.draw(arrays(np.bool_, (n, n)))
    dead = data.draw(st.integers(0, n - 1))
    allowed[dead, :] = False
    t = attention.self_attention(X, W_q, W_k, W_v, projection=proj, attn_mask=allowed)
    assert np.array_equal(t.weights[dead], np.zeros(n))
    assert np.array_equal(t.output[dead], np.zeros(W_v.shape[1] if proj == "x_w" else W_v.shape[0]))
    assert dead in t.fully_masked
    assert set(t.fully_masked) == {i for i in range(n) if not allowed[i].any()}
    assert not np.isnan(t.weights).any()
    ref = naive_attention(X, W_q, W_k, W_v, proj, allowed=allowed.tolist())
    bound = attention_bounds(X, W_q, W_k, W_v, proj, ref["weights"])
    assert_close(t.weights, ref["weights"], bound["weights"])
    assert_close(t.output, ref["output"], bound["output"])


def test_custom_mask_is_anded_with_causal():
    X = np.array([[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]])
    allowed = np.array([[True, True, True], [False, True, True], [True, True, False]])
    t = attention.self_attention(X, np.eye(2), np.eye(2), np.eye(2), mask="causal", attn_mask=allowed)
    both = allowed & np.tril(np.ones((3, 3), dtype=bool))
    assert np.array_equal(t.allowed, both)
    ref = naive_attention(X, np.eye(2), np.eye(2), np.eye(2), allowed=both.tolist())
    bound = attention_bounds(X, np.eye(2), np.eye(2), np.eye(2), "x_w", ref["weights"])
    assert_close(t.weights, ref["weights"], bound["weights"])
    assert_close(t.output, ref["output"], bound["output"])


# ---------------------------------------------------------------- scaled_dot_product_attention (PyTorch semantics)


@st.composite
def sdpa_problems(draw):
    L, S_len, E, Ev = draw(dims), draw(dims), draw(dims), draw(dims)
    return draw(mat((L, E))), draw(mat((S_len, E))), draw(mat((S_len, Ev)))


@SETTINGS
@given(sdpa_problems(), st.data())
def test_sdpa_matches_oracle(qkv, data):
    q, k, v = qkv
    L, S_len = q.shape[0], k.shape[0]
    kind = data.draw(st.sampled_from(["none", "bool", "float", "causal"]))
    scale = data.draw(st.one_of(st.none(), st.floats(0.1, 3.0)))
    allowed = additive = None
    kwargs = {}
    if kind == "bool":
        allowed = data.draw(arrays(np.bool_, (L, S_len)))
        kwargs["attn_mask"] = allowed
    elif kind == "float":
        additive = data.draw(mat((L, S_len), st.floats(-5, 5)))
        kwargs["attn_mask"] = additive
    elif kind == "causal":
        allowed = np.tril(np.ones((L, S_len), dtype=bool))  # top-left aligned, like torch
        kwargs["is_causal"] = True
    out, w = attention.scaled_dot_product_attention(q, k, v, scale=scale, **kwargs)
    ref_out, ref_w = naive_sdpa(
        q.tolist(),
        k.tolist(),
        v.tolist(),
        None if allowed is None else allowed.tolist(),
        None if additive is None else additive.tolist(),
        scale,
    )
    assert out.shape == (L, v.shape[1]) and w.shape == (L, S_len)
    bound = exact_qkv_bounds(q, k, v, scale, ref_w, additive)
    assert_close(w, ref_w, bound["weights"], "weights")
    assert_close(out, ref_out, bound["output"], "output")
    if allowed is not None:
        assert np.all(w[~allowed] == 0.0)
        for i in range(L):
            if not allowed[i].any():
                assert np.array_equal(w[i], np.zeros(S_len)) and np.array_equal(out[i], np.zeros(v.shape[1]))


def test_sdpa_default_scale_is_one_over_sqrt_e():
    q = np.array([[1.0, 2.0, 0.5, -1.0]])
    k = np.array([[0.5, 0.1, 2.0, 1.0], [-1.0, 1.0, 0.0, 0.3]])
    v = np.array([[1.0], [3.0]])
    s = (q @ k.T)[0] / 2.0  # sqrt(4)
    w_expected = np.exp(s) / np.exp(s).sum()
    out, w = attention.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(w[0], w_expected, rtol=1e-14)
    np.testing.assert_allclose(out[0], w_expected @ v, rtol=1e-14)
    _, w1 = attention.scaled_dot_product_attention(q, k, v, scale=1.0)
    s1 = (q @ k.T)[0]
    np.testing.assert_allclose(w1[0], np.exp(s1) / np.exp(s1).sum(), rtol=1e-14)


def test_sdpa_float_mask_with_neg_inf_and_broadcast():
    q = np.array([[0.2, 0.1], [0.3, -0.2], [0.0, 0.4]])
    k = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    v = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    add = np.array([0.0, -np.inf, 1.5])  # broadcasts over the query rows
    out, w = attention.scaled_dot_product_attention(q, k, v, attn_mask=add)
    full = np.broadcast_to(add, (3, 3))
    ref_out, ref_w = naive_sdpa(
        q.tolist(),
        k.tolist(),
        v.tolist(),
        allowed=np.isfinite(full).tolist(),
        additive=np.where(np.isfinite(full), full, 0.0).tolist(),
    )
    bound = exact_qkv_bounds(q, k, v, None, ref_w, full)
    assert_close(w, ref_w, bound["weights"])
    assert_close(out, ref_out, bound["output"])
    assert np.all(w[:, 1] == 0.0)


def test_sdpa_fully_masked_row_bool_and_float():
    q = np.array([[0.2, 0.1], [0.3, -0.2]])
    k = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    v = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    allowed = np.array([[True, False, True], [False, False, False]])
    for mask in (allowed, np.where(allowed, 0.0, -np.inf)):
        out, w = attention.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        assert np.array_equal(w[1], np.zeros(3)) and np.array_equal(out[1], np.zeros(2))
        ref_out, ref_w = naive_sdpa(q.tolist(), k.tolist(), v.tolist(), allowed=allowed.tolist())
        bound = exact_qkv_bounds(q, k, v, None, ref_w)
        assert_close(w, ref_w, bound["weights"])
        assert_close(out, ref_out, bound["output"])


@SETTINGS
@given(st.integers(1, 3), sdpa_problems())
def test_sdpa_batch_equals_per_item(B, qkv):
    q, k, v = qkv
    rng = np.random.default_rng(q.size)
    qb = np.stack([q * (b + 1) / B for b in range(B)])
    kb = np.stack([k + rng.uniform(-0.5, 0.5, k.shape) for _ in range(B)])
    vb = np.stack([v - b for b in range(B)])
    out, w = attention.scaled_dot_product_attention(qb, kb, vb, is_causal=True)
    for b in range(B):
        o1, w1 = naive_sdpa(
            qb[b].tolist(),
            kb[b].tolist(),
            vb[b].tolist(),
            allowed=np.tril(np.ones((q.shape[0], k.shape[0]), bool)).tolist(),
        )
        bound = exact_qkv_bounds(qb[b], kb[b], vb[b], None, w1)
        assert_close(out[b], o1, bound["output"])
        assert_close(w[b], w1, bound["weights"])


# ---------------------------------------------------------------- multi-head


@SETTINGS
@given(problems(), st.sampled_from(["row_max", "global_max", "none"]))
def test_one_head_equals_single_head(problem, variant):
    X, W_q, W_k, W_v, proj = problem
    opts = attention.Options(projection=proj, softmax=variant, heads=1)
    mh = attention.multi_head(X, W_q, W_k, W_v, opts)
    ref = naive_attention(X, W_q, W_k, W_v, proj, variant)
    bound = attention_bounds(X, W_q, W_k, W_v, proj, ref["weights"])
    assert len(mh.heads) == 1
    assert_close(mh.output, ref["output"], bound["output"])
    assert_close(mh.heads[0].weights, ref["weights"], bound["weights"])
    single = attention.self_attention(X, W_q, W_k, W_v, options=opts)
    assert np.array_equal(single.output, mh.output)


def naive_multi_head(X, W_q, W_k, W_v, h, projection, W_o=None, scale=None):
    """(concat, output, each head's weights, and the bounds on each: {"concat", "output", "weights": [per head]})."""
    outs, weights, bounds = [], [], []
    for i in range(h):
        blocks = []
        for W in (W_q, W_k, W_v):
            if projection == "x_w":
                dh = W.shape[1] // h
                blocks.append(W[:, i * dh : (i + 1) * dh])
            else:
                dh = W.shape[0] // h
                blocks.append(W[i * dh : (i + 1) * dh, :])
        r = naive_attention(X, *blocks, projection=projection, scale=scale)
        outs.append(r["output"])
        weights.append(r["weights"])
        bounds.append(attention_bounds(X, *blocks, projection, r["weights"], scale))
    concat = [sum((o[row] for o in outs), []) for row in range(len(outs[0]))]
    out = concat if W_o is None else matmul(concat, np.asarray(W_o).tolist())
    d_concat = np.hstack([b["output"] for b in bounds])
    if W_o is None:
        d_out = d_concat
    else:  # one more product: the concatenation's differences carried through |W_o|, and its own sums' rounding
        Wo_abs, C_abs = np.abs(np.asarray(W_o, dtype=float)), np.abs(np.asarray(concat)) + d_concat
        d_out = SAFETY * (d_concat @ Wo_abs + 2 * gamma(Wo_abs.shape[0]) * (C_abs @ Wo_abs))
    return concat, out, weights, {"concat": d_concat, "output": d_out, "weights": [b["weights"] for b in bounds]}


@st.composite
def multi_head_problems(draw):
    h = draw(st.integers(1, 4))
    dk, dv = h * draw(st.integers(1, 3)), h * draw(st.integers(1, 3))
    X, W_q, W_k, W_v, proj = draw(problems(d_k=dk, d_v=dv))
    W_o = draw(st.one_of(st.none(), mat((dv, draw(dims)))))
    return h, X, W_q, W_k, W_v, proj, W_o


@SETTINGS
@given(multi_head_problems())
def test_multi_head_equals_concatenated_single_heads(problem):
    h, X, W_q, W_k, W_v, proj, W_o = problem
    mh = attention.multi_head(X, W_q, W_k, W_v, attention.Options(projection=proj, heads=h), W_o=W_o)
    concat, out, weights, bound = naive_multi_head(X, W_q, W_k, W_v, h, proj, W_o)
    assert len(mh.heads) == h
    assert_close(mh.concat, concat, bound["concat"], "concat")
    assert_close(mh.output, out, bound["output"], "output")
    for i in range(h):
        assert_close(mh.heads[i].weights, weights[i], bound["weights"][i], f"head {i} weights")
        assert_close(mh.combined.weights[i], weights[i], bound["weights"][i], f"combined weights head {i}")
    if W_o is None:
        t = attention.self_attention(X, W_q, W_k, W_v, projection=proj, heads=h)
        assert_close(t.output, concat, bound["concat"])
        n = X.shape[0]
        assert t.weights.shape == ((h, n, n) if h > 1 else (n, n))  # a head axis only when h > 1 (documented)


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 5), st.integers(0, 2), st.data())
def test_split_merge_round_trip(h, dh, n, nbatch, data):
    x = data.draw(mat((2,) * nbatch + (n, h * dh), st.floats(-1e6, 1e6)))
    parts = attention.split_heads(x, h)
    assert parts.shape == x.shape[:-2] + (h, n, dh)
    for i in range(h):
        assert np.array_equal(parts[..., i, :, :], x[..., i * dh : (i + 1) * dh])
    assert np.array_equal(attention.merge_heads(parts), x)


# ---------------------------------------------------------------- batch, temperature, scale


@SETTINGS
@given(st.integers(1, 3), problems())
def test_batch_equals_per_item(B, problem):
    X, W_q, W_k, W_v, proj = problem
    Xb = np.stack([X * (b + 1) / B - 0.1 * b for b in range(B)])
    for mask in ("none", "causal"):
        tb = attention.self_attention(Xb, W_q, W_k, W_v, projection=proj, mask=mask)
        assert tb.output.shape[0] == B and tb.weights.shape == (B, X.shape[0], X.shape[0])
        n = X.shape[0]
        allowed = np.tril(np.ones((n, n), bool)).tolist() if mask == "causal" else None
        for b in range(B):
            ti = attention.self_attention(Xb[b], W_q, W_k, W_v, projection=proj, mask=mask)
            np.testing.assert_allclose(tb.output[b], ti.output, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(tb.weights[b], ti.weights, rtol=1e-12, atol=1e-12)
            ref = naive_attention(Xb[b], W_q, W_k, W_v, proj, allowed=allowed)
            bound = attention_bounds(Xb[b], W_q, W_k, W_v, proj, ref["weights"])
            assert_close(tb.output[b], ref["output"], bound["output"])


@SETTINGS
@given(problems(), st.floats(0.1, 20.0))
def test_temperature_divides_scaled_scores(problem, T):
    X, W_q, W_k, W_v, proj = problem
    t = attention.self_attention(X, W_q, W_k, W_v, projection=proj, temperature=T)
    z = t.scaled / T
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(t.weights, e / e.sum(axis=-1, keepdims=True), rtol=1e-12, atol=1e-14)
    ref = naive_attention(X, W_q, W_k, W_v, proj, temperature=T)
    bound = attention_bounds(X, W_q, W_k, W_v, proj, ref["weights"], temperature=T)
    assert_close(t.weights, ref["weights"], bound["weights"])
    assert_close(t.output, ref["output"], bound["output"])


@SETTINGS
@given(problems())
def test_large_temperature_flattens_towards_uniform(problem):
    X, W_q, W_k, W_v, proj = problem
    n = X.shape[0]
    spreads = []
    for T in (1.0, 10.0, 1e3, 1e6):
        w = attention.self_attention(X, W_q, W_k, W_v, projection=proj, temperature=T).weights
        spreads.append(float(np.max(np.abs(w - 1.0 / n))))
    assert spreads[-1] < 1e-4
    assert all(b <= a + 1e-15 for a, b in zip(spreads, spreads[1:], strict=False))


@SETTINGS
@given(problems(), st.floats(0.01, 10.0))
def test_scale_override(problem, s):
    X, W_q, W_k, W_v, proj = problem
    one = attention.self_attention(X, W_q, W_k, W_v, projection=proj, scale=1.0)
    assert np.array_equal(one.scores, one.scaled)
    assert one.scale == 1.0
    t = attention.self_attention(X, W_q, W_k, W_v, projection=proj, scale=s)
    assert np.array_equal(t.scaled, t.scores * s)
