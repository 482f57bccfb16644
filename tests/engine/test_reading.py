"""The reading (top key, second key, entropy, fully masked) against a naive loop with a full sort, per head too."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attention
from attention.reading import read


def naive_row(row: list[float], allowed: list[bool]) -> dict:
    order = sorted(range(len(row)), key=lambda j: (-row[j], j))  # a full sort; ties go to the first key
    second = order[1] if len(row) > 1 else order[0]
    return {
        "top": order[0],
        "top_weight": row[order[0]],
        "second": second,
        "second_weight": row[second] if len(row) > 1 else 0.0,
        "entropy": -sum(p * math.log2(p) for p in row if p > 0),
        "fully_masked": not any(allowed),
        "row_max_entropy": math.log2(sum(allowed)) if any(allowed) else 0.0,
    }


def check(reading, weights: np.ndarray, allowed: np.ndarray) -> None:
    for idx in np.ndindex(weights.shape[:-1]):
        want = naive_row(weights[idx].tolist(), allowed[idx[-1]].tolist())
        for key, value in want.items():
            got = getattr(reading, key)[idx]
            assert got == pytest.approx(value, rel=1e-12, abs=1e-15), (key, idx)
    assert reading.max_entropy == pytest.approx(math.log2(weights.shape[-1]))


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 7),
    h=st.sampled_from([1, 2, 3]),
    mask=st.sampled_from(["none", "causal", "padding", "causal+padding", "custom"]),
    seed=st.integers(0, 10_000),
)
def test_reading_matches_a_naive_loop(n: int, h: int, mask: str, seed: int) -> None:
    rs = np.random.RandomState(seed)
    X = rs.randn(n, 4)
    W = [rs.randn(4, 2 * h) for _ in range(3)]
    padding = tuple(bool(b) for b in rs.rand(n) < 0.4)
    grid = tuple(tuple(bool(b) for b in r) for r in rs.rand(n, n) < 0.5)
    t = attention.self_attention(*[X, *W], heads=h, mask=mask, padding=padding, custom_mask=grid)
    allowed = np.ones((n, n), bool) if t.allowed is None else t.allowed
    check(t.reading, t.weights, allowed)
    assert t.reading.top.shape == ((h, n) if h > 1 else (n,))
    assert t.reading is t.reading  # computed once per trace


def test_ties_go_to_the_first_key_and_uniform_rows_have_the_most_entropy() -> None:
    w = np.array([[0.25, 0.25, 0.25, 0.25], [0.0, 0.5, 0.0, 0.5], [0.0, 0.0, 0.0, 0.0]])
    allowed = np.array([[True] * 4, [True] * 4, [False] * 4])
    r = read(w, allowed)
    check(r, w, allowed)
    assert r.entropy[0] == pytest.approx(r.row_max_entropy[0]) == pytest.approx(2.0)
    assert (r.top[1], r.second[1]) == (1, 3)
    assert r.fully_masked.tolist() == [False, False, True]


def test_reading_of_a_batch_is_the_first_items() -> None:
    rs = np.random.RandomState(1)
    X = rs.randn(2, 5, 3)
    t = attention.self_attention(X, rs.randn(3, 4), rs.randn(3, 4), rs.randn(3, 4), heads=2)
    check(t.reading, t.weights[0], np.ones((5, 5), bool))
