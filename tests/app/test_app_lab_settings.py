"""The server's lab settings: "Show a solution" and the challenge form hidden from students by the secrets file or
the environment, and nothing a student sends (a link, a forged click) brings them back."""

from __future__ import annotations

import pytest

from attention.labs import challenges as ch
from attention.ui.core import settings
from tests.helpers.apptest import journey, no_exception, select, session


def _start(at, cid: str = "sat_looks_back"):
    at = select(at, "ch.choice", cid)
    return at.button(key="ch.start.builtin").click().run()


def _keys(at) -> set[str]:
    return {w.key for w in at.main if getattr(w, "key", None)} | {b.key for b in at.button}


def test_by_default_students_see_the_solution_and_the_form() -> None:
    at = _start(journey("challenges"))
    no_exception(at)
    assert "ch.solve" in _keys(at)
    assert any(t.key == "cf.title" for t in at.text_input)


@pytest.mark.parametrize("how", ["secrets", "environment"])
def test_hidden_by_the_server_and_no_link_or_forged_click_brings_them_back(how: str, monkeypatch) -> None:
    at = journey("challenges")
    if how == "secrets":
        at.secrets["lab"] = {"hide_solutions": True, "hide_authoring": "yes"}
    else:
        monkeypatch.setenv("ATTENTION_HIDE_SOLUTIONS", "1")
        monkeypatch.setenv("ATTENTION_HIDE_AUTHORING", "true")
    at = _start(at.run())
    no_exception(at)
    assert session(at).challenge.id == "sat_looks_back"
    assert "ch.solve" not in _keys(at) and not [t for t in at.text_input if (t.key or "").startswith("cf.")]
    # a link that carries a challenge, and address values naming the settings, change nothing
    token = ch.encode_link(ch.load_challenge("spread_out"))
    at.query_params.update({"challenge": token, "hide_solutions": "0", "hide_authoring": "false"})
    at = at.run()
    assert "ch.solve" not in _keys(at) and not [t for t in at.text_input if (t.key or "").startswith("cf.")]
    if how == "secrets":
        return  # AppTest's secrets exist only inside its runs; the writer is called directly below
    # the one writer refuses a solution even if its callback were reached (a forged click): it says so and
    # never trains (the solver is not called)
    from attention.ui.state import challenges as writer

    said: list[str] = []
    monkeypatch.setattr(writer, "get", lambda: session(at))
    monkeypatch.setattr(writer, "say", lambda place, kind, text: said.append(text))
    monkeypatch.setattr(writer, "solve", lambda c: pytest.fail("the solver ran"))
    writer.show_solution()
    assert said == ["Solutions are turned off on this server."]


@pytest.mark.parametrize(("value", "hidden"), [("1", True), ("no", False), ("maybe", True), ("", False)])
def test_a_setting_that_does_not_read_hides(value: str, hidden: bool, monkeypatch) -> None:
    monkeypatch.setenv("ATTENTION_HIDE_SOLUTIONS", value)
    assert settings.server_settings().hide_solutions is hidden
