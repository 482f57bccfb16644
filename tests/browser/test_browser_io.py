"""Real Chromium: paste a matrix into W_q, see it applied; the sidebar tools export a script and make a
link that reopens the same numbers. Screenshots go to $IO_SHOTS (default /tmp/io_shots) for a person to look at."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import attention
from tests.helpers.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    error_texts,
    grid_cells,
    guarded_context,
    rerun,
    settle,
    streamlit_server,
)

SHOTS = Path(os.environ.get("IO_SHOTS", "/tmp/io_shots"))


@pytest.fixture(scope="module")
def base_url():
    with streamlit_server() as url:
        yield url


@pytest.fixture
def page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        with guarded_context(b, viewport={"width": 1400, "height": 1100}, accept_downloads=True) as context:
            yield context.new_page()
        b.close()


def test_paste_into_w_q_export_and_link(page, base_url, tmp_path) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{base_url}/weights?preset=the_cat_sat")
    settle(page)
    w = attention.load_preset("the_cat_sat").matrices()["W_q"].copy()
    w[0, 0] = 0.1 + 0.2
    w[1, 2] = -1.75
    exp = page.get_by_test_id("stExpander").filter(has_text="Import W_q").first
    exp.locator("summary").click()
    exp.get_by_role("textbox").fill(f"np.array({w.tolist()!r})")
    with rerun(page):
        exp.get_by_role("button", name="Apply").click()
    assert not error_texts(page), error_texts(page)
    ok = page.get_by_test_id("stAlertContentSuccess").filter(has_text="W_q replaced by the pasted matrix")
    assert ok.count() == 1, page.get_by_test_id("stAlertContentSuccess").all_inner_texts()
    _assert_grid_shows(page, "W_q", w)  # the pasted numbers, in the W_q grid a person sees
    exp = page.get_by_test_id("stExpander").filter(has_text="Import W_q").first
    if not exp.locator("details").first.evaluate("e => e.open"):  # a new matrix redraws the editor (and may close this)
        exp.locator("summary").click()
        page.wait_for_timeout(300)
    assert exp.get_by_role("textbox").input_value() == ""  # applied, so the box is emptied
    exp.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "weights_import_open.png"), full_page=True)

    # A wrong shape: the message says both shapes and offers to change the shape.
    exp.get_by_role("textbox").fill("[[1, 2], [3, 4]]")
    with rerun(page):
        exp.get_by_role("button", name="Apply").click()
    text = " ".join(page.get_by_test_id("stAlertContentError").all_inner_texts())
    assert "W_q must be 4 × 4 (d_model × d_k)" in text and "2 × 2" in text, text
    exp = page.get_by_test_id("stExpander").filter(has_text="Import W_q").first
    assert exp.get_by_role("textbox").input_value() == "[[1, 2], [3, 4]]"  # kept, to be fixed
    page.get_by_role("button", name="Change the shape to match").wait_for()
    exp.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "weights_import_wrong_shape.png"))

    side = page.get_by_test_id("stSidebar")
    tools = side.get_by_test_id("stExpander").filter(has_text="Save, share, export").first
    with rerun(page):
        tools.locator("summary").click()  # opening it reruns the page with its content
    tools.get_by_role("button", name="Export as Python script").wait_for()
    tools.scroll_into_view_if_needed()
    side.screenshot(path=str(SHOTS / "sidebar_tools.png"))
    with page.expect_download() as info:
        tools.get_by_role("button", name="Export as Python script").click()
    script = tmp_path / info.value.suggested_filename
    info.value.save_as(script)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    link = tools.get_by_test_id("stCode").inner_text().strip()
    assert "edits=" in link, link
    url = link if link.startswith("http") else f"{base_url}/weights{link}"
    page2 = page.context.new_page()
    page2.goto(url)
    settle(page2)
    assert not error_texts(page2), error_texts(page2)
    with rerun(page2):
        page2.get_by_test_id("stSidebar").get_by_test_id("stExpander").filter(
            has_text="Save, share, export"
        ).first.locator("summary").click()
    page2.get_by_test_id("stSidebar").get_by_test_id("stCode").wait_for()
    assert page2.get_by_test_id("stSidebar").get_by_test_id("stCode").inner_text().strip() == link
    page2.screenshot(path=str(SHOTS / "weights_from_link.png"), full_page=True)
    _assert_grid_shows(page2, "W_q", w)  # the link reopens the pasted numbers


def _assert_grid_shows(pg, name: str, want: np.ndarray) -> None:
    """The editor grid of ``name`` shows ``want``, cell by cell, rounded to the digits each cell displays."""
    header, *rows = grid_cells(pg, f"ed-{name}-")
    cells = [row[1:] for row in rows]
    got = np.array([[float(c) for c in row] for row in cells])
    half_unit = np.array([[0.5 * 10.0 ** -len(c.partition(".")[2]) + 1e-12 for c in row] for row in cells])
    assert got.shape == want.shape, (header, rows)
    assert (np.abs(got - want) <= half_unit).all(), (cells, want)
