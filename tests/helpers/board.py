"""The class board's journeys under AppTest, shared by the board's tests (tests/app, tests/deploy): a server with the
board on, a new browser session opening an address (a reload, a link, another replica), the teacher's page, a
challenge set for a class, a student who joins and solves it, and what a refused hand-in says."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from unittest import mock

from streamlit.testing.v1 import AppTest

from attention.io.board import Board
from tests.helpers.apptest import ROOT, address, edit_cells, goto, journey, no_exception, select, session, texts

KEY = "correct horse battery staple"  # the server's teacher key
CHALLENGE = "negative_output"  # the built-in challenge the board's tests set and solve
HANDED_IN = "Handed in to class"
NOT_OWN = "arrived whole"


def with_board(at: AppTest, url: str) -> AppTest:
    """``at`` on a server whose board is the database at ``url``, with the teacher key :data:`KEY`."""
    at.secrets["board"] = {"url": url, "teacher_key": KEY}
    return at


@contextlib.contextmanager
def kept_cookie(value: str | None) -> Iterator[None]:
    """The browser sends ``value`` as its membership cookie (None: no cookie) while the block runs (AppTest has no
    request, so no cookies: the page reads them through classboard.cookie)."""
    from attention.ui.core import classboard

    real = classboard.cookie
    with mock.patch.object(classboard, "cookie", lambda name: value if name == classboard.COOKIE else real(name)):
        yield


def opened(url: str, page: str, query: dict[str, str], cookie: str | None = None) -> AppTest:
    """A new browser session opening ``query`` on a server with the board on (the address read on its first run);
    ``cookie``: the membership this browser keeps (:func:`member`), None for a browser in no class."""
    at = with_board(AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60), url)
    for k, v in query.items():
        at.query_params[k] = v
    with kept_cookie(cookie):
        return goto(at.run(), page)


def cookie_of(at: AppTest) -> str | None:
    """The membership cookie ``at``'s browser keeps: the page writes the session's membership there."""
    who = session(at).member
    return f"{who.code}.{who.token}" if who is not None else None


THE_SAME = "the same browser"


def reloaded(url: str, at: AppTest, page: str = "challenges", cookie: str | None = THE_SAME, **changes: str) -> AppTest:
    """``at``'s browser reloaded (or another replica taking over): a new session from its address bar and its cookie
    alone, with any parameters in ``changes`` typed over the address (``cookie``: another browser's, or None)."""
    kept = cookie_of(at) if cookie == THE_SAME else cookie
    return opened(url, page, {**address(at), **changes}, kept)


def teacher(url: str, key: str = KEY) -> AppTest:
    """The Class board page with ``key`` typed into its teacher key box."""
    at = with_board(journey("class_board"), url).run()
    at.text_input(key="board.key").set_value(key).run()
    return at


def set_builtin(url: str, code: str, cid: str = CHALLENGE) -> None:
    """The teacher sets the built-in ``cid`` for class ``code`` (as her page's *Set it* does)."""
    from attention.labs import challenges as ch

    c = ch.load_challenge(cid)
    Board(url).assign(code, ch.fingerprint(c), c.title, "challenges?challenge=" + ch.encode_link(c))


def member(url: str, code: str, name: str) -> str:
    """``name`` joins class ``code`` in a browser of their own: the membership cookie that browser keeps."""
    return f"{code}.{Board(url).join(code, name)}"


def started(at: AppTest) -> AppTest:
    """The built-in :data:`CHALLENGE` chosen and started on the Challenges page."""
    at = select(at, "ch.choice", CHALLENGE)
    return at.button(key="ch.start.builtin").click().run()


def edit_first_cell(at: AppTest, value: str) -> AppTest:
    """W_v's first cell set to ``value`` by an edit in the grid (-10 solves :data:`CHALLENGE`)."""
    cols = session(at).axis_labels("W_v", session(at).matrices["W_v"].shape)[1]
    return edit_cells(at, "W_v", {0: {cols[0]: value}})


def handed_in(at: AppTest) -> bool:
    """The sidebar says the solve was handed in to the class."""
    return any(HANDED_IN in t for t in texts(at.sidebar.success))


def student_solves(url: str, code: str, name: str) -> AppTest:
    """A student joins class ``code`` on the Challenges page as ``name``, starts :data:`CHALLENGE` and solves it."""
    at = with_board(journey("challenges"), url).run()
    at.text_input(key="board.join.code").set_value(code.lower())
    at.text_input(key="board.join.name").set_value(name)
    at = at.button[[b.label for b in at.button].index("Join")].click().run()
    no_exception(at)
    return edit_first_cell(started(at), "-10")


def share(at: AppTest) -> dict[str, str]:
    """The Copy-link box's link of ``at``'s state (what a classmate is sent)."""
    from attention.ui.address import url as url_mod

    return url_mod.link(session(at))[0]


def refused(at: AppTest, url: str, code: str, name: str = "Chen") -> None:
    """``name`` has no solve on the board, and the page said why, in words that allow editing on."""
    no_exception(at)
    assert session(at).member.name == name  # in the class: only the numbers' origin refuses it
    assert name not in [s.name for s in Board(url).solves(code)]
    said = texts(at.sidebar.warning) + texts(at.info)
    assert any(NOT_OWN in t and "Editing from here is fine" in t and "Restart" in t for t in said), said
    assert not any("Handed in" in t for t in texts(at.sidebar.success))
