"""AppTest: the lab pages (Why √d_k?, Numerical stability, Challenges) and the overview's Start here.

Oracles: Var(q·k) = d_k for unit-variance entries (1 once scaled), numpy's own variance of QKᵀ for the sentence,
log(finfo.max) from the float's largest value, the challenges' solutions proved in tests/engine/test_labs_challenges.py
(checked again here against the engine's weights and outputs), and the session compared field by field before and
after anything that must change nothing."""

from __future__ import annotations

import json
import math
import re
import sys

import numpy as np
import pytest

import attention
from attention.labs import challenges as ch
from attention.labs import sqrt_dk
from attention.ui.app import tour
from attention.ui.core import session as ss
from tests.helpers.apptest import (
    PAGES,
    edit_cells,
    errors,
    goto,
    journey,
    no_exception,
    open_expander,
    select,
    session,
    shown,
    texts,
)

BUILT_INS = ch.list_challenges()


def snapshot(at) -> tuple:
    s = session(at)
    return (
        s.preset_id,
        s.tokens,
        s.options,
        s.challenge,
        {k: v.copy() for k, v in s.matrices.items()},
    )


def assert_same(a: tuple, b: tuple) -> None:
    assert a[:4] == b[:4]
    assert a[4].keys() == b[4].keys() and all(np.array_equal(a[4][k], b[4][k]) for k in a[4])


def all_text(at) -> str:
    return "\n".join(texts(at.markdown) + texts(at.caption) + errors(at) + texts(at.info) + texts(at.success))


# ------------------------------------------------------------------------------------------------ Why √d_k?


def test_sqrt_dk_numbers_are_the_model_and_the_engine() -> None:
    at = journey("why_sqrt_dk", {"preset": "the_cat_sat"})
    no_exception(at)
    at = at.select_slider(key="sqrt.n.3").set_value(64).run()
    no_exception(at)
    table = next(d.value for d in at.dataframe if "d_k" in getattr(d.value, "columns", []))
    d_k = table["d_k"].to_numpy()
    assert set(sqrt_dk.DIMS) <= set(d_k)
    # the model: Var(q·k) = d_k, and 1 after dividing by √d_k (65,536 scores per d_k: a few % of sampling error)
    np.testing.assert_allclose(table["variance, not scaled"], d_k, rtol=0.1)
    np.testing.assert_allclose(table["variance, scaled"], 1.0, rtol=0.1)
    # the largest weight grows towards 1 without the scaling and stays put with it
    assert table["largest weight, not scaled"].iloc[-1] > 0.9 > 0.2 > table["largest weight, scaled"].iloc[-1]
    c = sqrt_dk.sqrt_dk_curves(tuple(d_k), 64, 16)
    np.testing.assert_array_equal(table["entropy (bits), not scaled"], c.entropy_raw)
    text = all_text(at)
    i64 = list(d_k).index(64)
    assert f"unscaled scores have variance ≈ {table['variance, not scaled'][i64]:.1f}" in text
    assert f"averages {table['largest weight, not scaled'][i64]:.2f}" in text
    # the sentence's own numbers, from plain numpy
    m = attention.load_preset("the_cat_sat").matrices()
    S = (m["X"] @ m["W_q"]) @ (m["X"] @ m["W_k"]).T
    assert f"They have {np.var(S):.4g}, and {np.var(S / 2):.4g} once divided by √d_k" in text


def test_sqrt_dk_saturation_rows_are_the_sentences_rows() -> None:
    at = open_expander(journey("why_sqrt_dk", {"preset": "the_cat_sat"}), "sqrt.jacobian")  # folded at first
    rows = next(d.value for d in at.dataframe if "‖J‖" in getattr(d.value, "columns", []))
    w = attention.load_preset("the_cat_sat").compute().weights
    for i, row in enumerate(w):
        J = np.diag(row) - np.outer(row, row)  # the softmax Jacobian, by its formula
        assert rows["largest weight"][i] == pytest.approx(row.max(), abs=1e-15)
        assert rows["‖J‖"][i] == pytest.approx(math.sqrt((J**2).sum()), rel=1e-12)
    assert "√(n−1)/n = 0.471 when every weight is 1/3" in all_text(at)


@pytest.mark.parametrize("page", ["why_sqrt_dk", "stability"])
def test_a_2048_token_state_draws_its_own_points(page: str) -> None:
    """The largest state the dashboard holds: the per-row statistics stay O(n) per row (no n × n Jacobians)."""
    at = journey(page, {"preset": "blank", "size": "2048x16x16"})
    if page == "why_sqrt_dk":
        at = open_expander(at, "sqrt.jacobian")  # the rows' ‖J‖ are drawn once it is open
    no_exception(at)
    assert not errors(at)


# ------------------------------------------------------------------------------------------------ stability


def test_stability_shows_the_overflow_limits_derived_from_the_floats() -> None:
    at = journey("stability", {"preset": "the_cat_sat"})
    no_exception(at)
    assert "log(finfo.max) = **709.78**" in all_text(at)
    widths = next(d.value for d in at.dataframe if "exp = ∞ above" in getattr(d.value, "columns", []))
    limits = dict(zip(widths["dtype"], widths["exp = ∞ above"], strict=True))
    assert limits["float64"] == pytest.approx(math.log(sys.float_info.max), abs=1e-4)  # 709.7827
    assert limits["float32"] == pytest.approx(math.log((2 - 2**-23) * 2.0**127), abs=1e-4)  # 88.7228
    assert limits["float16"] == pytest.approx(math.log(65504.0), abs=1e-4)  # 11.0898
    variants = next(d.value for d in at.dataframe if "variant" in getattr(d.value, "columns", []))
    by = dict(zip(variants["variant"], variants["first break on the grid"], strict=True))
    assert by["row_max"] == "never" and float(by["none"]) > 709 and float(by["global_max"]) > 745.13 / 2
    here = next(d.value for d in at.dataframe if "headroom" in getattr(d.value, "columns", []))
    t = attention.load_preset("the_cat_sat").compute()
    top = float(np.max(t.scaled))
    assert here["headroom"].iloc[-1] == pytest.approx(math.log(sys.float_info.max) - top, abs=1e-4)


# ------------------------------------------------------------------------------------------------ challenges


def start(cid: str, query: dict | None = None):
    at = journey("challenges", query)
    at = select(at, "ch.choice", cid)
    return at.button(key="ch.start.builtin").click().run()


@pytest.mark.parametrize("cid", BUILT_INS)
def test_each_built_in_starts_on_its_own_preset(cid: str) -> None:
    at = start(cid)
    no_exception(at)
    c, s = ch.load_challenge(cid), session(at)
    preset = ch.challenge_preset(c)
    assert s.challenge == c and s.tokens == preset.tokens and s.options == preset.options
    for name, m in preset.matrices().items():
        np.testing.assert_array_equal(s.matrices[name], np.asarray(m).reshape(s.matrices[name].shape))
    assert any(t.startswith("Not yet") for t in texts(at.info)), texts(at.info) + texts(at.warning)
    assert not at.warning and not errors(at)


def test_a_locked_edit_is_refused_with_the_matrix_named_and_changes_nothing() -> None:
    at = goto(start("sat_looks_back"), "weights")
    locks = [c for c in texts(at.caption) if "locked by the challenge" in c]
    assert len(locks) == 2 and any(c.startswith(":material/lock: W_q") for c in locks)  # W_q and W_v; W_k is free
    before = snapshot(at)
    cols = session(at).axis_labels("W_q", session(at).matrices["W_q"].shape)[1]
    at = edit_cells(at, "W_q", {0: {cols[0]: "5"}})
    no_exception(at)
    assert any("W_q is locked in this challenge: you may edit only W_k" in e for e in errors(at)), errors(at)
    assert_same(before, snapshot(at))
    k_cols = session(at).axis_labels("W_k", session(at).matrices["W_k"].shape)[1]
    at = edit_cells(at, "W_k", {0: {k_cols[0]: "5"}})  # the editable one goes through
    assert session(at).matrices["W_k"][0, 0] == 5.0


def test_a_pasted_import_of_a_locked_matrix_is_refused_and_changes_nothing() -> None:
    at = goto(start("sat_looks_back"), "weights")
    at = open_expander(at, "import.W_q")  # the import box, opened
    before = snapshot(at)
    at.text_area(key="imp.W_q.text").input("[[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4]]")
    at = at.button(key="imp.W_q.apply").click().run()
    no_exception(at)
    assert any("W_q is locked in this challenge" in e for e in errors(at)), errors(at)
    assert not any("replaced" in m for m in texts(at.success))
    assert_same(before, snapshot(at))


def test_an_allowed_edit_that_meets_the_goal_shows_the_tick() -> None:
    at = start("negative_output")
    assert not any("✓" in t for t in texts(at.success))
    cols = session(at).axis_labels("W_v", session(at).matrices["W_v"].shape)[1]
    at = edit_cells(at, "W_v", {0: {cols[0]: "-10"}})
    no_exception(at)
    m = ch.challenge_preset(ch.load_challenge("negative_output")).matrices()
    m["W_v"][0, 0] = -10.0
    assert attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"]).output[1, 0] < 0  # the oracle
    assert any(t.startswith("✓ Goal met") for t in texts(at.success)), texts(at.success)


def test_sharpen_cat_met_by_scaling_w_q_as_proved() -> None:
    at = start("sharpen_cat")
    s = session(at)
    W = s.matrices["W_q"]
    cols = s.axis_labels("W_q", W.shape)[1]
    at = edit_cells(
        at, "W_q", {r: {cols[j]: repr(float(8 * W[r, j])) for j in range(W.shape[1])} for r in range(W.shape[0])}
    )
    row = attention.self_attention(*(session(at).matrices[k] for k in ("X", "W_q", "W_k", "W_v"))).weights[1]
    assert -math.fsum(v * math.log2(v) for v in row if v > 0) <= 0.2
    assert any(t.startswith("✓ Goal met") for t in texts(at.success))


def test_show_a_solution_meets_the_goal_and_leaves_the_locked_matrices_alone() -> None:
    at = start("sat_looks_back")
    before = snapshot(at)
    at = at.button(key="ch.solve").click().run()
    no_exception(at)
    s = session(at)
    assert any(t.startswith("✓ Goal met") for t in texts(at.success)), texts(at.success)
    assert any("A solution: W_k after" in t for t in texts(at.info))
    for name in ("X", "W_q", "W_v"):
        np.testing.assert_array_equal(s.matrices[name], before[4][name])
    assert not np.array_equal(s.matrices["W_k"], before[4]["W_k"])
    w = attention.self_attention(*(s.matrices[k] for k in ("X", "W_q", "W_k", "W_v"))).weights
    assert w[2, 0] >= 0.6  # 'sat' gives 'The' at least 0.6


def test_stop_clears_the_challenge_and_reset_restarts_it() -> None:
    at = start("sat_looks_back")
    cols = session(at).axis_labels("W_k", (4, 4))[1]
    at = edit_cells(at, "W_k", {0: {cols[0]: "5"}})
    at = at.button(key="sb.reset").click().run()
    assert session(at).challenge.id == "sat_looks_back" and session(at).matrices["W_k"][0, 0] != 5.0
    at = at.button(key="ch.stop").click().run()
    assert session(at).challenge is None
    q_cols = session(at).axis_labels("W_q", (4, 4))[1]
    at = edit_cells(goto(at, "weights"), "W_q", {0: {q_cols[0]: "5"}})
    assert session(at).matrices["W_q"][0, 0] == 5.0


def test_a_link_starts_its_challenge_and_a_tampered_one_is_refused() -> None:
    token = ch.encode_link(ch.load_challenge("spread_out"))
    at = journey("challenges", {"challenge": token})
    at = at.button(key="ch.start.link").click().run()
    assert session(at).challenge.id == "spread_out"
    body = token[3:]
    k = len(body) // 2
    bad = "c1." + body[:k] + ("A" if body[k] != "A" else "B") + body[k + 1 :]
    at = journey("challenges", {"challenge": bad})
    before = snapshot(at)
    assert any("checksum does not match" in e for e in errors(at)), errors(at)
    assert not [b for b in at.button if b.key == "ch.start.link"]
    assert_same(before, snapshot(at))
    assert session(at).challenge is None


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"{not json", "bad.json"),
        (json.dumps({**json.loads(ch.to_json(ch.load_challenge("sharpen_cat"))), "title": 7}).encode(), "'title'"),
        (ch.to_json(ch.load_challenge("sharpen_cat")).replace('"cat"', '"dog"').encode(), "'condition.row'"),
    ],
)
def test_a_malformed_upload_is_named_and_changes_nothing(data: bytes, words: str) -> None:
    at = start("sat_looks_back")
    before = snapshot(at)
    at = at.file_uploader(key="ch.upload").set_value(("bad.json", data, "application/json")).run()
    no_exception(at)
    assert any(words in e and "cannot be used" in e for e in errors(at)), errors(at)
    assert_same(before, snapshot(at))


def test_a_markdown_title_shows_as_text_everywhere() -> None:
    title = "![x](http://example.invalid/p.png)"
    data = json.loads(ch.to_json(ch.load_challenge("sat_looks_back")))
    data |= {"title": title, "goal": "**bold** [link](http://example.invalid)", "hint": ":red[hint]"}
    at = journey("challenges", {"challenge": ch.encode_link(ch.parse_challenge(json.dumps(data)))})
    at = at.button(key="ch.start.link").click().run()
    no_exception(at)
    raw = [e.value for e in (*at.markdown, *at.caption, *at.success, *at.info)]
    assert not any("](" in r and "\\]" not in r for r in raw), raw  # no Markdown link or image survives
    assert not any("**bold**" in r or ":red[" in r for r in raw)
    assert any(f"Playing: {title}" in shown(r) for r in raw)
    assert any(shown(r) == "**bold** [link](http://example.invalid)" for r in raw)


def test_the_teachers_form_makes_a_link_that_reads_back_and_names_a_bad_field() -> None:
    at = journey("challenges")
    code = [c.value for c in at.code if "challenge=c1." in c.value]
    assert code, "the prefilled form gives a link"
    made = ch.decode_link(re.search(r"challenge=(c1\.[A-Za-z0-9_-]+)", code[0]).group(1))
    assert made.title == "Make 'cat' look at 'sat'" and made.editable == ("W_q",) and made.condition.col == "sat"
    at.text_input(key="cf.row").set_value("dog")
    at = at.button[[b.label for b in at.button].index("Check it")].click().run()
    no_exception(at)
    assert any("Row: 'dog' is no token" in e for e in errors(at)), errors(at)
    assert not [c for c in at.code if "challenge=c1." in c.value]


def check_it(at):
    return at.button[[b.label for b in at.button].index("Check it")].click().run()


def form_labels(at) -> set[str]:
    return {w.label for w in (*at.text_input, *at.selectbox, *at.number_input)}


def test_the_form_shows_only_the_fields_its_condition_uses_and_follows_with_its_example() -> None:
    """argmax: no Is or Value; entropy: no Column or Array; each type brings its own example, which reads and makes
    a challenge the unedited example does not meet."""
    at = journey("challenges")
    assert {"Array", "Row", "Column", "Is", "Value"} <= form_labels(at)
    for kind, hidden, shown_ in (
        ("argmax", {"Is", "Value"}, {"Array", "Row", "Column"}),
        ("entropy", {"Column", "Array"}, {"Row", "Is", "Value"}),
    ):
        at = at.selectbox(key="cf.kind").set_value(kind).run()
        no_exception(at)
        labels = form_labels(at)
        assert not hidden & labels and shown_ <= labels, (kind, labels)
        code = [c.value for c in at.code if "challenge=c1." in c.value]
        assert code, (kind, errors(at))
        made = ch.decode_link(re.search(r"challenge=(c1\.[A-Za-z0-9_-]+)", code[0]).group(1))
        assert made.condition.kind == kind and made.hint == at.text_area(key="cf.hint").value != ""
        assert not ch.evaluate(made, ch.run(made)).met


def test_the_examples_hint_goes_when_the_teacher_writes_another_goal() -> None:
    at = journey("challenges")
    at.text_area(key="cf.goal").set_value("Make 'sat' give at least 0.7 of its attention to 'The'.")
    at.text_input(key="cf.row").set_value("sat")
    at.text_input(key="cf.col").set_value("The")
    at = check_it(at)
    no_exception(at)
    assert at.text_area(key="cf.hint").value == ""
    assert any("example's hint was taken out" in t for t in texts(at.info)), texts(at.info)
    made = ch.decode_link(re.search(r"challenge=(c1\.[A-Za-z0-9_-]+)", at.code[0].value).group(1))
    assert made.hint == "" and made.condition.row == "sat"
    at.text_area(key="cf.hint").set_value("Raise the key of 'The'.")  # the teacher's own hint stays
    at = check_it(at)
    assert at.text_area(key="cf.hint").value == "Raise the key of 'The'."


def test_the_forms_messages_name_its_fields_not_the_file_format() -> None:
    at = journey("challenges")
    at.multiselect(key="cf.edit").set_value([])
    at = check_it(at)
    no_exception(at)
    said = errors(at)
    assert any("choose at least one of the matrices the learner may edit" in e for e in said), said
    assert not any("field '" in e or "non-empty list" in e for e in said), said
    at.multiselect(key="cf.edit").set_value(["W_q"])
    at.text_input(key="cf.title").set_value(" ")
    at = check_it(at)
    assert any("Title is empty" in e for e in errors(at)), errors(at)


# ------------------------------------------------------------------------------------------------ Start here


def test_start_here_shows_can_be_dismissed_and_stays_dismissed_across_pages() -> None:
    at = journey("overview")
    assert "## Start here" in [m.value for m in at.markdown]
    stops = [m.value for m in at.markdown if m.value.startswith("**Notice**")]
    assert len(stops) == len(tour.STOPS) and all("**Try**" in s for s in stops)  # a stop for each page listed there
    assert set(tour.STOPS) <= set(PAGES.values()) - {PAGES["overview"], PAGES["class_board"]}
    at = at.button(key="tour.hide").click().run()
    assert session(at).tour_dismissed and "## Start here" not in [m.value for m in at.markdown]
    at = goto(goto(at, "softmax"), "overview")
    assert "## Start here" not in [m.value for m in at.markdown]
    at = select(at, "sb.preset", "i_am_batman")  # a new preset keeps it put away
    assert session(at).tour_dismissed
    at = at.button(key="tour.show").click().run()
    assert "## Start here" in [m.value for m in at.markdown] and not session(at).tour_dismissed


def test_a_new_session_has_no_challenge_and_the_tour_out() -> None:
    s = ss.Session("x", None, (1, 1, 1), (), {}, attention.Options())
    assert s.challenge is None and s.tour_dismissed is False


def test_the_grouped_heads_challenge_starts_with_one_key_value_head_and_a_solution_meets_head_2s_goal() -> None:
    at = start("mqa_two_views")
    no_exception(at)
    s = session(at)
    assert s.options.heads == 2 and s.options.kv_heads == 1 and s.matrices["W_k"].shape == (4, 2)
    text = all_text(at)
    assert "head 2: 'sat' attends most to 'cat'" in text and not any("✓" in t for t in texts(at.success))
    before = snapshot(at)
    at = at.button(key="ch.solve").click().run()
    no_exception(at)
    s = session(at)
    assert any(t.startswith("✓ Goal met") for t in texts(at.success)), texts(at.success)
    for name in ("X", "W_k", "W_v"):
        np.testing.assert_array_equal(s.matrices[name], before[4][name])
    w = attention.self_attention(*(s.matrices[k] for k in ("X", "W_q", "W_k", "W_v")), options=s.options).weights
    assert int(np.argmax(w[1, 2])) == 0  # head 2 of 'sat' attends most to 'The' (the oracle)


@pytest.mark.parametrize("cid", ["spread_out", "focus_every_row"])
def test_the_many_cell_hints_paste_through_the_import_box_they_name_and_the_tick_shows(cid: str) -> None:
    """The hint names the page and the import box as they are labelled; its paste (zeros for spread_out, 20 × W_k
    as four lines of four for focus_every_row), applied there, meets the goal on the Challenges page."""
    c = ch.load_challenge(cid)
    name = c.editable[0]
    at = goto(start(cid), "weights")
    label = f"Import {name}: upload a CSV or paste a numpy array"
    assert label in c.hint and label in [e.label for e in at.expander]
    W = session(at).matrices[name]
    rows = [" ".join("0" if cid == "spread_out" else f"{20 * v:.4g}" for v in r) for r in W]
    at = open_expander(at, f"import.{name}")  # the box the hint names, opened
    at.text_area(key=f"imp.{name}.text").input("\n".join(rows))
    at = at.button(key=f"imp.{name}.apply").click().run()
    no_exception(at)
    at = goto(at, "challenges")
    assert any(t.startswith("✓ Goal met") for t in texts(at.success)), texts(at.success) + texts(at.info)


def test_the_form_keeps_what_the_teacher_typed_across_a_page_and_a_condition_change() -> None:
    at = journey("challenges")
    at.text_area(key="cf.goal").set_value("My own goal.")
    at.text_input(key="cf.col").set_value("The")
    at = check_it(at)
    at = at.selectbox(key="cf.kind").set_value("entropy").run()  # the column is not drawn for an entropy
    at = goto(goto(at, "weights"), "challenges")
    no_exception(at)
    assert at.selectbox(key="cf.kind").value == "entropy" and at.text_area(key="cf.goal").value == "My own goal."
    at = at.selectbox(key="cf.kind").set_value("cell").run()
    assert at.text_input(key="cf.col").value == "The"


def test_a_challenge_on_the_transposed_convention_is_described_as_x_times_w_transposed() -> None:
    data = json.loads(ch.to_json(ch.load_challenge("sat_looks_back"))) | {"options": {"projection": "x_wt"}}
    at = journey("challenges", {"challenge": ch.encode_link(ch.parse_challenge(json.dumps(data)))})
    no_exception(at)
    said = [c for c in texts(at.caption) if "On the preset" in c]
    assert said and "projection = X·Wᵀ" in said[0] and "x_wt" not in said[0], said


@pytest.mark.parametrize(
    ("change", "verdict", "words"),
    [
        ({"cf.value": 1.5}, "impossible", "a weight is at most 1, so it can never be ≥ 1.5"),
        ({"cf.edit": ["W_v"]}, "unsolvable", "weights depends only on X, W_q, W_k, and the learner may edit only W_v"),
        ({"cf.value": 0.0}, "met", "the unedited start already meets the goal"),
    ],
)
def test_check_it_says_when_a_challenge_is_met_impossible_or_unsolvable_before_any_link(change, verdict, words) -> None:
    """The teacher's example made already met (≥ 0), impossible (a weight ≥ 1.5) or unsolvable (only W_v for a goal
    on the weights): Check it names which, and gives no link or file."""
    at = journey("challenges")
    for key, value in change.items():
        widget = at.multiselect(key=key) if key == "cf.edit" else at.number_input(key=key)
        widget.set_value(value)
    at = check_it(at)
    no_exception(at)
    said = {"met": "it is already met", "impossible": "it is impossible", "unsolvable": "it cannot be solved"}[verdict]
    assert any(said in e and words in e for e in errors(at)), errors(at)
    assert not [c for c in at.code if "challenge=c1." in c.value]
    assert not [b for b in at.button if b.key == "cf.try"]


def test_check_it_says_a_solvable_challenge_can_be_solved() -> None:
    at = check_it(journey("challenges"))
    assert any("it can be solved (a solution was found by training W_q" in t for t in texts(at.success)), texts(
        at.success
    )
    assert [c for c in at.code if "challenge=c1." in c.value]
