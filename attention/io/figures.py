"""A chart as a file for slides and handouts: SVG, PNG at twice the size, or its Vega-Lite spec with its data.

The browser draws the app's charts with vega-embed; these files are drawn from the same spec on the server by
vl-convert (the renderer Altair's ``chart.save`` uses), so a slide shows exactly what the page shows. A spec that
takes its column's width (``"width": "container"``) is given a fixed width first: a file has no column.

    svg_text = svg(charts.heatmap(trace.weights, tokens, tokens))
    png_bytes = png(spec)            # twice the size: sharp on a projector
"""

from __future__ import annotations

import copy
import json

import vl_convert as vlc

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"  # a name only: nothing is fetched, vl-convert has it
CELL_PX = 48  # a file's plot: this much per category of a categorical axis ...
MIN_PLOT, MAX_PLOT, DEFAULT_PLOT = 240, 960, 480  # ... within these bounds (or this when the axis is not counted)
PNG_SCALE = 2
FILE_FONT_PX = 14  # the page grows its text with the chart (the "fs" parameter); a file keeps every label legible


def _categories(spec: dict, channel: str) -> int | None:
    """How many categories the ``channel`` axis of ``spec`` (or of a layer) shows, when a sort list says so."""
    for part in (spec, *spec.get("layer", [])):
        sort = part.get("encoding", {}).get(channel, {}).get("sort")
        if isinstance(sort, list):
            return len(sort)
    return None


def _plot_px(count: int | None) -> int:
    return DEFAULT_PLOT if count is None else max(MIN_PLOT, min(MAX_PLOT, count * CELL_PX))


def standalone(spec: dict, width: int | None = None) -> dict:
    """A copy of ``spec`` fit to stand alone in a file: the plot ``width`` px wide (default: from its columns), as
    tall as its rows ask, labels and legend around it (a file has no column to fit), a white background, the
    schema named; its data stays inline."""
    out = copy.deepcopy(spec)
    out["width"] = width if width is not None else _plot_px(_categories(out, "x"))
    rows = _categories(out, "y")
    if rows is not None or not isinstance(out.get("height"), int):
        out["height"] = _plot_px(rows) if rows is not None else out["width"]
    out["autosize"] = {"type": "pad"}
    out["params"] = [
        {"name": "fs", "value": FILE_FONT_PX} if p.get("name") == "fs" else p for p in out.get("params", [])
    ]
    out.setdefault("background", "white")
    out.setdefault("$schema", SCHEMA)
    return out


def svg(spec: dict, width: int | None = None) -> str:
    """The chart as an SVG document (text)."""
    return vlc.vegalite_to_svg(standalone(spec, width))


def png(spec: dict, width: int | None = None, scale: float = PNG_SCALE) -> bytes:
    """The chart as a PNG, ``scale`` times its size in px (twice by default)."""
    return vlc.vegalite_to_png(standalone(spec, width), scale=scale)


def vega_lite_json(spec: dict, width: int | None = None) -> str:
    """The chart's Vega-Lite spec with its data inline, as JSON: it opens in the Vega editor as it is."""
    return json.dumps(standalone(spec, width), indent=1, allow_nan=False)
