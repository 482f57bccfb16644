"""The numerical-stability lab against oracles: exp's limits from finfo, the exact softmax in math.fsum and
decimal, where each variant must break, what each mask fill gives, and a trace's headroom."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attention
from attention import AttentionError
from attention.labs import stability as st

DTYPES = ("float16", "float32", "float64")


@pytest.mark.parametrize("dtype", DTYPES)
def test_exp_limits_are_logs_of_finfo_and_match_the_measured_breakpoints(dtype: str) -> None:
    info = np.finfo(dtype)
    (lim,) = [d for d in st.dtype_limits((dtype,))]
    assert lim.overflow_limit == float(np.log(np.float64(info.max)))
    assert lim.underflow_limit == pytest.approx(math.log(float(info.smallest_subnormal)) - math.log(2), rel=1e-15)
    if dtype == "float64":
        assert lim.overflow_limit == pytest.approx(709.782712893384, rel=1e-15)  # the number the issue quotes
    below = np.nextafter(np.array(lim.measured_overflow, dtype=dtype), np.array(0, dtype=dtype))
    with np.errstate(over="ignore", under="ignore"):
        assert np.isinf(np.exp(np.array(lim.measured_overflow, dtype=dtype))) and np.isfinite(np.exp(below))
        # the measured first overflow is the first value of the dtype above log(max), the one before is not above
        # (up to the rounding of log(max) itself to a float64)
        assert float(below) <= lim.overflow_limit <= lim.measured_overflow
        above = np.nextafter(np.array(lim.measured_underflow, dtype=dtype), np.array(0, dtype=dtype))
        assert np.exp(np.array(lim.measured_underflow, dtype=dtype)) == 0 and np.exp(above) > 0
        assert lim.measured_underflow <= lim.underflow_limit <= float(above)


def exact_softmax(row: list[float]) -> list[float]:
    """An oracle independent of numpy and decimal: subtract the max in Python floats, math.exp, math.fsum."""
    m = max(row)
    e = [math.exp(x - m) for x in row]
    total = math.fsum(e)
    return [v / total for v in e]


def test_reference_softmax_agrees_with_math_fsum_and_needs_no_subtraction() -> None:
    rows = np.array([[0.3, -1.2, 2.5, 0.0], [800.0, 799.0, 0.0, -5.0], [-2000.0, -2001.0, -2002.0, -2003.0]])
    ref = st.reference_softmax(rows)
    for r, row in zip(ref, rows.tolist(), strict=True):
        np.testing.assert_allclose(r, exact_softmax(row), rtol=1e-14, atol=1e-300)
    assert st.reference_softmax(np.array([[-np.inf, -np.inf]])).tolist() == [[0.0, 0.0]]


def test_each_variant_breaks_exactly_where_the_limits_say() -> None:
    sweep = st.variant_sweep()
    none, glob, row = (sweep.results[v] for v in ("none", "global_max", "row_max"))
    # base rows: max 1 (others ≤ 0.5, so the sum adds < e^(−354) to the top term) and a row 2 below it
    assert none.predicted == pytest.approx(st.overflow_limit(), rel=1e-15)
    assert glob.predicted == pytest.approx(-st.underflow_limit() / 2, rel=1e-15)
    assert row.predicted is None and row.ok.all() and row.first_failure is None
    for res in (none, glob):
        below = sweep.magnitudes < res.predicted * (1 - 1e-9)
        assert res.ok[below].all() and not res.ok[~below].any()
        assert res.first_failure == sweep.magnitudes[~below][0]
        assert np.isnan(res.raw[~below]).any(axis=(-2, -1)).all()  # what numpy gives: NaN (inf/inf or 0/0)
        assert all(m is None for m, b in zip(res.message, below, strict=True) if b)
    assert "overflows" in none.message[-1] and "709.78" in none.message[-1]
    assert "underflows" in glob.message[-1] and "row 2" in glob.message[-1]
    assert sweep.results["row_max"].error.max() <= sweep.tolerance


def test_predicted_thresholds_hold_right_at_the_edge() -> None:
    for base in (st.BASE, np.array([[1.0, 1.0, 0.0]]), np.array([[2.0, 0.0], [-3.0, -4.0]])):
        for variant in ("none", "global_max"):
            p = st.predicted_failure(base, variant)
            if p is None:  # one row: its max is the matrix's max, so "global_max" is "row_max" and never fails
                assert base.shape[0] == 1 and variant == "global_max"
                continue
            sweep = st.variant_sweep(base, [p * (1 - 1e-6), p * (1 + 1e-6)])
            assert sweep.results[variant].ok.tolist() == [True, False], (base, variant, p)
    # two tied maxima: the sum 2·e^t overflows at t = log(max) − log 2, before either term does
    tied = st.predicted_failure(np.array([[1.0, 1.0, 0.0]]), "none")
    assert tied == pytest.approx(st.overflow_limit() - math.log(2), rel=1e-12)
    # [[2, 0], [−3, −4]] with nothing subtracted: row 2 underflows (t = 745.13/3) before row 1 overflows (709.78/2)
    assert st.predicted_failure(np.array([[2.0, 0.0], [-3.0, -4.0]]), "none") == pytest.approx(
        -st.underflow_limit() / 3, rel=1e-15
    )


def case(cases: list, dtype: str, fill: str, method: str, row: str):
    (found,) = [c for c in cases if (c.dtype, c.fill, c.method, c.row) == (dtype, fill, method, row)]
    return found


def test_mask_fills_give_what_arithmetic_says() -> None:
    cases = st.mask_cases()
    assert len(cases) == 3 * 3 * 2 * 2
    for dtype in DTYPES:
        full = case(cases, dtype, "-inf", "replace", "fully masked")
        assert np.isnan(full.naive).all() and np.isnan(full.stable).all()  # exp(−inf)/Σ = 0/0; −inf − (−inf) = NaN
        assert full.engine_says == "all 0" and (full.engine == 0).all()  # the engine's safe softmax
        mn = case(cases, dtype, "finfo.min", "replace", "fully masked")
        assert mn.stable_says == "uniform 1/n" and mn.naive_says == "NaN"  # exp(min) = 0: naive 0/0
        for fill in st.FILLS:
            assert case(cases, dtype, fill, "replace", "normal").engine_says == "correct"
    # −1e9 is beyond float16's largest value (65504): stored as −inf, so a fully masked row behaves as −inf does
    assert case(cases, "float16", "-1e9", "replace", "normal").fill_stored == -math.inf
    assert case(cases, "float16", "-1e9", "replace", "fully masked").engine_says == "all 0"
    # in float64 −1e9 is exact: a fully masked row is n equal scores, so uniform 1/n
    c = case(cases, "float64", "-1e9", "replace", "fully masked")
    np.testing.assert_array_equal(c.stable, np.full(4, 0.25))
    assert c.engine_says == c.stable_says == "uniform 1/n"
    # added instead, −1e9 keeps the differences of the float64 scores: the softmax of the unmasked row
    c = case(cases, "float64", "-1e9", "add", "fully masked")
    assert c.stable_says == "as if unmasked"
    np.testing.assert_allclose(c.stable, exact_softmax(st.MASK_ROW.tolist()), atol=st.tolerance("float64"))
    # float32 spacing at 1e9 is 64, so 3 − 1e9, 1 − 1e9, −20 − 1e9 and 0.5 − 1e9 all round to −1e9: uniform
    assert np.spacing(np.float32(1e9)) == 64
    assert case(cases, "float32", "-1e9", "add", "fully masked").stable_says == "uniform 1/n"


def test_adding_finfo_min_overflows_to_minus_inf_when_the_score_is_below_half_a_spacing() -> None:
    info = np.finfo(np.float16)
    half = float(info.max - np.nextafter(info.max, np.float16(0))) / 2  # 16: min − s rounds to −inf for s > 16
    c = case(st.mask_cases(("float16",)), "float16", "finfo.min", "add", "normal")
    for score, got, keep in zip(st.MASK_ROW, c.scores, st.MASK_ALLOWED, strict=True):
        if not keep:
            assert got == (-np.inf if score < -half else info.min), score
    assert c.engine_says == "correct"  # −inf or min, a masked key gets exp(...) = 0 either way


def test_dtype_limits_naive_breaks_past_log_max_and_the_stable_one_never() -> None:
    for lim in st.dtype_limits():
        assert lim.fits.all()
        first_above = lim.magnitudes[lim.magnitudes > lim.overflow_limit][0]  # base row max is 1
        assert lim.naive_breaks_at == first_above
        assert lim.naive_ok[lim.magnitudes < lim.overflow_limit].all()
        assert lim.stable_breaks_at is None and lim.stable_ok.all()


def naive_scaled(trace) -> np.ndarray:
    return trace.scaled / trace.options.temperature


def test_trace_headroom_against_the_limits() -> None:
    t = attention.load_preset("the_cat_sat").compute()
    h = st.trace_headroom(t)
    top = max(max(row) for row in naive_scaled(t).tolist())
    row_max = [max(row) for row in naive_scaled(t).tolist()]
    assert h.max_score == top and h.max_abs_score == top
    assert h.largest_gap == pytest.approx(max(row_max) - min(row_max), rel=1e-15)
    by = {d.dtype: d for d in h.dtypes}
    for d in DTYPES:
        assert by[d].headroom == st.overflow_limit(d) - top and by[d].factor == st.overflow_limit(d) / top
        assert by[d].row_max_ok and by[d].fits
        assert by[d].none_ok == (top < st.overflow_limit(d))  # 11.57 is past float16's 11.09 only
    assert not by["float16"].none_ok and by["float32"].none_ok


def test_trace_headroom_ignores_masked_cells_and_refuses_all_masked() -> None:
    m = attention.load_preset("random_seed_42").matrices()
    t = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], mask="causal", temperature=0.5)
    h = st.trace_headroom(t)
    live = t.scaled[np.isfinite(t.scaled)] / 0.5
    assert h.max_score == live.max()
    blocked = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], attn_mask=np.zeros((3, 3), bool))
    with pytest.raises(AttentionError, match="every score is masked"):
        st.trace_headroom(blocked)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(AttentionError, match="variant"):
        st.numpy_softmax(np.zeros((2, 2)), "max")
    with pytest.raises(AttentionError, match="magnitudes"):
        st.variant_sweep(magnitudes=[1.0, -2.0])
    with pytest.raises(AttentionError, match="base"):
        st.variant_sweep(base=np.array([[1.0, np.nan]]))
    with pytest.raises(AttentionError, match="fill"):
        st.fill_value("-1e30", "float32")
