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

import os

import pytest

from tests.browser_util import CHROMIUM, rerun, settle
from tests.test_browser import base_url, browser, page  # noqa: F401

pytestmark = pytest.mark.browser
if not os.path.exists(CHROMIUM):
    pytestmark = [
        pytest.mark.browser,
        pytest.mark.skip(reason=f"{CHROMIUM} not installed (apt-get install -y chromium)"),
    ]

# Streamlit's own chrome, not drawn by our code: the top header (toolbar, menu and status live inside it), the
# sidebar's header (logo, collapse button) and the page navigation. Three containers, nothing of ours inside them.
CHROME = "[data-testid='stHeader'], [data-testid='stSidebarHeader'], [data-testid='stSidebarNav']"
FAIL_IMPACTS = ("critical", "serious")
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

# axe.run with the elements of each violating node classified in the page itself (the DOM may change later)
RUN_AXE = """async chrome => {
  const r = await axe.run(document, {resultTypes: ['violations'], elementRef: true});
  return r.violations.flatMap(v => v.nodes.map(n => ({
    id: v.id, impact: n.impact || v.impact, target: n.target.join(' '), html: n.html.slice(0, 160),
    chrome: !!(n.element && n.element.closest(chrome)),
  })));
}"""


@pytest.fixture(scope="module")
def axe_script() -> str:
    from axe_playwright_python.base import AXE_SCRIPT

    assert "axe v4." in AXE_SCRIPT[:200]  # the package's own copy of axe-core, read from disk
    return AXE_SCRIPT


def drawn(pg) -> None:
    """Charts drawn and the fonts (KaTeX's too) loaded: what axe measures is what a person sees."""
    charts = pg.locator("[data-testid='stVegaLiteChart']")
    for i in range(charts.count()):
        charts.nth(i).locator("svg, canvas").first.wait_for(state="attached", timeout=30_000)
    pg.evaluate("() => document.fonts.ready.then(() => true)")


def violations(pg, axe_script: str) -> tuple[list[dict], list[dict]]:
    """(ours, chrome): every violating element axe finds, split by whether it sits in Streamlit's chrome."""
    drawn(pg)
    pg.evaluate(axe_script)
    found = pg.evaluate(RUN_AXE, CHROME)
    return [v for v in found if not v["chrome"]], [v for v in found if v["chrome"]]


def check(pg, axe_script: str, where: str) -> None:
    """Fail on a critical or serious violation in our content; print (once per rule) what else axe found."""
    ours, chrome = violations(pg, axe_script)
    for label, found in (("Streamlit's chrome, not failed", chrome), ("ours", ours)):
        for rule in sorted({(v["id"], v["impact"]) for v in found}):
            nodes = [v["target"][-80:] for v in found if (v["id"], v["impact"]) == rule]
            print(f"{where}: {label}: {rule[0]} ({rule[1]}) x{len(nodes)}: {nodes[0]}")
    bad = [v for v in ours if v["impact"] in FAIL_IMPACTS]
    assert not bad, "\n".join(f"{v['id']} ({v['impact']}): {v['target']}\n    {v['html']}" for v in bad)


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
