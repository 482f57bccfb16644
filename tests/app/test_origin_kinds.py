"""Origin.kind: each kind of starting point (a listed preset, a blank, a preset file, a model's head) answers whether
its state travels in a link, its label, and whether the seed applies; the states the app makes carry the right kind."""

from __future__ import annotations

import pytest

from attention.io import presets as presets_mod
from attention.ui.address import url
from attention.ui.core import models, parts
from attention.ui.core import session as session_mod
from attention.ui.core.models import HeadRef


def _file_state() -> session_mod.Session:
    preset = presets_mod.load_preset("the_cat_sat", None)
    preset = presets_mod.from_state(
        preset.tokens, session_mod.matrices_2d(preset), preset.options, id="mine", title="My file", description="x"
    )
    s = session_mod.new_session("the_cat_sat")
    s.preset_id, s.loaded, s.origin = parts.FILE_KIND.id, preset, session_mod.file_origin(preset)
    return s


def _head_state(model_id: str = models.BUILTIN) -> session_mod.Session:
    return session_mod.head_session(HeadRef(model_id, (4, 17, 9, 4, 17), 1, 0))


def test_each_state_carries_its_kind() -> None:
    assert session_mod.new_session("the_cat_sat").origin.kind is parts.LISTED
    assert session_mod.new_session(session_mod.BLANK, 3, (3, 4, 4)).origin.kind is parts.BLANK_KIND
    assert _file_state().origin.kind is parts.FILE_KIND
    assert _head_state().origin.kind is parts.MODEL_KIND
    assert [parts.kind_of(i) for i in ("the_cat_sat", "blank", "file", "model")] == list(parts.KINDS)


@pytest.mark.parametrize(
    ("make", "travels", "seeded", "label"),
    [
        (lambda: session_mod.new_session("she_likes_coffee"), True, True, presets_mod.preset_label("she_likes_coffee")),
        (lambda: session_mod.new_session("blank", 3, (3, 4, 4)), True, True, "Blank n × d (random)"),
        (_file_state, False, False, "From a file: My file"),
        (_head_state, True, False, "Inside a model: "),
    ],
    ids=["listed", "blank", "file", "model"],
)
def test_a_kind_answers_travels_label_and_seed(make, travels, seeded, label) -> None:
    s = make()
    kind = s.origin.kind
    assert kind.travels(s) is travels
    assert kind.seeded is seeded and kind.offered is seeded  # a file or a head is listed only while in force
    assert kind.label(s.preset_id, s).startswith(label) and session_mod.preset_label(s.preset_id, s).startswith(label)
    assert bool(kind.keeps) is not seeded  # a kind the seed does not reach says why


def test_what_travels_follows_the_kind() -> None:
    """A file's edits travel against the default preset; a head of a model a link cannot name: nothing travels."""
    q, notes = url.link(_file_state())
    assert q["preset"] == session_mod.DEFAULT_PRESET and any("loaded from a file" in n for n in notes)
    s = _head_state()
    assert url.link(s)[0]["preset"] == "model"
    s.model_head = HeadRef("upload:abc", s.model_head.ids, 1, 0)
    assert not s.origin.kind.travels(s)
    assert url.link(s)[0] == {"preset": session_mod.DEFAULT_PRESET}
    assert session_mod.preset_label("model") == "A model's head" and session_mod.preset_label("file") == "From a file"
