"""Real headless Chromium, as a learner uses it: edit on a result page and see the heatmap move, click a heatmap cell to
have it explained, reload and keep everything, a 64-token overview that fits, and a hostile link that stays text."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import numpy as np

import attention
from tests.helpers import ROOT
from tests.helpers.browser import (
    SHOTS,
    download,
    edit_grid_cell,
    error_texts,
    open_page,
    open_sidebar_expander,
    read_csv,
    rerun,
    settle,
)


def _no_skeletons(pg) -> None:
    for _ in range(100):
        if pg.locator("[data-testid='stSkeleton']").count() == 0:
            break
        pg.wait_for_timeout(50)


def _wait_charts(pg) -> None:
    pg.locator("[data-testid='stVegaLiteChart'] svg, [data-testid='stVegaLiteChart'] canvas").first.wait_for(
        timeout=15000
    )
    _no_skeletons(pg)


def test_edit_w_q_on_the_softmax_page_and_the_heatmap_beside_it_changes(page, base_url) -> None:  # noqa: F811
    open_page(page, base_url, "softmax", "preset=the_cat_sat")
    _wait_charts(page)
    with rerun(page):
        page.get_by_role("tab", name="W_q").click()  # choosing a tab reruns the page with that editor
    _no_skeletons(page)
    grids = page.locator(".mgrid")
    index = [i for i in range(grids.count()) if grids.nth(i).is_visible()]
    # the visible matrix editors: the W_q editor is the last visible one
    edit_grid_cell(page, index[-1], 1, 1, 4, "3")
    _wait_charts(page)
    assert not error_texts(page)
    m = attention.load_preset("the_cat_sat").matrices()
    m["W_q"][1, 1] = 3.0
    want = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"]).weights
    text = page.get_by_test_id("stVegaLiteChart").first.inner_text()  # the numbers written in the heatmap's cells
    missing = [f"{v:#.4g}" for v in want.reshape(-1) if f"{v:#.4g}" not in text]  # 4 significant digits
    assert not missing, (missing, text)
    page.screenshot(path=str(SHOTS / "learner_edit_on_softmax.png"), full_page=True)
    assert not page.console_errors, page.console_errors
    assert not page.external, page.external


def test_clicking_a_heatmap_cell_explains_it(page, base_url) -> None:  # noqa: F811
    open_page(page, base_url, "scores", "preset=the_cat_sat&digits=6")  # the explanation written at 6 digits
    _wait_charts(page)
    chart = page.get_by_test_id("stVegaLiteChart").first
    chart.scroll_into_view_if_needed()
    svg = chart.locator("svg").first
    box = svg.bounding_box()
    # the 3 × 3 rect grid sits right of the row labels: click the cell (sat, cat) by finding its text label
    target = chart.get_by_text(re.compile(r"^23\.14")).first
    tb = target.bounding_box() if target.count() else None
    assert tb is not None, "the score 23.14 (sat → cat) is written in its cell"
    inside = box["x"] <= tb["x"] and tb["x"] + tb["width"] <= box["x"] + box["width"]
    assert inside and box["y"] <= tb["y"] and tb["y"] + tb["height"] <= box["y"] + box["height"], (tb, box)
    with rerun(page):
        page.mouse.click(tb["x"] + tb["width"] / 2, tb["y"] + tb["height"] / 2)
    body = page.inner_text("body")
    t = attention.load_preset("the_cat_sat").compute()
    assert f"S = {t.scores[2, 1]:.6g}" in body, body[-1500:]
    page.screenshot(path=str(SHOTS / "learner_explain_cell.png"), full_page=True)
    assert not page.console_errors, page.console_errors


def test_a_reload_keeps_edits_and_options(page, base_url, tmp_path) -> None:  # noqa: F811
    open_page(page, base_url, "weights", "preset=the_cat_sat")
    edit_grid_cell(page, 0, 0, 0, 4, "2.5")  # W_q[0, 0]
    open_sidebar_expander(page, "Heads, mask and conventions")
    temp = page.get_by_test_id("stSidebar").get_by_role("spinbutton", name="Temperature T (softmax of S/T)")
    temp.fill("2")
    with rerun(page):
        temp.press("Enter")
    assert "temp=2.0" in page.url and "edits=" in page.url
    page.reload()
    settle(page)
    assert "T = 2" in page.get_by_test_id("stSidebar").inner_text()  # the folded conventions' summary
    open_sidebar_expander(page, "Heads, mask and conventions")
    assert (
        page.get_by_test_id("stSidebar").get_by_role("spinbutton", name="Temperature T (softmax of S/T)").input_value()
        == "2"
    )
    open_page(page, base_url, "softmax", page.url.split("?", 1)[1])
    m = attention.load_preset("the_cat_sat").matrices()
    m["W_q"][0, 0] = 2.5
    want = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], temperature=2.0).weights
    _, _, got = read_csv(download(page, "Download weights.csv", tmp_path))
    np.testing.assert_array_equal(got, want)  # the reloaded state, to the last bit
    assert not error_texts(page)


def test_the_64_token_overview_fits_with_every_label_and_the_colour_bar(page, base_url) -> None:  # noqa: F811
    open_page(page, base_url, "", "preset=blank&size=64x16x16")
    _wait_charts(page)
    chart = page.get_by_test_id("stVegaLiteChart").first
    chart.scroll_into_view_if_needed()
    svg_box = chart.locator("svg, canvas").first.bounding_box()
    main = page.get_by_test_id("stMain").bounding_box()
    assert svg_box["x"] + svg_box["width"] <= main["x"] + main["width"] + 1, (svg_box, main)
    text = chart.inner_text()
    assert "weight" in text  # the colour bar's title, whole
    assert "t64" in text and "t41" in text  # keys past t41 are drawn
    page.screenshot(path=str(SHOTS / "learner_overview_64.png"), full_page=True)


def test_a_markdown_link_stays_text_and_fetches_nothing(page, base_url) -> None:  # noqa: F811
    evil = "![x](http://127.0.0.2:9/p.png)"
    open_page(page, base_url, "softmax", f"preset={evil}&seed={evil}")
    page.wait_for_timeout(1000)
    assert not page.external, page.external  # no request to the outside address
    assert page.locator("img[src*='127.0.0.2']").count() == 0
    assert "which does not exist" in page.inner_text("body")
    assert evil in page.inner_text("body")  # shown literally


def test_markdown_in_tokens_and_a_preset_title_stays_text(page, base_url, tmp_path) -> None:  # noqa: F811
    image = "![x](http://127.0.0.2:9/a.png)"
    html = "<img src='http://127.0.0.2:9/b.png'>"
    open_page(page, base_url, "softmax", "preset=the_cat_sat&tokens=" + quote(f"{image} {html} sat"))
    page.wait_for_timeout(1000)
    body = page.inner_text("body")
    assert image in body and "<img" in body  # the tokens shown as typed (reading lines, explanations)
    assert page.locator("img[src*='127.0.0.2']").count() == 0
    # a preset file whose title and tokens are Markdown and HTML, loaded through the sidebar's uploader
    preset = json.loads((ROOT / "presets" / "the_cat_sat.json").read_text(encoding="utf-8"))
    preset["title"] = f"**bold** {image}"
    preset["tokens"] = [image, html, "sat"]
    path = tmp_path / "homework [1](http:evil).json"
    path.write_text(json.dumps(preset), encoding="utf-8")
    open_sidebar_expander(page, "Save, share, export")
    with rerun(page):
        page.get_by_test_id("stSidebar").locator("input[type='file']").first.set_input_files(str(path))
    side = page.get_by_test_id("stSidebar").inner_text()
    assert f"**bold** {image}" in side, side[:1500]  # the title as typed, not bold, no image
    assert path.name in side  # the file's name, as typed
    assert page.locator("img[src*='127.0.0.2']").count() == 0
    assert not page.external, page.external
    page.screenshot(path=str(SHOTS / "learner_markdown_stays_text.png"), full_page=True)
