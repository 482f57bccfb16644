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
from attention.ui.core import classboard
from attention.ui.labpages import board as board_page
from tests.helpers.apptest import ROOT, goto, journey, no_exception, select, texts

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


def test_a_teacher_link_opens_its_own_class_and_nothing_else(url: str) -> None:
    teacher, code = _keyed(url)
    other = Board(url).open_class("Someone else's class")
    signed = _address(teacher)["teacher"]
    assert signed.split(".")[0] == code and len(signed.split(".")) == 3  # the code, its issue time, the signature
    holder = _app(url, "class_board", {"teacher": signed})  # whoever holds the address: a reload, or a copy
    no_exception(holder)
    assert any(f"Class {code}" in h.value for h in holder.subheader)
    assert not {"board.title", "board.show"} & _boxes(holder)  # no new class, no other class shown
    assert any(f"opens class {code} only" in c.value for c in holder.caption)
    assert [e for e in holder.expander if "Another class? Type the teacher key" in e.label]
    assert _address(holder)["teacher"] == signed  # never rewritten by a link session
    assert classboard.TEACHER not in holder.session_state
    typed = holder.text_input(key="board.key").set_value(KEY).run()  # the key typed: every class again
    assert {"board.title", "board.show"} <= _boxes(typed)
    typed.text_input(key="board.show").set_value(other)
    typed = _press(typed, "Show it")
    assert any(f"Class {other}" in h.value for h in typed.subheader)
    assert _address(typed)["teacher"].split(".")[0] == other


def test_a_teacher_link_signed_with_the_key_or_too_old_is_refused(url: str) -> None:
    _, code = _keyed(url)
    store = Board(url)
    stale = store.teacher_link(code, issued=time.time() - LINK_HOURS * 3600 - 60)
    old = _app(url, "class_board", {"teacher": stale})
    no_exception(old)
    assert not old.subheader and any(f"older than {LINK_HOURS} hours" in t for t in texts(old.warning))
    assert [t for t in old.text_input if t.label == "Teacher key"]
    import hashlib
    import hmac

    by_key = hmac.new(KEY.encode(), f"teacher:{code}".encode(), hashlib.sha256).hexdigest()[:32]  # the old scheme
    for forged in (f"{code}.{by_key}", f"{code}.{int(time.time())}.{by_key}"):
        refused = _app(url, "class_board", {"teacher": forged})
        assert not refused.subheader and classboard.LINK_CLASS not in refused.session_state


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
    assert "board.member" not in at.session_state


def test_the_membership_cookie_lasts_a_lab_session_and_is_secure_over_https(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []
    monkeypatch.setattr(membership, "_script", written.append)
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
