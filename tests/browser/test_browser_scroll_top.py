"""A page opened from a link or the navigation starts at its top (issue 49 §4 reported "6. Softmax", opened from the
Overview's *Start here* list, showing the bottom of the page). Here, at 1280 × 720 with the Overview scrolled down
to its list, the link, the navigation and Back each open the next page at its top, on a quiet browser and with
Chromium's CPU throttled 8× (CDP ``Emulation.setCPUThrottlingRate``). Throttled, the page opened kept the last
page's scroll (757 px down) until the app's script scrolled it to its top on a change of page
(:mod:`attention.ui.widgets.history`): Streamlit itself does not."""

from __future__ import annotations

import contextlib

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.helpers.browser import nav, open_page, ready, rerun

SCROLLED = """() => Math.max(window.scrollY,
    ...[...document.querySelectorAll("[data-testid='stMain'], [data-testid='stAppViewContainer']")]
        .map(el => el.scrollTop))"""


def _scroll_down(page) -> None:  # noqa: ANN001 - a Playwright page
    """Twelve turns of the wheel, then wait until the page stops moving (on a busy machine the wheel's scrolling ends
    late, and a page opened meanwhile would be scrolled by it)."""
    page.mouse.move(700, 500)
    for _ in range(12):
        page.mouse.wheel(0, 600)
    last = -1
    for _ in range(50):
        page.wait_for_timeout(200)
        now = page.evaluate(SCROLLED)
        if now == last:
            break
        last = now


def _at_top(page) -> None:  # noqa: ANN001 - a Playwright page
    """The page reaches its top within 10 s (a busy machine runs the page's scripts late) and stays there."""
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(f"({SCROLLED})() === 0", timeout=10_000)
    page.wait_for_timeout(300)
    assert page.evaluate(SCROLLED) == 0, page.evaluate(SCROLLED)


@pytest.mark.parametrize("throttle", [1, 8])
def test_a_page_opened_from_the_start_here_list_the_navigation_or_back_starts_at_its_top(
    page, base_url, throttle: int
) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": throttle})
    open_page(page, base_url, "", "preset=the_cat_sat")
    link = page.get_by_test_id("stMain").locator("a").filter(has_text="Softmax").first
    link.scroll_into_view_if_needed()
    _scroll_down(page)
    assert page.evaluate(SCROLLED) > 200  # the Overview was read down to its list
    with rerun(page):
        link.click()
    ready(page)
    assert "/softmax" in page.url, page.url
    _at_top(page)
    _scroll_down(page)
    assert page.evaluate(SCROLLED) > 200
    nav(page, "Scores")
    ready(page)
    _at_top(page)
    _scroll_down(page)
    assert page.evaluate(SCROLLED) > 200
    with rerun(page):
        page.go_back()
    ready(page)
    assert "/softmax" in page.url, page.url
    _at_top(page)
