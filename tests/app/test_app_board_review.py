"""The class board after its review (issue 34 §1): a teacher link opens its own class only, is signed by the
board's random secret and expires; a membership found in the cookie is never silent; a closed class's page, a
pasted link's length, a bad ``before`` value and a challenge title in a column's help are all handled."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attention.io.board import LINK_HOURS, Board
from attention.labs import challenges as ch
from attention.ui.address import membership
from attention.ui.address import teacher as teacher_address
from attention.ui.core import classboard
from attention.ui.labpages import board as board_page
from tests.helpers.apptest import ROOT, goto, journey, no_exception, select, session, texts

KEY = "correct horse battery staple"


@pytest.fixture()
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'board.sqlite3'}"


def _app(url: str, page: str, query: dict[str, str] | None = None) -> AppTest:
    """A new browser session on a server with the board on, opening ``query`` on ``page``."""
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=90)
    at.secrets["board"] = {"url": url, "teacher_key": KEY}
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return goto(at.run(), page)


def _press(at: AppTest, label: str) -> AppTest:
    return at.button[[b.label for b in at.button].index(label)].click().run()


def _address(at: AppTest) -> dict[str, str]:
    return {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}


def _keyed(url: str) -> tuple[AppTest, str]:
    """The teacher types the key and opens a class."""
    at = _app(url, "class_board")
    at.text_input(key="board.key").set_value(KEY).run()
    at.text_input(key="board.title").set_value("Tuesday lab")
    at = _press(at, "Open a class")
    return at, next(t for t in texts(at.success) if t.startswith("Class ")).split()[1]


def _boxes(at: AppTest) -> set[str]:
    return {t.key for t in at.text_input}


def _kept(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    """This browser sends ``value`` as its teacher cookie (None: none)."""
    monkeypatch.setattr(classboard, "cookie", lambda name: value if name == teacher_address.COOKIE else None)


def test_the_address_alone_never_opens_the_board(url: str) -> None:
    teacher, code = _keyed(url)
    address = _address(teacher)
    assert address["class"] == code and "teacher" not in address  # the class shown, nothing that unlocks
    for query in (address, {"teacher": f"{code}.{int(time.time())}.{'0' * 32}"}):
        holder = _app(url, "class_board", query)  # whoever holds the address: a projector, a copy
        no_exception(holder)
        assert not holder.subheader and [t for t in holder.text_input if t.label == "Teacher key"]
        assert not [b for b in holder.button if b.key in ("board.close", "board.remove.yes")]


def test_the_key_is_asked_once_per_browser_and_kept_in_a_signed_cookie(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []
    monkeypatch.setattr(membership, "script", written.append)
    teacher, code = _keyed(url)
    cookie = next(w for w in written if w.startswith(teacher_address.COOKIE + "="))
    value = cookie.split(";")[0].split("=", 1)[1]
    assert KEY not in cookie and f"max-age={LINK_HOURS * 3600}" in cookie
    assert not [b for b in teacher.text_input if b.value == KEY]  # no box keeps the key
    _kept(monkeypatch, value)
    again = _app(url, "class_board", _address(teacher))  # a reload, another tab, another replica
    no_exception(again)
    assert any(f"Class {code}" in h.value for h in again.subheader)
    assert not [t for t in again.text_input if t.label == "Teacher key"]
    store = Board(url)
    for bad, words in (
        (store.teacher_pass(KEY, issued=time.time() - LINK_HOURS * 3600 - 60), "type it again"),
        (store.teacher_pass("another key"), "does not check out"),
        (value[:-1] + ("0" if value[-1] != "0" else "1"), "does not check out"),
        ("x" * 150, "does not read"),
    ):
        _kept(monkeypatch, bad)
        refused = _app(url, "class_board", _address(teacher))
        no_exception(refused)
        assert not refused.subheader and any(words in t for t in texts(refused.info)), texts(refused.info)
    _kept(monkeypatch, value)
    locked = _press(_app(url, "class_board", _address(teacher)), "Lock this page in this browser")
    assert [t for t in locked.text_input if t.label == "Teacher key"] and written[-1].startswith(
        teacher_address.COOKIE + "=;"
    )


def test_closing_a_class_ends_every_teacher_session_on_it(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []
    monkeypatch.setattr(membership, "script", written.append)
    first, code = _keyed(url)
    value = next(w for w in written if w.startswith(teacher_address.COOKIE + "=")).split(";")[0].split("=", 1)[1]
    _kept(monkeypatch, value)
    second = _app(url, "class_board", _address(first))  # the same teacher on the lab's projector
    assert any(f"Class {code}" in h.value for h in second.subheader)
    first = first.button(key="board.close").click().run()
    first = first.button(key="board.close.yes").click().run()  # asked first
    assert Board(url).is_closed(code)
    second = second.run()  # another teacher page: its session on the class ended
    no_exception(second)
    assert not any(f"Class {code}" in h.value for h in second.subheader)
    assert any(f"Class {code} was closed at" in t for t in texts(second.info)), texts(second.info)
    assert "class" not in _address(second)
    assert any(f"Class {code} · Tuesday lab · closed" in h.value for h in first.subheader)  # the page that closed it
    second.text_input(key="board.show").set_value(code)  # shown again, with the key: read only
    second = _press(second, "Show it")
    assert any(f"Class {code} · Tuesday lab · closed" in h.value for h in second.subheader)
    assert not any("closed" in t and "session" in t for t in texts(second.info))  # no stale word about it


def test_remove_asks_first_and_can_be_undone_and_nothing_is_chosen_in_advance(url: str) -> None:
    teacher, code = _keyed(url)
    store = Board(url)
    ada, _ = store.join(code, "Ada"), store.join(code, "Bob")
    challenge = ch.load_challenge("negative_output")
    store.assign(code, ch.fingerprint(challenge), challenge.title, "challenges?x=1")
    store.record(code, ada, ch.fingerprint(challenge), "challenges?x=1", '[["W_v","d2","v1","-10.0",0]]')
    teacher = teacher.run()
    assert teacher.selectbox(key="board.who").value is None and teacher.text_input(key="board.rename").value == ""
    teacher = _press(teacher, "Remove from the class…")
    assert any("Choose a student first" in t for t in texts(teacher.error)) and store.roster(code) == ["Ada", "Bob"]
    teacher.selectbox(key="board.who").set_value("Ada")
    teacher = _press(teacher, "Remove from the class…")
    assert any("Remove Ada from class" in t for t in texts(teacher.warning)) and store.roster(code) == ["Ada", "Bob"]
    teacher = teacher.button(key="board.remove.no").click().run()
    assert store.roster(code) == ["Ada", "Bob"] and any("Ada" in t and "stays" in t for t in texts(teacher.info))
    teacher.selectbox(key="board.who").set_value("Ada")
    teacher = _press(teacher, "Remove from the class…")
    teacher = teacher.button(key="board.remove.yes").click().run()
    assert store.roster(code) == ["Bob"] and store.solves(code) == []
    teacher = teacher.button(key="board.undo").click().run()
    assert store.roster(code) == ["Ada", "Bob"] and [s.name for s in store.solves(code)] == ["Ada"]
    assert store.student(code, ada)[1] == "Ada"  # her token works again
    assert store.standings(code)[1][0].cells[0].edits == '[["W_v","d2","v1","-10.0",0]]'  # as handed in
    teacher.selectbox(key="board.who").set_value("Bob")
    teacher.text_input(key="board.rename").set_value("Bobby")
    teacher = _press(teacher, "Rename")
    assert store.roster(code) == ["Ada", "Bobby"]
    assert teacher.text_input(key="board.rename").value == "" and teacher.selectbox(key="board.who").value is None
    teacher.text_input(key="board.title").set_value("Next lab")
    teacher = _press(teacher, "Open a class")
    assert not any("Bobby" in t for t in texts(teacher.success))  # nothing said of the last class stays


def test_the_board_gives_a_join_link_and_a_link_per_set_challenge(url: str) -> None:
    teacher, code = _keyed(url)
    teacher.selectbox(key="board.set.builtin").set_value("negative_output")
    teacher = _press(teacher, "Set it")
    links = [c.value for c in teacher.code if "join=" in c.value]
    assert len(links) == 2 and links[0].endswith(f"challenges?join={code}"), links
    from urllib.parse import parse_qsl, urlsplit

    student = _app(url, "challenges", dict(parse_qsl(urlsplit(links[1]).query)))
    no_exception(student)
    assert student.text_input(key="board.join.code").value == code  # the join box starts with the class code
    student.text_input(key="board.join.name").set_value("Ada")
    student = _press(student, "Join")
    student = student.button(key="ch.start.link").click().run()
    assert session(student).member.code == code
    assert student.session_state["attention_session"].challenge.title == "A negative output"


def test_a_membership_from_the_cookie_asks_not_you(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Board(url)
    code = store.open_class("Lab")
    token = store.join(code, "Ada")
    monkeypatch.setattr(classboard, "cookie_member", lambda: f"{code}.{token}")  # the previous student's cookie
    at = _app(url, "challenges")
    no_exception(at)
    assert any(f"You are Ada in class {code} — not you?" in t for t in texts(at.warning)), texts(at.warning)
    assert [b for b in at.button if b.key == "board.leave"]
    at = at.button(key="board.leave").click().run()
    assert session(at).member is None


def test_the_membership_cookie_lasts_a_lab_session_and_is_secure_over_https(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []
    monkeypatch.setattr(membership, "script", written.append)
    monkeypatch.setattr(classboard, "https", lambda: True)
    code = Board(url).open_class("Lab")
    at = _app(url, "challenges")
    at.text_input(key="board.join.code").set_value(code)
    at.text_input(key="board.join.name").set_value("Ada")
    at = _press(at, "Join")
    no_exception(at)
    assert written and f"max-age={8 * 3600}" in written[-1] and written[-1].endswith("; secure")
    assert not any("You are Ada" in t for t in texts(at.warning))  # joined here: nothing to ask
    assert "; secure" not in membership.cookie_text("X", False) and "max-age=0" in membership.cookie_text("", True)


def test_a_pasted_link_is_bounded_before_it_is_parsed(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    teacher, _ = _keyed(url)

    def no_parsing(*_a: object, **_k: object) -> None:
        raise AssertionError("parsed before its length was checked")

    monkeypatch.setattr(board_page, "urlsplit", no_parsing)
    monkeypatch.setattr(board_page, "parse_qs", no_parsing)
    teacher = teacher.run()
    # a hostile client sends more than the box's max_chars (only the browser enforces it)
    teacher.session_state["board.set.link"] = "http://x/challenges?challenge=" + "A" * 200_000
    teacher = _press(teacher, "Set it")
    no_exception(teacher)
    assert any("too long" in t for t in texts(teacher.error)), texts(teacher.error)


def test_a_challenge_title_in_the_boards_column_help_is_text(url: str) -> None:
    teacher, code = _keyed(url)
    title = "*Sharp* [click](http://evil.example)"
    challenge = ch.load_challenge("sharpen_cat")
    import dataclasses

    link = "challenges?challenge=" + ch.encode_link(dataclasses.replace(challenge, title=title))
    teacher.text_input(key="board.set.link").set_value(link)
    teacher = _press(teacher, "Set it")
    assert any("is now set" in t for t in texts(teacher.success)), texts(teacher.error)
    config = json.loads(teacher.dataframe[0].proto.columns)
    helps = [c.get("help", "") for c in config.values() if "hand-in" in c.get("label", "") or c.get("help")]
    assert any(r"\*Sharp\* \[click\]" in h for h in helps), helps


def test_a_bad_before_value_says_so() -> None:
    at = select(journey("challenges"), "ch.choice", "sharpen_cat").button(key="ch.start.builtin").click().run()
    again = journey("challenges", {**_address(at), "before": "AAAA"})
    no_exception(again)
    said = texts(again.warning) + texts(again.sidebar.warning)
    assert any("numbers from before the challenge do not read" in t for t in said), said


def test_the_teacher_address_has_one_home() -> None:
    """The class board page neither reads nor writes the address itself: attention/ui/address/teacher.py does."""
    page = Path(board_page.__file__).read_text(encoding="utf-8")
    assert "query_params" not in page
    assert "query_params" in (Path(board_page.__file__).parents[1] / "address" / "teacher.py").read_text("utf-8")
