"""The Learn page and the embeddings choice, driven through AppTest: training reaches its target, the page reports
the weights the trained matrices give, the weights go into every page and every export, bad settings change nothing."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import attention
from attention.io import codegen, presets, vectors
from attention.ui.core import session as session_mod
from attention.ui.labpages.learn import grid_of
from tests.helpers.apptest import frame_by_shape, goto, grid_edit, journey, no_exception, select, session, texts

DOCUMENTS = (
    "she_likes_coffee",
    "i_am_batman",
    "the_cat_sat",
    "the_cat_sat_on_the_mat",
    "random_seed_42",
    "glove_the_cat_sat_on_the_mat",
)
CAT = {"preset": "the_cat_sat"}


def _weights(m: dict, s) -> np.ndarray:
    """attention.self_attention on these matrices with the session's tokens and options: the independent number."""
    t = attention.self_attention(
        m["X"], m["W_q"], m["W_k"], m["W_v"], W_o=m.get("W_o"), P=m.get("P"), tokens=s.tokens, options=s.options
    )
    return t.weights


def _trained(query: dict[str, str] = CAT):
    at = journey("learn", query)
    at = at.button(key="learn.train").click().run()
    no_exception(at)
    assert session(at).learned is not None, texts(at.error)
    return at


def _number(at, name: str, value: object):
    s = session(at)
    return at.number_input(key=f"learn.{name}.{s.grids}").set_value(value).run()


@pytest.mark.parametrize("pid", DOCUMENTS)
def test_the_page_renders_for_every_document_preset(pid: str) -> None:
    at = journey("learn", {"preset": pid})
    no_exception(at)
    assert not at.error, texts(at.error)
    train = at.button(key="learn.train")
    assert (train.label, train.disabled) == ("Train", False)
    assert session(at).learned is None  # nothing is learned until it is clicked
    assert "Learn the weights" in [t.value for t in at.title]


def test_previous_token_is_learned_and_the_page_reports_the_trained_matrices_weights() -> None:
    at = _trained()
    s = session(at)
    reported = frame_by_shape(at, (3, 3))  # the page's table of the learned weights
    want = _weights(s.learned.result.matrices, s)
    np.testing.assert_allclose(reported, want, rtol=0, atol=1e-15)
    for i in range(1, 3):  # every row but the first (it has no previous token)
        assert reported[i, i - 1] >= 0.9, reported
    # the session's own matrices are untouched until "Use these weights"
    base = s.origin.base
    assert all(session_mod.identical(s.matrices[k], base[k]) for k in base)


def test_the_result_survives_a_page_switch() -> None:
    at = _trained()
    run = session(at).learned
    at = goto(goto(at, "softmax"), "learn")
    no_exception(at)
    assert session(at).learned is run
    np.testing.assert_array_equal(frame_by_shape(at, (3, 3)), run.result.weights)


def test_use_these_weights_reaches_the_softmax_page_and_reset_restores() -> None:
    at = _trained()
    learned = session(at).learned.result
    at = at.button(key="learn.use").click().run()
    no_exception(at)
    assert any("Reset to preset" in t for t in texts(at.success))
    s = session(at)
    for k in ("W_q", "W_k"):
        assert session_mod.identical(s.matrices[k], learned.matrices[k]), k
    at = goto(at, "softmax")
    no_exception(at)
    shown = frame_by_shape(at, (3, 3))  # the weights table
    np.testing.assert_allclose(shown, _weights(learned.matrices, s), rtol=0, atol=1e-15)
    assert any("differ from the unedited preset" in c for c in texts(at.caption))
    at = at.button(key="sb.reset").click().run()
    no_exception(at)
    s, base = session(at), session(at).origin.base
    assert all(session_mod.identical(s.matrices[k], base[k]) for k in base)
    # the run is kept while the tokens are the same, and from the preset again it can be used again
    at = goto(at, "learn")
    assert not at.button(key="learn.use").disabled


def test_the_exports_of_the_learned_state_reproduce_the_weights_the_page_reports() -> None:
    at = _trained()
    reported = frame_by_shape(at, (3, 3))
    at = at.button(key="learn.use").click().run()
    s = session(at)
    preset = session_mod.export_preset(s)
    again = presets.parse_preset(preset.to_json(), "learned.json")
    m = again.matrices()
    np.testing.assert_allclose(
        attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], options=again.options).weights,
        reported,
        rtol=0,
        atol=1e-15,
    )
    scope: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(codegen.python_script(preset), scope)  # noqa: S102 - our own generated script
    np.testing.assert_allclose(scope["weights"], reported, rtol=0, atol=1e-15)


def test_a_diverging_learning_rate_is_named_and_changes_nothing() -> None:
    at = journey("learn", CAT)
    before = {k: v.copy() for k, v in session(at).matrices.items()}
    at = at.selectbox(key=f"learn.optimiser.{session(at).grids}").set_value("sgd").run()
    at = _number(at, "lr", 1e6)
    assert session(at).learn.lr == 1e6
    at = at.button(key="learn.train").click().run()
    no_exception(at)
    said = " ".join(texts(at.error))
    assert "Learning rate" in said and "1e+06" in said and "Nothing was changed" in said, said
    s = session(at)
    assert s.learned is None
    for k, v in before.items():
        assert session_mod.identical(s.matrices[k], v), k


def test_a_setting_out_of_range_is_named_and_kept() -> None:
    at = journey("learn", CAT)
    for name, bad, label in (("lr", -1.0, "Learning rate"), ("steps", 0, "Steps"), ("seed", -3, "Seed")):
        kept = getattr(session(at).learn, name)
        at = _number(at, name, bad)
        no_exception(at)
        assert any(t.startswith(label) and "was not applied" in t for t in texts(at.error)), texts(at.error)
        assert getattr(session(at).learn, name) == kept
        assert at.number_input(key=f"learn.{name}.{session(at).grids}").value == kept  # the box shows it again


def test_an_empty_painted_row_is_refused_naming_the_row() -> None:
    at = journey("learn", CAT)
    at = at.selectbox(key=f"learn.target.{session(at).grids}").set_value("custom").run()
    s = session(at)
    key = f"learn.grid.3.{s.grids}"
    before = grid_of(s)  # the identity until painted
    at = grid_edit(at, key, {"edited_rows": {"1": {"cat": False}}, "added_rows": [], "deleted_rows": []})
    no_exception(at)
    said = " ".join(texts(at.error))
    assert "row 2 (“cat”)" in said and "attend nothing" in said, said
    assert grid_of(session(at)) == before
    key = f"learn.grid.3.{session(at).grids}"
    at = grid_edit(at, key, {"edited_rows": {"1": {"The": True}}, "added_rows": [], "deleted_rows": []})
    assert grid_of(session(at))[1] == (True, True, False)
    at = at.button(key="learn.train").click().run()
    no_exception(at)
    np.testing.assert_allclose(session(at).learned.result.target.pattern[1], [0.5, 0.5, 0.0])


# ---------------------------------------------------------------- embeddings (Tokens page)


def _embed(at, kind: str):
    s = session(at)
    return select(at, f"tok.emb.{s.version}.{s.grids}", kind)


def test_glove_rows_are_the_lower_cased_words_vectors_and_the_weights_resize() -> None:
    at = _embed(journey("tokens", CAT), "glove")
    no_exception(at)
    s = session(at)
    want, found = vectors.lookup(["the", "cat", "sat"], 0)
    assert found.all()
    np.testing.assert_array_equal(s.matrices["X"], want)
    assert s.matrices["W_q"].shape == (50, 4)
    np.testing.assert_array_equal(s.matrices["W_q"][:4], s.origin.base["W_q"])  # what fits is kept
    assert not at.warning


def test_a_made_up_word_is_named_and_gets_a_marked_stand_in_row() -> None:
    at = journey("tokens", {"preset": "the_cat_sat", "tokens": "the zqxjvw sat"})
    at = _embed(at, "glove")
    no_exception(at)
    said = " ".join(texts(at.warning))
    assert "“zqxjvw” (row 2)" in said, said
    marks = [d.value for d in at.dataframe if "row of X" in getattr(d.value, "columns", [])]
    assert marks and list(marks[0]["row of X"]) == ["GloVe vector", "random stand-in", "GloVe vector"]
    np.testing.assert_array_equal(session(at).matrices["X"], vectors.lookup(["the", "zqxjvw", "sat"], 0)[0])


def test_one_hot_is_the_identity_and_the_preset_brings_its_own_back() -> None:
    at = _embed(journey("tokens", CAT), "onehot")
    no_exception(at)
    s = session(at)
    np.testing.assert_array_equal(s.matrices["X"], np.eye(3))
    assert s.matrices["W_v"].shape == (3, 4)
    at = _embed(at, "preset")
    s = session(at)
    base = s.origin.base
    np.testing.assert_array_equal(s.matrices["X"], base["X"])
    for k in ("W_q", "W_k", "W_v"):  # one-hot's width 3 kept the weights' first 3 rows; the 4th is drawn anew
        assert s.matrices[k].shape == base[k].shape
        np.testing.assert_array_equal(s.matrices[k][:3], base[k][:3])


def test_nearest_words_for_cat_include_dog() -> None:
    at = _embed(journey("tokens", CAT), "glove")  # shown for GloVe vectors only
    at = select(at, "tok.nearest", "cat")
    no_exception(at)
    tables = [d.value for d in at.dataframe if "cosine similarity" in getattr(d.value, "columns", [])]
    assert tables, "no nearest-words table"
    words = list(tables[0]["word"])
    assert "dog" in words and len(words) == 8
    sims = tables[0]["cosine similarity"].to_numpy()
    assert (np.diff(sims) <= 0).all()


def test_the_glove_preset_says_attention_is_word_similarity() -> None:
    at = journey("tokens", {"preset": "glove_the_cat_sat_on_the_mat"})
    no_exception(at)
    assert any("similarity of real word vectors" in t and "W_q = W_k = I" in t for t in texts(at.info)), texts(at.info)
