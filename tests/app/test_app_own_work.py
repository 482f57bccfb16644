"""A hand-in is the student's own work (issue 41 §1): a solve counts only for numbers this browser reached by its own
edits since the challenge started in it. Numbers that arrived whole (a classmate's link, the board's "open", a
``playing=`` pasted onto numbers made after Stop, an imported matrix, a link edited by hand) are not handed in, and
the page says why and that editing from there is fine; the student's own reload still hands in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attention.io.board import Board
from tests.app.test_app_board import _opened, _set, _student_solves
from tests.helpers.apptest import edit_cells, goto, no_exception, paste, select, session, texts

NOT_OWN = "arrived whole"


@pytest.fixture()
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'board.sqlite3'}"


def _address(at) -> dict[str, str]:
    """The address bar of ``at``'s browser, as a reload would send it."""
    return {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}


def _share(at) -> dict[str, str]:
    """The Copy-link box's link of ``at``'s state (what a classmate is sent)."""
    from attention.ui.address import url as url_mod

    return url_mod.link(session(at))[0]


def _class_with_alice(url: str):
    """A class with the built-in set, and Alice, who solved it (her browser)."""
    code = Board(url).open_class("Lab")
    _set(url, code)
    alice = _student_solves(url, code, "Alice")
    assert any("Handed in to class" in t for t in texts(alice.sidebar.success)), texts(alice.sidebar.success)
    return code, alice


def _chen(url: str, code: str) -> dict[str, str]:
    """Chen joins the class in his own browser; his membership's address part."""
    token = Board(url).join(code, "Chen")
    return {"member": f"{code}.{token}"}


def _refused(at, url: str, code: str, name: str = "Chen") -> None:
    """``name`` has no solve on the board, and the page said why, in words that allow editing on."""
    no_exception(at)
    assert session(at).member.name == name  # in the class: only the numbers' origin refuses it
    assert name not in [s.name for s in Board(url).solves(code)]
    said = texts(at.sidebar.warning) + texts(at.info)
    assert any(NOT_OWN in t and "Editing from here is fine" in t and "Restart" in t for t in said), said
    assert not any("Handed in" in t for t in texts(at.sidebar.success))


def test_a_classmates_copy_link_does_not_hand_in(url: str) -> None:
    code, alice = _class_with_alice(url)
    chen = _opened(url, "challenges", {**_share(alice), **_chen(url, code)})
    assert any("✓ solved" in t for t in texts(chen.sidebar.success))  # it is solved, and says so
    _refused(chen, url, code)


def test_the_boards_open_link_does_not_hand_in(url: str) -> None:
    code, _ = _class_with_alice(url)
    link = Board(url).solves(code)[0].link
    query = dict(p.split("=", 1) for p in link.split("?", 1)[1].split("&"))
    from urllib.parse import unquote

    chen = _opened(url, "challenges", {**{k: unquote(v) for k, v in query.items()}, **_chen(url, code)})
    _refused(chen, url, code)


def test_playing_pasted_onto_numbers_made_after_stop_does_not_hand_in(url: str) -> None:
    """Start, Stop, reach the goal's numbers with no challenge running (as Learn the weights' "Use these weights"
    does), then paste the challenge's ``playing=`` back into the address."""
    code = Board(url).open_class("Lab")
    _set(url, code)
    at = _opened(url, "challenges", _chen(url, code))
    at = select(at, "ch.choice", "negative_output")
    at = at.button(key="ch.start.builtin").click().run()
    playing = _address(at)["playing"]
    at = at.button(key="ch.stop").click().run()
    assert session(at).challenge is None
    at = goto(at, "weights")
    cols = session(at).axis_labels("W_v", session(at).matrices["W_v"].shape)[1]
    at = edit_cells(at, "W_v", {0: {cols[0]: "-10"}})  # the goal's numbers, while nothing runs
    pasted = _opened(url, "challenges", {**_address(at), "playing": playing})
    assert session(pasted).challenge is not None
    _refused(pasted, url, code)


def test_an_imported_matrix_does_not_hand_in(url: str) -> None:
    code = Board(url).open_class("Lab")
    _set(url, code)
    at = _opened(url, "challenges", _chen(url, code))
    at = select(at, "ch.choice", "negative_output")
    at = at.button(key="ch.start.builtin").click().run()
    w_v = session(at).matrices["W_v"].copy()
    w_v[0, 0] = -10.0  # the solving numbers, as a classmate's saved file holds them
    at = paste(goto(at, "weights"), "W_v", np.array2string(w_v, separator=", ", threshold=10**6))
    assert session(at).matrices["W_v"][0, 0] == -10.0
    at = goto(at, "challenges")
    _refused(at, url, code)
    # editing from there is allowed (it is only not handed in); Restart and her own edits hand in
    at = at.button(key="ch.restart").click().run()
    cols = session(at).axis_labels("W_v", session(at).matrices["W_v"].shape)[1]
    at = edit_cells(at, "W_v", {0: {cols[0]: "-10"}})
    assert any("Handed in to class" in t for t in texts(at.sidebar.success)), texts(at.sidebar.warning)


def test_a_link_edited_by_hand_does_not_hand_in(url: str) -> None:
    """Chen's own address bar (his membership and his ``own`` mark) with the numbers changed by hand."""
    code, alice = _class_with_alice(url)
    at = _opened(url, "challenges", _chen(url, code))
    at = select(at, "ch.choice", "negative_output")
    at = at.button(key="ch.start.builtin").click().run()
    cols = session(at).axis_labels("W_v", session(at).matrices["W_v"].shape)[1]
    at = edit_cells(at, "W_v", {0: {cols[0]: "0.5"}})  # his own edit, not solving
    mine = _address(at)
    assert "own" in mine
    forged = _opened(url, "challenges", {**mine, "edits": _share(alice)["edits"]})
    _refused(forged, url, code)


def test_her_own_reload_keeps_her_work_her_own(url: str) -> None:
    """A reload (or a replica taking over) rebuilds the state from the address bar: her own edits stay hers."""
    code = Board(url).open_class("Lab")
    _set(url, code)
    at = _opened(url, "challenges", _chen(url, code))
    at = select(at, "ch.choice", "negative_output")
    at = at.button(key="ch.start.builtin").click().run()
    cols = session(at).axis_labels("W_v", session(at).matrices["W_v"].shape)[1]
    at = edit_cells(at, "W_v", {0: {cols[0]: "0.5"}})
    again = _opened(url, "challenges", _address(at))
    assert session(again).challenge is not None and session(again).arrived == ""
    again = edit_cells(again, "W_v", {0: {cols[0]: "-10"}})
    assert any("Handed in to class" in t for t in texts(again.sidebar.success)), texts(again.sidebar.warning)
    # Alice's mark does not check out for anyone else
    other = _opened(url, "challenges", {**_address(again), **_chen_two(url, code)})
    assert session(other).arrived == "a link"


def _chen_two(url: str, code: str) -> dict[str, str]:
    token = Board(url).join(code, "Dee")
    return {"member": f"{code}.{token}"}


def test_a_solved_link_says_whether_its_challenge_is_set_for_the_class(url: str) -> None:
    """The board's hand-in link names its class and says the challenge is set there; a look-alike (the same title,
    an easier goal) says it is not; a link naming no class says it is no hand-in."""
    import dataclasses

    from attention.labs import challenges as ch

    code, _ = _class_with_alice(url)
    link = Board(url).solves(code)[0].link
    assert f"class={code}" in link and len(link) < 1500
    from urllib.parse import parse_qsl, urlsplit

    teacher = _opened(url, "softmax", dict(parse_qsl(urlsplit(link).query)))
    assert any(f"This is a challenge set for class {code}." in c.value for c in teacher.sidebar.caption)
    real = ch.load_challenge("negative_output")
    easy = dataclasses.replace(real, condition=dataclasses.replace(real.condition, value=5.0))
    at = _opened(url, "challenges", {"challenge": ch.encode_link(easy)})
    at = at.button(key="ch.start.link").click().run()
    assert any("✓ solved" in t for t in texts(at.sidebar.success))
    look_alike = _opened(url, "softmax", {**_share(at), "class": code})
    said = texts(look_alike.sidebar.warning)
    assert any(f"Not a challenge set for class {code}" in t for t in said), said
    bare = _opened(url, "softmax", _share(at))
    assert any("names no class, so it is no hand-in" in c.value for c in bare.sidebar.caption)


def test_the_board_flags_two_students_who_handed_in_identical_numbers(url: str) -> None:
    code, _ = _class_with_alice(url)
    bea = _student_solves(url, code, "Bea")  # the same cell, the same -10: the very same numbers
    assert any("Handed in to class" in t for t in texts(bea.sidebar.success))
    from tests.app.test_app_board import _teacher

    teacher = _teacher(url)
    teacher.text_input(key="board.show").set_value(code)
    teacher = teacher.button[[b.label for b in teacher.button].index("Show it")].click().run()
    said = texts(teacher.warning)
    assert any("Identical numbers: Alice and Bea" in t and "A negative output" in t for t in said), said
