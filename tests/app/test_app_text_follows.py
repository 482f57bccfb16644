"""AppTest: the words on a page follow the state: where the weights came from, which head a formula is about, ties
reported as ties (against a naive loop), GloVe's W and its nearest words, the √d_k page's reasons from the learner's
own numbers, and what a run without positions learned (measured on reorderings, not asserted)."""

from __future__ import annotations

import numpy as np

import attention
from tests.helpers.apptest import edit_cell, goto, journey, no_exception, session, shown

GLOVE = {"preset": "glove_the_cat_sat_on_the_mat"}
TIE_RTOL = 1e-9  # equal but for rounding: the tolerance attention.reading decides (float64 gives ~1e-16)


def _words(at) -> str:
    return " ".join(shown(m.value) for m in at.markdown) + " " + " ".join(shown(c.value) for c in at.caption)


# ------------------------------------------------------------------------------------------ the Reading page


def test_the_reading_page_says_random_only_for_random_weights() -> None:
    at = journey("reading", {"preset": "the_cat_sat"})  # W_q, W_k drawn from the seed
    assert "random numbers" in _words(at) and "means nothing yet" in _words(at)
    at = journey("reading", {"preset": "she_likes_coffee"})  # typed in its tutorial
    assert "means nothing yet" not in _words(at) and "typed in this preset's tutorial" in _words(at)
    at = journey("reading", GLOVE)  # W_q = W_k = I
    assert "means nothing yet" not in _words(at) and "W_q = W_k = I" in _words(at)
    at = journey("weights", {"preset": "the_cat_sat"})
    at = edit_cell(at, "W_q", 0, "q1", "2")
    at = goto(at, "reading")
    assert "means nothing yet" not in _words(at) and "your edits" in _words(at)


def test_the_reading_page_says_learned_after_the_learned_weights_are_put_in() -> None:
    at = journey("learn", {"preset": "the_cat_sat"})
    at = at.button(key="learn.train").click().run()
    at = at.button(key="learn.use").click().run()
    no_exception(at)
    at = goto(at, "reading")
    words = _words(at)
    assert "means nothing yet" not in words, words
    assert "learned on the Learn page" in words


# ------------------------------------------------------------------------------------------ the Output page


def test_with_two_heads_the_output_formula_says_it_is_head_1() -> None:
    at = journey("output", {"preset": "the_cat_sat", "heads": "2"})
    no_exception(at)
    s = session(at)
    assert s.options.heads == 2
    m = s.matrices
    t = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=s.tokens, options=s.options)
    w1 = np.asarray(t.weights).reshape(2, 3, 3)[0]  # head 1's weights
    words = _words(at)
    assert f"In head 1, row 1 = {w1[0, 0]:.3f}·V₁[The]" in words, words
    assert "head 1's columns v1–v2 of V" in words
    one = journey("output", {"preset": "the_cat_sat"})
    assert "row 1 = " in _words(one) and "head" not in _words(one).split("row 1 = ")[1][:60]


# ------------------------------------------------------------------------------------------ ties


def _naive_top(w: np.ndarray) -> list[list[int]]:
    """Per row, every key whose weight equals the row's largest up to TIE_RTOL, by plain loops."""
    out = []
    for row in w:
        big = max(row)
        out.append([j for j, v in enumerate(row) if abs(v - big) <= TIE_RTOL * abs(big)])
    return out


def test_ties_are_reported_as_ties_as_a_naive_loop_finds_them() -> None:
    t = attention.load_preset("glove_the_cat_sat_on_the_mat").compute()
    want = _naive_top(np.asarray(t.weights))
    assert want[0] == [0, 4] and want[1] == [1]  # "the" twice: the same vector, the same weight
    np.testing.assert_array_equal(t.reading.top_count, [len(k) for k in want])
    at = journey("softmax", GLOVE)
    no_exception(at)
    words = _words(at)
    assert f"**the (1)** attends most, equally, to **the (1)** and **the (5)** ({t.weights[0, 0]:.1%} each)" in words
    assert "**cat** attends most to **cat**" in words
    at = goto(at, "reading")
    table = next(d.value for d in at.dataframe if "attends most to" in getattr(d.value, "columns", []))
    for i, keys in enumerate(want):
        assert table["attends most to"].iloc[i] == ", ".join(session(at).labels[j] for j in keys)


def test_a_tie_is_found_when_weights_differ_only_by_rounding_and_not_beyond() -> None:
    from attention.reading import read

    w = np.array([[0.5, 0.5 * (1 + 1e-12), 0.0], [0.5, 0.5 * (1 + 1e-6), 0.0], [1 / 3, 1 / 3, 1 / 3]])
    w = w / w.sum(axis=1, keepdims=True)
    np.testing.assert_array_equal(read(w).top_count, [len(k) for k in _naive_top(w)])
    np.testing.assert_array_equal(read(w).top_count, [2, 1, 3])


# ------------------------------------------------------------------------------------------ GloVe on the Tokens page


def _embed(at, kind: str):
    s = session(at)
    return at.selectbox(key=f"tok.emb.{s.version}.{s.grids}").set_value(kind).run()


def _nearest_tables(at) -> list:
    return [d for d in at.dataframe if "cosine similarity" in getattr(d.value, "columns", [])]


def test_glove_with_the_presets_w_explains_the_split_and_offers_w_equal_identity() -> None:
    at = journey("tokens", {"preset": "the_cat_sat_on_the_mat"})
    assert not _nearest_tables(at), "nearest GloVe words shown for vectors that are not GloVe"
    at = _embed(at, "glove")
    no_exception(at)
    s = session(at)
    m = s.matrices
    t = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=s.tokens, options=s.options)
    w = np.asarray(t.weights).reshape(len(s.tokens), len(s.tokens))
    the = [i for i, tok in enumerate(s.tokens) if tok.lower() == "the"]
    assert len(the) == 2 and np.array_equal(w[:, the[0]], w[:, the[1]])  # the 50/50 split the page must explain
    said = " ".join(shown(i.value) for i in at.info)
    assert "“The” and “the” get the same vector" in said, said
    assert "W_q = W_k = I" in said and "GloVe: the cat sat on the mat" in said
    assert _nearest_tables(at)
    at = at.button(key=f"tok.identity.{s.version}").click().run()
    no_exception(at)
    s = session(at)
    d = s.matrices["X"].shape[1]
    np.testing.assert_array_equal(s.matrices["W_q"], np.eye(d))
    np.testing.assert_array_equal(s.matrices["W_k"], np.eye(d))
    assert any("similarity of real word vectors" in shown(i.value) for i in at.info)
    at = _embed(at, "onehot")
    assert not _nearest_tables(at)


# ------------------------------------------------------------------------------------------ the √d_k page


def test_the_sqrt_dk_page_says_why_the_scores_spread_more_than_the_model_from_her_numbers() -> None:
    at = journey("why_sqrt_dk", {"preset": "the_cat_sat"})
    no_exception(at)
    m = attention.load_preset("the_cat_sat").matrices()
    Q, K = m["X"] @ m["W_q"], m["X"] @ m["W_k"]  # naive: the preset's own Q and K
    S = Q @ K.T
    assert (Q > 0).all() and (K > 0).all()
    model = 4 * Q.var() * K.var()
    assert S.var() > 10 * model  # the puzzle: 38.4 against 1.43
    words = _words(at)
    assert "yours are all positive" in words, words
    assert "100% of Q's entries and 100% of K's are above 0" in words
    assert f"your scores average {S.mean():.3g}" in words
    assert f"= {4 * Q.mean() * K.mean():.3g}" in words
    assert f"model's {model:.3g}" in words


def test_the_gradient_through_softmax_is_folded_until_opened() -> None:
    from tests.helpers.apptest import open_expander

    at = journey("why_sqrt_dk", {"preset": "the_cat_sat"})
    titles = [c.proto.spec for c in at.get("vega_lite_chart")]
    assert not any("Gradient through softmax" in t for t in titles) and "‖J‖" not in _words(at)
    assert any("J = diag(a) − a aᵀ" in e.label for e in at.expander)
    at = open_expander(at, "sqrt.jacobian")
    no_exception(at)
    titles = [c.proto.spec for c in at.get("vega_lite_chart")]
    assert any("Gradient through softmax" in t for t in titles)
    assert "Why a saturated row learns nothing" in [h.value for h in at.header]  # h2: headings go one level at a time


# ------------------------------------------------------------------------------------------ the Learn page


def _naive_previous_accuracy(X: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, order: tuple[int, ...]) -> list[bool]:
    """For the words in ``order`` (rows of X), without positions: does each row but the first give its largest
    weight to the token one place back? Plain numpy, one row at a time."""
    Xo = X[list(order)]
    hits = []
    for i in range(1, len(order)):
        s = (Xo[i] @ W_q) @ (Xo @ W_k).T / np.sqrt(W_q.shape[1])
        w = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        hits.append(int(np.argmax(w)) == i - 1)
    return hits


def test_previous_token_without_positions_is_memorised_and_reorderings_show_it() -> None:
    import itertools

    at = journey("learn", {"preset": "the_cat_sat"})
    at = at.button(key="learn.train").click().run()
    no_exception(at)
    run = session(at).learned
    assert run.result.trace.options.positions == "none" and run.result.accuracy == 1.0  # 100% on its sentence
    m = run.result.matrices
    hits = [
        h
        for order in itertools.permutations(range(3))
        if order != (0, 1, 2)
        for h in _naive_previous_accuracy(m["X"], m["W_q"], m["W_k"], order)
    ]
    acc = sum(hits) / len(hits)
    assert acc < 0.8  # a rule about order cannot be learned from a bag of words
    words = _words(at)
    assert f"on 5 other orders of the same words (sentences it never saw) in **{acc:.0%}**" in words, words
    assert "memorised each word's vector" in words and "a new sentence breaks it" in words
