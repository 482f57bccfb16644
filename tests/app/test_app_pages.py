"""AppTest: every page renders for every preset, with no exception and the right content."""

from __future__ import annotations

import pytest

import attention
from attention.ui.app.specs import INSIDE, LABS, STEPS
from tests.helpers import ROOT
from tests.helpers.apptest import PAGES, app, badges, drawn_cells, errors, no_exception, texts

PRESET_IDS = attention.list_presets()


@pytest.mark.parametrize("preset_id", PRESET_IDS)
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders_for_every_preset(page: str, preset_id: str) -> None:
    at = app(page, {"preset": preset_id})
    no_exception(at)
    assert not errors(at), errors(at)
    assert at.title, "each page has a title"
    assert at.session_state["attention_session"].preset_id == preset_id


def test_every_page_is_one_entry_of_the_table_with_its_file_and_every_file_an_entry() -> None:
    """A page is one entry of the specs' tables (a Step, a Lab, a Lab inside a model), and the two-line file in
    pages/ that draws it by its key (pages-directory mode: every page runs alone); no file without an entry."""
    entries = [*STEPS.values(), *LABS.values(), *INSIDE.values()]
    assert len(PAGES) == len(entries) + 1 == len({entry.key for entry in entries}) + 1  # + the overview; keys unique
    files = {path.relative_to(ROOT).as_posix() for path in (ROOT / "pages").glob("*.py")}
    assert sorted(PAGES.values()) == sorted(files), "a page entry without its file, or a file without its entry"
    for entry in entries:
        code = (ROOT / entry.file).read_text(encoding="utf-8")
        assert code.split() == ["from", "attention.ui.app.frame", "import", "render", f'render("{entry.key}")'], code


@pytest.mark.parametrize("preset_id", ["she_likes_coffee", "i_am_batman", "the_cat_sat", "random_seed_42"])
def test_unedited_preset_shows_document_match(preset_id: str) -> None:
    at = app("softmax", {"preset": preset_id})
    assert any(label == "Same numbers as its tutorial" for label, _ in badges(at)), badges(at)


def test_batched_preset_says_shapes_match_and_explains_np_dot() -> None:
    at = app("tokens", {"preset": "the_cat_sat_on_the_mat"})
    assert any(label == "Same shapes as its tutorial" and "003" in hover for label, hover in badges(at)), badges(at)
    (box,) = [e for e in at.expander if "batch of one" in e.label]  # folded: details for whoever wants them
    assert "(1, 6, 1, 6)" in " ".join(m.value for m in box.markdown)


STEP_ARRAYS = {  # the array each step page's heatmap shows
    "scores": "scores",
    "scaling": "scaled",
    "softmax": "weights",
    "output": "weights",
    "overview": "weights",
}


def test_steps_have_formula_and_heatmaps() -> None:
    """Each step page's heatmap holds that step's array as attention.self_attention computes it from the session's
    matrices, cell by cell under its tokens; every step page but the overview shows its formula."""
    for page, name in STEP_ARRAYS.items():
        at = app(page, {"preset": "the_cat_sat"})
        s = at.session_state["attention_session"]
        m = s.matrices
        t = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=s.tokens, options=s.options)
        want = getattr(t, name)
        drawn = {(r["query"], r["key"]): r["value"] for rows in drawn_cells(at.get("vega_lite_chart")[0]) for r in rows}
        assert drawn == {(q, k): want[i, j] for i, q in enumerate(s.tokens) for j, k in enumerate(s.tokens)}, page
        if page != "overview":
            assert at.latex, page


def test_opens_on_first_document_preset_without_setup() -> None:
    at = app("overview")
    no_exception(at)
    s = at.session_state["attention_session"]
    assert s.preset_id == "she_likes_coffee"
    assert s.tokens == ("she", "likes", "coffee")


def test_reading_page_reads_the_on_for_003() -> None:
    at = app("reading", {"preset": "the_cat_sat_on_the_mat"})
    no_exception(at)
    table = at.dataframe[0].value
    row = table[table["token"] == "The"].iloc[0]
    assert row["attends most to"] == "on"
    assert list(table.columns)[-1] == "entropy (bits)"  # "max possible" and "reading" repeat others: the CSV has them
    import numpy as np

    w = attention.load_preset("the_cat_sat_on_the_mat").compute().weights[0]
    np.testing.assert_allclose(
        table["entropy (bits)"], [-sum(p * np.log2(p) for p in r if p > 0) for r in w], rtol=1e-12
    )
    second = [r.argsort()[-2] for r in w]
    np.testing.assert_array_equal(table["weight 2"], [r[j] for r, j in zip(w, second, strict=True)])


def test_bad_link_parameters_give_a_message_not_a_crash() -> None:
    at = app("scores", {"preset": "no_such_thing", "seed": "abc"})
    no_exception(at)
    warnings = " ".join(texts(at.warning))
    assert "no_such_thing" in warnings and "abc" in warnings
    assert at.session_state["attention_session"].preset_id == "she_likes_coffee"


@pytest.mark.parametrize("preset_id", PRESET_IDS)
def test_visiting_every_page_changes_nothing(preset_id: str) -> None:
    from attention.ui.core import session as ui_session
    from tests.helpers.apptest import goto, journey

    at = journey("overview", {"preset": preset_id})
    for page in PAGES:
        at = goto(at, page)
        no_exception(at)
        assert ui_session.is_unedited(at.session_state["attention_session"]), (preset_id, page)


def test_output_formula_names_w_o_when_it_is_in_use() -> None:
    """The Output page's formula is the one its tables compute: O = AV for one head, (AV)·W_o with W_o; with several
    heads their outputs side by side (concat), each head with the value head that serves it (grouped-query: heads 1-2
    read V_1, heads 3-4 V_2), times W_o when it is in use; heads, key/value heads and W_o from the address."""
    cases = (
        ({"wo": "0"}, "O = A V,", ("W_o", "concat")),
        ({"wo": "1"}, r"O = (A V)\, W_o", ("concat",)),
        ({"wo": "0", "heads": "2"}, r"O = \operatorname{concat}(A_{1} V_{1}, A_{2} V_{2})", ("W_o", "(A V)")),
        ({"wo": "1", "heads": "2"}, r"\operatorname{concat}(A_{1} V_{1}, A_{2} V_{2})\, W_o", ("(A V)",)),
        ({"wo": "1", "heads": "4"}, r"\operatorname{concat}(A_{1} V_{1}, \dots, A_{4} V_{4})\, W_o", ("(A V)",)),
        ({"wo": "0", "heads": "2", "kv": "1"}, r"\operatorname{concat}(A_{1} V_{1}, A_{2} V_{1})", ("V_{2}", "W_o")),
        (
            {"wo": "1", "heads": "4", "kv": "2"},
            r"\operatorname{concat}(A_{1} V_{1}, \dots, A_{4} V_{2})\, W_o",
            ("V_{4}",),
        ),
    )
    for query, says, not_says in cases:
        at = app("output", {"preset": "random_seed_42", **query})
        no_exception(at)
        s = at.session_state["attention_session"]
        assert ("W_o" in s.matrices) == (query["wo"] == "1") and s.options.heads == int(query.get("heads", "1"))
        assert s.options.kv == int(query.get("kv", query.get("heads", "1")))
        formula = at.latex[0].value
        assert says in formula and not any(x in formula for x in not_says), (query, formula)


def test_output_prose_names_head_1s_columns_of_v_and_of_the_output() -> None:
    """ "V₁ is head 1's columns v1–vW of V ... columns 1–W": W is one head's share of the output, which is the output's
    width over the heads (the oracle: attention.self_attention's output), for every head and key/value head count;
    with grouped-query heads it says how many heads share each value head."""
    for heads, kv in ((2, 2), (4, 4), (4, 2), (4, 1)):
        at = app("output", {"preset": "random_seed_42", "wo": "0", "heads": str(heads), "kv": str(kv)})
        no_exception(at)
        s = at.session_state["attention_session"]
        m = s.matrices
        t = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=s.tokens, options=s.options)
        width = t.output.shape[-1] // heads
        prose = " ".join(md.value for md in at.markdown)
        assert width >= 1 and f"columns v1–v{width} of V" in prose and f"columns 1–{width} of output" in prose
        assert (f"({heads // kv} heads share each)" in prose) == (kv < heads), (heads, kv)
