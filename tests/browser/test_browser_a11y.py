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

import pytest

from tests.helpers.browser import check, rerun, settle

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
