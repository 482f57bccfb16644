"""The backward pass against central finite differences, for every forward option (random shapes via hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attention
from attention import AttentionError
from attention.backward import backward

EPS = 1e-6


def loss(inputs: dict, options: attention.Options, d_output: np.ndarray | None, d_weights: np.ndarray | None) -> float:
    """L = Σ d_output ⊙ output + Σ d_weights ⊙ weights, by the forward pass."""
    t = attention.self_attention(
        inputs["X"],
        inputs["W_q"],
        inputs["W_k"],
        inputs["W_v"],
        W_o=inputs.get("W_o"),
        P=inputs.get("P"),
        options=options,
    )
    total = 0.0
    if d_output is not None:
        total += float(np.sum(d_output * t.output))
    if d_weights is not None:
        total += float(np.sum(d_weights * t.weights))
    return total


def finite_differences(inputs: dict, options, d_output, d_weights) -> dict[str, np.ndarray]:
    """Central differences (L(x + ε) − L(x − ε)) / 2ε, one input cell at a time."""
    out = {}
    for name, value in inputs.items():
        g = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            plus = {k: v.copy() for k, v in inputs.items()}
            minus = {k: v.copy() for k, v in inputs.items()}
            plus[name][idx] += EPS
            minus[name][idx] -= EPS
            g[idx] = (loss(plus, options, d_output, d_weights) - loss(minus, options, d_output, d_weights)) / (2 * EPS)
        out[name] = g
    return out


def assert_gradients_match(inputs, options, d_output, d_weights):
    t = attention.self_attention(
        inputs["X"],
        inputs["W_q"],
        inputs["W_k"],
        inputs["W_v"],
        W_o=inputs.get("W_o"),
        P=inputs.get("P"),
        options=options,
    )
    got = backward(t, d_output, d_weights)
    want = finite_differences(inputs, options, d_output, d_weights)
    assert list(got) == [k for k in ("X", "W_q", "W_k", "W_v", "W_o", "P") if k in inputs]
    for name in want:
        assert got[name].shape == inputs[name].shape, name
        err = np.linalg.norm(got[name] - want[name])
        scale = max(np.linalg.norm(want[name]), np.linalg.norm(got[name]))
        assert err <= 1e-6 * scale + 1e-8, f"{name}: relative error {err / max(scale, 1e-300):.3g}"


@settings(max_examples=120, deadline=None)
@given(
    n=st.integers(1, 5),
    d_model=st.integers(1, 4),
    h=st.integers(1, 3),
    per_k=st.integers(1, 3),
    per_v=st.integers(1, 2),
    batch=st.sampled_from([(), (2,)]),
    projection=st.sampled_from(["x_w", "x_wt"]),
    softmax=st.sampled_from(["row_max", "global_max", "none"]),
    scale=st.sampled_from([None, 0.7, 1.0, 1.6]),
    temperature=st.sampled_from([1.0, 0.5, 3.0]),
    mask=st.sampled_from(["none", "causal", "padding", "custom", "causal+padding+custom"]),
    pos=st.sampled_from(["none", "sinusoidal", "learned", "rotary"]),
    with_w_o=st.booleans(),
    upstream=st.sampled_from(["output", "weights", "both"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_backward_matches_finite_differences(
    n, d_model, h, per_k, per_v, batch, projection, softmax, scale, temperature, mask, pos, with_w_o, upstream, seed
):
    rs = np.random.RandomState(seed)
    d_k, d_v = h * per_k, h * per_v
    w_shape = (lambda d: (d_model, d)) if projection == "x_w" else (lambda d: (d, d_model))
    inputs = {
        "X": rs.randn(*batch, n, d_model),
        "W_q": rs.randn(*w_shape(d_k)),
        "W_k": rs.randn(*w_shape(d_k)),
        "W_v": rs.randn(*w_shape(d_v)),
    }
    if with_w_o:
        inputs["W_o"] = rs.randn(d_v, d_v)
    if pos == "learned":
        inputs["P"] = rs.randn(n, d_model)
    padding = tuple(bool(b) for b in rs.rand(n) < 0.4)  # may pad every key: fully masked rows
    grid = tuple(tuple(bool(b) for b in r) for r in rs.rand(n, n) < 0.6)
    options = attention.Options(
        projection=projection,
        softmax=softmax,
        scale=scale,
        temperature=temperature,
        mask=mask,
        padding=padding,
        heads=h,
        custom_mask=grid,
        positions=pos,
    )
    t = attention.self_attention(
        **{"X": inputs["X"]},
        W_q=inputs["W_q"],
        W_k=inputs["W_k"],
        W_v=inputs["W_v"],
        W_o=inputs.get("W_o"),
        P=inputs.get("P"),
        options=options,
    )
    d_output = rs.randn(*t.output.shape) if upstream in ("output", "both") else None
    d_weights = rs.randn(*t.weights.shape) if upstream in ("weights", "both") else None
    assert_gradients_match(inputs, options, d_output, d_weights)


def test_a_fully_masked_row_gets_no_gradient_and_the_fixed_pe_none():
    rs = np.random.RandomState(0)
    X, W = rs.randn(3, 4), [rs.randn(4, 4) for _ in range(3)]
    o = attention.Options(mask="padding", padding=(True, True, True), positions="sinusoidal")
    t = attention.self_attention(X, *W, options=o)
    g = backward(t, rs.randn(3, 4), rs.randn(3, 3))
    assert set(g) == {"X", "W_q", "W_k", "W_v"}  # no "P": the sinusoidal PE is not a parameter
    for name, value in g.items():
        np.testing.assert_array_equal(value, 0.0, err_msg=name)


def test_gradient_of_sum_of_weights_is_zero_and_of_the_output_matches_a_closed_form():
    """Rows of A sum to 1, so L = Σ A has gradient 0; with W_q = W_k = 0, A is uniform and output = mean of V,
    so ∂(Σ output)/∂W_v = n · mean of X's columns, per output column."""
    rs = np.random.RandomState(1)
    X, W_v = rs.randn(4, 3), rs.randn(3, 2)
    t = attention.self_attention(X, rs.randn(3, 2), rs.randn(3, 2), W_v)
    for name, value in backward(t, d_weights=np.ones((4, 4))).items():
        np.testing.assert_allclose(value, 0.0, atol=1e-12, err_msg=name)
    t0 = attention.self_attention(X, np.zeros((3, 2)), np.zeros((3, 2)), W_v)
    g = backward(t0, d_output=np.ones((4, 2)))
    np.testing.assert_allclose(g["W_v"], np.repeat(X.sum(axis=0)[:, None], 2, axis=1), rtol=1e-12)


def test_upstream_gradients_are_checked():
    t = attention.self_attention(np.eye(2), np.eye(2), np.eye(2), np.eye(2))
    with pytest.raises(AttentionError, match=r"d_output must have the shape of the trace's array, \(2, 2\); got \(3,"):
        backward(t, np.zeros((3, 2)))
    with pytest.raises(AttentionError, match=r"d_weights has values that are NaN or infinite"):
        backward(t, None, np.full((2, 2), np.nan))
    g = backward(t)
    assert all((v == 0).all() for v in g.values())
