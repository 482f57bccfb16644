"""Reading what a heatmap draws from what the server sends: its data rows, and per cell the fill Vega-Lite gives it
(filters, a constant colour or a quantitative colour scale), the value it encodes and the text written on it."""

from __future__ import annotations

import json
import re

import numpy as np
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

from attention import charts


def spec_of(el) -> dict:
    return json.loads(el.proto.spec)


def title_of(el) -> str:
    """The chart's title; for a heatmap whose title follows its width (``fits ? "title" : "title · too narrow…"``,
    when its cells would carry numbers), the title it has when they fit."""
    t = spec_of(el).get("title", "")
    text = t.get("text", "") if isinstance(t, dict) else str(t)
    if isinstance(text, dict):
        found = re.search(r'\? ("(?:[^"\\]|\\.)*") :', text.get("expr", ""))
        return json.loads(found.group(1)) if found else ""
    return text


def subtitle_of(el) -> str:
    t = spec_of(el).get("title", "")
    return t.get("subtitle", "") if isinstance(t, dict) else ""


def rows_of(el) -> list[dict]:
    """The chart's data rows as the browser gets them: inline values, the element's Arrow data, or named datasets."""
    spec = spec_of(el)
    data = spec.get("data", {})
    if isinstance(data.get("values"), list):
        return data["values"]
    if el.proto.HasField("data") and el.proto.data.data:
        return convert_arrow_bytes_to_pandas_df(el.proto.data.data).to_dict("records")
    for d in el.proto.datasets:
        if d.name == data.get("name"):
            return convert_arrow_bytes_to_pandas_df(d.data.data).to_dict("records")
    if data.get("name") in spec.get("datasets", {}):
        return spec["datasets"][data["name"]]
    raise AssertionError(f"no data found for {data}")


def _rgb(hex_colour: str) -> np.ndarray:
    h = hex_colour.lstrip("#")
    return np.array([int(h[i : i + 2], 16) for i in (0, 2, 4)], dtype=float)


def interpolate(stops: list[float], colours: list[str], v: float) -> np.ndarray:
    """A piecewise-linear RGB colour scale through ``colours`` placed at ``stops``, clamped at both ends."""
    v = min(max(v, stops[0]), stops[-1])
    k = int(np.clip(np.searchsorted(stops, v, side="right") - 1, 0, len(stops) - 2))
    t = 0.0 if stops[k + 1] == stops[k] else (v - stops[k]) / (stops[k + 1] - stops[k])
    return (1 - t) * _rgb(colours[k]) + t * _rgb(colours[k + 1])


def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float) and not np.isfinite(v))


def _passes(transforms: list[dict], row: dict) -> bool:
    for t in transforms:
        f = t.get("filter")
        if f == "datum.masked":
            ok = bool(row["masked"])
        elif f == "!datum.masked":
            ok = not row["masked"]
        else:
            raise NotImplementedError(f"transform {t} is not understood by this test")
        if not ok:
            return False
    return True


def drawn(el) -> dict[tuple[str, str], dict]:
    """Per (row label, column label): the fill the topmost rect gets (RGB array, None if no rect is drawn there), the
    value it encodes and the text written on it, worked out layer by layer as Vega-Lite does: filters, a constant
    colour, or a quantitative colour scale (domain and range, colours spread evenly over a two-point domain;
    cells with no value are not drawn, Vega-Lite's default for invalid values)."""
    spec, rows = spec_of(el), rows_of(el)
    out: dict[tuple[str, str], dict] = {}
    for layer in spec.get("layer", [spec]):
        mark = layer["mark"] if isinstance(layer["mark"], dict) else {"type": layer["mark"]}
        enc = layer["encoding"]
        x, y = enc["x"]["field"], enc["y"]["field"]
        for row in rows:
            if not _passes(layer.get("transform", []), row):
                continue
            cell = out.setdefault((row[y], row[x]), {"fill": None, "value": None, "text": None})
            if mark["type"] == "rect":
                colour = enc.get("color", {})
                if "field" in colour:
                    v = row[colour["field"]]
                    if _missing(v):
                        continue
                    scale = colour["scale"]
                    dom, rng = scale["domain"], scale["range"]
                    stops = list(np.linspace(dom[0], dom[-1], len(rng))) if len(dom) == 2 else list(dom)
                    assert len(stops) == len(rng), scale
                    cell["fill"], cell["value"] = interpolate(stops, rng, float(v)), float(v)
                else:
                    cell["fill"] = _rgb(mark.get("color") or mark["fill"])
            elif mark["type"] == "text":
                cell["text"] = row[enc["text"]["field"]]
    return out


def viridis(v: float) -> np.ndarray:
    return interpolate(list(np.linspace(0, 1, len(charts.VIRIDIS))), charts.VIRIDIS, v)


def signed(v: float, biggest: float) -> np.ndarray:
    """Blue (negative) – white (0) – red (positive), over ±biggest."""
    return interpolate([-biggest, 0.0, biggest], list(charts.DIVERGING), v)


def assert_colour(got: np.ndarray | None, want: np.ndarray, where: object) -> None:
    assert got is not None, f"{where}: nothing drawn"
    assert np.abs(got - want).max() <= 1.0, f"{where}: drawn {got.round()}, expected {want.round()}"
