"""Real headless Chromium: what a person met on the model pages (issue 33 §6). Generate's model chooser shows the
model in use after a model was chosen on Every head (and choosing the shipped one then opens it); on Watch it learn
the "snapshot shown" and "phase change" labels never print on top of each other."""

from __future__ import annotations

import os
import re

import pytest

from tests.helpers.browser import (
    SHOTS,
    choose_model,
    guarded_context,
    head_button,
    nav,
    rerun,
    settle,
    streamlit_server,
)


@pytest.fixture(scope="module")
def served(gpt2):  # noqa: F811
    """A server whose owner lists the tiny GPT-2 as "tiny" (the environment's setting); its base URL."""
    old = os.environ.get("ATTENTION_MODELS")
    os.environ["ATTENTION_MODELS"] = f"tiny={gpt2[0]}"
    try:
        with streamlit_server() as url:  # the server copies the environment when it starts
            yield url
    finally:
        if old is None:
            os.environ.pop("ATTENTION_MODELS")
        else:
            os.environ["ATTENTION_MODELS"] = old


def _model_box(pg):
    return pg.get_by_test_id("stSelectbox").filter(has_text="Model").first


def _shown(pg) -> str:
    """The model the chooser shows: its input's value."""
    return _model_box(pg).locator("input").first.input_value()


def test_generates_chooser_shows_the_model_chosen_on_every_head(browser, served) -> None:
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as context:
        pg = context.new_page()
        pg.goto(f"{served}/every_head")
        settle(pg)
        choose_model(pg, "tiny (on this server)")
        assert "tiny (on this server)" in _shown(pg)
        nav(pg, "Generate")
        shown = _shown(pg)
        assert "tiny (on this server)" in shown and "shipped" not in shown, shown
        assert "tiny, a checkpoint on this server" in pg.inner_text("body")
        typed = pg.get_by_label(re.compile("^Type a text")).input_value()  # the text box too: the record's text
        assert typed == "The cat sat on the mat.The cat sat on the mat.", typed
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SHOTS / "model_pages_generate_chooser_1280.png"))
        choose_model(pg, "The shipped induction model")  # it opens: the page now describes the shipped model
        assert "The shipped model, attention only" in pg.inner_text("body")
        assert "shipped" in _shown(pg)


LABELS_JS = """
() => {
  const el = document.querySelectorAll("[data-testid='stVegaLiteChart']")[0];
  const plot = el.querySelector("svg.marks .role-frame.root > g > path.background").getBoundingClientRect();
  const boxes = [...el.querySelectorAll("svg.marks text")]
    .filter(t => /\\(step \\d+\\)$/.test(t.textContent) && t.getClientRects().length)
    .map(t => { const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.top, r.right, r.bottom]; });
  return {plot: [plot.left, plot.top, plot.right, plot.bottom], boxes};
}
"""


def _to_snapshot(pg, k: int, count: int) -> None:
    """Move the snapshot slider to ``k`` (1 to ``count``) with the keyboard, and wait for that snapshot's run."""
    slider = pg.get_by_role("slider").first
    slider.scroll_into_view_if_needed()
    slider.focus()
    slider.press("Home")
    for _ in range(k - 1):
        slider.press("ArrowRight")
    pg.wait_for_function(f"() => document.body.innerText.includes('Snapshot {k} of {count}:')", timeout=60_000)
    settle(pg)


@pytest.mark.parametrize("viewport", [(1280, 720), (1400, 1000)], ids=["1280x720", "1400x1000"])
def test_the_loss_charts_step_labels_never_overlap(browser, base_url, viewport) -> None:  # noqa: F811
    """At the marked snapshot (both rules on one step), the snapshots either side of it and the first and last, the
    rules' labels ("snapshot shown (step s)" and the marked step's) have boxes that do not overlap, inside the plot."""
    from attention.model import induction

    h = induction.history("induction")
    count, marked = len(h["step"]), induction.phase_change(h)
    w, ht = viewport
    with guarded_context(browser, viewport={"width": w, "height": ht}) as context:
        pg = context.new_page()
        pg.goto(f"{base_url}/watch_it_learn")
        settle(pg)
        for k in (1, marked + 1, marked, marked + 2, count):
            if k != 1:
                _to_snapshot(pg, k, count)
            pg.locator("[data-testid='stVegaLiteChart']").first.scroll_into_view_if_needed()
            got = pg.evaluate(LABELS_JS)
            (pl, pt, pr, pb), boxes = got["plot"], got["boxes"]
            assert len(boxes) == 2, (k, boxes)
            (a, al, at, ar, ab), (b, bl, bt, br, bb) = boxes
            assert ar <= bl or br <= al or ab <= bt or bb <= at, f"snapshot {k}: {a!r} and {b!r} overlap: {boxes}"
            for text, left, top, right, bottom in boxes:
                assert pl - 1 <= left and right <= pr + 1 and pt - 1 <= top and bottom <= pb + 1, (k, text, got)
            if k == marked + 1:
                pg.locator("[data-testid='stVegaLiteChart']").first.screenshot(
                    path=str(SHOTS / f"model_pages_watch_labels_{w}.png")
                )


def test_opening_a_head_on_the_step_pages_updates_the_sidebar_at_once(browser, base_url) -> None:  # noqa: F811
    """The press reruns the whole page, not only the heads' fragment: the sidebar's preset names the model's head
    straight away (before, it showed the old preset until the next page switch)."""
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        pg.goto(f"{base_url}/every_head")
        settle(pg)
        preset = pg.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").first.locator("input").first
        before = preset.input_value()
        assert "model" not in before.lower(), before
        button = head_button(pg, "Open layer 2 · head 1 on the step pages")
        with rerun(pg):
            button.click()
        pg.get_by_text("The step pages now show layer 2 · head 1").wait_for(timeout=30_000)
        settle(pg)
        after = preset.input_value()
        assert after != before and "induction" in after.lower(), (before, after)
