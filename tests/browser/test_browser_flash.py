"""Real headless Chromium: the FlashAttention lab walked to its last tile, its chart and tables drawn and readable."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from tests.helpers.browser import SHOTS, error_texts, guarded_context, open_page, rerun, settle


def drawn(locator) -> tuple[float, float, int]:
    """(width, height, distinct colours) of an element as the browser paints it."""
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()
    assert box is not None
    img = Image.open(io.BytesIO(locator.screenshot())).convert("RGB")
    return box["width"], box["height"], len(img.getcolors(maxcolors=1 << 24) or ())


@pytest.mark.parametrize("size", [(1400, 1000), (1280, 720)], ids=["1400x1000", "1280x720"])
def test_the_flash_lab_walks_to_its_last_tile_and_draws_it(browser, base_url, size) -> None:  # noqa: F811
    with guarded_context(browser, viewport={"width": size[0], "height": size[1]}) as context:
        page = context.new_page()
        open_page(page, base_url, "flash", "preset=the_cat_sat")
        page.get_by_text("Tile 1 of ").first.wait_for(timeout=20000)
        with rerun(page):
            page.get_by_role("button", name="Next tile").first.click()
        page.get_by_text("Tile 2 of ").first.wait_for(timeout=20000)
        with rerun(page):
            page.get_by_role("button", name="Last tile").first.click()
        page.get_by_text("its output is final").first.wait_for(timeout=20000)
        body = page.inner_text("body")
        assert "equal to float64 rounding" in body
        chart = page.locator("[data-testid='stVegaLiteChart']").first
        chart.locator("svg, canvas").first.wait_for(timeout=20000)
        w, h, colours = drawn(chart)
        assert w >= 150 and h >= 150 and colours > 20, (w, h, colours)
        tables = page.locator("[data-testid='stDataFrame']")
        assert tables.count() >= 2
        for i in range(tables.count()):
            w, h, colours = drawn(tables.nth(i))
            assert w >= 200 and h >= 40 and colours > 5, (i, w, h, colours)
        assert not error_texts(page)
        page.screenshot(path=str(SHOTS / f"flash_last_tile_{size[0]}x{size[1]}.png"), full_page=True)


def test_the_qkv_page_shows_shared_key_value_blocks_and_the_kv_cache(browser, base_url) -> None:  # noqa: F811
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as context:
        page = context.new_page()
        open_page(page, base_url, "qkv", "heads=4&kv=2")
        for label in ("as a table", "Key/value heads: which query heads", "KV cache: the bytes"):  # drawn when opened
            boxes = page.get_by_test_id("stMain").get_by_test_id("stExpander").filter(has_text=label)
            for i in range(boxes.count()):
                if not boxes.nth(i).locator("details[open]").count():
                    with rerun(page):
                        boxes.nth(i).locator("summary").click()
        page.get_by_text("grouped-query attention").first.wait_for(timeout=20000)
        page.get_by_text("KV cache").first.wait_for(timeout=20000)
        settle(page)
        tables = page.locator("[data-testid='stDataFrame']")
        tables.nth(5).wait_for(timeout=20000)
        assert tables.count() >= 6  # Q, K, V, the shared blocks, the cache for this state and for a described model
        for i in range(tables.count()):
            w, h, colours = drawn(tables.nth(i))
            assert w >= 200 and h >= 40 and colours > 5, (i, w, h, colours)
        assert not error_texts(page)
        page.get_by_text("Key/value heads ·").first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "qkv_grouped_heads.png"), full_page=True)


@pytest.mark.parametrize("size", [(1400, 1000), (1280, 720)], ids=["1400x1000", "1280x720"])
def test_the_softmax_page_with_a_source_draws_queries_by_source_keys(browser, base_url, size) -> None:  # noqa: F811
    with guarded_context(browser, viewport={"width": size[0], "height": size[1]}) as context:
        page = context.new_page()
        open_page(page, base_url, "softmax", "preset=the_cat_sat&src=le+chat+cat+assis+sur")
        page.get_by_text("Cross-attention: queries from the sentence").first.wait_for(timeout=20000)
        chart = page.locator("[data-testid='stVegaLiteChart']").first
        chart.locator("svg, canvas").first.wait_for(timeout=20000)
        w, h, colours = drawn(chart)
        assert w >= 150 and h >= 100 and colours > 20, (w, h, colours)
        text = chart.inner_text() if chart.locator("svg").count() else ""
        assert not text or ("assis" in text and "sat" in text), text  # an SVG's axis labels: source keys, queries
        assert not error_texts(page)
        page.screenshot(path=str(SHOTS / f"softmax_cross_{size[0]}x{size[1]}.png"), full_page=False)
