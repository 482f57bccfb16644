"""Real headless Chromium, at 1400 × 1000 and 1280 × 720: the "Watch it learn" page's charts are readable and drawn,
the snapshot slider changes the head charts and the scores beside them (the record's own numbers), a live training
run's progress bar moves and Cancel stops it, and axe-core finds no critical or serious violation."""

from __future__ import annotations

import hashlib
import io
import re

import numpy as np
import pytest
from PIL import Image

from attention.model import induction
from tests.helpers.browser import (
    CHARTS,
    SHOTS,
    check,
    error_texts,
    guarded_context,
    settle,
    wait_readable,
)

VIEWPORTS = [(1400, 1000), (1280, 720)]
HEADS = 4  # 2 layers × 2 heads
H = induction.history("induction")


def _pixels(pg, index: int) -> tuple[np.ndarray, dict]:
    el = pg.locator(CHARTS).nth(index)
    el.scroll_into_view_if_needed()
    box = el.bounding_box()
    grey = np.asarray(Image.open(io.BytesIO(el.screenshot(timeout=10_000))).convert("L"), dtype=float)
    return grey, box


def _head_digests(pg) -> list[str]:
    """A digest of each head chart's pixels (charts 1 to 4; chart 0 is the loss curves)."""
    return [hashlib.sha1(_pixels(pg, k)[0].tobytes()).hexdigest() for k in range(1, 1 + HEADS)]


def _score_lines(pg) -> list[str]:
    body = pg.inner_text("body")
    return re.findall(r"layer \d · head \d: previous-token [\d.]+ · induction [\d.]+", body)


def _open(pg, base_url: str) -> None:  # noqa: F811
    pg.goto(f"{base_url}/watch_it_learn")
    settle(pg)
    _ready(pg)


def _ready(pg) -> None:
    """The loss chart and every head's chart readable (a live run may still be drawing more)."""
    wait_readable(pg, 1 + HEADS, exact=False, seconds=30)


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=["1400x1000", "1280x720"])
def test_charts_readable_the_slider_changes_the_heads_and_axe_passes(
    browser,  # noqa: F811
    base_url,  # noqa: F811
    axe_script,  # noqa: F811
    viewport,
) -> None:
    w, h = viewport
    with guarded_context(browser, viewport={"width": w, "height": h}) as context:
        pg = context.new_page()
        _open(pg, base_url)
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.get_by_role("slider").first.scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / f"watch_it_learn_top_{w}.png"))
        pg.locator(CHARTS).first.screenshot(path=str(SHOTS / f"watch_it_learn_losses_{w}.png"))
        assert not error_texts(pg), error_texts(pg)
        before = _head_digests(pg)
        assert _score_lines(pg)[2] == (
            f"layer 2 · head 1: previous-token {H['previous'][0, 1, 0]:.2f} · induction {H['induction'][0, 1, 0]:.2f}"
        )
        # move the slider with the keyboard to the last snapshot: the heads' charts and scores change
        slider = pg.get_by_role("slider").first
        slider.focus()
        last = len(H["step"])
        slider.press("End")
        pg.wait_for_function(
            f"() => document.body.innerText.includes('Snapshot {last} of {last}: after {H['step'][-1]} training')",
            timeout=60_000,
        )
        settle(pg)
        wait_readable(pg, 1 + HEADS, exact=False, seconds=30)
        after = _head_digests(pg)
        assert all(a != b for a, b in zip(before, after, strict=True)), "a head chart did not change"
        assert _score_lines(pg)[2] == (
            f"layer 2 · head 1: previous-token {H['previous'][-1, 1, 0]:.2f} · induction {H['induction'][-1, 1, 0]:.2f}"
        )
        pg.locator(CHARTS).nth(3).scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / f"watch_it_learn_heads_{w}.png"))
        check(pg, axe_script, f"watch_it_learn at {w}x{h}")


def test_training_live_the_bar_moves_and_cancel_stops_it(browser, base_url) -> None:  # noqa: F811
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as context:
        pg = context.new_page()
        _open(pg, base_url)
        pg.get_by_role("button", name="Train a model from scratch").click()
        bar = pg.get_by_test_id("stProgress")
        bar.wait_for(timeout=60_000)

        def step() -> int:
            text = bar.inner_text()
            found = re.search(r"Step ([\d,]+) of", text)
            return int(found.group(1).replace(",", "")) if found else -1

        first = step()
        pg.wait_for_function(
            "n => { const t = document.querySelector(\"[data-testid='stProgress']\")?.innerText || '';"
            " const m = t.match(/Step ([\\d,]+) of/); return m && Number(m[1].replace(/,/g, '')) > n + 20; }",
            arg=first,
            timeout=60_000,
        )
        assert step() > first  # the bar moved while the run went on
        wait_readable(pg, 1 + HEADS + 1, exact=False, seconds=30)  # the live loss curve is drawn too
        pg.get_by_text("Your model's training loss").first.wait_for(state="attached")
        pg.screenshot(path=str(SHOTS / "watch_it_learn_training_1280.png"))
        pg.get_by_role("button", name="Cancel").click()
        pg.get_by_text("Cancelled at step").wait_for(timeout=60_000)
        settle(pg)
        stopped = step()
        assert 0 < stopped < 1000
        pg.wait_for_timeout(1500)  # three polls' time: nothing goes on after a cancel
        assert step() == stopped
        assert not pg.get_by_role("button", name="Cancel").count()
        assert not pg.get_by_role("button", name="Open it on Every head").count()
        pg.screenshot(path=str(SHOTS / "watch_it_learn_cancelled_1280.png"))


def test_a_finished_run_opens_on_every_head(browser, base_url) -> None:  # noqa: F811
    """The whole live run in the browser: the page redraws itself when the run ends (the timer stops), says what it
    reached, and its button opens the trained model on Every head."""
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        _open(pg, base_url)
        pg.get_by_role("button", name="Train a model from scratch").click()
        opener = pg.get_by_role("button", name="Open it on Every head")
        opener.wait_for(timeout=180_000)  # 1,000 steps: about 8 s on an idle machine, longer on a shared one
        settle(pg)
        said = pg.get_by_test_id("stAlertContentSuccess").inner_text()
        assert "Trained 1,000 steps in" in said and "the strongest induction head is layer 2" in said, said
        assert "Step 1,000 of 1,000" in pg.get_by_test_id("stProgress").inner_text()
        opener.scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / "watch_it_learn_trained_1400.png"))
        opener.click()
        pg.get_by_role("heading", name="Inside a model: every head").wait_for(timeout=60_000)
        settle(pg)
        assert not error_texts(pg), error_texts(pg)
        assert pg.locator(CHARTS).count() == 2  # Every head: one chart a layer, each holding its layer's 2 heads


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=["1400x1000", "1280x720"])
def test_every_chart_passes_the_visible_checks(browser, base_url, viewport) -> None:  # noqa: F811
    """The checks every chart of the step pages passes (tests/helpers/visible.py): a readable box and plot, 12 px
    text, nothing cut or clipped, sized to its column, the toolbar covering no text, non-blank pixels."""
    from tests.helpers.visible import page_problems

    url = f"{base_url}/watch_it_learn"
    problems = page_problems(browser, url, "watch_it_learn", viewport, _ready)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
