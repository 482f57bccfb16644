"""Real headless Chromium: a Qwen3 head (a GGUF file the server lists, d_head 128) opened on the step pages by its
link; the Q·K·V page shows the QK-norm step (its formula, q before and after) and the gains' grid at 1400 × 1000; a
gain typed into the grid the way a person does changes the pass (the caption names it, the address carries it) and
a bad one is named where the eye is, changing nothing; axe-core on the page."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from attention.ui.address.inside import head_param
from attention.ui.core import models
from tests.helpers import gguf_files
from tests.helpers.browser import (
    EDITOR,
    SHOTS,
    check,
    editor_cell,
    error_texts,
    grid_cells,
    guarded_context,
    landed,
    ready,
    rerun,
    server_listing,
    type_in_cell,
)


@pytest.fixture(scope="module")
def qwen3_url(tmp_path_factory: pytest.TempPathFactory):
    """A server listing a tiny Qwen3 as "q3" (the test process lists it too: the head's link is made here)."""
    path = gguf_files.write(tmp_path_factory.mktemp("q3") / "q3.gguf", "qwen3")
    with server_listing(f"q3={path}") as url:
        yield url


def _gains_grid(pg) -> int:  # noqa: ANN001 - a Playwright page
    """The index, among the page's matrix editors, of the gains' grid (its key starts with "gains.")."""
    grids = pg.locator(EDITOR)
    inside = "e => !!e.closest(\"[class*='st-key-gains']\")"
    return next(i for i in range(grids.count()) if grids.nth(i).evaluate(inside))


def test_a_qwen3_heads_norm_step_and_its_gains_edited_in_the_grid(browser, qwen3_url, axe_script) -> None:  # noqa: ANN001
    ids = models.first_text("server:q3")[1]
    mh = head_param(models.HeadRef("server:q3", ids, 1, 0))
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        pg.goto(f"{qwen3_url}/qkv?" + urlencode({"preset": "model", "mh": mh}))
        ready(pg)
        assert not error_texts(pg), error_texts(pg)
        said = pg.get_by_text("The norm (QK-norm).").first
        said.scroll_into_view_if_needed()
        pg.evaluate("y => window.scrollBy(0, y)", said.bounding_box()["y"] - 80)  # the step's prose at the top
        pg.screenshot(path=str(SHOTS / "qk_norm_qkv_1400x1000.png"))
        body = pg.inner_text("body")
        assert "q = X·W_q before the norm" in body and "q after the norm" in body
        assert "They are layer 2's, shared by all its heads" in body
        cells = grid_cells(pg, "gains")
        assert cells[0][1:] == ["g_q", "g_k"] and cells[1][0] == "c1", cells[:2]
        grid = _gains_grid(pg)
        pg.locator(EDITOR).nth(grid).screenshot(path=str(SHOTS / "qk_norm_gains_grid.png"))
        with rerun(pg):  # a refused value: no echo to wait for but the run's message
            editor_cell(pg, grid, 0, 0).dblclick()
            pg.keyboard.type("abc")
            pg.keyboard.press("Enter")
        landed(pg, grid)
        ready(pg)
        assert any("g_q c1 is 'abc', which is not a number" in e for e in error_texts(pg)), error_texts(pg)
        assert "qkn" not in parse_qs(urlparse(pg.url).query)
        type_in_cell(pg, _gains_grid(pg), 0, 0, 2, "2.5")
        assert not error_texts(pg), error_texts(pg)
        assert "Changed g_q c1" in pg.inner_text("body")
        assert parse_qs(urlparse(pg.url).query)["qkn"][0].startswith("q:2.5,")
        assert grid_cells(pg, "gains")[1][1].startswith("2.5")
        check(pg, axe_script, "qk-norm qkv")


def test_a_gain_typed_at_once_on_a_throttled_page_lands(browser, qwen3_url) -> None:  # noqa: ANN001
    """Chromium's CPU throttled 4×: a double-click on a gain, "3.5" and Enter typed at once (not waiting for
    anything). The gains' grid is the one matrix editor: the value is the page's until the server echoes it, so it
    lands in its cell and in the address."""
    ids = models.first_text("server:q3")[1]
    mh = head_param(models.HeadRef("server:q3", ids, 1, 0))
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        context.new_cdp_session(pg).send("Emulation.setCPUThrottlingRate", {"rate": 4})
        pg.goto(f"{qwen3_url}/qkv?" + urlencode({"preset": "model", "mh": mh}))
        ready(pg)
        grid = _gains_grid(pg)
        cell = editor_cell(pg, grid, 1, 1)  # g_k, c2
        cell.scroll_into_view_if_needed()
        cell.dblclick()
        pg.keyboard.type("3.5")
        pg.keyboard.press("Enter")
        landed(pg, grid)
        ready(pg)
        shown = grid_cells(pg, "gains")[2][2]
        query = parse_qs(urlparse(pg.url).query)
    assert shown.startswith("3.5"), shown
    k_gains = query.get("qkn", [""])[0].partition("k:")[2].split(",")  # the address carries it: g_k's 2nd gain
    assert k_gains[1] == "3.5", query
