"""Real headless Chromium, at 1280 × 720 and 1400 × 1000: the Patching page's ready-made pair, its attribution
patching estimate drawn at once, patched exactly in the background, its progress drawn, then its four heatmaps (the
estimate's and the exact ones, for the heads and for the stream) readable (box, plot, 12 px text, nothing cut,
pixels not blank), their labels drawn (every layer × head, every layer × position with its token), the journey's
heads named, and axe-core finding no critical or serious violation."""

from __future__ import annotations

import pytest

from attention.model import builtin, induction
from tests.helpers.browser import CHARTS, check, error_texts, guarded_context, rerun, settle, shot, wait_readable
from tests.helpers.visible import CANVAS_HOOK, VIEWPORT_IDS, VIEWPORTS, chart_texts, check_page


def _patch(pg) -> None:
    """Press the button and wait for the four heatmaps."""
    button = pg.get_by_role("button", name="Patch exactly: every head and every stream row")
    button.scroll_into_view_if_needed()
    with rerun(pg):
        button.click()
    pg.get_by_text("What each patch restores").wait_for(timeout=60_000)
    settle(pg)
    pg.get_by_text("Single patches do not add up").wait_for(timeout=60_000)
    settle(pg)
    wait_readable(pg, 4, seconds=30)


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=VIEWPORT_IDS)
def test_the_ready_made_pair_estimated_and_patched_draws_four_readable_labelled_heatmaps(
    browser,  # noqa: F811
    base_url,  # noqa: F811
    axe_script,  # noqa: F811
    viewport,
) -> None:
    w, h = viewport
    with guarded_context(browser, viewport={"width": w, "height": h}) as context:
        pg = context.new_page()
        pg.add_init_script(CANVAS_HOOK)
        pg.goto(f"{base_url}/patching")
        settle(pg)
        assert not error_texts(pg), error_texts(pg)
        shot(pg, f"patching_top_{w}")
        _patch(pg)
        problems = check_page(pg, "patching", "1 head, 6 tokens", viewport)
        assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
        estimated, heads, estimated_streams, streams = chart_texts(pg)
        assert any("Each head's output: the estimate" in t for t in estimated), estimated
        assert any("The stream entering each layer: the estimate" in t for t in estimated_streams), estimated_streams
        for label in ("Each head's output patched", "layer 1", "layer 2", "head 1", "head 2"):
            assert any(label in t for t in heads), (label, heads)
        pieces = builtin("induction").pieces([int(i) for i in induction.history("induction")["example"]])
        drawn = set(streams)
        assert {"into layer 1", "into layer 2"} <= drawn, streams
        shown = [f"{k + 1} {t}" for k, t in enumerate(pieces) if f"{k + 1} {t}" in drawn]
        assert len(shown) >= 12 and "12 ba" in shown, (shown, streams)  # the changed position is always labelled
        body = pg.inner_text("body")
        assert "The heads that restore the most: layer 1 · head 2" in body
        assert "layer 2 · head 1" in body.split("The heads that restore the most:")[1][:80]
        shot(pg, f"patching_heads_{w}", pg.locator(CHARTS).nth(0))
        shot(pg, f"patching_streams_{w}", pg.locator(CHARTS).nth(1))
        check(pg, axe_script, f"patching at {w}x{h}")
