"""Altair heatmaps, one function per chart kind; the rendering path is chosen by size.

Up to ``RECT_MAX`` rows and columns every cell is an Altair rect with a tooltip (and its value
written in the cell when the matrix is small). Larger matrices are drawn as one Altair image mark
carrying a PNG of the matrix (rect marks for a 1024×1024 matrix take ~20 s to draw in a browser; the
image takes well under a second); a cell is then read with :func:`attention.ui.page` 's zoom window,
which draws the chosen region with rect marks and tooltips.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd
from PIL import Image

RECT_MAX = 64  # rows/cols drawn as rect marks with tooltips
TEXT_MAX = 12  # rows/cols that also get the value written in each cell
IMAGE_PX = 512  # longest side of the PNG for large matrices
MASKED_COLOR = "#d9d9d9"

# Viridis anchors (as Vega's "viridis" scheme), used by both paths so colours mean the same at every size.
VIRIDIS = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"]
DIVERGING = ["#2166ac", "#f7f7f7", "#b2182b"]


@dataclass(frozen=True)
class Colour:
    """A colour scale: ``domain`` endpoints and the anchor colours spread evenly between them."""

    domain: tuple[float, ...]
    colours: tuple[str, ...]
    title: str

    def altair(self) -> alt.Scale:
        if len(self.domain) == len(self.colours):
            return alt.Scale(domain=list(self.domain), range=list(self.colours), clamp=True)
        return alt.Scale(domain=list(self.domain), range=list(self.colours), interpolate="rgb", clamp=True)


def colour_for(kind: str, values: np.ndarray) -> Colour:
    """Each step's own scale: weights 0–1; scores and scaled scores their finite range; deltas symmetric."""
    finite = values[np.isfinite(values)]
    if kind == "weights":
        return Colour((0.0, 1.0), tuple(VIRIDIS), "weight")
    if kind == "delta":
        m = float(np.abs(finite).max()) if finite.size else 1.0
        m = m if m > 0 else 1.0
        return Colour((-m, 0.0, m), tuple(DIVERGING), "change")
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    return Colour((lo, hi), tuple(VIRIDIS), "score")


def heatmap(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, kind: str, title: str,
            allowed: np.ndarray | None = None, row_title: str = "query (attends from)", col_title: str = "key (attends to)") -> alt.Chart:
    """A heatmap of a 2-D matrix with queries on rows and keys on columns.

    ``allowed`` (same shape, True = may attend) marks masked cells, drawn grey and labelled "masked".
    """
    n_r, n_c = values.shape
    if max(n_r, n_c) <= RECT_MAX:
        return _rect_heatmap(values, rows, cols, kind=kind, title=title, allowed=allowed, row_title=row_title, col_title=col_title)
    return _image_heatmap(values, kind=kind, title=title, allowed=allowed, row_title=row_title, col_title=col_title)


def _long_form(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], allowed: np.ndarray | None,
               row_offset: int = 0, col_offset: int = 0) -> pd.DataFrame:
    n_r, n_c = values.shape
    r_idx, c_idx = np.divmod(np.arange(n_r * n_c), n_c)
    flat = values.reshape(-1)
    masked = np.zeros(flat.shape, bool) if allowed is None else ~allowed.reshape(-1)
    return pd.DataFrame({
        "query": np.asarray(rows, dtype=object)[r_idx],
        "key": np.asarray(cols, dtype=object)[c_idx],
        "row": r_idx + 1 + row_offset,
        "col": c_idx + 1 + col_offset,
        "value": np.where(np.isfinite(flat), flat, np.nan),
        "text": [("masked" if m else f"{v:.3g}") for v, m in zip(flat, masked, strict=True)] if n_r * n_c <= TEXT_MAX**2 else "",
        "masked": masked,
    })


def _rect_heatmap(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, kind: str, title: str,
                  allowed: np.ndarray | None, row_title: str, col_title: str, row_offset: int = 0, col_offset: int = 0) -> alt.Chart:
    df = _long_form(values, rows, cols, allowed, row_offset, col_offset)
    colour = colour_for(kind, values if allowed is None else np.where(allowed, values, np.nan))
    n_r, n_c = values.shape
    cell = 46 if max(n_r, n_c) <= TEXT_MAX else max(8, min(28, 640 // max(n_r, n_c)))
    x = alt.X("key:N", sort=list(cols), title=col_title, axis=alt.Axis(labelAngle=-45, labelLimit=120))
    y = alt.Y("query:N", sort=list(rows), title=row_title, axis=alt.Axis(labelLimit=120))
    tooltip = [alt.Tooltip("query:N", title="query (row)"), alt.Tooltip("key:N", title="key (column)"),
               alt.Tooltip("value:Q", title=colour.title, format=".8f"), alt.Tooltip("row:Q"), alt.Tooltip("col:Q")]
    base = alt.Chart(df).encode(x=x, y=y)
    cells = base.transform_filter("!datum.masked").mark_rect(stroke="white", strokeWidth=0.5).encode(
        color=alt.Color("value:Q", scale=colour.altair(), title=colour.title, legend=alt.Legend(orient="right")),
        tooltip=tooltip,
    )
    layers = [cells]
    if allowed is not None and not allowed.all():
        layers.append(base.transform_filter("datum.masked").mark_rect(color=MASKED_COLOR, stroke="white", strokeWidth=0.5).encode(
            tooltip=[alt.Tooltip("query:N", title="query (row)"), alt.Tooltip("key:N", title="key (column)"), alt.Tooltip("text:N", title="cell")]))
    if max(n_r, n_c) <= TEXT_MAX:
        # Dark text on light cells: viridis is light at the top of its range, the diverging scale near 0.
        mid = (colour.domain[0] + colour.domain[-1]) / 2
        light = f"datum.value > {mid}" if kind != "delta" else f"abs(datum.value) < {abs(colour.domain[-1]) / 2}"
        layers.append(base.mark_text(fontSize=12).encode(
            text="text:N", color=alt.condition(f"datum.masked || {light}", alt.value("#222222"), alt.value("white"))))
    return alt.layer(*layers).properties(title=title, width=alt.Step(cell), height=alt.Step(cell))


def png_for(values: np.ndarray, colour: Colour, allowed: np.ndarray | None = None, max_px: int = IMAGE_PX) -> bytes:
    """A PNG of the matrix in the given colour scale; blocks of cells are averaged when the matrix is
    larger than ``max_px`` (each pixel then shows its block's mean; masked cells stay grey)."""
    v = values.astype(np.float64, copy=True)
    if allowed is not None:
        v[~allowed] = np.nan
    v[~np.isfinite(v)] = np.nan
    f_r, f_c = -(-v.shape[0] // max_px), -(-v.shape[1] // max_px)
    if f_r > 1 or f_c > 1:
        pad_r, pad_c = (-v.shape[0]) % f_r, (-v.shape[1]) % f_c
        v = np.pad(v, ((0, pad_r), (0, pad_c)), constant_values=np.nan)
        blocks = v.reshape(v.shape[0] // f_r, f_r, v.shape[1] // f_c, f_c)
        with np.errstate(invalid="ignore"):
            count = np.sum(np.isfinite(blocks), axis=(1, 3))
            total = np.nansum(blocks, axis=(1, 3))
            v = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    lut = _lut(colour)
    lo, hi = colour.domain[0], colour.domain[-1]
    t = np.clip((v - lo) / (hi - lo), 0, 1)
    idx = np.where(np.isfinite(t), np.round(t * 255), 0).astype(np.uint8)
    rgb = lut[idx]
    rgb[~np.isfinite(v)] = np.array([int(MASKED_COLOR[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, format="PNG", optimize=False, compress_level=1)
    return buf.getvalue()


def _lut(colour: Colour) -> np.ndarray:
    anchors = np.array([[int(c[i:i + 2], 16) for i in (1, 3, 5)] for c in colour.colours], dtype=np.float64)
    pos = np.linspace(0, 1, len(anchors))
    t = np.linspace(0, 1, 256)
    return np.stack([np.interp(t, pos, anchors[:, k]) for k in range(3)], axis=1).round().astype(np.uint8)


def _image_heatmap(values: np.ndarray, *, kind: str, title: str, allowed: np.ndarray | None, row_title: str, col_title: str) -> alt.Chart:
    colour = colour_for(kind, values if allowed is None else np.where(allowed, values, np.nan))
    png = png_for(values, colour, allowed)
    n_r, n_c = values.shape
    side = 560
    w, h = (side, max(120, int(side * n_r / n_c))) if n_c >= n_r else (max(120, int(side * n_c / n_r)), side)
    img = pd.DataFrame({"x": [n_c / 2 + 0.5], "y": [n_r / 2 + 0.5], "url": ["data:image/png;base64," + base64.b64encode(png).decode()]})
    image = alt.Chart(img).mark_image(width=w, height=h).encode(
        x=alt.X("x:Q", scale=alt.Scale(domain=[0.5, n_c + 0.5], nice=False), title=f"{col_title}: token 1 … {n_c}"),
        y=alt.Y("y:Q", scale=alt.Scale(domain=[n_r + 0.5, 0.5], nice=False), title=f"{row_title}: token 1 … {n_r}"),
        url="url:N",
    )
    legend = pd.DataFrame({"value": np.linspace(colour.domain[0], colour.domain[-1], 2)})
    key = alt.Chart(legend).mark_rect(opacity=0).encode(color=alt.Color("value:Q", scale=colour.altair(), title=colour.title))
    return alt.layer(image, key).properties(title=title, width=w, height=h)


def zoom_heatmap(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], r0: int, c0: int, size: int, *, kind: str,
                 title: str, allowed: np.ndarray | None = None) -> alt.Chart:
    """Rect heatmap (with tooltips) of the window [r0:r0+size, c0:c0+size] of a large matrix, coloured
    on the whole matrix's scale so colours match the overview."""
    win = values[r0:r0 + size, c0:c0 + size]
    win_allowed = None if allowed is None else allowed[r0:r0 + size, c0:c0 + size]
    chart = _rect_heatmap(win, list(rows[r0:r0 + size]), list(cols[c0:c0 + size]), kind=kind, title=title, allowed=win_allowed,
                          row_title="query (attends from)", col_title="key (attends to)", row_offset=r0, col_offset=c0)
    return chart
