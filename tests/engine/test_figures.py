"""Charts as files (SVG, PNG at twice the size, the Vega-Lite spec with its data), drawn on the server from the
same specs the pages draw: sized, readable, not blank, user text kept as text."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image

from attention import charts, self_attention
from attention.io import figures

TOKENS = ["The", "cat", "<b>sat</b>"]


@pytest.fixture(scope="module")
def trace():
    rng = np.random.default_rng(0)
    X, Wq, Wk, Wv = rng.normal(size=(3, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    return self_attention(X, Wq, Wk, Wv, tokens=TOKENS, mask="causal", heads=2)


def _svg_size(text: str) -> tuple[float, float]:
    root = ET.fromstring(text)
    return float(root.get("width")), float(root.get("height"))


def _texts(text: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(text).iter("{http://www.w3.org/2000/svg}text")]


def test_a_heatmap_as_svg_is_sized_for_a_slide_and_keeps_tokens_as_text(trace) -> None:
    spec = charts.heatmap(trace.weights[0], TOKENS, TOKENS)
    assert spec["width"] == "container"  # as the page draws it: the file must choose a width
    text = figures.svg(spec)
    width, height = _svg_size(text)
    assert 240 + 60 <= width <= 960 + 300 and height >= 240
    texts = _texts(text)
    assert all(texts.count(t) >= 2 for t in TOKENS), texts  # every row and column label, none dropped for overlap
    assert "<b>sat</b>" in texts  # the token is the text "<b>sat</b>", not markup
    assert "<b>" not in text  # escaped in the document
    assert len(ET.fromstring(text).findall(".//{http://www.w3.org/2000/svg}path")) >= 6  # one cell per unmasked pair


def test_the_png_is_twice_the_svg_and_not_blank(trace) -> None:
    stack = trace.weights[0] if trace.weights.ndim == 4 else trace.weights  # (h, n, n)
    spec = charts.heatmap(stack[1], TOKENS, TOKENS, charts.HEAD.but(title="head 2", row_height=40))  # as heads.show
    width, height = _svg_size(figures.svg(spec))
    image = Image.open(io.BytesIO(figures.png(spec))).convert("RGB")
    assert image.size == (round(2 * width), round(2 * height))
    pixels = np.asarray(image).reshape(-1, 3)
    assert len(np.unique(pixels, axis=0)) > 20  # the colour scale, text and grid: far from one flat colour
    assert (pixels < 250).any(axis=1).mean() > 0.05  # more than 5 % of it is drawn on


def test_the_spec_download_carries_its_data_and_opens_alone(trace) -> None:
    spec = charts.heatmap(trace.weights[0], TOKENS, TOKENS)
    loaded = json.loads(figures.vega_lite_json(spec))
    values = loaded["data"]["values"]
    assert len(values) == 9  # every (query, key) pair, masked ones flagged
    got = {(v["query"], v["key"]): v["value"] for v in values if not v.get("masked")}
    want = np.asarray(trace.weights[0])
    if want.ndim == 3:
        want = want[0]
    for (q, k), value in got.items():
        assert value == pytest.approx(want[TOKENS.index(q), TOKENS.index(k)], abs=0)
    assert loaded["$schema"].startswith("https://vega.github.io/schema/vega-lite/v5")
    assert isinstance(loaded["width"], int) and loaded["background"] == "white"
    assert spec["width"] == "container"  # the page's own spec is left as it was


def test_a_width_asked_for_is_the_width_drawn(trace) -> None:
    spec = charts.heatmap(trace.weights[0], TOKENS, TOKENS)
    narrow, wide = (_svg_size(figures.svg(spec, width=w))[0] for w in (400, 800))
    assert wide - narrow == pytest.approx(400, abs=2)
