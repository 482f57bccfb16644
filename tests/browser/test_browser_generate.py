"""Real headless Chromium at 1280 × 720 and 1400 × 1000: the Generate page's charts readable and drawn, Next token
pressed several times growing the cache's bars by one row each, the tokens the engine generates, axe-core clean."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from PIL import Image

from attention.model import builtin, induction
from tests.helpers.browser import (
    CHARTS,
    SHOTS,
    check,
    error_texts,
    guarded_context,
    rerun,
    settle,
    wait_readable,
)

VIEWPORTS = [(1280, 720), (1400, 1000)]
NEW_ROW = np.array([0xE6, 0x55, 0x0D])  # the cache chart's colour for the row this step added


def _new_row_right_edge(pg) -> int:
    """The rightmost pixel column of the cache chart drawn in the new row's colour (the bars' end)."""
    el = pg.locator(CHARTS).nth(2)
    el.scroll_into_view_if_needed()
    rgb = np.asarray(Image.open(io.BytesIO(el.screenshot(timeout=10_000))).convert("RGB"), dtype=int)
    near = np.abs(rgb - NEW_ROW).sum(axis=-1) < 40  # (h, w)
    cols = np.flatnonzero(near.sum(axis=0) >= 20)  # columns with a bar's height of it, not the legend's swatch
    assert cols.size, "no bar in the new row's colour"
    return int(cols.max())


def _cache_rows(pg) -> int:
    """The rows each layer's K and V hold, as the caption under the cache chart says."""
    found = re.search(r"Each layer's K and V have (\d+) rows", pg.inner_text("body"))
    assert found, "no cache caption"
    return int(found.group(1))


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def test_next_token_grows_the_cache_in_the_browser(browser, base_url, axe_script, viewport) -> None:  # noqa: F811
    w, h = viewport
    with guarded_context(browser, viewport={"width": w, "height": h}) as context:
        pg = context.new_page()
        pg.goto(f"{base_url}/generate")
        settle(pg)
        wait_readable(pg, 3)
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SHOTS / f"inside_generate_top_{w}.png"), full_page=True)
        ids = [int(i) for i in induction.history("induction")["example"]]  # the first ready-made sequence
        prompt = ids[:15]  # its first half and 3 tokens of the repeat
        made = builtin("induction").generate(prompt, 4)[15:]
        assert made == ids[15:19]  # the engine, run directly, continues the repeat
        pieces = builtin("induction").pieces(made)
        rows, edges = [_cache_rows(pg)], [_new_row_right_edge(pg)]
        assert rows[0] == 15
        for k in range(4):
            with rerun(pg):
                pg.get_by_role("button", name="Next token", exact=True).click()
            assert not error_texts(pg), error_texts(pg)
            wait_readable(pg, 3)
            rows.append(_cache_rows(pg))
            edges.append(_new_row_right_edge(pg))
            assert f"{16 + k} {pieces[k]} ✓" in pg.inner_text("body")
        assert rows == [15, 16, 17, 18, 19]
        assert all(b > a for a, b in zip(edges, edges[1:], strict=False)), edges  # the bars grow, row by row
        pg.locator(CHARTS).nth(2).screenshot(path=str(SHOTS / f"inside_generate_cache_{w}.png"))
        pg.screenshot(path=str(SHOTS / f"inside_generate_after_{w}.png"), full_page=True)
        check(pg, axe_script, f"generate after 4 steps at {w}x{h}")


def test_every_chart_passes_the_visible_checks(browser, base_url) -> None:  # noqa: F811
    """The checks every chart of the step pages passes (tests/helpers/visible.py), at both viewports."""
    from tests.helpers.visible import page_problems

    for viewport in VIEWPORTS:
        problems = page_problems(browser, f"{base_url}/generate", "generate", viewport, lambda pg: wait_readable(pg, 3))
        assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
