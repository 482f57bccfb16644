"""What a learner met in one evening of study, each checked against what the state really is: the cause the Tokens
page names for word order, the options a banner says were changed, the seed's range."""

from __future__ import annotations

import pytest

from attention import names
from tests.helpers.apptest import app, conventions, errors, no_exception, select, texts


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
    box = at.sidebar.number_input(key="sb.seed")
    assert f"0 to {names.MAX_SEED:,}" in box.label, box.label
    at = box.set_value(-1).run()
    assert any(f"from 0 to {names.MAX_SEED:,}" in e and "-1 was not applied" in e for e in errors(at)), errors(at)
