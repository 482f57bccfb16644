"""The challenge form's examples are set on a preset derived from the words they name, and each reads there as a
challenge that can be solved (the form opens on them)."""

from __future__ import annotations

import json

import pytest

from attention.io.presets import list_presets, load_preset
from attention.labs import challenges as ch
from attention.labs.solutions import audit
from attention.ui.labpages import challenge_form as form


def test_the_example_preset_is_the_first_whose_tokens_hold_the_examples_words() -> None:
    words = {"cat", "sat"}  # the rows and columns the examples name, as a person reads them in the form
    first = next(p for p in list_presets() if words <= set(load_preset(p).tokens))
    assert form.example_preset() == first == "the_cat_sat"  # the presets before it have no 'cat' or 'sat'


@pytest.mark.parametrize("kind", sorted(form.EXAMPLES))
def test_each_example_reads_and_can_be_solved_on_it(kind: str) -> None:
    e = form.EXAMPLES[kind]
    data = form._as_json(
        e["title"],
        form.example_preset(),
        e["goal"],
        kind,
        "weights",
        e["row"],
        e["col"],
        e["op"],
        e["value"],
        ["W_q"],
        e["hint"],
        "none",
    )
    made = ch.parse_challenge(json.dumps(data), "the example")
    assert made.preset == "the_cat_sat"
    assert audit(made).verdict not in ("met", "impossible", "unsolvable"), kind
