"""Real headless Chromium on the Learn page: train, see the loss curve and the learned heatmap, use the weights, and
find the same top weight on the Softmax page."""

from __future__ import annotations

import attention
from attention import charts, learn
from attention.ui.core.learned import LearnSettings
from tests.helpers.browser import SHOTS, error_texts, nav, open_page, rerun


def _charts_drawn(pg, count: int) -> None:
    charts = pg.locator("[data-testid='stVegaLiteChart'] svg, [data-testid='stVegaLiteChart'] canvas")
    for _ in range(200):
        if charts.count() >= count and pg.locator("[data-testid='stSkeleton']").count() == 0:
            return
        pg.wait_for_timeout(50)
    raise AssertionError(f"{charts.count()} charts drawn, wanted {count}")


def test_train_use_the_weights_and_see_them_on_the_softmax_page(page, base_url) -> None:  # noqa: F811
    SHOTS.mkdir(parents=True, exist_ok=True)
    open_page(page, base_url, "learn", "preset=the_cat_sat")
    with rerun(page):
        page.get_by_role("button", name="Train").click()
    _charts_drawn(page, 3)  # the loss curve, the learned weights, the target
    body = page.inner_text("body")
    assert "Last run" in body and "Learned weights after step 300" in body, body[-2000:]
    main = page.get_by_test_id("stMain")
    loss = main.get_by_test_id("stVegaLiteChart").first
    assert "loss" in loss.inner_text().lower()
    learned = main.get_by_test_id("stVegaLiteChart").nth(1).inner_text()
    # previous token: "cat" → "The" and "sat" → "cat" carry nearly all their row's weight (written in the cells);
    # the page's default settings, trained here independently (a run is deterministic)
    d = LearnSettings()
    p = attention.load_preset("the_cat_sat")
    w = learn.train(
        p.tokens, p.matrices(), p.options, d.target, learn=d.learn, optimiser=d.optimiser, lr=d.lr, steps=d.steps
    ).weights
    fmt = charts.decimals_for(w, 4)
    top = [fmt.format(w[1, 0]), fmt.format(w[2, 1])]
    assert all(v in learned for v in top), (top, learned)
    page.screenshot(path=str(SHOTS / "learn_trained.png"), full_page=True)
    with rerun(page):
        page.get_by_role("button", name="Use these weights").click()
    assert "now hold the learned numbers" in page.inner_text("body")
    nav(page, "Softmax")
    _charts_drawn(page, 1)
    weights = page.get_by_test_id("stMain").get_by_test_id("stVegaLiteChart").first.inner_text()
    assert all(v in weights for v in top), (top, weights)
    page.screenshot(path=str(SHOTS / "learn_used_on_softmax.png"), full_page=True)
    assert not error_texts(page)
    assert not page.console_errors, page.console_errors
    assert not page.external, page.external
