"""A lab in real Chromium (issue 20): the teacher opens a class on the Class board page, a student joins it on the
Challenges page, starts a challenge, solves it with a grid edit, sees "✓ solved" in the sidebar on every page;
a reload keeps the challenge, her numbers and her class; her link opens solved in another browser; the teacher's
board shows the solve. Screenshots of the board and the sidebar are kept."""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path
from unittest import mock

import pytest

from attention.labs import challenges as ch
from benchmarks.classroom import Replicas
from tests.helpers import NGINX
from tests.helpers.browser import (
    SHOTS,
    check,
    edit_grid_cell,
    guarded_context,
    nav,
    open_page,
    settle,
    streamlit_server,
)
from tests.helpers.postgres import postgres_server

KEY = "a long teacher key for the test"


@pytest.fixture(scope="module")
def board_url(tmp_path_factory):
    """A server with the class board on (an SQLite file) and a teacher key, set the way an owner would."""
    db = tmp_path_factory.mktemp("board") / "board.sqlite3"
    env = {"ATTENTION_BOARD_URL": f"sqlite:///{db}", "ATTENTION_TEACHER_KEY": KEY}
    with mock.patch.dict(os.environ, env), streamlit_server() as url:
        yield url


def _sidebar(pg) -> str:
    return pg.get_by_test_id("stSidebar").inner_text()


def _wait_text(pg, where, text: str, timeout_ms: int = 20_000) -> None:
    for _ in range(timeout_ms // 250):
        if text in where():
            return
        pg.wait_for_timeout(250)
    raise AssertionError(f"{text!r} never appeared in: {where()[:2000]}")


def test_a_lab_from_opening_a_class_to_the_board(browser, board_url, axe_script) -> None:  # noqa: F811
    _lab(browser, board_url, board_url, axe_script)


@pytest.mark.skipif(NGINX is None, reason="nginx not installed (apt-get install -y nginx)")
def test_the_same_lab_on_two_replicas_sharing_a_postgresql_board(browser, tmp_path, axe_script) -> None:  # noqa: F811
    """deploy/run_replicas.sh with 2 replicas whose board is one real PostgreSQL server: the teacher's page is
    served by one replica, the student's by the other, and the teacher still sees her solve."""
    with postgres_server() as pg:
        env = {"ATTENTION_BOARD_URL": pg, "ATTENTION_TEACHER_KEY": KEY}
        with mock.patch.dict(os.environ, env):
            proxy = Replicas(2, tmp_path / "run")
        try:
            first, second = (f"http://127.0.0.1:{port}" for port in proxy.replica_ports)
            _lab(browser, first, second, axe_script)
        finally:
            assert proxy.stop() == 0


def _in_view(pg, locator, what: str) -> None:
    """``locator`` is drawn inside the viewport: where the person is looking, without scrolling."""
    box = locator.bounding_box()
    view = pg.viewport_size
    assert box and box["width"] > 0, f"{what}: not drawn"
    assert box["y"] >= 0 and box["y"] + box["height"] <= view["height"], f"{what}: at y={box['y']:.0f}, off-screen"
    assert box["x"] >= 0 and box["x"] + box["width"] <= view["width"], f"{what}: at x={box['x']:.0f}, off-screen"


def _lab(browser, teacher_base: str, student_base: str, axe: str) -> None:  # noqa: F811
    """The teacher opens a class and sets a challenge; the student joins at 1280 × 720 (the message where she looks),
    then opens the teacher's challenge link in the same tab (still in her class), solves it ("Handed in" where she
    looks); the teacher's page survives a reload and lists her, one row, with a full hand-in address in the CSV."""
    token = ch.encode_link(ch.load_challenge("negative_output"))
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}, accept_downloads=True) as teacher_ctx:
        teacher = teacher_ctx.new_page()
        open_page(teacher, teacher_base, "class_board")
        teacher.get_by_label("Teacher key").fill(KEY)
        teacher.get_by_label("Teacher key").press("Enter")
        settle(teacher)
        teacher.get_by_label("A new class's title").fill("Tuesday lab")
        teacher.get_by_role("button", name="Open a class").click()
        _wait_text(teacher, lambda: teacher.inner_text("body"), "give your students this code")
        code = re.search(r"Class ([A-Z0-9]{6}) is open", teacher.inner_text("body")).group(1)
        own = teacher.get_by_label("…or the link of a challenge you wrote")
        own.fill(f"{teacher_base}/challenges?challenge={token}")
        teacher.get_by_role("button", name="Set it").click()
        _wait_text(teacher, lambda: teacher.inner_text("body"), "is now set for class")

        with guarded_context(browser, viewport={"width": 1280, "height": 720}) as student_ctx:
            student = student_ctx.new_page()
            open_page(student, student_base, "challenges")
            student.get_by_label("Class code").fill(code.lower())
            student.get_by_label("Your display name").fill("Ada <b>*L*</b>")
            student.get_by_role("button", name="Join").click()
            _wait_text(student, lambda: student.inner_text("body"), f"You joined class {code}")
            _in_view(student, student.get_by_text(f"You joined class {code}").first, "the join message")
            _in_view(student, student.get_by_text(f"Class board: you are in class {code}").first, "the box's label")
            student.screenshot(path=str(SHOTS / "classroom_student_joined.png"))

            student.goto(f"{student_base}/challenges?challenge={token}")  # the teacher's link, in the same tab
            settle(student)
            _wait_text(student, lambda: student.inner_text("body"), f"Class board: you are in class {code}")
            student.get_by_role("button", name="Start").first.click()
            _wait_text(student, lambda: _sidebar(student), "not yet")
            nav(student, "Weights (W_q, W_k, W_v)")
            edit_grid_cell(student, 2, 0, 0, 4, "-10")  # W_v[0, 0]: token2's first output value turns negative
            _wait_text(student, lambda: _sidebar(student), "✓ solved")
            toast = student.get_by_test_id("stToast").filter(has_text=f"Handed in to class {code}")
            toast.first.wait_for(timeout=10_000)
            _in_view(student, toast.first, "the hand-in toast")
            student.screenshot(path=str(SHOTS / "classroom_student_handed_in.png"))
            _wait_text(student, lambda: _sidebar(student), f"Handed in to class {code}")
            check(student, axe, "challenge solved, sidebar status")
            status = student.get_by_test_id("stSidebar").get_by_text("✓ solved").first
            status.scroll_into_view_if_needed()
            box = status.bounding_box()
            assert box and box["width"] >= 150 and box["height"] >= 16  # readable, inside the sidebar
            student.screenshot(path=str(SHOTS / "classroom_student_sidebar.png"))

            student.reload()  # a reload keeps the challenge, the edit and the class
            settle(student)
            _wait_text(student, lambda: _sidebar(student), "✓ solved")
            link = student.url
            assert "member=" not in link and "own=" not in link and "playing=" in link  # nobody's seat in it

            lab = student_ctx.new_page()  # the next person at this computer: the cookie's membership is not silent
            open_page(lab, student_base, "challenges")
            asked = lab.get_by_text(f"in class {code} — not you? Leave the class in this browser").first
            asked.wait_for(timeout=30_000)
            _in_view(lab, asked, "the cookie's 'not you?'")
            _in_view(lab, lab.get_by_role("button", name="Not you? Leave the class in this browser"), "its button")
            lab.screenshot(path=str(SHOTS / "classroom_not_you.png"))
            lab.get_by_role("button", name="Not you? Leave the class in this browser").click()
            _wait_text(lab, lambda: lab.inner_text("body"), "Class board: join your class")

        with guarded_context(browser, viewport={"width": 1280, "height": 720}) as other_ctx:
            other = other_ctx.new_page()  # anyone opening her link (without her membership) sees it solved
            other.goto(link)  # her whole address bar
            settle(other)
            _wait_text(other, lambda: _sidebar(other), "✓ solved")

        teacher.reload()  # the teacher's page survives a reload: no key, no class code typed again
        settle(teacher)
        _wait_text(teacher, lambda: teacher.inner_text("body"), "1 student joined · 1 challenge solved")
        assert not teacher.get_by_label("Teacher key").is_visible() and f"Class {code}" in teacher.inner_text("body")
        with teacher.expect_download() as got:
            teacher.get_by_role("button", name="Download the board (.csv)").click()
        rows = list(csv.reader(io.StringIO(Path(got.value.path()).read_text(encoding="utf-8"))))
        assert len(rows) == 2 and rows[1][0] == "Ada <b>*L*</b>" and rows[1][2] == "solved"  # her name as text
        assert rows[1][-2].startswith(teacher_base.split("://")[0] + "://") and "solve=" in rows[1][-2], rows[1]
        assert len(rows[1][-2]) < 100 and rows[1][-1] == "1"  # a short link by id; the total
        teacher.screenshot(path=str(SHOTS / "classroom_teacher_board.png"), full_page=True)
        check(teacher, axe, "class board with a solve")  # no critical or serious violation


def test_every_button_label_of_the_challenge_form_shows_whole_at_1280(browser, board_url) -> None:
    """The form's buttons under a checked challenge ("Download the challenge (.json)", "Try it here") are as wide as
    their labels at 1280 × 720: none is cut with an ellipsis."""
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as ctx:
        pg = ctx.new_page()
        open_page(pg, board_url, "challenges")
        pg.get_by_role("button", name="Check it").click()
        label = pg.get_by_role("button", name="Download the challenge (.json)")
        label.wait_for(timeout=30_000)
        for name in ("Download the challenge (.json)", "Try it here"):
            button = pg.get_by_role("button", name=name).first
            button.scroll_into_view_if_needed()
            cut = button.evaluate(
                "b => [...b.querySelectorAll('*')].concat([b]).some(e => e.scrollWidth > e.clientWidth + 1)"
            )
            assert not cut, f"{name!r} is cut"
            assert name in button.inner_text()
        pg.screenshot(path=str(SHOTS / "challenge_form_buttons_1280.png"))
