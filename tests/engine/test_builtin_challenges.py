"""The built-in challenges as a teacher relies on them: each hint ends in a recipe, and that recipe, applied as the
hint states it (the same cells, the same numbers, a paste through the import box's own parser), meets the goal; no
single number of W_k meets challenge 4 within [-10, 10]; every built-in starts unmet and is solved by training only
its editable matrices; the texts and the messages use the learner's words.

Oracles: the goal read by plain Python loops (tests/test_labs_solutions.naive_met) beside the engine's evaluate, and
for challenge 4 a naive numpy computation of the causal row of 'on' over a grid of 2,001 values for each of W_k's 64
cells (checked against the engine's scores first)."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest

import attention
from attention.io import parse
from attention.labs import challenges as ch
from attention.labs import solutions
from tests.helpers import ROOT
from tests.helpers.challenges import naive_met

Edit = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]


def rows_set(name: str, rows: list[int], value: float) -> Edit:
    def edit(m: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        W = m[name].copy()
        W[rows, :] = value
        return {name: W}

    return edit


def cols_set(name: str, cols: slice, value: float) -> Edit:
    def edit(m: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        W = m[name].copy()
        W[:, cols] = value
        return {name: W}

    return edit


def times(name: str, factor: float, digits: int | None = None) -> Edit:
    """Every number of the matrix multiplied by ``factor`` (after rounding it to ``digits``, as a student copies
    the numbers the grid shows)."""
    return lambda m: {name: factor * (m[name] if digits is None else np.round(m[name], digits))}


def diagonal(name: str, on: float, off: float) -> Edit:
    def edit(m: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        W = np.full(m[name].shape, off)
        np.fill_diagonal(W, on)
        return {name: W}

    return edit


def cell(name: str, i: int, j: int, value: float) -> Edit:
    def edit(m: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        W = m[name].copy()
        W[..., i, j] = value
        return {name: W}

    return edit


def pasted(name: str, row: str) -> Edit:
    """The hint's paste: one row of text per row of the matrix, read by the import box's parser."""

    def edit(m: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        shape = m[name].shape
        text = "\n".join([row] * shape[0])
        return {name: parse.parse_matrix_text(text, name, shape)}

    return edit


# id -> (the words of the hint that state the recipe, the recipe as an edit)
RECIPES: dict[str, tuple[tuple[str, ...], list[Edit]]] = {
    "sat_looks_back": (("rows d2 and d4 of W_k", "-1"), [rows_set("W_k", [1, 3], -1.0)]),
    "look_at_yourself": (("diagonal of W_q to 3", "every other number to -1"), [diagonal("W_q", 3.0, -1.0)]),
    "sharpen_cat": (("every number of W_q by 8",), [times("W_q", 8.0), times("W_q", 8.0, 2)]),
    "causal_on_sees_cat": (("row d8 of W_k", "to 10"), [rows_set("W_k", [7], 10.0)]),
    "spread_out": (("0 0 0 0 0 0 0 0", "Import W_q: upload a CSV or paste a numpy array"), [pasted("W_q", "0 " * 8)]),
    "focus_every_row": (
        ("every number of W_k by 20", "Import W_k: upload a CSV or paste a numpy array"),
        [times("W_k", 20.0), times("W_k", 20.0, 2)],
    ),
    "wake_up_am": (("d1 = -10", "d2 = 9"), [cell("X", 1, 0, -10.0), cell("X", 1, 1, 9.0)]),
    "negative_output": (("row d1, column v1", "-10"), [cell("W_v", 0, 0, -10.0)]),
    "window_reach_back": (("rows d2 and d4 of W_k", "to 2"), [rows_set("W_k", [1, 3], 2.0)]),
    "alibi_long_look": (("every number of W_q to -1",), [lambda m: {"W_q": np.full(m["W_q"].shape, -1.0)}]),
    "mqa_two_views": (("columns q3 and q4", "-1"), [cols_set("W_q", slice(2, 4), -1.0)]),
}
SEQUENTIAL = {"wake_up_am"}  # its two edits are one recipe (both numbers of one row), applied together


def test_every_built_in_has_a_recipe_here() -> None:
    assert sorted(RECIPES) == sorted(ch.list_challenges())


@pytest.mark.parametrize("cid", sorted(RECIPES))
def test_the_hints_recipe_applied_as_stated_meets_the_goal(cid: str) -> None:
    c = ch.load_challenge(cid)
    words, edits = RECIPES[cid]
    for w in words:
        assert w in c.hint, f"{cid}: the hint no longer states {w!r}: {c.hint}"
    start = ch.challenge_preset(c).matrices()
    groups = [edits] if cid in SEQUENTIAL else [[e] for e in edits]
    for group in groups:
        m = {k: v.copy() for k, v in start.items()}
        for e in group:
            m |= e(m)
        changed = {k: v for k, v in m.items() if not np.array_equal(v, start[k])}
        assert set(changed) <= set(c.editable)
        trace = ch.run(c, changed)
        assert naive_met(c, trace), (cid, ch.evaluate(c, trace).description)
        assert ch.evaluate(c, trace).met


def test_challenge_7s_old_hint_fails_and_the_new_numbers_give_batman_two_thirds() -> None:
    """Under X·Wᵀ with 'am' = (a, b): score(Batman) − score(I) = −(a + b) and score(am) = (5a + 6b)(a + b), so two
    negative numbers put 'am' on itself (the old hint's "try negative values"); (−10, 9) gives Batman
    1 / (1 + e^(−1/√2) + e^(−18/√2)) ≈ 0.6698."""
    c = ch.load_challenge("wake_up_am")
    m = ch.challenge_preset(c).matrices()
    for x, top in (((-0.1, -0.1), 1), ((-1.0, -1.0), 1), ((-10.0, 9.0), 2)):
        X = m["X"].copy()
        X[1] = x
        w = ch.run(c, {"X": X}).weights[1]
        assert int(np.argmax(w)) == top
    assert w[2] == pytest.approx(1 / (1 + np.exp(-1 / np.sqrt(2)) + np.exp(-18 / np.sqrt(2))), rel=1e-12)


def test_challenge_4_has_no_single_cell_answer_in_minus_10_to_10() -> None:
    """Every cell of W_k over 2,001 values in [-10, 10] (steps of 0.01): 'cat' never has the largest weight of the
    causal row of 'on'. The row is computed naively (K = X W_k, scores q_on · k_t for the four keys it sees) after
    checking that formula against the engine's scores; the best value of each cell is then run by the engine."""
    c = ch.load_challenge("causal_on_sees_cat")
    m = ch.challenge_preset(c).matrices()
    X, Wk = m["X"][0], m["W_k"]  # (6, 8), (8, 8)
    t = ch.run(c)
    q_on = t.Q[0, 3]  # (8,)
    np.testing.assert_allclose((X @ Wk)[:4] @ q_on, t.scores[0, 3, :4], rtol=1e-12)
    grid = np.linspace(-10.0, 10.0, 2001)
    best_margin = -np.inf
    for i in range(8):
        for j in range(8):
            W = np.repeat(Wk[None], grid.size, axis=0)  # (g, 8, 8)
            W[:, i, j] = grid
            s = np.einsum("tf,gfd,d->gt", X[:4], W, q_on)  # (g, 4): the scores 'on' may see
            margin = s[:, 1] - np.max(s[:, [0, 2, 3]], axis=1)  # > 0 where 'cat' is on top
            k = int(np.argmax(margin))
            best_margin = max(best_margin, margin[k])
            for v in (grid[k], -10.0, 10.0):
                W1 = Wk.copy()
                W1[i, j] = v
                assert not ch.evaluate(c, ch.run(c, {"W_k": W1})).met
    assert best_margin < -2.9  # the closest a single cell comes: 'cat' still about 3 below the top score


@pytest.mark.parametrize("cid", ch.list_challenges())
def test_every_built_in_starts_unmet_and_is_solved_with_its_editable_matrices(cid: str) -> None:
    c = ch.load_challenge(cid)
    assert not naive_met(c, ch.run(c)) and not ch.evaluate(c, ch.run(c)).met
    found = solutions.solve(c)
    assert found is not None and set(found.matrices) <= set(c.editable)


WORDS = re.compile(r"document\s*0|x_wt|x_w\b|\.\.", re.IGNORECASE)


@pytest.mark.parametrize("cid", ch.list_challenges())
def test_built_in_texts_use_the_learners_words(cid: str) -> None:
    c = ch.load_challenge(cid)
    for text in (c.title, c.goal, c.hint):
        assert not WORDS.search(text), text


def test_hints_of_the_many_cell_challenges_name_the_import_box_and_challenge_4_says_several() -> None:
    for cid in ("spread_out", "focus_every_row"):
        c = ch.load_challenge(cid)
        assert "Weights (W_q, W_k, W_v)" in c.hint and "Apply" in c.hint
    c = ch.load_challenge("causal_on_sees_cat")
    assert "several" in c.goal and "no single number" in c.goal


def test_messages_for_a_trace_that_does_not_count_use_the_learners_words() -> None:
    c = ch.load_challenge("sat_looks_back")
    m = ch.challenge_preset(c).matrices()
    W = m["W_q"].copy()
    W[0, 0] = 5.0
    p = ch.evaluate(c, attention.self_attention(m["X"], W, m["W_k"], m["W_v"], tokens=("The", "cat", "sat")))
    assert p.blocked and not p.blocked.endswith(".")  # the page adds ". Press Restart"
    o = ch.challenge_preset(c).options.replace(projection="x_wt")
    t = attention.self_attention(m["X"], m["W_q"].T, m["W_k"].T, m["W_v"].T, tokens=("The", "cat", "sat"), options=o)
    p = ch.evaluate(c, t)
    assert "X·Wᵀ" in p.blocked and "X·W" in p.blocked.replace("X·Wᵀ", "") and "x_w" not in p.blocked, p.blocked


def test_the_teachers_table_gives_each_built_in_with_the_model_answer_tested_here() -> None:
    """The teachers' table in docs/teaching.md: one row per built-in, in the page's order, whose model answer states
    the recipe these tests apply."""
    doc = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    section = doc.split("## The built-in challenges, with model answers", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in section.splitlines() if re.match(r"\| \d+ \|", r)]
    ids = ch.list_challenges()
    assert len(rows) == len(ids)
    for k, (row, cid) in enumerate(zip(rows, ids, strict=True), start=1):
        assert row.startswith(f"| {k} | {ch.load_challenge(cid).title} (")
        for w in RECIPES[cid][0]:
            assert w in row, (cid, w)
