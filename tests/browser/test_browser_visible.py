"""Every chart a person is shown can be seen and read, in real headless Chromium: every page in several states
(1, 2 and 4 heads, a causal mask, 64 and 300 tokens, after training on the Learn page), at 1280 × 720 and (for the
main states) 1400 × 1000.

For each chart element Streamlit draws ([data-testid='stVegaLiteChart']), the drawing inside it (Vega's svg, or a
canvas) must have a readable box (at least 120 × 60 px), lie inside the page's main area, write no text smaller
than 12 px and cut no text ("…"), and its pixels must not be blank (a screenshot of the element, checked for
variance). AppTest cannot see any of this: a spec can be perfect and be drawn 0 px wide. Nothing may be fetched
from outside this machine (the ``page`` fixture's guard).

States are reached through the address (see attention/ui/address/url.py), then the pages through the sidebar, in one
session. Failures are collected over a whole state and reported together, page by page.
"""

from __future__ import annotations

import contextlib
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from attention.ui.app.specs import LABS, STEPS
from tests.helpers.browser import SHOTS, error_texts, nav_link, settle
from tests.helpers.visible import CANVAS_HOOK, LARGE, MEASURE, SMALL, STATES, check_page, stable_charts

# (address slug, title of its h1) for every page, in the sidebar's order
PAGES = [("", "Self-attention, step by step")]
PAGES += [(step.file.split("_", 1)[1].removesuffix(".py"), step.title) for step in STEPS.values()]
PAGES += [(lab.file.split("_", 1)[1].removesuffix(".py"), lab.title) for lab in LABS.values()]

CASES = [
    ("1 head, 6 tokens", SMALL),
    ("1 head, 6 tokens", LARGE),
    ("2 heads, 3 tokens", SMALL),
    ("2 heads, 3 tokens", LARGE),
    ("4 heads, 64 tokens", SMALL),
    ("causal mask, 6 tokens", SMALL),
    ("300 tokens", LARGE),
    ("2 heads, 300 tokens", SMALL),
]


def _visit(pg, base: str, slug: str, title: str, query: str | None) -> None:
    """Open the page: by address (a new session in the given state) or through the navigation (same session)."""
    if query is not None:
        pg.goto(f"{base}/{slug}?{query}")
    else:
        nav_link(pg, _nav_label(slug)).click()
        pg.wait_for_url(re.compile(rf"/{re.escape(slug)}(\?|$)"), timeout=30_000)
    pg.get_by_test_id("stMain").locator("h1").filter(has_text=title).first.wait_for(timeout=30_000)
    settle(pg)


def _nav_label(slug: str) -> str:
    if slug == "":
        return "Overview"
    for spec in (*STEPS.values(), *LABS.values()):
        if spec.file.split("_", 1)[1].removesuffix(".py") == slug:
            return spec.nav
    raise KeyError(slug)


@pytest.mark.parametrize("state,viewport", CASES, ids=[f"{s}-{w}x{h}" for s, (w, h) in CASES])
def test_every_chart_on_every_page_is_visible_and_readable(page, base_url, state, viewport) -> None:  # noqa: F811
    page.add_init_script(CANVAS_HOOK)
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    query = STATES[state][0]
    problems: list[str] = []
    for i, (slug, title) in enumerate(PAGES):
        _visit(page, base_url, slug, title, query if i == 0 else None)
        problems += check_page(page, slug, state, viewport)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
    assert not page.console_errors, page.console_errors


@pytest.mark.parametrize("viewport", [SMALL, LARGE], ids=["1280x720", "1400x1000"])
def test_the_learn_pages_charts_after_training_are_visible_and_readable(page, base_url, viewport) -> None:  # noqa: F811
    page.add_init_script(CANVAS_HOOK)
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    _visit(page, base_url, "learn", LABS["learn"].title, STATES["1 head, 6 tokens"][0])
    page.get_by_role("button", name="Train").click()
    page.get_by_text("Last run").first.wait_for(timeout=120_000)
    settle(page)
    problems = check_page(page, "learn", "1 head, 6 tokens", viewport, trained=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"visible_learn_{viewport[0]}.png"), full_page=True)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def test_fullscreen_enlarges_the_heatmap_and_its_text_and_fits_the_screen(page, base_url) -> None:  # noqa: F811
    """Streamlit's fullscreen button gives the chart the whole window: the cells grow, the text with them (a fixed
    size made the cells larger and left the labels at 11 px), and the whole chart fits the window."""
    page.set_viewport_size({"width": SMALL[0], "height": SMALL[1]})
    _visit(page, base_url, "softmax", STEPS["softmax"].title, STATES["1 head, 6 tokens"][0])
    (before,) = stable_charts(page)
    chart = page.get_by_test_id("stVegaLiteChart").first
    chart.scroll_into_view_if_needed()
    box = chart.locator("xpath=ancestor::*[@data-testid='stElementContainer'][1]")
    button = box.get_by_role("button", name="Fullscreen")
    for _ in range(10):  # the toolbar shows while the pointer is over the chart: on a busy machine a hover can miss it
        page.mouse.move(0, 0)
        chart.hover()
        with contextlib.suppress(PlaywrightTimeout):
            button.click(timeout=3_000)
            break
    else:
        raise AssertionError("no Fullscreen button came after 10 hovers over the chart")
    for _ in range(50):
        (after,) = page.evaluate(MEASURE)
        if after["w"] > 2 * before["w"]:
            break
        page.wait_for_timeout(200)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "visible_fullscreen.png"))
    assert after["w"] > 2 * before["w"] and after["plotH"] > 1.3 * before["plotH"], (before, after)
    assert after["minFont"] >= 1.4 * before["minFont"], (before, after)  # the labels grew with the cells
    assert after["h"] <= SMALL[1], after  # the whole chart (axis, legend) fits the window
    assert not after["cut"], after


def test_a_click_on_a_cell_of_head_2s_heatmap_explains_that_cell_of_head_2(page, base_url) -> None:  # noqa: F811
    import attention
    from attention import charts

    page.set_viewport_size({"width": LARGE[0], "height": LARGE[1]})
    _visit(page, base_url, "scores", STEPS["scores"].title, "preset=the_cat_sat&heads=2&digits=6")  # explained at 6
    stable_charts(page)
    head2 = page.get_by_test_id("stVegaLiteChart").nth(1)
    assert "head 2" in head2.inner_text()
    head2.scroll_into_view_if_needed()
    # the cell (sat, cat) of head 2: the score written in it
    p = attention.load_preset("the_cat_sat")
    m = p.matrices()
    q, k = m["X"] @ m["W_q"], m["X"] @ m["W_k"]
    scores = q[:, 2:] @ k[:, 2:].T  # head 2: columns 3-4 of Q and K, with numpy
    score = float(scores[2, 1])
    written = charts.decimals_for(scores, 6).format(score)  # the cell written at the digits set
    cell = head2.get_by_text(written, exact=True).first
    cb = cell.bounding_box()
    assert cb is not None, f"the score {written} (head 2, sat → cat) is written in its cell"
    page.mouse.click(cb["x"] + cb["width"] / 2, cb["y"] + cb["height"] / 2)
    page.get_by_text(f"S = {score:.6g}").first.wait_for(timeout=30_000)
    settle(page)
    assert page.get_by_test_id("stMain").get_by_role("combobox").count() >= 3
    assert not error_texts(page)
