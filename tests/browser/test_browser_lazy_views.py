"""A step page's views drawn only once opened, in real Chromium at 1280 × 720 and 1400 × 1000: closed, an expander is a
heading and nothing under it; opened (a click on its heading), its view is drawn at a readable size with the engine's
numbers, and it is still open after a page switch through the navigation and back."""

from __future__ import annotations

import numpy as np
import pytest

import attention
from tests.helpers.browser import SHOTS, nav, open_page, open_view, rerun

HEATMAP = "[data-testid='stVegaLiteChart'] svg, [data-testid='stVegaLiteChart'] canvas"


def _expander(pg, label: str):  # noqa: ANN202 - a Playwright locator
    return pg.get_by_test_id("stMain").get_by_test_id("stExpander").filter(has_text=label).first


def _visible_grids(pg) -> list[dict]:
    grids = pg.locator("[data-testid='stDataFrame'], .mgrid")
    return [b for b in (grids.nth(i).bounding_box() for i in range(grids.count())) if b and b["width"] > 1]


def _row_sums(pg, rows: int) -> np.ndarray:
    """The softmax's row sums the page's "row sums" tab prints, in the grid's accessible table."""
    table = _expander(pg, "Softmax, step by step").get_by_test_id("stDataFrame").first
    table.locator("table tr").nth(rows).wait_for(state="attached")
    cells = table.locator("table tr").evaluate_all("trs => trs.map(tr => Array.from(tr.children, c => c.textContent))")
    return np.array([float(r[-1]) for r in cells[1 : rows + 1]])


@pytest.mark.parametrize("size", [(1280, 720), (1400, 1000)])
def test_opening_softmaxs_steps_draws_them_readable_and_they_stay_open_across_pages(page, base_url, size) -> None:  # noqa: F811
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_page(page, base_url, "softmax", "preset=the_cat_sat")
    page.locator(HEATMAP).first.wait_for(timeout=30_000)
    box = _expander(page, "Softmax, step by step")
    box.scroll_into_view_if_needed()
    assert box.locator("details[open]").count() == 0 and box.get_by_test_id("stDataFrame").count() == 0
    shut = box.bounding_box()
    assert shut["height"] < 80 and shut["width"] >= 300, shut  # a heading, nothing under it
    grids_before = len(_visible_grids(page))  # the input grid beside the heatmap
    open_view(page, "Softmax, step by step")
    box = _expander(page, "Softmax, step by step")
    with rerun(page):
        box.get_by_role("tab", name="row sums").click()  # its own lazy tabs
    box = _expander(page, "Softmax, step by step")
    box.get_by_test_id("stDataFrame").first.wait_for(timeout=30_000)
    box.scroll_into_view_if_needed()
    table = box.get_by_test_id("stDataFrame").first.bounding_box()
    assert table["width"] >= 300 and table["height"] >= 100, table  # readable, not squeezed
    assert len(_visible_grids(page)) == grids_before + 1
    t = attention.load_preset("the_cat_sat").compute()
    scaled = np.squeeze(t.scaled)
    want = np.exp(scaled - scaled.max(axis=1, keepdims=True)).sum(axis=1)  # each row's sum of exps after the shift
    np.testing.assert_allclose(_row_sums(page, 3), want, rtol=5e-4)  # printed at 4 significant digits
    page.screenshot(path=str(SHOTS / f"lazy_softmax_steps_{size[0]}.png"), full_page=True)
    nav(page, "Scores")  # another page, then back through the navigation: still open
    page.locator(HEATMAP).first.wait_for(timeout=30_000)
    nav(page, "Softmax")
    page.locator(HEATMAP).first.wait_for(timeout=30_000)
    box = _expander(page, "Softmax, step by step")
    assert box.locator("details[open]").count() == 1
    box.get_by_test_id("stDataFrame").first.wait_for(timeout=30_000)
    np.testing.assert_allclose(_row_sums(page, 3), want, rtol=5e-4)
    assert _expander(page, "Explain a cell").get_by_test_id("stDataFrame").count() == 0  # the others stay closed
    assert not page.console_errors, page.console_errors
