"""Real headless Chromium: start a challenge, make the solving edit in the grid, see the tick; the lab pages draw."""

from __future__ import annotations

import pytest

import attention
from attention.labs import challenges as ch
from tests.helpers.browser import SHOTS, edit_grid_cell, error_texts, open_page, rerun


def _choose(pg, label: str, option: str) -> None:
    pg.get_by_test_id("stSelectbox").filter(has_text=label).locator("input").first.click()
    with rerun(pg):
        pg.get_by_role("option", name=option).first.click()


def test_start_a_challenge_edit_the_grid_and_see_the_tick(page, base_url) -> None:  # noqa: F811
    c = ch.load_challenge("negative_output")
    m = ch.challenge_preset(c).matrices()
    m["W_v"][0, 0] = -10.0
    assert attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"]).output[1, 0] < 0  # the edit solves it
    open_page(page, base_url, "challenges")
    _choose(page, "A built-in challenge", c.title)
    with rerun(page):
        page.get_by_role("button", name="Start").first.click()
    body = page.inner_text("body")
    assert "Playing: " + c.title in body and "Not yet" in body
    page.screenshot(path=str(SHOTS / "challenge_started.png"), full_page=True)
    # the only editable matrix, W_v (4 × 4), is the first grid of the page
    edit_grid_cell(page, 0, 0, 0, 4, "-10")
    page.get_by_text("✓ Goal met").first.wait_for(timeout=10000)
    assert not error_texts(page)
    page.screenshot(path=str(SHOTS / "challenge_met.png"), full_page=True)
    assert not page.console_errors, page.console_errors
    assert not page.external, page.external


@pytest.mark.parametrize("name", ["why_sqrt_dk", "stability"])
def test_the_lab_pages_draw_their_charts_without_errors(page, base_url, name: str) -> None:  # noqa: F811
    open_page(page, base_url, name, "preset=the_cat_sat")
    page.locator("[data-testid='stVegaLiteChart'] svg, [data-testid='stVegaLiteChart'] canvas").first.wait_for(
        timeout=15000
    )
    assert not error_texts(page)
    assert "709.78" in page.inner_text("body") or name != "stability"
    page.screenshot(path=str(SHOTS / f"lab_{name}.png"), full_page=True)
    assert not page.console_errors, page.console_errors
    assert not page.external, page.external
