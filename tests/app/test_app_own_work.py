"""A hand-in is the student's own work (issue 41 §1): a solve counts only for numbers this browser reached by its own
edits since the challenge started in it. Numbers that arrived whole (a classmate's link, the board's "open", a
``playing=`` pasted onto numbers made after Stop, an imported matrix, a link edited by hand) are not handed in, and
the page says why and that editing from there is fine; the student's own reload still hands in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attention.io.board import Board
from tests.helpers.apptest import address, goto, paste, session, texts
from tests.helpers.board import (
    edit_first_cell,
    handed_in,
    member,
    opened,
    refused,
    reloaded,
    set_builtin,
    share,
    started,
    student_solves,
)


@pytest.fixture()
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'board.sqlite3'}"


def _class_with_alice(url: str):
    """A class with the built-in set, and Alice, who solved it (her browser)."""
    code = Board(url).open_class("Lab")
    set_builtin(url, code)
    alice = student_solves(url, code, "Alice")
    assert handed_in(alice), texts(alice.sidebar.success)
    return code, alice


def _chen_started(url: str) -> tuple[str, object]:
    """A class with the built-in set, and Chen, who joined it and started the challenge in his own browser."""
    code = Board(url).open_class("Lab")
    set_builtin(url, code)
    return code, started(opened(url, "challenges", {}, member(url, code, "Chen")))


def test_a_classmates_copy_link_does_not_hand_in(url: str) -> None:
    code, alice = _class_with_alice(url)
    chen = opened(url, "challenges", share(alice), member(url, code, "Chen"))
    assert any("✓ solved" in t for t in texts(chen.sidebar.success))  # it is solved, and says so
    refused(chen, url, code)


def test_the_boards_open_link_does_not_hand_in(url: str) -> None:
    code, _ = _class_with_alice(url)
    link = Board(url).solves(code)[0].link
    query = dict(p.split("=", 1) for p in link.split("?", 1)[1].split("&"))
    from urllib.parse import unquote

    chen = opened(url, "challenges", {k: unquote(v) for k, v in query.items()}, member(url, code, "Chen"))
    refused(chen, url, code)


def test_playing_pasted_onto_numbers_made_after_stop_does_not_hand_in(url: str) -> None:
    """Start, Stop, reach the goal's numbers with no challenge running (as Learn the weights' "Use these weights"
    does), then paste the challenge's ``playing=`` back into the address."""
    code, at = _chen_started(url)
    playing = address(at)["playing"]
    at = at.button(key="ch.stop").click().run()
    assert session(at).challenge is None
    at = edit_first_cell(goto(at, "weights"), "-10")  # the goal's numbers, while nothing runs
    pasted = reloaded(url, at, playing=playing)
    assert session(pasted).challenge is not None
    refused(pasted, url, code)


def test_an_imported_matrix_does_not_hand_in(url: str) -> None:
    code, at = _chen_started(url)
    w_v = session(at).matrices["W_v"].copy()
    w_v[0, 0] = -10.0  # the solving numbers, as a classmate's saved file holds them
    at = paste(goto(at, "weights"), "W_v", np.array2string(w_v, separator=", ", threshold=10**6))
    assert session(at).matrices["W_v"][0, 0] == -10.0
    at = goto(at, "challenges")
    refused(at, url, code)
    # editing from there is allowed (it is only not handed in); Restart and her own edits hand in
    at = edit_first_cell(at.button(key="ch.restart").click().run(), "-10")
    assert handed_in(at), texts(at.sidebar.warning)


def test_a_link_edited_by_hand_does_not_hand_in(url: str) -> None:
    """Chen's own address bar, in his own browser (his membership), with the numbers changed by hand."""
    code, alice = _class_with_alice(url)
    at = started(opened(url, "challenges", {}, member(url, code, "Chen")))
    at = edit_first_cell(at, "0.5")  # his own edit, not solving
    assert "own" not in address(at) and "member" not in address(at)  # the address never says who he is
    forged = reloaded(url, at, edits=share(alice)["edits"])
    refused(forged, url, code)


def test_her_own_reload_keeps_her_work_her_own(url: str) -> None:
    """A reload (or a replica taking over) rebuilds the state from the address bar: her own edits stay hers."""
    code, at = _chen_started(url)
    at = edit_first_cell(at, "0.5")
    again = reloaded(url, at)
    assert session(again).challenge is not None and session(again).arrived == ""
    again = edit_first_cell(again, "-10")
    assert handed_in(again), texts(again.sidebar.warning)
    # Alice's mark does not check out for anyone else
    other = reloaded(url, again, cookie=member(url, code, "Dee"))
    assert session(other).arrived == "a link"


def test_a_solved_link_says_whether_its_challenge_is_set_for_the_class(url: str) -> None:
    """The board's hand-in link names its class and says the challenge is set there; a look-alike (the same title,
    an easier goal) says it is not; a link naming no class says it is no hand-in."""
    import dataclasses

    from attention.labs import challenges as ch

    code, _ = _class_with_alice(url)
    link = Board(url).solves(code)[0].link
    assert f"class={code}" in link and len(link) < 1500
    from urllib.parse import parse_qsl, urlsplit

    teacher = opened(url, "softmax", dict(parse_qsl(urlsplit(link).query)))
    assert any(f"This is a challenge set for class {code}." in c.value for c in teacher.sidebar.caption)
    real = ch.load_challenge("negative_output")
    easy = dataclasses.replace(real, condition=dataclasses.replace(real.condition, value=5.0))
    at = opened(url, "challenges", {"challenge": ch.encode_link(easy)})
    at = at.button(key="ch.start.link").click().run()
    assert any("✓ solved" in t for t in texts(at.sidebar.success))
    look_alike = opened(url, "softmax", {**share(at), "class": code})
    said = texts(look_alike.sidebar.warning)
    assert any(f"Not a challenge set for class {code}" in t for t in said), said
    bare = opened(url, "softmax", share(at))
    assert any("names no class, so it is no hand-in" in c.value for c in bare.sidebar.caption)


def test_two_students_who_followed_the_hint_are_not_flagged(url: str) -> None:
    """Alice and Bea both typed the hint's -10 in the cell it names: the very same numbers, and no sign of copying
    (issue 48 §3); the copy check's own cases are in tests/deploy/test_board.py."""
    code, _ = _class_with_alice(url)
    bea = student_solves(url, code, "Bea")  # the same cell, the same -10: the very same numbers
    assert handed_in(bea)
    from tests.helpers.board import teacher as teachers_page

    teacher = teachers_page(url)
    teacher.text_input(key="board.show").set_value(code)
    teacher = teacher.button[[b.label for b in teacher.button].index("Show it")].click().run()
    said = texts(teacher.warning)
    assert not any("Worth a word" in t for t in said), said
    assert list(teacher.dataframe[0].value["student"]) == ["Alice", "Bea"]
