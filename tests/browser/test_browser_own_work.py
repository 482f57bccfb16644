"""A classmate's link does not hand in, in real Chromium (issue 41 §1): Alice solves a challenge her teacher set and
it is handed in; Chen joins the class in his own browser, opens her link (what Copy link gives) and then the board's
"open" link of her solve. Both show the challenge solved, neither hands in for him, and the page says why and that
editing from there is fine. The board keeps Alice's solve only."""

from __future__ import annotations

import os
import re
from unittest import mock

import pytest

from attention.io.board import Board
from attention.labs import challenges as ch
from tests.helpers.browser import SHOTS, edit_grid_cell, guarded_context, nav, open_page, settle, streamlit_server

KEY = "a long teacher key for the test"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A server with the class board on (an SQLite file the test reads too), and a class with the built-in set."""
    db = f"sqlite:///{tmp_path_factory.mktemp('board') / 'board.sqlite3'}"
    challenge = ch.load_challenge("negative_output")
    board = Board(db)
    code = board.open_class("Lab")
    board.assign(code, ch.fingerprint(challenge), challenge.title, "challenges?challenge=" + ch.encode_link(challenge))
    env = {"ATTENTION_BOARD_URL": db, "ATTENTION_TEACHER_KEY": KEY}
    with mock.patch.dict(os.environ, env), streamlit_server() as url:
        yield url, board, code, ch.encode_link(challenge)


def _sidebar(pg) -> str:
    return pg.get_by_test_id("stSidebar").inner_text()


def _wait_text(pg, where, text: str, timeout_ms: int = 30_000) -> None:
    for _ in range(timeout_ms // 250):
        if text in where():
            return
        pg.wait_for_timeout(250)
    raise AssertionError(f"{text!r} never appeared in: {where()[:2000]}")


def test_a_classmates_link_and_the_boards_open_link_do_not_hand_in(browser, lab) -> None:
    url, board, code, token = lab
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as alice_ctx:
        alice = alice_ctx.new_page()
        open_page(alice, url, "challenges", f"challenge={token}")
        alice.get_by_label("Class code").fill(code)
        alice.get_by_label("Your display name").fill("Alice")
        alice.get_by_role("button", name="Join").click()
        _wait_text(alice, lambda: alice.inner_text("body"), f"You joined class {code}")
        alice.get_by_role("button", name="Start").first.click()
        _wait_text(alice, lambda: _sidebar(alice), "not yet")
        nav(alice, "Weights (W_q, W_k, W_v)")
        edit_grid_cell(alice, 2, 0, 0, 4, "-10")  # W_v[0, 0]: token2's first output value turns negative
        _wait_text(alice, lambda: _sidebar(alice), f"Handed in to class {code}")
        shared = alice.url  # her whole address bar: it carries no membership and no mark
        assert not re.search(r"[?&](member|own)=", shared), shared
    assert [s.name for s in board.solves(code)] == ["Alice"]

    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as chen_ctx:
        chen = chen_ctx.new_page()
        open_page(chen, url, "challenges")
        chen.get_by_label("Class code").fill(code)
        chen.get_by_label("Your display name").fill("Chen")
        chen.get_by_role("button", name="Join").click()
        _wait_text(chen, lambda: chen.inner_text("body"), f"You joined class {code}")
        for link in (shared, board.solves(code)[0].link):  # her link, then the board's "open"
            chen.goto(link)  # the same tab: his membership comes back from the browser's cookie
            settle(chen)
            _wait_text(chen, lambda: _sidebar(chen), "✓ solved")
            _wait_text(chen, lambda: chen.inner_text("body"), "Not handed in: these numbers arrived whole, by a link")
            assert "Editing from here is fine" in chen.inner_text("body")
            assert f"Handed in to class {code}" not in _sidebar(chen)
            assert "Alice" not in chen.inner_text("body")
        nav(chen, "Challenges")  # he is still Chen: only the numbers' origin refused the hand-in
        _wait_text(chen, lambda: chen.inner_text("body"), f"You are Chen in class {code}")
        chen.screenshot(path=str(SHOTS / "classroom_classmates_link_refused.png"))
    assert [s.name for s in board.solves(code)] == ["Alice"]


def test_the_board_with_five_challenges_reads_at_1280_by_720(browser, lab) -> None:
    """Five challenges set, three students (one solved two): the teacher types the key once, and the whole board is
    inside 1280 px, no column scrolled out of sight, no "None" in an empty cell; a reload needs no key."""
    url, board, code, _ = lab
    for cid in [c for c in ch.list_challenges() if c != "negative_output"][:4]:  # five with the one set
        c = ch.load_challenge(cid)
        board.assign(code, ch.fingerprint(c), c.title, "challenges?challenge=" + ch.encode_link(c))
    tasks = board.assignments(code)
    bo, _ = board.join(code, "Bo Long-Surname"), board.join(code, "Cy")
    for a in tasks[1:3]:
        board.report(code, bo, a.challenge_id, "✓ 0.61234")
        board.record(code, bo, a.challenge_id, a.link)
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as ctx:
        pg = ctx.new_page()
        open_page(pg, url, "class_board")
        pg.get_by_label("Teacher key").fill(KEY)
        pg.get_by_label("Teacher key").press("Enter")
        settle(pg)
        pg.get_by_label("Show the class with the code").fill(code)
        pg.get_by_role("button", name="Show it").click()
        _wait_text(pg, lambda: pg.inner_text("body"), f"{len(tasks)} challenges set")
        grid = pg.get_by_test_id("stDataFrame").first
        grid.scroll_into_view_if_needed()
        pg.wait_for_timeout(500)
        pg.screenshot(path=str(SHOTS / "class_board_five_challenges_1280.png"))
        box = grid.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 1280, box
        hidden = grid.evaluate(
            "g => [...g.querySelectorAll('*')].filter(e => e.scrollWidth > e.clientWidth + 2 && "
            "getComputedStyle(e).overflowX !== 'visible' && e.clientWidth > 300)"
            ".map(e => [e.className, e.scrollWidth, e.clientWidth])"
        )
        assert len(tasks) == 5 and not hidden, f"{hidden}: a column of the board is scrolled out of sight at 1280 px"
        assert "None" not in grid.inner_text()
        pg.reload()  # the key is kept in this browser: no key asked again
        settle(pg)
        _wait_text(pg, lambda: pg.inner_text("body"), f"Class {code}")
        assert not pg.get_by_label("Teacher key").is_visible()
