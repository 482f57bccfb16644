"""Accessibility in real headless Chromium: axe-core (shipped inside the axe-playwright-python package, injected from
the local file: nothing is fetched) on every page, in 1, 2 and 4 heads, with a causal mask, on a 64-token blank preset,
with rotary positions at 1280 x 720, and on the lab pages after their main action. No critical or serious violation
may come from the app's own content.

Streamlit's chrome is the only exception, decided per violating element by CSS selector (:data:`CHROME`): its top
header (with its toolbar), the sidebar's header and its page navigation (whose <ul> holds <div> section wrappers: axe's
`list` and `listitem` rules). Those violations are printed, never failed. Everything else, including the main area
([data-testid='stMain']), the sidebar's widgets ([data-testid='stSidebarUserContent']) and page-level rules, is ours.
"""

from __future__ import annotations

import contextlib

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.helpers.browser import check, ready, rerun, runs, settle

STEP_PAGES = ["", "tokens", "weights", "qkv", "scores", "scaling", "softmax", "output", "reading"]
LAB_PAGES = ["why_sqrt_dk", "stability", "challenges", "learn"]
ALL_PAGES = STEP_PAGES + LAB_PAGES
STATES = {  # name: (query, pages)
    "1 head": ("preset=the_cat_sat", ALL_PAGES),
    "2 heads": ("preset=the_cat_sat&heads=2", ALL_PAGES),
    "4 heads": ("preset=the_cat_sat&heads=4", ALL_PAGES),
    "causal mask": ("preset=the_cat_sat&mask=causal", ALL_PAGES),
    "64-token blank": ("preset=blank&size=64x16x16&heads=4", ALL_PAGES),
    "rotary at 1280x720": ("preset=the_cat_sat&pos=rotary", ["tokens", "qkv"]),  # the widest formula, narrow screen
}
NARROW = {"rotary at 1280x720": {"width": 1280, "height": 720}}
CASES = [(state, name) for state, (_, names) in STATES.items() for name in names]


@pytest.mark.parametrize(("state", "name"), CASES, ids=[f"{s.replace(' ', '_')}-{p or 'overview'}" for s, p in CASES])
def test_no_serious_violation_in_our_content(page, base_url, axe_script, state: str, name: str) -> None:  # noqa: F811
    if state in NARROW:
        page.set_viewport_size(NARROW[state])
    page.goto(f"{base_url}/{name}?{STATES[state][0]}")
    settle(page)
    check(page, axe_script, f"{state} /{name}")


def test_lab_pages_after_their_action(page, base_url, axe_script) -> None:  # noqa: F811
    """The states only a click reaches: a trained Learn page, a started challenge."""
    page.goto(f"{base_url}/learn?preset=the_cat_sat")
    settle(page)
    with rerun(page):
        page.get_by_role("button", name="Train").click()
    page.get_by_text("Last run").first.wait_for()
    check(page, axe_script, "learn after Train")
    page.goto(f"{base_url}/challenges?preset=the_cat_sat")
    settle(page)
    with rerun(page):
        page.get_by_role("button", name="Start").first.click()
    page.get_by_text("Playing: ").first.wait_for()
    check(page, axe_script, "challenges after Start")


CLOSED = "[data-testid='stExpander'] details:not([open]) > summary"


def _open_every_view(pg) -> int:
    """Open every closed expander of the page (main area and sidebar), those an opened one reveals too, waiting for
    the run a lazy one starts; returns how many were opened."""
    for opened in range(60):
        closed = pg.locator(CLOSED)
        if not closed.count():
            return opened
        mark = runs(pg)
        summary = closed.first
        summary.scroll_into_view_if_needed()
        summary.click()
        with contextlib.suppress(TimeoutError, PlaywrightTimeout):  # a lazy one reruns the page; a plain one not
            settle(pg, mark, timeout=2_500)
        ready(pg)
    raise AssertionError("more than 60 expanders opened: one does not stay open")


def _tabs(pg) -> list[tuple[int, int]]:
    """(tab list, tab) of every tab not selected now, in the main area."""
    lists = pg.get_by_test_id("stMain").locator("[role='tablist']")
    return [
        (i, j)
        for i in range(lists.count())
        for j in range(lists.nth(i).get_by_role("tab").count())
        if lists.nth(i).get_by_role("tab").nth(j).get_attribute("aria-selected") != "true"
    ]


@pytest.mark.parametrize("name", ALL_PAGES, ids=[p or "overview" for p in ALL_PAGES])
def test_no_serious_violation_with_every_view_opened(page, base_url, axe_script, name: str) -> None:
    """Every expander opened (the Import box, the lazy views, the sidebar's), then every tab in turn: what is drawn
    only on demand is checked as drawn. The Import box's caption had inline code grey on grey (color-contrast)."""
    page.goto(f"{base_url}/{name}?preset=the_cat_sat&heads=2")
    settle(page)
    opened = _open_every_view(page)
    check(page, axe_script, f"/{name} with {opened} views opened")
    for i, j in _tabs(page):
        tab = page.get_by_test_id("stMain").locator("[role='tablist']").nth(i).get_by_role("tab").nth(j)
        mark = runs(page)
        tab.click()
        with contextlib.suppress(TimeoutError, PlaywrightTimeout):
            settle(page, mark, timeout=2_500)
        ready(page)
        _open_every_view(page)
        check(page, axe_script, f"/{name} tab {tab.inner_text()}")
