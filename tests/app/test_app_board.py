"""The class board in the app (issue 20 §3): off unless the server names a database; a teacher page behind the
server's teacher key; students join on the Challenges page; a solve is handed in once the server has recomputed
its goal, with its link; one class never shows another's; names stay text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attention.io.board import Board
from tests.helpers.apptest import address, journey, no_exception, session, texts
from tests.helpers.board import handed_in, opened, reloaded, set_builtin, student_solves, teacher, with_board

ODD_NAME = "**Ada** <b>[x](http://e.org)</b>"


@pytest.fixture()
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'board.sqlite3'}"


def test_without_a_database_there_is_no_board() -> None:
    at = journey("class_board")
    no_exception(at)
    assert any("class board is off" in t for t in texts(at.info))
    challenges = journey("challenges")
    assert not [e for e in challenges.expander if "join your class" in e.label]


def test_the_teacher_page_needs_the_servers_key(url: str) -> None:
    at = teacher(url, "wrong")
    no_exception(at)
    assert any("not this server's teacher key" in t for t in texts(at.error))
    assert not [b for b in at.button if b.label == "Open a class"]
    at = teacher(url)
    assert [b for b in at.button if b.label == "Open a class"]


def test_a_student_joins_solves_and_the_teacher_sees_it_with_a_link_that_opens_solved(url: str) -> None:
    at = teacher(url)
    at.text_input(key="board.title").set_value("Tuesday lab")
    at = at.button[[b.label for b in at.button].index("Open a class")].click().run()
    code = next(t for t in texts(at.success) if t.startswith("Class ")).split()[1]
    at.selectbox(key="board.set.builtin").set_value("negative_output")
    at = at.button[[b.label for b in at.button].index("Set it")].click().run()
    assert any("A negative output" in t and "is now set" in t for t in texts(at.success)), texts(at.success)
    student = student_solves(url, code, ODD_NAME)
    no_exception(student)
    assert handed_in(student), texts(student.sidebar.success)
    at = at.run()  # the board redraws (every few seconds in a browser)
    board = at.dataframe[0].value
    assert list(board["student"]) == [ODD_NAME]  # the name as typed: a table cell is text, never Markdown
    assert re.fullmatch(r"✓ solved \d\d:\d\d", board["1. A negative output"][0])  # solved, and when (UTC)
    short = board["1 ↗"][0]
    assert short.startswith(f"class_board?class={code}&solve=") and len(short) < 60  # short, by id
    link = Board(url).solve_by_id(code, int(short.rsplit("=", 1)[1])).link  # what the teacher page opens
    query = dict(p.split("=", 1) for p in link.split("?", 1)[1].split("&"))
    from urllib.parse import unquote

    opened = journey("softmax", {k: unquote(v) for k, v in query.items()})
    assert any("✓ solved" in t for t in texts(opened.sidebar.success)), texts(opened.sidebar.success)
    # the store agrees, and a second class shows none of it
    store = Board(url)
    assert [s.name for s in store.solves(code)] == [ODD_NAME]
    other = store.open_class("Another class")
    at.text_input(key="board.show").set_value(other)
    at = at.button[[b.label for b in at.button].index("Show it")].click().run()
    assert at.dataframe[0].value.empty
    assert any("No challenge is set for this class yet" in t for t in texts(at.info))


def test_a_wrong_code_is_named_and_nothing_changes(url: str) -> None:
    at = with_board(journey("challenges"), url).run()
    for code, words in (("K7QX2", "class code is 6 letters"), ("ZZZZZZ", "no class with the code ZZZZZZ")):
        at.text_input(key="board.join.code").set_value(code)
        at.text_input(key="board.join.name").set_value("Bob")
        at = at.button[[b.label for b in at.button].index("Join")].click().run()
        no_exception(at)
        assert any(words in e for e in texts(at.error)), texts(at.error)
        assert session(at).member is None


def test_a_reload_keeps_the_student_in_her_class_and_her_hand_in_link_leaves_her_token_out(url: str) -> None:
    code = Board(url).open_class("Lab")
    set_builtin(url, code)
    student = student_solves(url, code, "Bea")
    assert "member" not in address(student) and "own" not in address(student)  # the address never says who
    again = reloaded(url, student)  # a reload: a new session from the address and this browser's cookie
    no_exception(again)
    assert session(again).member.name == "Bea"
    assert any("You are Bea in class" in c.value for c in again.caption)
    link = Board(url).solves(code)[0].link
    assert "member" not in link and "playing=" in link
    forged = reloaded(url, student, cookie=code + ".not-her-token")  # a cookie the board does not know: quietly
    assert session(forged).member is None
    old = reloaded(url, student, cookie=None, member=session(student).member.code + "." + session(student).member.token)
    assert session(old).member is None  # an older version's address: not honoured, and said
    assert any("An address never says who you are" in t for t in texts(old.warning)), texts(old.warning)


def test_a_built_in_rewritten_under_its_id_has_another_content_key() -> None:
    """A link carries its challenge: one with a built-in's id and title but an easier goal has its own key, so a
    class whose teacher set the built-in never takes it for the built-in."""
    import dataclasses

    from attention.labs import challenges as ch

    real = ch.load_challenge("sharpen_cat")
    assert ch.fingerprint(real) == ch.fingerprint(ch.decode_link(ch.encode_link(real)))  # a link keeps its key
    easy = dataclasses.replace(real, condition=dataclasses.replace(real.condition, value=5.0))
    assert ch.fingerprint(easy) != ch.fingerprint(real)


def test_an_unreachable_board_database_leaves_every_page_working(tmp_path: Path) -> None:
    """A database URL that cannot be opened: pages draw, the board reads as off or unreachable, no traceback."""
    bad = f"sqlite:///{tmp_path / 'no-such-folder' / 'board.sqlite3'}"
    for page in ("challenges", "class_board", "softmax"):
        at = opened(bad, page, {"member": "K7QX2M.whatever"}, cookie="K7QX2M.whatever")
        no_exception(at)
    assert any("cannot be reached" in t for t in texts(opened(bad, "class_board", {}).info))


def test_a_title_with_an_emoji_sequence_is_handed_in(url: str) -> None:
    board = Board(url)
    code = board.open_class("Lab")
    token = board.join(code, "Cy")
    board.assign(code, "x" * 100, "Family 👨\u200d👩\u200d👧 goal " + "t" * 150, "challenges?x=1")
    assert board.record(code, token, "x" * 100, "challenges?x=1")
    assert board.solves(code)[0].challenge_title.startswith("Family 👨👩👧 goal")
