"""What a learner met in one evening of study, each checked against what the state really is: the cause the Tokens
page names for word order, the options a banner says were changed, the seed's range."""

from __future__ import annotations

import numpy as np
import pytest

import attention
from attention import names
from tests.helpers.apptest import app, conventions, errors, journey, no_exception, open_views, select, session, texts


def _order_line(at) -> str:
    return next(t for t in texts(at.caption) if t.startswith("Word order check"))


@pytest.mark.parametrize(
    ("query", "cause", "not_said"),
    [
        ({"preset": "the_cat_sat", "mask": "causal"}, "positions are none, so the causal mask", "positions make"),
        ({"preset": "the_cat_sat", "pos": "sinusoidal"}, "the sinusoidal positions make order matter", "mask"),
        (
            {"preset": "the_cat_sat", "pos": "sinusoidal", "mask": "causal"},
            "the sinusoidal positions and the causal mask",
            "alone",
        ),
    ],
)
def test_the_word_order_check_names_what_makes_order_matter(query: dict, cause: str, not_said: str) -> None:
    """Positions "none" with a causal mask: reversing the sentence changes the rows, and the page says the mask
    does it (it said the positions). With positions, it names them; with both, both."""
    at = app("tokens", query)
    no_exception(at)
    line = _order_line(at)
    assert "the output rows change" in line and cause in line and not_said not in line, line


def test_no_positions_and_no_mask_is_a_bag_of_words() -> None:
    line = _order_line(app("tokens", {"preset": "the_cat_sat"}))
    assert "every output row is the same numbers" in line, line


def _banner(at) -> str:
    return next(t for t in texts(at.caption) + texts(at.markdown) if "no longer the tutorial's" in t)


def test_choosing_only_causal_names_only_the_mask() -> None:
    """The mask box makes a padding flag for every token (all off) as it opens a mask: that changes nothing, and the
    banner named it all the same ("Changed: the mask (causal), the padding tokens")."""
    at = conventions(app("softmax", {"preset": "she_likes_coffee"}))
    at = select(at, "sb.mask", "causal")
    no_exception(at)
    banner = _banner(at)
    assert "Changed: the mask (causal)" in banner and "padding" not in banner, banner


def test_padding_really_chosen_is_named() -> None:
    at = conventions(app("softmax", {"preset": "she_likes_coffee"}))
    at = select(at, "sb.mask", "causal+padding")
    labels = at.multiselect(key="sb.padding").options
    at = at.multiselect(key="sb.padding").set_value([labels[-1]]).run()
    no_exception(at)
    assert "the padding tokens" in _banner(at), _banner(at)


def test_the_seed_says_its_range_in_its_label_and_its_error() -> None:
    at = app("tokens", {"preset": "random_seed_42"})
    box = at.sidebar.text_input(key="sb.seed")
    assert f"0 to {names.MAX_SEED:,}" in box.label, box.label
    at = box.input("-1").run()
    assert any(f"from 0 to {names.MAX_SEED:,}" in e and "-1 was not applied" in e for e in errors(at)), errors(at)


BAD_SEEDS = ["12345678901", "8589934592", "12345678901234567890", "9" * 400, "1e3", "seven", "-1", "4.5"]


@pytest.mark.parametrize("typed", BAD_SEEDS)
def test_every_bad_seed_gets_the_same_clear_sentence(typed: str) -> None:
    """Issue 49 §4: a seed of 20 digits only turned the number box red (its browser refused it, the reason on
    hover); the seed is a text box now, so every bad seed reaches the server and gets the sentence an 11-digit one
    got, the seed kept and put back in the box."""
    at = app("tokens", {"preset": "random_seed_42"})
    before = session(at).seed
    at = at.sidebar.text_input(key="sb.seed").input(typed).run()
    no_exception(at)
    said = [e for e in errors(at) if e.startswith(f"the seed must be a whole number from 0 to {names.MAX_SEED:,};")]
    assert len(said) == 1 and f"was not applied and the seed stays {before:,}." in said[0], errors(at)
    assert typed[:20] in said[0].replace("\\", "") and session(at).seed == before
    assert at.sidebar.text_input(key="sb.seed").value == str(before)


def test_at_8_digits_the_editor_beside_links_to_every_column_at_once() -> None:
    """At 8 digits the inputs panel beside a result shows 3 of the 4 columns of a 4-column matrix (each column must
    fit whole): the editor says which it shows, and links to the page where all 4 are edited at once."""
    at = app("qkv", {"preset": "the_cat_sat", "digits": "8"})
    no_exception(at)
    said = " ".join(texts(at.caption))
    assert "columns 1–3 of 4" in said, said
    links = [e.proto.label for e in at.get("page_link")]
    assert "All 4 columns: Tokens & embeddings (X)" in links, links


def test_explain_a_cell_prints_the_digits_set() -> None:
    """At 8 significant digits, Explain a cell writes the score with 8 (it wrote 6), the number a loop over q and k
    written here gives."""
    at = open_views(app("scores", {"preset": "the_cat_sat", "digits": "8"}), "view.")
    no_exception(at)
    s = session(at)
    i, j = s.cell
    m = s.matrices
    q, k = m["X"][i] @ m["W_q"], m["X"][j] @ m["W_k"]  # one head, X·W: the row's query and the column's key
    score = sum(float(a) * float(b) for a, b in zip(q, k, strict=True))
    line = next(t for t in texts(at.markdown) if t.startswith("1. Score"))
    assert f"S = **{score:.8g}**" in line, (line, score)
    assert f"{score:.6g}" != f"{score:.8g}"  # the check can tell 6 digits from 8


def test_the_softmax_row_sentence_says_which_head() -> None:
    two = " ".join(texts(app("softmax", {"preset": "the_cat_sat", "heads": "2"}).markdown))
    assert "Row 1 of head 1 (of 2" in two, two[:1500]
    one = " ".join(texts(app("softmax", {"preset": "the_cat_sat"}).markdown))
    assert "Row 1: " in one and "of head" not in one


def test_the_sqrt_dk_diamonds_say_once_whose_they_are_and_how_they_differ() -> None:
    """The legend said "your sentence" in its title and "your sentence (as computed)" under it, with no difference
    explained: the title says whose, each label what it is."""
    at = app("why_sqrt_dk", {"preset": "random_seed_42"})
    no_exception(at)
    specs = " ".join(str(c.proto.spec) for c in at.get("vega_lite_chart"))
    assert "your sentence (as computed)" not in specs
    assert "scaled as your options say" in specs and "your sentence, at its d_k" in specs


def test_learn_the_weights_shows_every_head() -> None:
    """Two heads trained: a table and a heatmap for each (only head 1 of 2 was shown), each table the weights
    self_attention computes for that head from the learned matrices."""
    at = journey("learn", {"preset": "the_cat_sat", "heads": "2"})
    at = at.button(key="learn.train").click().run()
    no_exception(at)
    said = " ".join(texts(at.markdown))
    assert "head 1 of 2" in said and "head 2 of 2" in said, said[:2000]
    titles = " ".join(str(c.proto.spec) for c in at.get("vega_lite_chart"))
    assert "(head 1 of 2)" in titles and "(head 2 of 2)" in titles
    learned = session(at).learned
    s = session(at)
    m = {**s.matrices, **learned.result.matrices}
    weights = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=s.tokens, options=s.options).weights
    tables = [t.value for t in at.dataframe if list(t.value.columns) == list(t.value.index)][-2:]
    assert len(tables) == 2
    for h, table in enumerate(tables):
        shown = table.data.to_numpy(dtype=float) if hasattr(table, "data") else table.to_numpy(dtype=float)
        np.testing.assert_allclose(shown, weights[h], rtol=1e-9, atol=1e-12)
