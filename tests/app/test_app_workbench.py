"""AppTest: edit and see on one screen (inputs on every result page), and compare with a pinned state A."""

from __future__ import annotations

import numpy as np
import pytest

import attention
from attention.ui.views.compare import largest_changes
from tests.helpers.apptest import (
    choose_tab,
    conventions,
    drawn_cells,
    edit_cell,
    frame_by_shape,
    goto,
    grid_numbers,
    journey,
    matrix_grids,
    no_exception,
    open_views,
    session,
    texts,
)
from tests.helpers.drawn import rows_of, title_of

RESULT_PAGES = ["qkv", "scores", "scaling", "softmax", "output", "reading"]


def _engine(s) -> attention.Trace:
    m = s.matrices
    return attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=s.tokens, options=s.options)


@pytest.mark.parametrize("page", RESULT_PAGES)
def test_every_result_page_has_the_four_input_editors(page: str) -> None:
    at = journey(page, {"preset": "the_cat_sat"})
    no_exception(at)
    labels = [t.label for t in at.tabs]
    assert any(labels[k : k + 4] == ["X", "W_q", "W_k", "W_v"] for k in range(len(labels))), labels
    for name in ("X", "W_q", "W_k", "W_v"):  # each tab, when chosen, draws that matrix's editor (and only that one)
        if name != "X":
            at = choose_tab(at, "inputs", name)
        no_exception(at)
        grids = list(matrix_grids(at))
        assert [g.split(".")[1] for g in grids] == [name]
        shown = grid_numbers(at, grids[0])  # as displayed, to 4 decimals here
        np.testing.assert_allclose(shown, session(at).matrices[name], atol=5.01e-5)
    assert session(at).tabs["inputs"] == "W_v"
    at = goto(goto(at, "weights"), page)  # the chosen tab stays open across pages
    assert {k.split(".")[1] for k in matrix_grids(at)} == {"W_v"}


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
    # the heatmap is redrawn on the same run: its cells are the engine's new weights, under their tokens
    drawn = {(r["query"], r["key"]): r["value"] for rows in drawn_cells(at.get("vega_lite_chart")[0]) for r in rows}
    assert drawn == {(q, k): want[i, j] for i, q in enumerate(s.tokens) for j, k in enumerate(s.tokens)}
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
    """(Clicking the heatmap is the browser's part: tests/browser/test_browser_learner.py.)"""
    at = open_views(journey("softmax", {"preset": "the_cat_sat", "digits": "6"}), "view.explain_cell")  # at 6 digits
    assert session(at).cell == (0, 0)
    at = at.selectbox(key="cell.softmax.q").set_value("sat").run()
    at = at.selectbox(key="cell.softmax.k").set_value("cat").run()
    no_exception(at)
    assert session(at).cell == (2, 1)
    said = " ".join(texts(at.markdown))
    w = _engine(session(at)).weights[2, 1]
    assert f"{w:.6g}" in said and "sat" in said and "cat" in said


def test_heads_offers_only_divisors_and_two_heads_draw_two_heatmaps_with_the_engines_weights() -> None:
    at = journey("softmax", {"preset": "the_cat_sat"})
    import json

    assert conventions(at).selectbox(key="sb.heads").options == ["1", "2", "4"]  # the divisors of d_k = d_v = 4
    assert "must divide d_k = 4 and d_v = 4" in conventions(at).selectbox(key="sb.heads").help
    at = conventions(at).selectbox(key="sb.heads").set_value(2).run()
    no_exception(at)
    s = session(at)
    want = _engine(s)
    assert want.weights.shape == (2, 3, 3)
    heads = {}
    for el in at.get("vega_lite_chart"):
        spec = json.loads(el.proto.spec)
        assert "concat" not in spec  # a concat of views was drawn 0 px wide in a Streamlit column
        if title_of(el).startswith("head"):
            heads[title_of(el)] = rows_of(el)
    assert sorted(heads) == ["head 1", "head 2"]  # one chart per head
    for k in range(2):  # the chart titled "head k" carries the engine's weights of that head, to the last bit
        got = {(row["query"], row["key"]): row["value"] for row in heads[f"head {k + 1}"]}
        assert got == {
            (q, key): want.weights[k, i, j] for i, q in enumerate(s.tokens) for j, key in enumerate(s.tokens)
        }
    # one head against independent single-head runs on column blocks (the oracle)
    m = s.matrices
    for k in range(2):
        cols = slice(2 * k, 2 * k + 2)
        one = attention.self_attention(m["X"], m["W_q"][:, cols], m["W_k"][:, cols], m["W_v"][:, cols])
        np.testing.assert_allclose(want.weights[k], one.weights, rtol=1e-12)
    assert "Head 2:" in " ".join(texts(at.markdown))  # the reading, per head
    at = goto(at, "reading")
    table = at.dataframe[0].value
    assert list(table["head"].unique()) == [1, 2]


def test_heads_travel_in_the_link_and_the_preset_file() -> None:
    at = journey("scores", {"preset": "the_cat_sat", "heads": "2"})
    no_exception(at)
    assert session(at).options.heads == 2
    at = journey("scores", {"preset": "the_cat_sat", "heads": "3"})
    assert session(at).options.heads == 1
    assert "do not divide" in " ".join(texts(at.warning))
    from attention.ui.core import session as ui_session

    at = journey("scores", {"preset": "the_cat_sat", "heads": "2"})
    preset = attention.parse_preset(ui_session.export_preset(session(at)).to_json())
    assert preset.options.heads == 2
    np.testing.assert_array_equal(preset.compute().weights, _engine(session(at)).weights)


def test_resizing_d_k_so_heads_no_longer_divide_goes_back_to_one_head() -> None:
    at = journey("weights", {"preset": "the_cat_sat", "heads": "2"})
    at = at.number_input(key=f"w.dk.{session(at).version}.x_w").set_value(3).run()
    no_exception(at)
    assert session(at).options.heads == 1 and session(at).dims.d_k == 3
    # the conventions are folded away, and the note is still said in the sidebar, under their summary
    assert not any(w.key == "sb.heads" for w in at.sidebar.selectbox)
    assert any("back to one head" in w.value for w in at.sidebar.warning), texts(at.warning)
    assert "1 head · " in " ".join(c.value for c in at.sidebar.caption)


def test_the_conventions_fold_away_with_a_summary_and_open_on_demand_across_pages() -> None:
    at = journey("softmax", {"preset": "she_likes_coffee"})  # the tutorial subtracts nothing before exp
    side = " ".join(c.value for c in at.sidebar.caption)
    for part in ("1 head", "no mask", "scale 1/√d_k", "T = 1", "X·W", "subtract nothing", "4 digits"):
        assert part in side, (part, side)
    assert not [w for w in at.sidebar.selectbox if w.key in ("sb.mask", "sb.heads", "sb.softmax")]
    at = conventions(at)  # opening it builds the boxes, showing the session's values
    assert at.selectbox(key="sb.softmax").value == "none" and at.selectbox(key="sb.heads").value == 1
    at = at.selectbox(key="sb.mask").set_value("causal").run()
    assert session(at).options.mask == ("causal",)
    at = goto(at, "scores")  # still open on another page
    assert at.selectbox(key="sb.mask").value == "causal"
    box = next(e for e in at.sidebar.expander if e.proto.id.endswith("-open.conventions"))
    assert box.label == "Heads, mask and conventions"


def test_a_custom_mask_grid_greys_cells_and_gives_them_zero_weight_combined_with_causal() -> None:
    from tests.helpers.apptest import grid_edit

    at = journey("scaling", {"preset": "the_cat_sat"})
    at = conventions(at).selectbox(key="sb.mask").set_value("causal+custom").run()
    key = next(d.key for d in at.dataframe if d.key and d.key.startswith("mask.grid"))
    at = grid_edit(at, key, {"edited_rows": {2: {"cat": False}}, "added_rows": [], "deleted_rows": []})
    no_exception(at)
    s = session(at)
    t = _engine(s)
    allowed = np.tril(np.ones((3, 3), bool))
    allowed[2, 1] = False  # causal AND the unticked cell
    np.testing.assert_array_equal(t.allowed, allowed)
    assert (t.weights[~allowed] == 0).all() and np.allclose(t.weights.sum(axis=1), 1)
    assert np.isneginf(t.scaled[2, 1])
    assert "cmask" in at.query_params and at.query_params["mask"] == "causal+custom"
    # the whole state travels: a fresh session from the address has the same mask and weights
    again = journey("softmax", dict(at.query_params))
    np.testing.assert_array_equal(_engine(session(again)).weights, t.weights)
    # and the preset file and the exported script carry it
    from attention.io.codegen import python_script
    from attention.ui.core import session as ui_session

    preset = attention.parse_preset(ui_session.export_preset(s).to_json())
    assert preset.options.custom_mask == s.options.custom_mask
    np.testing.assert_array_equal(preset.compute().weights, t.weights)
    assert "custom = np.array(" in python_script(preset)


def test_a_fully_masked_row_is_explained_and_gives_zero_not_nan() -> None:
    from tests.helpers.apptest import grid_edit

    at = journey("scaling", {"preset": "the_cat_sat"})
    at = conventions(at).selectbox(key="sb.mask").set_value("custom").run()
    key = next(d.key for d in at.dataframe if d.key and d.key.startswith("mask.grid"))
    at = grid_edit(
        at, key, {"edited_rows": {0: {"The": False, "cat": False, "sat": False}}, "added_rows": [], "deleted_rows": []}
    )
    no_exception(at)
    t = _engine(session(at))
    assert (t.weights[0] == 0).all() and (t.output[0] == 0).all()
    assert "may attend no key" in " ".join(texts(at.caption))


def test_positions_on_and_off_with_shuffle_show_why_order_matters() -> None:
    at = journey("tokens", {"preset": "the_cat_sat"})
    before = _engine(session(at))
    assert "the same numbers, just moved" in " ".join(texts(at.caption))
    at = at.button(key="tok.shuffle").click().run()
    no_exception(at)
    s = session(at)
    assert s.tokens == ("sat", "The", "cat")
    order = [2, 0, 1]
    np.testing.assert_allclose(_engine(s).output, before.output[order], rtol=1e-12)  # a bag of words: rows only move
    at = at.selectbox(key="tok.positions").set_value("sinusoidal").run()
    no_exception(at)
    s = session(at)
    assert s.options.positions == "sinusoidal" and at.query_params["pos"] == "sinusoidal"
    assert "the output rows change" in " ".join(texts(at.caption))
    with_pe = _engine(s)
    np.testing.assert_array_equal(with_pe.X_in, s.matrices["X"] + attention.positions.sinusoidal(3, 4))
    at = at.selectbox(key="tok.positions").set_value("rotary").run()
    no_exception(at)
    for page in ("qkv", "scores", "softmax", "output", "reading"):
        at = goto(at, page)
        no_exception(at)
    np.testing.assert_array_equal(frame_by_shape(goto(at, "softmax"), (3, 3)), _engine(session(at)).weights)
