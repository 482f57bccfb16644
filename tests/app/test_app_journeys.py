"""AppTest journeys: load a preset, edit a cell, follow it downstream; seed; reset; bad cells; page switches."""

from __future__ import annotations

import numpy as np

import attention
from tests.helpers.apptest import (
    badges,
    conventions,
    edit_cell,
    edit_cells,
    errors,
    frame_by_shape,
    goto,
    journey,
    no_exception,
    select,
    session,
)


def _engine(s) -> attention.Trace:
    m = s.matrices
    return attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], options=s.options)


def test_edit_w_q_moves_q_scores_weights_output_to_the_engines_numbers() -> None:
    at = journey("overview")
    at = select(at, "sb.preset", "the_cat_sat")
    no_exception(at)
    at = goto(at, "weights")
    at = edit_cell(at, "W_q", 0, "q1", 2.5)
    no_exception(at)
    s = session(at)
    assert s.matrices["W_q"][0, 0] == 2.5
    preset = attention.load_preset("the_cat_sat").matrices()
    expected_wq = preset["W_q"].copy()
    expected_wq[0, 0] = 2.5
    np.testing.assert_array_equal(s.matrices["W_q"], expected_wq)
    want = attention.self_attention(preset["X"], expected_wq, preset["W_k"], preset["W_v"])
    at = goto(at, "qkv")
    no_exception(at)
    np.testing.assert_allclose(frame_by_shape(at, (3, 4), 0), want.Q, rtol=0, atol=1e-12)
    assert any("differ from the unedited preset" in c.value for c in at.caption)
    at = goto(at, "scores")
    np.testing.assert_allclose(frame_by_shape(at, (3, 3)), want.scores, rtol=0, atol=1e-12)
    at = goto(at, "softmax")
    np.testing.assert_allclose(frame_by_shape(at, (3, 3)), want.weights, rtol=0, atol=1e-12)
    at = goto(at, "output")
    np.testing.assert_allclose(frame_by_shape(at, (3, 4)), want.output, rtol=0, atol=1e-12)
    assert not any(label.startswith("Same numbers") for label, _ in badges(at))
    assert any(c.value.startswith("Changed: W_q edited") for c in at.caption), [c.value for c in at.caption]


def test_edits_survive_page_switches_and_preset_load_replaces_them_cleanly() -> None:
    at = journey("tokens", {"preset": "she_likes_coffee"})
    at = edit_cell(at, "X", 1, "d2", 0.75)
    for page in ("scores", "weights", "overview", "tokens", "output"):
        at = goto(at, page)
        no_exception(at)
        assert session(at).matrices["X"][1, 1] == 0.75, page
    # Loading another preset and coming back must not re-apply the old edit.
    at = select(at, "sb.preset", "i_am_batman")
    at = select(at, "sb.preset", "she_likes_coffee")
    at = goto(at, "tokens")
    assert session(at).matrices["X"][1, 1] == 0.3


def test_seed_redraws_only_the_random_parts() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    at = edit_cell(at, "W_q", 0, "q1", 9.0)
    at = goto(at, "tokens")
    at = edit_cell(at, "X", 0, "d1", 5.0)  # a fixed part, edited: must be kept
    at = at.text_input(key="sb.seed").input("1").run()
    no_exception(at)
    s = session(at)
    fresh = attention.load_preset("the_cat_sat", seed=1).matrices()
    for name in ("W_q", "W_k", "W_v"):
        np.testing.assert_array_equal(s.matrices[name], fresh[name])
    assert s.matrices["X"][0, 0] == 5.0
    assert s.seed == 1
    assert at.query_params["seed"] == ["1"] or at.query_params["seed"] == "1"


def test_seed_control_is_disabled_for_fixed_presets() -> None:
    at = journey("weights", {"preset": "i_am_batman"})
    assert at.text_input(key="sb.seed").disabled


def test_reset_restores_the_preset() -> None:
    at = journey("weights", {"preset": "random_seed_42"})
    at = edit_cell(at, "W_k", 2, "k3", -4.0)
    at = conventions(at).selectbox(key="sb.mask").set_value("causal").run()
    assert session(at).matrices["W_k"][2, 2] == -4.0
    at = at.sidebar.button[0].click().run()
    no_exception(at)
    s = session(at)
    fresh = attention.load_preset("random_seed_42").matrices()
    for name in ("X", "W_q", "W_k", "W_v"):
        np.testing.assert_array_equal(s.matrices[name], fresh[name])
    assert s.options == attention.load_preset("random_seed_42").options
    at = goto(at, "softmax")
    assert any(label == "Same numbers as its tutorial" for label, _ in badges(at))


def test_bad_cell_shows_a_message_and_keeps_other_edits() -> None:
    at = journey("weights", {"preset": "she_likes_coffee"})
    at = edit_cells(at, "W_v", {0: {"v1": 0.123}, 2: {"v3": None}})
    no_exception(at)
    msgs = " ".join(errors(at))
    assert "W_v row 3" in msgs and "column 3 ('v3')" in msgs and "blank" in msgs
    s = session(at)
    assert s.matrices["W_v"][0, 0] == 0.123  # the good edit is kept
    assert s.matrices["W_v"][2, 2] == 0.8  # the bad cell keeps its previous value
    at = goto(at, "output")
    no_exception(at)
    np.testing.assert_allclose(frame_by_shape(at, (3, 4)), _engine(session(at)).output, rtol=0, atol=1e-12)


def test_overflowing_value_names_the_matrix_and_cell_downstream() -> None:
    at = journey("tokens", {"preset": "she_likes_coffee"})  # softmax with nothing subtracted, as document 000
    at = edit_cell(at, "X", 0, "d1", 1e3)
    no_exception(at)
    at = goto(at, "softmax")
    no_exception(at)
    msg = " ".join(errors(at))
    assert "softmax (nothing subtracted) overflows" in msg and "row 1 ('she')" in msg
    at = goto(at, "tokens")
    assert session(at).matrices["X"][0, 0] == 1e3  # the user's value is kept, not changed
    at = conventions(at).selectbox(key="sb.softmax").set_value("row_max").run()
    at = goto(at, "softmax")
    assert not errors(at)


def test_huge_value_overflowing_q_is_reported_not_crashed() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    at = edit_cell(at, "W_q", 1, "q2", 1e308)
    at = goto(at, "qkv")
    no_exception(at)
    assert any("overflows" in e for e in errors(at))


def test_sentence_edit_resizes_x_keeping_values() -> None:
    at = journey("tokens", {"preset": "the_cat_sat"})
    key = f"tok.sentence.{session(at).version}"
    at = at.text_input(key=key).set_value("The cat sat down").run()
    no_exception(at)
    s = session(at)
    assert s.tokens == ("The", "cat", "sat", "down")
    assert s.matrices["X"].shape == (4, 4)
    np.testing.assert_array_equal(s.matrices["X"][:3], attention.load_preset("the_cat_sat").matrices()["X"])
    at = goto(at, "softmax")
    assert frame_by_shape(at, (4, 4)).shape == (4, 4)


def test_empty_sentence_is_refused_with_a_message() -> None:
    at = journey("tokens", {"preset": "the_cat_sat"})
    key = f"tok.sentence.{session(at).version}"
    at = at.text_input(key=key).set_value("   ").run()
    no_exception(at)
    assert any("empty" in e for e in errors(at))
    assert session(at).tokens == ("The", "cat", "sat")


def test_causal_mask_zeroes_weights_above_the_diagonal_on_the_page() -> None:
    at = journey("softmax", {"preset": "random_seed_42"})
    at = conventions(at).selectbox(key="sb.mask").set_value("causal").run()
    w = frame_by_shape(at, (3, 3))
    assert np.all(np.triu(w, 1) == 0.0)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)


def test_blank_preset_and_url_carry_preset_and_seed() -> None:
    at = journey("scores", {"preset": "blank", "seed": "7", "size": "5x6x4"})
    no_exception(at)
    s = session(at)
    assert s.matrices["X"].shape == (5, 6) and s.matrices["W_q"].shape == (6, 4)
    np.testing.assert_array_equal(s.matrices["X"], np.random.RandomState(7).randn(5, 6))


def test_cells_take_exactly_what_was_typed_and_name_text_that_is_not_a_number() -> None:
    at = journey("weights", {"preset": "she_likes_coffee"})
    at = edit_cell(at, "W_q", 0, "q2", "1.2345678901234567e-15")
    assert session(at).matrices["W_q"][0, 1] == 1.2345678901234567e-15  # scientific notation, every digit kept
    at = edit_cell(at, "W_q", 1, "q1", "abc")
    no_exception(at)
    msg = " ".join(errors(at))
    assert "W_q row 2 ('d2'), column 1 ('q1') is 'abc', which is not a number" in msg
    assert session(at).matrices["W_q"][1, 0] == 0.1  # previous value kept
    at = edit_cell(at, "W_q", 1, "q1", "inf")
    assert "infinite" in " ".join(errors(at))


def test_seed_after_resizing_keeps_the_shapes_and_never_crashes() -> None:
    for preset_id in ("blank", "random_seed_42", "the_cat_sat"):
        at = journey("tokens", {"preset": preset_id})
        key = f"tok.sentence.{session(at).version}"
        at = at.text_input(key=key).set_value("a b c d e").run()
        at = goto(
            goto(at, "weights"), "tokens"
        )  # fresh widgets (AppTest re-sends a widget set up from session state as blank)
        at = at.number_input(key=f"tok.dmodel.{session(at).version}").set_value(6).run()
        at = at.text_input(key="sb.seed").input("5").run()
        no_exception(at)
        assert not errors(at), (preset_id, errors(at))
        s = session(at)
        assert s.matrices["X"].shape == (5, 6) and s.matrices["W_q"].shape[0] == 6, preset_id
        for page in ("weights", "softmax", "reading"):
            at = goto(at, page)
            no_exception(at)
            assert not errors(at), (preset_id, page, errors(at))


def test_switching_projection_transposes_the_weights_so_nothing_changes_downstream() -> None:
    at = journey("weights", {"preset": "blank", "size": "4x6x3"})
    before = {k: v.copy() for k, v in session(at).matrices.items()}
    q_before = _engine(session(at)).Q
    at = conventions(at).radio(key="sb.projection").set_value("x_wt").run()
    no_exception(at)
    s = session(at)
    for name in ("W_q", "W_k", "W_v"):
        np.testing.assert_array_equal(s.matrices[name], before[name].T)
    np.testing.assert_array_equal(_engine(s).Q, q_before)
    at = conventions(at).radio(key="sb.projection").set_value("x_w").run()
    for name in ("W_q", "W_k", "W_v"):
        np.testing.assert_array_equal(session(at).matrices[name], before[name])


def test_resizing_d_k_gives_each_weight_matrix_its_own_new_cells() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    at = at.number_input(key=f"w.dk.{session(at).version}.x_w").set_value(6).run()
    s = session(at)
    assert s.matrices["W_q"].shape == (4, 6)
    assert not np.array_equal(s.matrices["W_q"][:, 4:], s.matrices["W_k"][:, 4:])
    assert not np.array_equal(s.matrices["W_k"][:, 4:], s.matrices["W_v"][:, 4:])


def test_fully_masked_rows_are_read_as_attending_to_nothing() -> None:
    at = journey("softmax", {"preset": "she_likes_coffee"})
    at = conventions(at).selectbox(key="sb.mask").set_value("padding").run()
    at = conventions(at).multiselect(key="sb.padding").set_value(["she", "likes", "coffee"]).run()
    no_exception(at)
    text = " ".join(m.value for m in at.markdown)
    assert "attends to nothing" in text and "attends most to" not in text
    at = goto(at, "reading")
    assert list(at.dataframe[0].value["attends most to"]) == ["(fully masked)"] * 3
