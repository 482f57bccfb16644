"""The session's parts: every field declared once (its part, whether it survives a preset change, travels in a link,
and which rerun depends on it), and the page's reruns, the link's cache and the reset all following a declaration,
shown with a field added by this test alone."""

from __future__ import annotations

import dataclasses

import streamlit as st

from attention.ui.app import frame
from attention.ui.core import parts
from attention.ui.core import session as session_mod
from attention.ui.state import core as state_core
from tests.helpers.apptest import head_button


def _fields() -> dict[str, parts.Decl]:
    return dict(parts.declared(session_mod.new_session("the_cat_sat")))


def test_every_field_of_the_session_is_declared_in_a_part() -> None:
    declared = _fields()
    assert set(declared) == {f.name for f in dataclasses.fields(session_mod.Session)}
    assert {d.part for d in declared.values()} <= set(parts.PARTS)


def test_the_declarations_say_what_the_hand_written_lists_said() -> None:
    """The lists the frame, the cache and the reset kept by hand before, now read from the declarations."""
    d = _fields()
    survive = {n for n, x in d.items() if x.survives}
    assert survive == {
        "pin", "digits", "cell", "tabs", "tour_dismissed", "learn", "learned", "inside", "training", "generation",
        "patching", "kvcache", "form_kind", "form_hint_cleared", "drawn", "body_drawn", "whole_run", "offered",
        "member",
    }  # fmt: skip
    travel = {n for n, x in d.items() if x.travels}
    assert travel == {
        "preset_id", "seed", "blank_shape", "tokens", "matrices", "options", "digits", "rolled", "challenge",
        "source", "model_head",
    }  # fmt: skip
    page = {n for n, x in d.items() if x.rerun == parts.PAGE}
    assert page == {
        "preset_id", "seed", "blank_shape", "tokens", "matrices", "options", "version", "pin", "digits",
        "challenge", "source", "origin",
    }  # fmt: skip
    assert {n for n, x in d.items() if x.rerun == parts.BODY} == {"epoch", "messages", "tabs", "grids"}


def _with_field(**how):
    """A Session with one more field, declared by this test only (nothing else in the app knows it)."""

    @dataclasses.dataclass
    class Wider(session_mod.Session):
        marked: int = parts.declare(parts.VIEW, default=0, **how)

    def make(preset: str = "the_cat_sat") -> Wider:
        s = session_mod.new_session(preset)
        return Wider(**{f.name: getattr(s, f.name) for f in dataclasses.fields(s)})

    return make


def test_a_new_field_declared_to_rerun_the_page_reruns_the_page_and_the_body() -> None:
    make = _with_field(rerun=parts.PAGE)
    s = make()
    page, body = frame.drawn_from(s), frame.body_drawn_from(s)
    s.marked = 3
    assert frame.drawn_from(s) != page and frame.body_drawn_from(s) != body
    make = _with_field(rerun=parts.BODY)
    s = make()
    page, body = frame.drawn_from(s), frame.body_drawn_from(s)
    s.marked = 3
    assert frame.drawn_from(s) == page and frame.body_drawn_from(s) != body
    make = _with_field()
    s = make()
    page, body = frame.drawn_from(s), frame.body_drawn_from(s)
    s.marked = 3
    assert frame.drawn_from(s) == page and frame.body_drawn_from(s) == body


def test_a_value_derived_from_the_state_is_made_again_when_a_declared_field_changes() -> None:
    for how, again in (({"travels": True}, True), ({"rerun": parts.PAGE}, True), ({}, False)):
        s = _with_field(**how)()
        made: list[int] = []
        session_mod.derived(s, "probe", made.__len__)
        s.marked = 5
        assert session_mod.derived(s, "probe", lambda: -1) == (-1 if again else 0), how


def test_a_new_preset_keeps_a_field_declared_to_survive_and_drops_one_that_does_not() -> None:
    for survives, kept in ((True, 7), (False, 0), (lambda old, new: old.marked * 2, 14)):
        make = _with_field(survives=survives)
        old = make()
        old.marked = 7
        st.session_state[session_mod.KEY] = old
        state_core.replace_session(make("she_likes_coffee"))
        new = st.session_state[session_mod.KEY]
        assert new.preset_id == "she_likes_coffee" and new.marked == kept
        assert new.epoch == old.epoch + 1 and new.version == old.version + 1


def test_every_place_a_message_is_left_at_is_declared_with_the_rerun_that_shows_it() -> None:
    """Which messages redraw the whole page comes from the places' declarations (parts.PLACES), not from the frame."""
    import re
    from pathlib import Path

    code = "".join(p.read_text(encoding="utf-8") for p in (Path(parts.__file__).parents[1]).rglob("*.py"))
    left_at = set(re.findall(r'say\(\s*f?"([a-z_]+)\.', code))
    assert "edit" in left_at and "sidebar" in left_at
    assert left_at <= {p.split(".")[0] for p in parts.PLACES}
    body = ("edit.X", "edit.W_q.last", "import.W_q", "control.mask", "cross.source", "kv.cache", "sidebar.preset_file")
    assert {parts.rerun_of(p) for p in body} == {parts.BODY}
    assert {parts.rerun_of(p) for p in ("sidebar.seed", "page.notice.head", "challenge.start")} == {parts.PAGE}
    s = session_mod.new_session("the_cat_sat")
    page, body_from = frame.drawn_from(s), frame.body_drawn_from(s)
    s.messages["edit.X"] = (s.epoch, "error", "refused", "*")
    assert frame.drawn_from(s) == page and frame.body_drawn_from(s) != body_from  # only the body is drawn again
    s.messages["sidebar.seed"] = (s.epoch, "error", "refused", "*")
    assert frame.drawn_from(s) != page  # a message beside the sidebar's seed: the whole page


def test_the_model_pages_state_is_declared_in_the_model_and_generation_parts() -> None:
    """The model pages' state is records on the Session: the "Inside a model" pages' in MODEL, the Generate page's in
    GENERATION, "Watch it learn"'s job and messages in BOOKKEEPING, the Patching page's pair and job in MODEL. Each
    survives a preset change, travels in no link by itself and reruns no step page (the model pages draw it
    themselves)."""
    d = _fields()
    assert d["generation"].part == parts.GENERATION and d["generation"].survives is True
    assert not d["generation"].travels and d["generation"].rerun is None
    assert {f.name for f in dataclasses.fields(session_mod.Generation)} == {
        "keep", "steps", "made_for", "message", "layer", "many",
    }  # fmt: skip
    assert {n for n, x in d.items() if x.part == parts.GENERATION} == {"generation"}
    assert {n for n, x in d.items() if x.part == parts.MODEL} == {"model_head", "inside", "patching", "kvcache"}
    assert d["kvcache"].survives is True and not d["kvcache"].travels and d["kvcache"].rerun is None
    assert d["patching"].survives is True and not d["patching"].travels and d["patching"].rerun is None
    assert {f.name for f in dataclasses.fields(session_mod.Patching)} == {
        "model", "clean", "corrupt", "pair", "answer", "wrong", "job", "message", "scope", "layers",
    }  # fmt: skip
    assert d["inside"].survives is True and not d["inside"].travels and d["inside"].rerun is None
    assert {f.name for f in dataclasses.fields(session_mod.Inside)} == {
        "model", "sequence", "ids", "position", "ablations", "how", "before", "change", "where", "message", "opened",
        "held", "model_message", "layer_shown", "uploads", "snapshot", "token", "readout_message", "across", "qk_head",
        "threshold", "head_shown", "zoom", "zoom_message", "find",
    }  # fmt: skip
    assert d["training"].part == parts.BOOKKEEPING and d["training"].survives is True
    assert {f.name for f in dataclasses.fields(session_mod.Training)} == {"job", "learn_message", "train_message"}
    assert not any(k.startswith("inside.") for k in dataclasses.asdict(session_mod.new_session("the_cat_sat")))


def test_the_generation_survives_a_page_switch_and_a_new_preset() -> None:
    from tests.helpers.apptest import app, goto, no_exception, session

    at = app("generate")
    at = at.button(key="inside.gen.b.next").click().run()
    no_exception(at)
    made = session(at).generation
    assert made.steps == 1
    at = goto(at, "softmax")
    at = goto(at, "generate")
    no_exception(at)
    assert session(at).generation == made


def test_a_model_page_value_survives_a_page_switch() -> None:
    """Ablate a head on Every head, switch to Generate and back: the ablation, the text and the message beside the
    head are still there, in the Session's record and on the page."""
    from tests.helpers.apptest import app, goto, no_exception, session

    at = app("every_head")
    at = head_button(at, "toggle", 0, 1).click().run()
    no_exception(at)
    made = session(at).inside
    assert made.ablations == ((0, 1, "zero"),) and made.where == (0, 1)
    at = goto(at, "generate")
    no_exception(at)
    assert session(at).inside.ablations == made.ablations  # Generate runs with the same ablations
    at = goto(at, "every_head")
    no_exception(at)
    assert session(at).inside == made
