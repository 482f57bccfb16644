"""Sizes, seeds, shuffles, heads and links: each change keeps what it should, says what it drops, and travels in
the address, so a reload rebuilds exactly the state a person left."""

from __future__ import annotations

import numpy as np
import pytest

from attention import names, rng
from attention.ui.address import url
from attention.ui.core import session as session_mod
from attention.ui.state import reshapes
from tests.helpers.apptest import conventions, edit_cell, journey, no_exception, select, session, texts
from tests.helpers.drawn import title_of


def _rebuilt(s) -> session_mod.Session:
    """The session a reload of ``s``'s address gives (edits included), checked to restore without a notice."""
    q, notes = url.link(s)
    rebuilt, notices = url.rebuild(q)
    assert not notices, notices
    if "edits" in q:
        from attention.io import links

        base = {n: rebuilt.matrices[n] for n in names.INPUTS if n in rebuilt.matrices}
        decoded = links.decode_any(q["edits"], base)  # the changed cells, or whole matrices, against the rebuilt
        rebuilt.matrices.update({k: np.array(v, dtype=np.float64) for k, v in decoded.items()})
    return rebuilt


def _same_state(a, b) -> None:
    assert a.tokens == b.tokens and a.options == b.options
    for n in names.INPUTS:
        assert session_mod.identical(a.matrices[n], b.matrices[n]), n


# ------------------------------------------------------------------ new cells: a function of their place only


def test_a_new_cell_depends_only_on_seed_stream_row_and_column() -> None:
    big = rng.cell_uniforms(7, 2, (40, 30))
    np.testing.assert_array_equal(rng.cell_uniforms(7, 2, (5, 9)), big[:5, :9])  # any size: the same cells
    naive = np.array([[rng.cell_uniforms(7, 2, (i + 1, j + 1))[i, j] for j in range(30)] for i in range(40)])
    np.testing.assert_array_equal(naive, big)  # cell by cell, each drawn alone
    assert not np.array_equal(big, rng.cell_uniforms(8, 2, (40, 30)))  # another seed
    assert not np.array_equal(big, rng.cell_uniforms(7, 3, (40, 30)))  # another matrix


def test_new_cells_look_uniform_on_zero_one() -> None:
    u = rng.cell_uniforms(0, 0, (400, 250)).ravel()  # 100,000 cells
    assert u.min() >= 0.0 and u.max() < 1.0
    counts = np.histogram(u, bins=20, range=(0, 1))[0]
    chi2 = float(((counts - u.size / 20) ** 2 / (u.size / 20)).sum())
    assert chi2 < 43.8  # the 99.9% point of chi-squared with 19 degrees of freedom
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.02  # neighbours are not correlated


@pytest.mark.parametrize("seed", [0, 1, 2**31, 2**32 - 1])
def test_the_largest_seeds_resize_without_overflow(seed: int) -> None:
    at = journey("weights", {"preset": "random_seed_42", "seed": str(seed), "dm": "8"})
    no_exception(at)
    s = session(at)
    assert s.seed == seed and s.matrices["X"].shape[1] == 8 and not at.warning


def test_two_routes_to_one_size_give_the_same_numbers() -> None:
    direct, _ = url.rebuild({"preset": "the_cat_sat"})
    d_model = direct.dims.d_model
    reshapes.resize(direct, d_model=9)
    stepwise, _ = url.rebuild({"preset": "the_cat_sat"})
    reshapes.resize(stepwise, d_model=6)
    reshapes.resize(stepwise, d_model=12)
    reshapes.resize(stepwise, d_model=9)
    for n in names.INPUTS:
        np.testing.assert_array_equal(stepwise.matrices[n], direct.matrices[n])
    shrunk, _ = url.rebuild({"preset": "the_cat_sat"})
    reshapes.resize(shrunk, d_model=2)
    reshapes.resize(shrunk, d_model=9)  # the values past column 2 are gone; new cells are as before
    np.testing.assert_array_equal(shrunk.matrices["X"][:, d_model:], direct.matrices["X"][:, d_model:])


# ------------------------------------------------------------------ d_v is its own width


def test_a_new_d_k_leaves_w_v_and_d_v_alone_and_d_v_has_its_own_box() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    d = session(at).dims
    key = next(n.key for n in at.number_input if n.key.startswith("w.dk."))
    at = at.number_input(key=key).set_value(d.d_k + 2).run()
    no_exception(at)
    s = session(at)
    assert s.dims.d_k == d.d_k + 2 and s.dims.d_v == d.d_v
    key = next(n.key for n in at.number_input if n.key.startswith("w.dv."))
    at = at.number_input(key=key).set_value(d.d_v + 1).run()
    s = session(at)
    assert s.dims.d_v == d.d_v + 1 and s.dims.d_k == d.d_k + 2
    _same_state(s, _rebuilt(s))  # dk and dv travel in the link


def test_heads_that_no_longer_divide_go_back_to_one_with_a_message() -> None:
    at = journey("weights", {"preset": "the_cat_sat", "heads": "2"})
    assert session(at).options.heads == 2
    key = next(n.key for n in at.number_input if n.key.startswith("w.dk."))
    at = at.number_input(key=key).set_value(3).run()
    no_exception(at)
    assert session(at).options.heads == 1
    assert any("back to one head" in t for t in texts(at.warning)), texts(at.warning)


# ------------------------------------------------------------------ blank sizes, seeds


def test_a_new_blank_size_keeps_the_options_and_says_what_was_redrawn() -> None:
    at = journey("overview", {"preset": "blank", "size": "6x8x8", "temp": "2.5", "mask": "causal"})
    at = at.number_input(key="sb.blank.0").set_value(9).run()
    no_exception(at)
    s = session(at)
    assert len(s.tokens) == 9 and s.options.temperature == 2.5 and s.options.mask == ("causal",)
    assert any("redrawn" in t and "kept" in t for t in texts(at.info)), texts(at.info)


def test_the_seed_is_off_with_a_reason_where_it_can_do_nothing() -> None:
    at = journey("overview", {"preset": "she_likes_coffee"})
    assert at.text_input(key="sb.seed").disabled
    assert any("The seed is off" in c for c in texts(at.sidebar.caption))
    at = journey("overview", {"preset": "random_seed_42"})
    assert not at.text_input(key="sb.seed").disabled


# ------------------------------------------------------------------ links


@pytest.mark.parametrize(("digits", "want"), [("3", 3), ("8", 8), ("full", None)])
def test_link_digits_are_the_controls_choices(digits: str, want: int | None) -> None:
    s, notices = url.rebuild({"preset": "the_cat_sat", "digits": digits})
    assert s.digits == want and not notices


@pytest.mark.parametrize("digits", ["5", "0", "17", "x", ""])
def test_other_link_digits_are_refused_with_a_notice(digits: str) -> None:
    s, notices = url.rebuild({"preset": "the_cat_sat", "digits": digits})
    assert s.digits == session_mod.Session.digits and any("digits" in n for n in notices)


def test_padding_flags_travel_with_a_combined_mask() -> None:
    s, notices = url.rebuild({"preset": "the_cat_sat", "mask": "causal+padding", "pad": "2"})
    assert not notices and s.options.padding == (False, True, False)
    _same_state(s, _rebuilt(s))


def test_a_minus_zero_edit_travels_in_the_link() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    s0 = session(at)
    r, c = np.argwhere(s0.matrices["W_q"] != 0)[0]
    cols = s0.axis_labels("W_q", s0.matrices["W_q"].shape)[1]
    at = edit_cell(at, "W_q", 0, cols[0], "0")
    at = edit_cell(at, "W_q", 0, cols[0], "-0")
    s = session(at)
    assert np.signbit(s.matrices["W_q"][0, 0])
    assert not session_mod.is_unedited(s)
    assert np.signbit(_rebuilt(s).matrices["W_q"][0, 0])


def test_a_shuffle_of_a_large_blank_travels_as_a_roll_not_as_edits() -> None:
    at = journey("tokens", {"preset": "blank", "size": "64x16x16"})
    at = at.button(key="tok.shuffle").click().run()
    at = at.button(key="tok.shuffle").click().run()
    no_exception(at)
    s = session(at)
    q, notes = url.link(s)
    assert q.get("roll") == "2" and "edits" not in q and not notes, (q.keys(), notes)
    _same_state(s, _rebuilt(s))


def test_a_bad_roll_is_refused_with_a_notice() -> None:
    s, notices = url.rebuild({"preset": "the_cat_sat", "roll": "99"})
    assert any("shuffle" in n for n in notices)
    base, _ = url.rebuild({"preset": "the_cat_sat"})
    np.testing.assert_array_equal(s.matrices["X"], base.matrices["X"])


# ------------------------------------------------------------------ many heads are drawn a window at a time


def test_more_than_eight_heads_draw_eight_with_a_window_choice() -> None:
    at = journey("softmax", {"preset": "blank", "size": "6x32x32", "heads": "16"})
    no_exception(at)
    assert session(at).options.heads == 16
    box = at.selectbox(key="heads.window.softmax")
    drawn = [title_of(c) for c in at.get("vega_lite_chart") if title_of(c).startswith("head ")]
    assert drawn == [f"head {k}" for k in range(1, 9)]  # one chart per head, eight at a time
    at = select(at, "heads.window.softmax", box.options and 8)
    drawn = [title_of(c) for c in at.get("vega_lite_chart") if title_of(c).startswith("head ")]
    assert drawn == [f"head {k}" for k in range(9, 17)]


def test_a_bad_custom_scale_is_refused_with_the_current_value_named() -> None:
    at = journey("scaling", {"preset": "the_cat_sat", "scale": "0.5"})
    at = conventions(at).number_input(key="sb.scale_value").set_value(1e9).run()
    no_exception(at)
    assert session(at).options.scale == 0.5
    assert any("stays 0.5" in t for t in texts(at.error)), texts(at.error)
