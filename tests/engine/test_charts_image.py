"""A heatmap as one image (``charts.Style(image=True)``): each cell's colour is the one Vega's scale gives it (checked
at printed anchor colours), the PNG decodes (by Pillow, an independent reader) to exactly those colours, one pixel a
cell; the spec keeps the cell-by-cell heatmap's axes, tooltips, mask and size; its description names the pattern."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from PIL import Image

from attention import charts

N = 32


def _hex(colour: str) -> list[int]:
    return [int(colour[i : i + 2], 16) for i in (1, 3, 5)]


def _previous_token(n: int = N) -> tuple[np.ndarray, np.ndarray]:
    """A previous-token head's weights (0.9 on the token before, the rest spread) and its causal mask."""
    allowed = np.tril(np.ones((n, n), bool))
    w = np.where(allowed, 0.1, 0.0)
    for i in range(1, n):
        w[i, i - 1] = 0.9
    w = w / w.sum(axis=1, keepdims=True)
    return w, allowed


def _decoded(spec: dict) -> np.ndarray:
    (picture,) = [layer for layer in spec["layer"] if layer["mark"]["type"] == "image"]
    url = picture["data"]["values"][0]["url"]
    assert url.startswith("data:image/png;base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))


def test_colours_at_the_scales_printed_anchors() -> None:
    weights = charts.colour_for("weights", np.zeros((2, 2)))
    got = charts.rgb(np.array([[0.0, 1.0, 0.5, 2.0]]), weights)[0]
    assert got[0].tolist() == _hex("#440154") and got[1].tolist() == _hex("#fde725")
    # 0.5 lies halfway between the 5th and 6th of 10 anchors (at 4/9 and 5/9): their mean, rounded
    mid = np.rint((np.array(_hex("#26828e")) + np.array(_hex("#1f9e89"))) / 2)
    assert got[2].tolist() == mid.tolist()
    assert got[3].tolist() == _hex("#fde725")  # clamped, as the scale's "clamp": true
    scores = charts.colour_for("scores", np.array([[-2.0, 1.0]]))
    assert scores.domain == (-2.0, 0.0, 2.0)
    got = charts.rgb(np.array([[-2.0, 0.0, 2.0, -1.0]]), scores)[0]
    assert [c.tolist() for c in got[:3]] == [_hex(c) for c in charts.DIVERGING]
    assert got[3].tolist() == np.rint((np.array(_hex("#2166ac")) + np.array(_hex("#f7f7f7"))) / 2).tolist()


def test_masked_and_non_finite_cells_are_grey() -> None:
    allowed = np.array([[True, False, True]])
    got = charts.rgb(np.array([[0.3, 0.3, np.nan]]), charts.colour_for("weights", np.zeros(1)), allowed)[0]
    assert got[1].tolist() == _hex(charts.MASKED_COLOR) and got[2].tolist() == _hex(charts.MASKED_COLOR)
    assert got[0].tolist() != _hex(charts.MASKED_COLOR)


def test_the_png_decodes_to_each_cells_colour() -> None:
    w, allowed = _previous_token()
    spec = charts.heatmap(w, [f"t{k}" for k in range(N)], [f"t{k}" for k in range(N)], charts.HEAD.but(image=True),
                          allowed)  # fmt: skip
    pixels = _decoded(spec)
    assert pixels.shape == (N, N, 3)
    want = charts.rgb(w, charts.colour_for("weights", w), allowed)
    assert np.array_equal(pixels, want)
    assert pixels[5, 4].tolist() != pixels[5, 3].tolist()  # the token before stands out
    assert pixels[3, 10].tolist() == _hex(charts.MASKED_COLOR)  # the future is masked


def test_the_image_spec_keeps_the_heatmaps_axes_tooltips_mask_and_size() -> None:
    w, allowed = _previous_token()
    labels = [f"t{k}" for k in range(N)]
    style = charts.HEAD.but(title="layer 1 · head 2", subtitle="previous-token 0.90", row_height=9)
    image, cells = (
        charts.heatmap(w, labels, labels, style.but(image=True), allowed),
        charts.heatmap(w, labels, labels, style, allowed),
    )
    assert image["height"] == cells["height"] and image["width"] == cells["width"] == "container"
    assert image["title"] == cells["title"]
    assert image["data"] == cells["data"]  # every cell's row: its labels, value and mask, for the tooltips
    marks = [layer["mark"]["type"] for layer in image["layer"]]
    assert marks.count("image") == 1 and "text" not in marks
    hover = [layer for layer in image["layer"] if layer["mark"]["type"] == "rect" and "transform" in layer]
    assert hover and all(layer["mark"]["fillOpacity"] == 0 for layer in hover)  # drawn by the image, named by these
    assert {t["field"] for t in hover[0]["encoding"]["tooltip"]} >= {"query", "key", "value"}
    for axis in ("x", "y"):
        assert hover[0]["encoding"][axis]["scale"]["domain"] == labels
    assert "layer 1 · head 2" in image["description"]
    assert "31 of 32 rows put their largest value on the token before" in image["description"]
    json.dumps(image)  # plain JSON: no NaN, nothing Python-only


def _rect_marks(spec: dict) -> list[int]:
    """How many marks each rect layer of ``spec`` draws, read from Vega's own drawing (vl-convert's SVG)."""
    from xml.etree import ElementTree

    from attention.io import figures

    root = ElementTree.fromstring(figures.svg(spec))
    groups = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if "mark-rect" in (g.get("class") or "")]
    return [len(list(g)) for g in groups]


def test_the_tooltip_marks_are_made_once_the_pointer_comes_over_the_picture() -> None:
    """Drawn (no pointer yet), the picture's heatmap holds no per-cell mark: 528 fewer for a causal 32-token head. The
    same spec with the pointer's store filled (what Vega's pointerover does) makes one per unmasked cell."""
    w, allowed = _previous_token()
    labels = [f"t{k}" for k in range(N)]
    spec = charts.heatmap(w, labels, labels, charts.HEAD.but(title="layer 1 · head 2", image=True), allowed)
    unmasked = int(allowed.sum())  # 528
    assert max(_rect_marks(spec)) < 10  # the legend's few stops only
    pointed = json.loads(json.dumps(spec))
    picture = pointed["layer"][0]
    url = picture["data"]["values"][0]["url"]
    picture["params"][0]["select"]["fields"] = ["url"]
    picture["params"][0]["value"] = [{"url": url}]  # the selection as the pointerover makes it: the picture picked
    assert max(_rect_marks(pointed)) == unmasked


def test_a_click_selection_still_picks_a_cell() -> None:
    w, allowed = _previous_token()
    labels = [f"t{k}" for k in range(N)]
    spec = charts.heatmap(w, labels, labels, charts.HEAD.but(image=True, select=True), allowed)
    assert any(p.get("name") == "cell" for p in spec["params"])
    assert any(layer.get("name") == "cells" for layer in spec["layer"])


@pytest.mark.parametrize("n", [3, charts.TEXT_MAX])
def test_small_heatmaps_keep_their_numbers_in_the_cells(n: int) -> None:
    w, allowed = _previous_token(n)
    labels = [f"t{k}" for k in range(n)]
    spec = charts.heatmap(w, labels, labels, charts.HEAD.but(image=True), allowed)
    assert "text" in [layer["mark"]["type"] for layer in spec["layer"]]
    assert "image" not in json.dumps([layer["mark"] for layer in spec["layer"]])


def test_describe_names_the_commonest_place_of_each_rows_largest_value() -> None:
    labels = [f"t{k}" for k in range(6)]
    sink = np.tril(np.ones((6, 6))) * 0.1
    sink[:, 0] = 0.9
    said = charts.describe(sink, labels, labels, np.tril(np.ones((6, 6), bool)))
    # row 1's first token is its own token, and row 2's is the token before: 4 rows left for the first token
    assert "4 of 6 rows put their largest value on the first token" in said
    assert "6 rows × 6 columns" in said
    assert "every cell masked" in charts.describe(np.zeros((2, 2)), labels[:2], labels[:2], np.zeros((2, 2), bool))
