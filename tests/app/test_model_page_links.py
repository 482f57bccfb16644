"""Literal model-page addresses (the "Inside a model" pages' model, text and ablations, and a model's head on the step
pages), as the address bar held them before the model pages' state joined the declared state: each still opens the
same state, and the address bar is written back byte for byte (the order of the parameters included)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from attention.model import builtin
from tests.helpers.apptest import app, no_exception, texts

ENGINE = builtin("induction")

# (page, the address bar's parameters in order), each made by the code of the time: on Every head, ablating layer 2 ·
# head 1 (zero) then layer 1 · head 2 (mean); then on Generate and First token; then the second ready-made text cut
# to its first 5 words; then that text's layer 2 · head 2 opened on the step pages (Scores)
OLD_ADDRESSES = [
    ("every_head", (("preset", "she_likes_coffee"), ("ablate", "1.2m-2.1z"))),
    ("generate", (("preset", "she_likes_coffee"), ("ablate", "1.2m-2.1z"))),
    ("first_token", (("preset", "she_likes_coffee"), ("ablate", "1.2m-2.1z"))),
    (
        "every_head",
        (
            ("preset", "she_likes_coffee"),
            ("ablate", "1.2m-2.1z"),
            ("ids", "2.14.27.26.5.30.18.4.28.6.19.12.2.14.27.26.5.30.18.4.28.6.19.12"),
        ),
    ),
    ("every_head", (("preset", "she_likes_coffee"), ("ablate", "1.2m-2.1z"), ("ids", "2.14.27.26.5"))),
    (
        "scores",
        (
            ("preset", "model"),
            ("ablate", "1.2m-2.1z"),
            ("ids", "2.14.27.26.5"),
            ("mh", "induction~2.2~2.14.27.26.5~1.2m-2.1z"),
        ),
    ),
]


def _address(at) -> tuple[tuple[str, str], ...]:
    return tuple((k, v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items())


@pytest.mark.parametrize("page,pairs", OLD_ADDRESSES, ids=lambda p: p if isinstance(p, str) else "")
def test_an_old_model_page_address_opens_and_is_written_back_byte_for_byte(page, pairs) -> None:
    at = app(page, dict(pairs))
    no_exception(at)
    assert not [t for t in texts(at.warning) if "link" in t.lower()], texts(at.warning)
    assert urlencode(_address(at)) == urlencode(pairs)


def test_an_old_model_page_address_shows_what_it_names() -> None:
    """What the address meant, read from the address itself: the ablations named on Every head, its text's words."""
    at = app("every_head", dict(OLD_ADDRESSES[4][1]))
    no_exception(at)
    ablated = [t.replace("**", "") for t in texts(at.markdown) if t.startswith("**Ablated:**")]
    assert ablated == ["Ablated: layer 1 · head 2 (mean), layer 2 · head 1 (zero)"]
    words = ENGINE.decode([2, 14, 27, 26, 5])
    assert [t.value for t in at.text_input if t.value == words], [t.value for t in at.text_input]
