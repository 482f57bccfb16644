"""AppTest: edit and see on one screen (inputs on every result page), and compare with a pinned state A."""

from __future__ import annotations

import numpy as np
import pytest

import attention
from attention.ui.compare import largest_changes
from tests.apptest_util import edit_cell, frame_by_shape, goto, journey, no_exception, session, texts

RESULT_PAGES = ["qkv", "scores", "scaling", "softmax", "output", "reading"]


def _engine(s) -> attention.Trace:
    m = s.matrices
    return attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=s.tokens, options=s.options)


@pytest.mark.parametrize("page", RESULT_PAGES)
def test_every_result_page_has_the_four_input_editors(page: str) -> None:
    at = journey(page, {"preset": "the_cat_sat"})
    no_exception(at)
    keys = {df.key.split(".")[1] for df in at.dataframe if df.key and df.key.startswith("ed.")}
    assert keys == {"X", "W_q", "W_k", "W_v"}
    labels = [t.label for t in at.tabs]
    assert any(labels[k:k + 4] == ["X", "W_q", "W_k", "W_v"] for k in range(len(labels))), labels


def test_an_edit_of_w_q_on_the_softmax_page_changes_the_weights_as_the_engine_says() -> None:
    at = journey("softmax", {"preset": "the_cat_sat"})
    before = _engine(session(at)).weights
    at = edit_cell(at, "W_q", 1, "q2", 3.0)
    no_exception(at)
    s = session(at)
    assert s.matrices["W_q"][1, 1] == 3.0
    want = _engine(s).weights
    assert not np.allclose(want, before)
    np.testing.assert_array_equal(frame_by_shape(at, (3, 3)), want)  # the table on the same screen, to the last bit
    chart = at.get("vega_lite_chart")[0]
    assert chart  # the heatmap is redrawn on the same run
    at = goto(at, "weights")  # the same edit everywhere
    assert session(at).matrices["W_q"][1, 1] == 3.0


def test_pin_edit_compare_shows_the_engine_differences_and_survives_page_switches() -> None:
    at = journey("softmax", {"preset": "the_cat_sat"})
    at = at.button(key="cmp.pin").click().run()
    a = _engine(session(at)).weights
    at = edit_cell(at, "W_k", 1, "k1", 2.5)
    now = _engine(session(at)).weights
    no_exception(at)
    said = " ".join(texts(at.markdown))
    assert "Compare weights with A" in said
    toks = list(session(at).tokens)
    (where, was, is_), *_ = largest_changes(now, a, toks, toks, True)
    assert f"{where}: {was:.4g} → {is_:.4g}" in said
    i, j = np.unravel_index(np.argmax(np.abs(now - a)), a.shape)
    assert where == f"{toks[i]} → {toks[j]}"  # the largest change is the engine's largest |now − A|
    assert len(at.get("vega_lite_chart")) >= 3  # now, A, and now − A
    at = goto(at, "scores")
    assert "Compare scores with A" in " ".join(texts(at.markdown))
    at = at.button(key="cmp.swap").click().run()
    np.testing.assert_array_equal(_engine(session(at)).weights, a)  # A is now current
    at = at.button(key="cmp.clear").click().run()
    assert session(at).pin is None
    assert "Compare scores with A" not in " ".join(texts(at.markdown))


def test_pinned_and_unchanged_says_so_and_different_shapes_are_not_compared() -> None:
    at = journey("softmax", {"preset": "the_cat_sat"})
    at = at.button(key="cmp.pin").click().run()
    assert "exactly the same as in A" in " ".join(texts(at.caption))
    at = goto(at, "tokens")
    at = at.text_input(key=f"tok.sentence.{session(at).version}").set_value("The cat sat down").run()
    at = goto(at, "softmax")
    no_exception(at)
    assert "different shapes cannot be compared" in " ".join(texts(at.caption))


def test_largest_changes_against_a_naive_scan() -> None:
    rs = np.random.RandomState(0)
    a, b = rs.rand(5, 5), rs.rand(5, 5)
    names = list("abcde")
    got = largest_changes(b, a, names, names, True, k=3)
    order = sorted(((abs(b[i, j] - a[i, j]), i, j) for i in range(5) for j in range(5)), reverse=True)[:3]
    assert [g[0] for g in got] == [f"{names[i]} → {names[j]}" for _, i, j in order]


def test_explain_a_cell_recomputes_the_engine_weight_step_by_step() -> None:
    """The explanation's steps (products, sum, scale, shift, exp, row sum) rebuild the engine's own weight."""
    from attention.explain import explain_cell

    for preset in ("she_likes_coffee", "i_am_batman", "the_cat_sat", "random_seed_42"):
        t = attention.load_preset(preset).compute()
        n = t.weights.shape[-1]
        for i in range(n):
            for j in range(n):
                e = explain_cell(t, i, j)
                assert e.products.sum() == pytest.approx(t.scores[i, j], rel=1e-12)
                assert e.score * e.scale == pytest.approx(t.scaled[i, j], rel=1e-12)
                assert e.exps[j] / e.row_sum == pytest.approx(t.weights[i, j], rel=1e-12)
    masked = attention.load_preset("the_cat_sat").compute()
    masked = attention.self_attention(masked.X, masked.W_q, masked.W_k, masked.W_v, mask="causal")
    assert explain_cell(masked, 0, 2).masked and explain_cell(masked, 0, 2).weight == 0.0


def test_choosing_a_cell_explains_it_with_the_engine_numbers() -> None:
    """(Clicking the heatmap is the browser's part: tests/test_browser_learner.py.)"""
    at = journey("softmax", {"preset": "the_cat_sat"})
    assert session(at).cell == (0, 0)
    at = at.selectbox(key="cell.softmax.q").set_value("sat").run()
    at = at.selectbox(key="cell.softmax.k").set_value("cat").run()
    no_exception(at)
    assert session(at).cell == (2, 1)
    said = " ".join(texts(at.markdown))
    w = _engine(session(at)).weights[2, 1]
    assert f"{w:.6g}" in said and "sat" in said and "cat" in said
