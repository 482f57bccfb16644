"""Printing a step page (or saving it as PDF) in real Chromium: one A4 sheet in portrait holding the title, formula,
explanation, heatmap(s) and tables, without the sidebar, buttons, editors or the panels beside the result."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from tests.helpers.browser import SHOTS, open_page, open_view

A4_PRINTABLE = (718, 1047)  # CSS px of an A4 sheet at 96 dpi inside 10 mm margins
MARGIN = {side: "10mm" for side in ("top", "bottom", "left", "right")}
LEFT_OUT = ("stSidebar", "stButton", "stDownloadButton", "stPopover", "stFileUploader", "stHeader")


def _settled_layout(pg, timeout_ms: int = 15_000) -> None:
    """Wait until the charts have been redrawn at the sheet's width and the page's height holds still (vega-embed
    redraws on resize, later on a loaded machine)."""
    last = None
    for _ in range(timeout_ms // 250):
        pg.wait_for_timeout(250)
        now = pg.evaluate(
            """() => [document.documentElement.scrollHeight,
                      ...[...document.querySelectorAll('[data-testid="stVegaLiteChart"]')]
                         .map(e => Math.round(e.getBoundingClientRect().width))]"""
        )
        if now == last and all(w <= A4_PRINTABLE[0] for w in now[1:]):
            return
        last = now


def _pdf_pages(pdf: bytes) -> int:
    return pdf.count(b"/Type /Page") - pdf.count(b"/Type /Pages")


def _boxes(locator) -> list[dict]:
    return [b for b in (locator.nth(i).bounding_box() for i in range(locator.count())) if b]


def _visible(pg, testid: str) -> list[dict]:
    boxes = [pg.get_by_test_id(testid).nth(i).bounding_box() for i in range(pg.get_by_test_id(testid).count())]
    return [b for b in boxes if b and b["width"] > 1 and b["height"] > 1]


@pytest.mark.parametrize(
    ("name", "query", "charts"),
    [
        ("softmax", "preset=the_cat_sat", 1),
        ("softmax", "preset=the_cat_sat&heads=2", 2),
        ("scores", "preset=the_cat_sat_on_the_mat", 1),
        ("scaling", "preset=the_cat_sat&mask=causal", 1),
        ("output", "preset=the_cat_sat&heads=2", 2),
        ("reading", "preset=she_likes_coffee", 0),
    ],
)
def test_a_step_page_prints_on_one_a4_sheet(page, base_url, name: str, query: str, charts: int) -> None:  # noqa: F811
    open_page(page, base_url, name, query)
    if charts:
        page.locator("[data-testid='stVegaLiteChart'] svg, [data-testid='stVegaLiteChart'] canvas").first.wait_for()
        open_view(page, "as a table")  # beside a heatmap the result's table is drawn once opened: it is printed then
        open_view(page, "Explain a cell")  # a view for the screen: opened, it is still left off the paper
    assert _visible(page, "stSidebar") and _visible(page, "stButton")  # on screen they are there
    page.emulate_media(media="print")
    page.set_viewport_size({"width": A4_PRINTABLE[0], "height": A4_PRINTABLE[1]})
    _settled_layout(page)
    for testid in LEFT_OUT:
        assert not _visible(page, testid), f"{testid} is printed"
    headings = page.locator("[data-testid='stExpander'] summary")  # no expander's heading, open or closed
    assert not [b for b in _boxes(headings) if b["width"] > 1 and b["height"] > 1], "an expander's heading is printed"
    assert not [b for b in _boxes(page.get_by_text("Explain a cell ·")) if b["width"] > 1], "a screen view is printed"
    drawn = _visible(page, "stVegaLiteChart")
    assert len(drawn) == charts, drawn
    assert all(b["width"] >= 200 and b["height"] >= 100 for b in drawn), drawn
    tables = _visible(page, "stDataFrame")
    assert tables and all(b["width"] >= 300 for b in tables), tables
    assert page.locator(".katex").first.is_visible()  # the formula
    shot = page.screenshot(full_page=True)
    pixels = np.asarray(Image.open(io.BytesIO(shot)).convert("L"))
    assert (pixels < 200).mean() > 0.02  # text, heatmap and table are drawn, not a blank sheet
    Image.open(io.BytesIO(shot)).save(SHOTS / f"print_{name}_{query.count('heads') and 'heads'}.png")
    pdf = page.pdf(format="A4", margin=MARGIN, print_background=True)
    assert _pdf_pages(pdf) == 1
