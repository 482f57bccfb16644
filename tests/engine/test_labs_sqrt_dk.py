"""The "Why √d_k?" lab against oracles: Var(q·k) = d_k, the softmax Jacobian by finite differences and in closed
form, log₂ n bits for a uniform row, and the largest weight growing with d_k only when the scores are not scaled."""

from __future__ import annotations

import decimal
import math

import numpy as np
import pytest

import attention
from attention import AttentionError, steps
from attention.labs import sqrt_dk


def rel_sd_of_variance(d: int, n: int, seeds: int) -> float:
    """The relative standard deviation of the pooled variance of the n × n scores QKᵀ over ``seeds`` draws.

    For x = q·k with unit normal entries: E x² = d and, given q, x ~ N(0, |q|²), so E x⁴ = 3 E|q|⁴ = 3(d² + 2d) and
    Var(x²) = 2d² + 6d. Two scores sharing a query (or a key) are uncorrelated but not independent:
    Cov(x_ij², x_il²) = E|q|⁴ − d² = 2d; each score shares its row with n − 1 others and its column with n − 1.
    So Var(mean of x²) = (2d² + 6d + 4d(n − 1)) / (seeds · n²); the sample mean's share is O(1/N), negligible.
    """
    return math.sqrt((2 + 6 / d + 4 * (n - 1) / d) / (seeds * n * n))


def test_score_variance_is_d_k_and_scaled_variance_is_1() -> None:
    dims, n, seeds = (1, 2, 8, 64, 512), 16, 64
    c = sqrt_dk.sqrt_dk_curves(dims, n=n, seeds=seeds)
    for d, raw, scaled in zip(dims, c.var_raw, c.var_scaled, strict=True):
        tol = 5 * rel_sd_of_variance(d, n, seeds)  # five standard deviations: 0.32 at d = 1, 0.057 at d = 512
        assert abs(raw / d - 1) <= tol, (d, raw)
        assert abs(scaled - 1) <= tol, (d, scaled)
    np.testing.assert_allclose(c.var_scaled, c.var_raw / np.array(dims), rtol=1e-12)  # (s·x) has variance s²·Var x


def test_largest_weight_grows_with_d_k_only_without_scaling() -> None:
    c = sqrt_dk.sqrt_dk_curves((1, 4, 16, 64, 256), n=16, seeds=16)
    assert (np.diff(c.max_weight_raw) > 0).all(), c.max_weight_raw
    assert c.max_weight_raw[-1] - c.max_weight_raw[0] > 0.5
    assert np.ptp(c.max_weight_scaled) < 0.05, c.max_weight_scaled
    assert (np.diff(c.entropy_raw) < 0).all() and c.entropy_raw[-1] < 0.5
    assert np.ptp(c.entropy_scaled) < 0.2 and (c.entropy_scaled > 3.2).all()  # log₂ 16 = 4 bits at most
    assert c.jacobian_raw[-1] < c.jacobian_scaled[-1] / 2  # the gradient through a saturated softmax vanishes


def test_softmax_jacobian_matches_central_finite_differences() -> None:
    rng = np.random.default_rng(7)
    rows = [rng.standard_normal(5), 6 * rng.standard_normal(7), np.array([9.0, 0.0, -1.0]), np.zeros(4)]
    h = 1e-6
    for x in rows:
        J = sqrt_dk.softmax_jacobian(steps.softmax(x))
        numeric = np.empty_like(J)
        for j in range(x.size):
            e = np.zeros_like(x)
            e[j] = h
            numeric[:, j] = (steps.softmax(x + e) - steps.softmax(x - e)) / (2 * h)
        np.testing.assert_allclose(J, numeric, atol=1e-9)
        np.testing.assert_allclose(J, J.T, atol=0)  # ∂a_i/∂x_j = ∂a_j/∂x_i
        np.testing.assert_allclose(J.sum(axis=0), 0, atol=1e-15)  # the weights always sum to 1


def test_uniform_row_has_log2_n_bits_and_known_jacobian_norm() -> None:
    for n in (2, 3, 16, 100):
        a = steps.softmax(np.zeros((1, n)))
        top, entropy, jac = sqrt_dk.row_stats(a)
        assert entropy[0] == pytest.approx(math.log2(n), abs=1e-12)
        assert top[0] == pytest.approx(1 / n, abs=1e-15)
        # J = I/n − 11ᵀ/n²: n diagonal entries (1/n − 1/n²)² and n² − n off-diagonal (1/n²)² sum to (n − 1)/n²
        assert jac[0] == pytest.approx(math.sqrt(n - 1) / n, rel=1e-12)


def test_jacobian_norm_is_the_norm_of_the_built_jacobian_without_building_it() -> None:
    """Against ‖diag(a) − aaᵀ‖_F of the explicit matrix, on ordinary, saturated, one-hot and fully masked rows; and
    at n = 2048 (where the explicit Jacobians of every row would take 2048³ floats) it runs on the rows alone."""
    rng = np.random.default_rng(11)
    rows = steps.softmax(rng.standard_normal((5, 9)) * np.array([[0.1], [1], [5], [20], [60]]))
    rows = np.vstack([rows, np.eye(9)[:1], np.zeros((1, 9))])  # a one-hot row, and a fully masked row (all 0)
    explicit = np.linalg.norm(sqrt_dk.softmax_jacobian(rows), axis=(-2, -1))
    np.testing.assert_allclose(sqrt_dk.jacobian_norm(rows), explicit, rtol=1e-12, atol=1e-300)
    assert sqrt_dk.jacobian_norm(rows)[-2:].tolist() == [0.0, 0.0]
    # a row so saturated that the explicit a_1(1 − a_1) is 1 − 1: against the exact softmax and J in 60 digits
    x = 200 * rng.standard_normal(9)
    with decimal.localcontext(decimal.Context(prec=60)):
        e = [decimal.Decimal(float(v)).exp() for v in x]
        a = [v / sum(e) for v in e]
        fro2 = sum((a[i] * ((1 if i == j else 0) - a[j])) ** 2 for i in range(9) for j in range(9))
        exact = float(fro2.sqrt())
    assert 0 < exact < 1e-20
    assert sqrt_dk.jacobian_norm(steps.softmax(x)) == pytest.approx(exact, rel=1e-12)
    big = steps.softmax(rng.standard_normal((2048, 2048)))
    norms = sqrt_dk.jacobian_norm(big)
    assert norms.shape == (2048,)
    for i in (0, 777, 2047):
        assert norms[i] == pytest.approx(np.linalg.norm(sqrt_dk.softmax_jacobian(big[i])), rel=1e-12)


def test_saturation_curve_against_the_closed_form() -> None:
    n = 16
    curve = sqrt_dk.saturation_curve(n=n, points=41, max_gap=30.0)
    for g, top, norm, largest in zip(
        curve["gap"], curve["max_weight"], curve["jacobian_norm"], curve["largest_entry"], strict=True
    ):
        p, b = math.exp(g) / (math.exp(g) + n - 1), 1 / (math.exp(g) + n - 1)  # the top weight, each other weight
        q = (n - 1) * b  # 1 − p, without the cancellation
        # J = diag(a) − aaᵀ: J₁₁ = pq; 2(n − 1) entries −pb; n − 1 diagonal b(1 − b); (n − 1)(n − 2) entries −b²
        fro2 = (p * q) ** 2 + 2 * (n - 1) * (p * b) ** 2 + (n - 1) * (b * (1 - b)) ** 2 + (n - 1) * (n - 2) * b**4
        assert top == pytest.approx(p, rel=1e-12)
        assert norm == pytest.approx(math.sqrt(fro2), rel=1e-9)
        assert largest == pytest.approx(max(p * q, p * b, b * (1 - b)), rel=1e-9)
    assert curve["max_weight"][0] == pytest.approx(1 / n) and curve["max_weight"][-1] > 1 - 1e-11
    assert curve["jacobian_norm"][-1] < 1e-11  # max weight → 1: the gradient is gone


def test_curves_are_deterministic_and_each_d_k_is_independent_of_the_grid() -> None:
    a = sqrt_dk.sqrt_dk_curves((4, 8), seed=3)
    b = sqrt_dk.sqrt_dk_curves((8,), seed=3)
    assert a.var_raw[1] == b.var_raw[0] and a.entropy_scaled[1] == b.entropy_scaled[0]
    again = sqrt_dk.sqrt_dk_curves((4, 8), seed=3)
    assert all(np.array_equal(getattr(a, f), getattr(again, f)) for f in ("var_raw", "max_weight_raw", "jacobian_raw"))
    assert not np.array_equal(a.var_raw, sqrt_dk.sqrt_dk_curves((4, 8), seed=4).var_raw)


def test_long_columns_for_a_chart() -> None:
    c = sqrt_dk.sqrt_dk_curves((2, 32), n=4, seeds=2)
    cols = c.long()
    assert {len(v) for v in cols.values()} == {16}
    pick = (cols["measure"] == "entropy") & (cols["scaling"] == sqrt_dk.SCALINGS[1])
    np.testing.assert_array_equal(cols["value"][pick], c.entropy_raw)
    np.testing.assert_array_equal(cols["d_k"][pick], [2, 32])
    assert c.max_entropy == 2.0


def naive_stats(w: list[list[float]]) -> tuple[float, float]:
    """Mean largest weight and mean entropy (bits) of the rows that attend something, with loops and math.log2."""
    live = [row for row in w if sum(row) > 0]
    tops = [max(row) for row in live]
    ents = [-math.fsum(v * math.log2(v) for v in row if v > 0) for row in live]
    return sum(tops) / len(tops), sum(ents) / len(ents)


def test_trace_point_against_loops() -> None:
    t = attention.load_preset("the_cat_sat").compute()
    p = sqrt_dk.trace_point(t)
    Q, K = t.Q.tolist(), t.K.tolist()
    S = [sum(qc * kc for qc, kc in zip(q, k, strict=True)) for q in Q for k in K]
    mean = math.fsum(S) / len(S)
    assert p.score_variance == pytest.approx(math.fsum((s - mean) ** 2 for s in S) / len(S), rel=1e-12)
    assert p.scaled_variance == pytest.approx(p.score_variance / 4, rel=1e-12)  # d_k = 4, scale 1/2
    top, ent = naive_stats(t.weights.tolist())
    assert (p.d_k, p.n, p.is_default_scale) == (4, 3, True)
    assert p.mean_max_weight == pytest.approx(top, rel=1e-12) and p.mean_entropy == pytest.approx(ent, rel=1e-12)


def test_trace_point_leaves_out_fully_masked_rows() -> None:
    m = attention.load_preset("random_seed_42").matrices()
    allowed = np.array([[False, False, False], [True, True, False], [True, True, True]])
    t = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], attn_mask=allowed, scale=1.0)
    p = sqrt_dk.trace_point(t)
    top, ent = naive_stats(t.weights.tolist())  # row 1 is all 0 and left out by the oracle too
    assert p.mean_max_weight == pytest.approx(top, rel=1e-12) and p.mean_entropy == pytest.approx(ent, rel=1e-12)
    assert not p.is_default_scale and p.scale == 1.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n": 1}, "n"),
        ({"seeds": 0}, "seeds"),
        ({"dims": (0, 4)}, "d_k"),
        ({"dims": ()}, "d_k"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_sizes_are_refused_naming_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(AttentionError, match=field) as info:
        sqrt_dk.sqrt_dk_curves(**kwargs)
    assert info.value.field == ("dims" if field == "d_k" else field)


@pytest.mark.parametrize("d_k, n, seeds", [(64, 16, 16), (8, 8, 4), (64, 32, 2), (1, 16, 1)])
def test_the_variances_spread_matches_repeated_draws(d_k, n, seeds):
    """The page's "± sd" is what repeating the measurement gives: 1,500 sets of draws of plain standard-normal Q and K,
    the variance of each set's scores computed by plain sums, their standard deviation within 10% of the formula
    (its sampling error at 1,500 repeats is about 2%). The independent-scores guess √(2d²/(seeds·n²)) is further off
    where d_k is not small next to n, so the check can tell them apart."""
    rng = np.random.default_rng(7)
    measured = []
    for _ in range(1500):
        Q = rng.standard_normal((seeds, n, d_k))
        K = rng.standard_normal((seeds, n, d_k))
        scores = np.einsum("bid,bjd->bij", Q, K).ravel()  # (seeds·n·n,)
        measured.append(np.mean((scores - scores.mean()) ** 2))
    sd = float(np.std(measured))
    assert sqrt_dk.variance_spread(d_k, n, seeds) == pytest.approx(sd, rel=0.10)
    if d_k >= n:
        naive = np.sqrt(2 * d_k**2 / (seeds * n * n))
        assert abs(naive - sd) > 0.15 * sd  # 19% at d_k = 64, n = 16; 30% at n = 32
