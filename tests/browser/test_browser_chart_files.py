"""A chart taken home from the browser: the "Download chart" menu under a heatmap gives an SVG, a PNG at twice the
SVG's size and the Vega-Lite spec whose data are the page's own numbers (checked against the engine)."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image

import attention
from tests.helpers.browser import SHOTS, open_page


def _take(pg, label: str, tmp_path) -> tuple[bytes, str]:
    pg.get_by_role("button", name="Download chart").first.click()
    with pg.expect_download() as info:
        pg.get_by_role("button", name=label).first.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    pg.keyboard.press("Escape")
    return path.read_bytes(), info.value.suggested_filename


@pytest.mark.parametrize("viewport", [(1400, 1000), (1280, 720)])
def test_the_softmax_heatmap_as_svg_png_and_spec(page, base_url, tmp_path, viewport) -> None:  # noqa: F811
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    open_page(page, base_url, "softmax", "preset=the_cat_sat")
    page.locator("[data-testid='stVegaLiteChart'] svg, [data-testid='stVegaLiteChart'] canvas").first.wait_for()
    menu = page.get_by_role("button", name="Download chart").first
    box = menu.bounding_box()
    assert box and box["width"] >= 60 and box["height"] >= 24  # a readable button under the chart

    svg, svg_name = _take(page, "SVG (for slides and print)", tmp_path)
    root = ET.fromstring(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert svg_name == "the_cat_sat_weights.svg" and {"The", "cat", "sat"} <= set(texts)

    png, png_name = _take(page, "PNG at twice the size", tmp_path)
    image = Image.open(io.BytesIO(png))
    assert png_name == "the_cat_sat_weights.png" and image.size == (round(2 * width), round(2 * height))
    assert len(np.unique(np.asarray(image.convert("RGB")).reshape(-1, 3), axis=0)) > 20  # not blank
    image.save(SHOTS / "chart_file_softmax.png")

    spec, spec_name = _take(page, "Vega-Lite spec with its data", tmp_path)
    values = json.loads(spec)["data"]["values"]
    m = attention.load_preset("the_cat_sat").matrices()
    want = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"]).weights
    got = np.zeros_like(want)
    tokens = ["The", "cat", "sat"]
    for v in values:
        got[tokens.index(v["query"]), tokens.index(v["key"])] = v["value"]
    assert spec_name == "the_cat_sat_weights.vl.json"
    np.testing.assert_array_equal(got, want)  # the page's own numbers, every digit
