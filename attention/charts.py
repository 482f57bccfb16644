"""The heatmaps the app draws, as Vega-Lite specs (no Streamlit): for the pages, figures and a notebook alike.

One entry point, :func:`heatmap`, and one record of how a heatmap is drawn, :class:`Style`; the path is chosen by size.

Up to ``RECT_MAX`` rows and columns every cell is a rect with a tooltip (and its value
written in the cell when the matrix is small).
Larger matrices are pooled into blocks (at most BLOCK_GRID per side; rect marks for a 1024×1024
matrix take ~20 s to draw in a browser, 32×32 blocks a few tenths of a second), each block with a
tooltip; exact cells are read in a zoom window (a :class:`Window` of :func:`heatmap`), which draws the chosen
region cell by cell on the whole matrix's colour scale.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

import altair as alt
import numpy as np

from .errors import AttentionError
from .names import squeeze_batch, token_labels

RECT_MAX = 64  # rows/cols drawn cell by cell as rect marks with tooltips
TEXT_MAX = 12  # rows/cols that also get the value written in each cell
BLOCK_GRID = 32  # larger matrices are pooled into at most this many blocks per side (1,024 rects)
PANEL_CELLS = 128  # a head's picture in a chart of several (:func:`_panels`): at most this many cells a side
MASKED_COLOR = "#d9d9d9"

# Viridis anchors (as Vega's "viridis" scheme), used by both paths so colours mean the same at every size.
VIRIDIS = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"]


DIVERGING = ("#2166ac", "#f7f7f7", "#b2182b")  # blue (down), white (unchanged), red (up): ColorBrewer RdBu ends


@dataclass(frozen=True)
class Colour:
    """A colour scale: ``domain`` endpoints and the anchor colours spread evenly between them."""

    domain: tuple[float, ...]
    colours: tuple[str, ...]
    title: str


def colour_for(kind: str, values: np.ndarray, allowed: np.ndarray | None = None) -> Colour:
    """Each step's own scale, readable with any colour vision: weights 0–1 on viridis; signed values (scores and
    scaled scores, and differences "diff") on a diverging scale centred at 0 and symmetric, fitted to the largest
    finite |value|, so white means 0 and blue and red the two signs. Cells ``allowed`` marks False (masked) are left
    out of the fit; one scale fitted to a stack of heads ((h, n, n)) serves each head's chart."""
    if kind == "weights":
        return Colour((0.0, 1.0), tuple(VIRIDIS), "weight")
    values = _unmasked(values, allowed)
    finite = np.abs(values[np.isfinite(values)])
    m = float(finite.max()) if finite.size else 0.0
    m = m if m > 0 else 1.0
    return Colour((-m, 0.0, m), DIVERGING, "now − A" if kind == "diff" else "score")


class Digits(str):
    """A ``str.format`` pattern that writes every number with the same count of significant digits, trailing zeros
    kept ("1.000", "0.4330", "0.6442", "1.000e+300"): Python's ``"{:#.4g}"`` without the lone point it leaves after
    a whole number ("1234." is written "1234")."""

    def format(self, *args: object, **kwargs: object) -> str:
        return str.format(self, *args, **kwargs).replace(".e", "e").removesuffix(".")


def decimals_for(values: np.ndarray, digits: int | None) -> str:
    """The one number format of a table or chart, from the digits control: every number with ``digits`` significant
    digits, trailing zeros kept (a :class:`Digits` pattern: "1.000" beside "0.4330" and "0.6442"), so each shows as
    many digits as the control says, whatever its size (1e300 is "1.000e+300", never 300 digits written out);
    Python's shortest exact ``repr`` when ``digits`` is None. ``values`` is kept for callers that pass a table (the
    format no longer depends on it). Returns a ``str.format`` pattern such as ``"{:#.4g}"``."""
    if digits is None:
        return "{!r}"
    return Digits(f"{{:#.{max(1, int(digits))}g}}")


def _unmasked(values: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
    """The values with masked cells as NaN (left out of colour ranges and block pools)."""
    return values if allowed is None else np.where(allowed, values, np.nan)


@dataclass(frozen=True)
class Style:
    """How a heatmap is drawn: the one record every caller hands to :func:`heatmap`.

    ``kind`` picks the colour scale (see :func:`colour_for`): "weights" 0–1 viridis, "scores" (or any other) diverging
    at 0, "diff" the same with a sign written before each value; ``colour`` gives the scale instead (one scale for
    several charts). ``digits``: significant digits written in the cells (tooltips always show full precision).
    ``select`` adds a click selection "cell" (fields query and key) to a cell-by-cell heatmap; blocks are not
    selectable. ``row_height`` (px) sets the rows' height (the blocks' for a pooled heatmap). ``image`` draws the
    cells as one picture (:func:`_image`) instead of a mark each, beyond TEXT_MAX rows or columns (up to it the
    numbers are written in the cells): for pages that show many heatmaps at once. ``panels`` draws a stack
    (heads, n_r, n_c) as one chart (:func:`_panels`): one (title, subtitle) a heatmap, ``columns`` a row, each plot
    ``panel_px`` wide, every picture on one colour scale; ``block`` > 1 says the stack is already reduced, each cell
    the largest weight (weights; else the mean) of a ``block`` × ``block`` block of tokens (:func:`panel_block`)."""

    kind: str = "weights"
    title: str = ""
    subtitle: str = ""
    row_title: str = "query (attends from)"
    col_title: str = "key (attends to)"
    digits: int | None = 3
    select: bool = False
    colour: Colour | None = None
    row_height: float | None = None
    image: bool = False
    panels: tuple[tuple[str, str], ...] = ()
    columns: int = 4
    panel_px: float = 200
    block: int = 1

    def but(self, **changes: object) -> Style:
        """This style with ``changes`` (``dataclasses.replace``)."""
        return replace(self, **changes)  # type: ignore[arg-type]


HEAD = Style(row_title="query", col_title="key")  # a head's heatmap, in a column beside other heads: short axis titles


@dataclass(frozen=True)
class Window:
    """The part of a large matrix read cell by cell: ``size`` rows and columns from row ``r0``, column ``c0``
    (0-based); coloured on the whole matrix's scale so colours match the pooled overview."""

    r0: int
    c0: int
    size: int


def heatmap(
    values: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    style: Style = Style(),  # noqa: B008 (frozen: one shared default is safe)
    allowed: np.ndarray | None = None,
    window: Window | None = None,
    offset: tuple[int, int] = (0, 0),
) -> dict:
    """The heatmap the app draws, as a Vega-Lite spec (a plain dict): a 2-D matrix (n_rows, n_cols), queries on rows
    and keys on columns, drawn as ``style`` says. ``allowed`` (same shape, True = may attend) marks masked cells,
    drawn grey and labelled "masked". A batch of one ((1, n, n)) is drawn as its single matrix.

    Up to RECT_MAX rows and columns every cell is a rect with a tooltip; beyond, blocks of tokens (at most BLOCK_GRID
    a side), unless ``window`` asks for a part of it cell by cell. The width is its container's, the height follows
    the rows. In a notebook: ``alt.LayerChart.from_dict(charts.heatmap(trace.weights, tokens, tokens))``.
    With ``style.panels``, ``values`` is a stack (heads, n_rows, n_cols) drawn as one chart (:func:`_panels`).
    ``offset``: the values are a part of a larger matrix from this row and column (0-based): the tooltips count
    rows and columns as the whole does."""
    if style.panels:
        return _panels(np.asarray(values, dtype=np.float64), token_labels(rows), token_labels(cols), style, allowed)
    values = squeeze_batch(np.asarray(values, dtype=np.float64))
    if values.ndim != 2:
        raise AttentionError(f"a heatmap needs a 2-D matrix; got shape {values.shape}")
    allowed = None if allowed is None else squeeze_batch(np.asarray(allowed))
    rows, cols = token_labels(rows), token_labels(cols)  # axis labels must be unique
    if window is not None:
        return _window(values, rows, cols, style, allowed, window)
    if style.image and TEXT_MAX < max(values.shape) <= RECT_MAX:  # small ones keep their numbers in the cells
        return _image(values, rows, cols, style, allowed)
    if max(values.shape) <= RECT_MAX:
        return _cells(values, rows, cols, style, allowed, offset)
    return _blocks(values, rows, cols, style, allowed)


def drawn_rows(n: int) -> int:
    """How many rows a heatmap of n rows draws: every one up to RECT_MAX, else one per block."""
    return n if n <= RECT_MAX else -(-n // -(-n // BLOCK_GRID))


def _long_form(
    values: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    allowed: np.ndarray | None,
    row_offset: int = 0,
    col_offset: int = 0,
    kind: str = "scores",
    digits: int | None = 3,
) -> dict[str, list]:
    """One row per cell, as columns of plain Python values (a pandas frame cost more to build than the rest of the
    spec): its labels, 1-based position, value (NaN where not finite), text ("masked" for a masked cell) and mask."""
    n_r, n_c = values.shape
    pattern = decimals_for(_unmasked(values, allowed), digits)
    fmt = (lambda v: ("+" if v > 0 else "") + pattern.format(v)) if kind == "diff" else pattern.format
    r_idx, c_idx = np.divmod(np.arange(n_r * n_c), n_c)
    flat = values.reshape(-1)
    masked = np.zeros(flat.shape, bool) if allowed is None else ~allowed.reshape(-1)
    return {
        "query": np.asarray(rows, dtype=object)[r_idx].tolist(),
        "key": np.asarray(cols, dtype=object)[c_idx].tolist(),
        "row": (r_idx + 1 + row_offset).tolist(),
        "col": (c_idx + 1 + col_offset).tolist(),
        "value": np.where(np.isfinite(flat), flat, np.nan).tolist(),
        "shown": [("masked" if m else fmt(v)) for v, m in zip(flat, masked, strict=True)]
        if n_r * n_c <= TEXT_MAX**2
        else [""] * flat.size,
        "masked": masked.tolist(),
    }


def _cells(
    values: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    style: Style,
    allowed: np.ndarray | None,
    offset: tuple[int, int] = (0, 0),
) -> dict:
    """The cell-by-cell heatmap: every cell a rect with a tooltip (its row and column counted from ``offset``), masked
    cells grey, the value written in each cell up to TEXT_MAX (where it fits), a click selection "cell" when
    ``style.select``.

    Written as the dict Altair would produce, because building the Altair objects and validating them took ~100 ms
    of each run; a person's edit waits for it."""
    kind = style.kind
    df = _long_form(values, rows, cols, allowed, offset[0], offset[1], kind, style.digits)
    colour = style.colour or colour_for(kind, values, allowed)
    n_r, n_c = values.shape
    position = _positions(rows, cols, style.row_title, style.col_title, n_c)
    stroke = 0.5 if max(n_r, n_c) <= 32 else 0  # cell borders only while cells are large enough to show them
    layers = [_cells_layer(position, colour, stroke, style.select)]
    if allowed is not None and not allowed.all():
        layers.append(_masked_layer(position, stroke))
    fits = None
    if max(n_r, n_c) <= TEXT_MAX:
        fits = _fits(df, n_r, n_c)
        layers.append(_text_layer(position, colour, kind, df, fits))
    spec = _rect_frame(df, layers, n_r, n_c, style.title, style.subtitle, style.row_height, fits)
    if style.select:
        spec["params"].append(_cell_selection())
    return spec


def _fs() -> dict:
    """Every font size is the signal "fs": 12 px at a page's size, larger when the cells are (fullscreen), so the
    text grows with them; it floors to whole pixels, so the layout settles. (Each spec part gets its own dicts: a
    caller may change one spec without changing the next.)"""
    return {"expr": "fs"}


def _where() -> list[dict]:
    """A cell's place, first in every tooltip."""
    return [
        {"field": "query", "type": "nominal", "title": "query (row)"},
        {"field": "key", "type": "nominal", "title": "key (column)"},
    ]


def _cell_selection() -> dict:
    """A click picks a cell ("cell": its query and key) in the view "cells"; a double click clears it."""
    return {
        "name": "cell",
        "select": {"type": "point", "fields": ["query", "key"], "on": "click", "clear": "dblclick"},
        "views": ["cells"],
    }


def _positions(rows: Sequence[str], cols: Sequence[str], row_title: str, col_title: str, n_c: int) -> dict:
    """The x (keys) and y (queries) encodings every layer shares, in the given order; key labels slanted, upright
    when there are too many to slant."""
    fs = _fs()
    axis = {"labelFontSize": fs, "titleFontSize": fs, "labelLimit": 120, "labelOverlap": "greedy"}
    # key labels slanted while a column is wide enough for a slanted label to clear the next one, else upright:
    # slanted labels in narrow columns overlap, and the axis then drops every other one ("mat" went missing)
    angle = {"expr": f"width / {n_c} >= fs * 2.5 ? -45 : -90"} if n_c <= TEXT_MAX else -90
    return {
        "x": {
            "field": "key",
            "type": "nominal",
            "sort": list(cols),
            "title": col_title,
            "axis": {"labelAngle": angle, **axis},
        },
        "y": {"field": "query", "type": "nominal", "sort": list(rows), "title": row_title, "axis": dict(axis)},
    }


def _cells_layer(position: dict, colour: Colour, stroke: float, select: bool) -> dict:
    """The unmasked cells: one rect each, coloured on ``colour``'s scale, the legend below, a full-precision
    tooltip. Named "cells" (the click selection's view) when ``select``."""
    fs = _fs()
    scale = {"domain": list(colour.domain), "range": list(colour.colours), "interpolate": "rgb", "clamp": True}
    lgd = {
        "orient": "bottom",
        "direction": "horizontal",
        "gradientLength": {"expr": "clamp(width - 50, 60, 200)"},  # within the plot's width
        "titleLimit": 200,
        "labelFontSize": fs,
        "titleFontSize": fs,
    }
    tooltip = [
        *_where(),
        {"field": "value", "type": "quantitative", "title": colour.title + " (full precision)", "format": ".17~g"},
        {"field": "row", "type": "quantitative"},
        {"field": "col", "type": "quantitative"},
    ]
    return {
        **({"name": "cells"} if select else {}),  # view names must be unique in a spec: only the selectable one
        "transform": [{"filter": "!datum.masked"}],
        "mark": {"type": "rect", "stroke": "white", "strokeWidth": stroke},
        "encoding": {
            **position,
            "color": {"field": "value", "type": "quantitative", "scale": scale, "title": colour.title, "legend": lgd},
            "tooltip": tooltip,
        },
    }


def _masked_layer(position: dict, stroke: float) -> dict:
    """The masked cells: grey rects whose tooltip says "masked"."""
    return {
        "transform": [{"filter": "datum.masked"}],
        "mark": {"type": "rect", "color": MASKED_COLOR, "stroke": "white", "strokeWidth": stroke},
        "encoding": {**position, "tooltip": [*_where(), {"field": "shown", "type": "nominal", "title": "cell"}]},
    }


def _em(text: str) -> float:
    """A text's width in em of the charts' sans font, a little generous: digits and signs 0.55 em (measured 0.51 in
    Chromium: "18.07" is 26.9 px at 12 px), a point 0.25 em, a letter 0.6 em."""
    return sum(0.55 if ch.isdigit() or ch in "-+−" else 0.25 if ch == "." else 0.6 for ch in text)


def _fits(df: dict[str, list], n_r: int, n_c: int) -> str:
    """A Vega expression, true when a cell is wide and tall enough for its number at the current font size (the
    widest text and 0.6 em of margin)."""
    widest = max(_em(str(v)) for v in df["shown"])
    return f"width / {n_c} >= fs * {widest + 0.6:.2f} && height / {n_r} >= fs * 1.5"


def _text_layer(position: dict, colour: Colour, kind: str, df: dict[str, list], fits: str) -> dict:
    """Each cell's value written in it, only where the cell is wide and tall enough for it at the current font
    size (``fits``, :func:`_fits`). Dark text on light cells (viridis is light at the top of its range; the diverging
    scale within 70% of 0, where white text would have too little contrast), white on the rest."""
    mid = (colour.domain[0] + colour.domain[-1]) / 2
    light = f"datum.value > {mid}" if kind == "weights" else f"abs(datum.value) < {0.7 * colour.domain[-1]}"
    fs = _fs()
    return {
        "mark": {"type": "text", "fontSize": fs, "opacity": {"expr": f"{fits} ? 1 : 0"}},
        "encoding": {
            **position,
            "text": {"field": "shown", "type": "nominal"},
            "color": {"condition": {"test": f"datum.masked || {light}", "value": "#222222"}, "value": "white"},
        },
    }


TOO_NARROW = "too narrow for numbers: hover a cell"


def _rect_frame(
    df: dict[str, list],
    layers: list[dict],
    n_r: int,
    n_c: int,
    title: str,
    subtitle: str,
    row_height: float | None,
    fits: str | None = None,
) -> dict:
    """The spec around the layers: the data inline, the font signal, the title, the size. Sized to its column: the
    width is the container's (set by the app, or "container" in a notebook), the height follows the rows; a
    fullscreen view sets both. When the cells would carry their numbers (``fits``, :func:`_fits`) but are drawn too
    narrow for them, the title says where the values are (:data:`TOO_NARROW`), where the chart is wide enough for it
    whole."""
    row_px = row_height or (40 if n_r <= TEXT_MAX else max(10, min(24, 640 // n_r)))
    text: str | dict = title
    if fits is not None:
        narrow = f"{title} · {TOO_NARROW}" if title else TOO_NARROW[0].upper() + TOO_NARROW[1:]
        room = f"width >= (fs + 2) * {_em(narrow):.1f}"  # the note only where the whole title fits (never cut)
        text = {"expr": f"({fits}) || !({room}) ? {json.dumps(title)} : {json.dumps(narrow)}"}
    heading = {"text": text, "subtitle": subtitle} if subtitle else {"text": text}
    return {
        "data": {"values": _records(df)},
        "params": [{"name": "fs", "expr": f"clamp(floor(min(width / {n_c}, height / {n_r}) * 0.3), 12, 22)"}],
        "layer": layers,
        "title": {**heading, "fontSize": {"expr": "fs + 2"}, **({"subtitleFontSize": _fs()} if subtitle else {})},
        "width": "container",
        # the whole chart's height (autosize "fit": a fullscreen view then fits the screen): the rows, plus about
        # 190 px of title, key labels, axis title and legend
        "height": round(n_r * row_px) + 190 + (20 if subtitle else 0),
        "autosize": {"type": "fit", "contains": "padding"},
        "padding": {"left": 5, "right": 5, "top": 5, "bottom": 16},
    }


def _records(columns: dict[str, list]) -> list[dict]:
    """Long-form columns (:func:`_long_form`) as JSON-ready rows: NaN as null (JSON has no NaN)."""
    columns = {**columns, "value": [None if v != v else v for v in columns["value"]]}  # v != v: NaN
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def pool_blocks(values: np.ndarray, factor: int | tuple[int, int], pool: str = "mean") -> np.ndarray:
    """Shrink a matrix (..., r, c), or a stack of them, by ``factor`` in both directions (or (rows, columns)): each
    output cell is its block's ``pool``: "max" (so one strong weight stays visible), "extreme" (the value farthest
    from 0, its sign kept, so one strong signed cell stays visible) or "mean"; the last blocks may be smaller.
    Non-finite cells (masked, -inf) are left out of their block; a block with no finite cell is NaN (drawn grey).
    Works with ``reduceat``, so no full-size copy is made when every cell is finite."""
    f_r, f_c = (factor, factor) if isinstance(factor, int) else factor
    edges_r, edges_c = np.arange(0, values.shape[-2], f_r), np.arange(0, values.shape[-1], f_c)
    finite = np.isfinite(values)
    all_finite = bool(finite.all())

    def reduce(ufunc: np.ufunc, a: np.ndarray) -> np.ndarray:
        return ufunc.reduceat(ufunc.reduceat(a, edges_r, axis=-2), edges_c, axis=-1)  # (..., r/f, c/f)

    if all_finite:
        count = np.outer(np.diff(np.append(edges_r, values.shape[-2])), np.diff(np.append(edges_c, values.shape[-1])))
    else:
        count = reduce(np.add, finite.astype(np.int32))
    if pool in ("max", "extreme"):
        out = reduce(np.maximum, values if all_finite else np.where(finite, values, -np.inf))
    if pool == "extreme":
        low = reduce(np.minimum, values if all_finite else np.where(finite, values, np.inf))
        out = np.where(np.abs(low) > np.abs(out), low, out)  # the signed value farthest from 0
    elif pool != "max":
        out = reduce(np.add, values if all_finite else np.where(finite, values, 0.0)) / np.maximum(count, 1)
    return np.where(count > 0, out, np.nan)


POOL_WORDS = {"max": "its max", "extreme": "its ±max", "mean": "its mean"}  # a reduced chart's subtitle: short


def block_pool(kind: str) -> str:
    """How a block of a reduced chart is drawn: the largest weight, or for signed values the value farthest from 0
    (a mean would fade one strong cell among many near 0: one changed token's effect at 2,048 tokens)."""
    return "max" if kind == "weights" else "extreme"


def panel_block(n: int) -> int:
    """The side of the blocks a head's n × n picture is reduced by in a chart of several (:func:`_panels`): 1 (every
    cell) up to PANEL_CELLS tokens, else the smallest that leaves at most PANEL_CELLS blocks a side (16 at 2,048)."""
    return 1 if n <= PANEL_CELLS else -(-n // PANEL_CELLS)


def block_labels(n: int, block: int) -> list[str]:
    """The labels of n tokens' blocks of ``block``: "1–16", "17–32", ... (1-based, the last one cut at n)."""
    return [f"{i + 1}–{min(n, i + block)}" for i in range(0, n, block)]


def reduced_note(block: int, kind: str = "weights") -> str:
    """What a reduced picture's cell is, in words: "each cell is the largest weight of a 16 × 16 block"."""
    what = "the largest weight" if kind == "weights" else "the value farthest from 0"
    return f"each cell is {what} of a {block} × {block} block of tokens"


def _blocks(values: np.ndarray, rows: list[str], cols: list[str], style: Style, allowed: np.ndarray | None) -> dict:
    """Large matrices: cells pooled into blocks so at most BLOCK_GRID × BLOCK_GRID rects are drawn
    (rect marks cost ~40 µs each in the browser: 1024² cells took ~20 s, 32² blocks take a few tenths of a
    second). Each axis is pooled by its own factor, so a few rows (one query row per head) over 2,048 keys keep
    their rows and labels. Each block's tooltip names its token range and pooled value. The spec goes once through
    Altair (its data as a named dataset)."""
    n_r, n_c = values.shape
    f_r, f_c = -(-n_r // BLOCK_GRID), -(-n_c // BLOCK_GRID)  # 1 on an axis that fits
    masked_values = _unmasked(values, allowed)
    pool = block_pool(style.kind)
    pooled = pool_blocks(masked_values, (f_r, f_c), pool)
    r_lbl = rows if f_r == 1 else [f"{i * f_r + 1}–{min(n_r, (i + 1) * f_r)}" for i in range(pooled.shape[0])]
    c_lbl = cols if f_c == 1 else [f"{j * f_c + 1}–{min(n_c, (j + 1) * f_c)}" for j in range(pooled.shape[1])]
    block_style = style.but(
        subtitle=f"blocks of {f_r}×{f_c}: each {POOL_WORDS[pool]}",  # short: a head's chart is narrow
        row_title=style.row_title if f_r == 1 else f"{style.row_title}, tokens",
        col_title=style.col_title if f_c == 1 else f"{style.col_title}, tokens",
        colour=style.colour or colour_for(style.kind, masked_values),
        select=False,
    )
    spec = _cells(pooled, r_lbl, c_lbl, block_style, np.isfinite(pooled) if allowed is not None else None)
    return alt.LayerChart.from_dict(spec, validate=False).to_dict(validate=False)


def _window(
    values: np.ndarray, rows: list[str], cols: list[str], style: Style, allowed: np.ndarray | None, window: Window
) -> dict:
    """The cells [r0:r0+size, c0:c0+size] of a large matrix, on the whole matrix's colour scale."""
    r0, c0, size = window.r0, window.c0, window.size
    win_allowed = None if allowed is None else allowed[r0 : r0 + size, c0 : c0 + size]
    whole = style.colour or colour_for(style.kind, values, allowed)
    return _cells(
        values[r0 : r0 + size, c0 : c0 + size],
        rows[r0 : r0 + size],
        cols[c0 : c0 + size],
        style.but(colour=whole, select=False),
        win_allowed,
        offset=(r0, c0),
    )


# A heatmap as one image. Every head draws dozens of heatmaps at once; a mark per cell cost the browser about a second
# a layer (30 × 9 heads at 32 tokens). Here the cells are one PNG made in numpy, drawn by one image mark; the axes, the
# legend and the title are Vega's as before; a transparent layer with no fill drawn names each cell in its tooltip.


def rgb(values: np.ndarray, colour: Colour, allowed: np.ndarray | None = None) -> np.ndarray:
    """Each cell's colour on ``colour``'s scale, as Vega draws it (``interpolate: "rgb"``, clamped): the value placed
    between the domain's stops, then between the anchor colours spread evenly; masked or non-finite cells grey.
    Returns (n_r, n_c, 3) uint8."""
    stops = np.linspace(0.0, 1.0, len(colour.domain))
    t = np.interp(values, colour.domain, stops)  # (n_r, n_c): clamped to [0, 1]; NaN stays NaN
    anchors = np.array([[int(c[i : i + 2], 16) for i in (1, 3, 5)] for c in colour.colours], dtype=np.float64)
    at = np.linspace(0.0, 1.0, len(anchors))  # (k,): where each anchor colour sits
    out = np.stack([np.interp(t, at, anchors[:, ch]) for ch in range(3)], axis=-1)  # (n_r, n_c, 3)
    grey = [int(MASKED_COLOR[i : i + 2], 16) for i in (1, 3, 5)]
    off = ~np.isfinite(values) if allowed is None else ~np.isfinite(values) | ~allowed
    out[off] = grey
    return np.rint(out).astype(np.uint8)


def png(pixels: np.ndarray) -> bytes:
    """An (h, w, 3) uint8 picture as PNG bytes: 8-bit RGB, each row unfiltered, one zlib stream (the PNG format's
    smallest valid form; a heatmap's few colours compress well)."""
    h, w, _ = pixels.shape
    raw = np.concatenate([np.zeros((h, 1), np.uint8), pixels.reshape(h, w * 3)], axis=1).tobytes()  # filter 0 a row

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # width, height, 8-bit RGB, deflate, no filter or interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


def data_url(pixels: np.ndarray) -> str:
    """The picture as a ``data:image/png`` address (inline: nothing is fetched)."""
    return "data:image/png;base64," + base64.b64encode(png(pixels)).decode("ascii")


def describe(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], allowed: np.ndarray | None = None) -> str:
    """A heatmap in words, for a reader who cannot see it: its size, where most rows put their largest value (the
    token before, the row's own token, the first token, or elsewhere), and its largest cell."""
    v = np.where(np.isfinite(_unmasked(values, allowed)), values, -np.inf)  # (n_r, n_c)
    live = np.flatnonzero(np.isfinite(v).any(axis=1))  # rows with a cell to read
    if live.size == 0:
        return f"{len(rows)} rows × {len(cols)} columns, every cell masked."
    top = np.argmax(v[live], axis=1)  # (rows,): each row's largest column
    kinds = np.where(top == live - 1, "the token before", np.where(top == live, "its own token", "another token"))
    kinds = np.where((top == 0) & (kinds == "another token"), "the first token", kinds)
    names, counts = np.unique(kinds, return_counts=True)
    commonest = names[np.argmax(counts)]
    choice = np.isfinite(v).sum(axis=1) > 1  # (n_r,): rows with a choice (a causal first row holds one cell)
    pick = np.where(choice[:, None], v, -np.inf) if choice.any() else v
    r, c = np.unravel_index(np.argmax(pick), v.shape)
    return (
        f"{len(rows)} rows × {len(cols)} columns. {counts.max()} of {live.size} rows put their largest value on "
        f"{commonest}. The largest{' of a row with a choice' if choice.any() and not choice.all() else ''}: "
        f"{values[r, c]:.3g} at row {r + 1} ({rows[r]}), column {c + 1} ({cols[c]})."
    )


# A heatmap drawn as a picture makes its cells' tooltip marks (one transparent rect per unmasked cell) only once the
# pointer has come over it: a page of nine heads then draws nine pictures, not ~4,800 marks nobody points at yet. The
# point selection "near" remembers that pointerover (never cleared, so the cells stay: no flicker as the pointer moves
# from the picture onto them); the cells' filter reads its store, so Vega makes them at that moment.
NEAR = "near"


def _near() -> dict:
    """The selection "near" (each spec its own dicts, as :func:`_fs` says: a caller may change one spec alone)."""
    return {"name": NEAR, "select": {"type": "point", "on": "pointerover", "clear": False, "toggle": False}}


def _image(
    values: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    style: Style,
    allowed: np.ndarray | None,
    near: str = NEAR,
) -> dict:
    """The cell-by-cell heatmap of :func:`_cells` drawn as one image: the same axes, colour scale, legend, title and
    size; the cells one PNG stretched over the plot, unsmoothed; a transparent rect on each unmasked cell carries the
    same tooltip (and the click selection "cell" when ``style.select``); masked cells are grey in the picture and
    carry no mark (half of a causal head's cells: half the marks to draw); the spec's description says what it
    shows."""
    colour = style.colour or colour_for(style.kind, values, allowed)
    n_r, n_c = values.shape
    position = _positions(rows, cols, style.row_title, style.col_title, n_c)
    position["x"]["scale"] = {"domain": list(cols)}  # the axes no longer follow the data: the image layer has none
    position["y"]["scale"] = {"domain": list(rows)}
    picture = {
        "data": {"values": [{"url": data_url(rgb(values, colour, allowed))}]},
        "mark": {
            "type": "image",
            "aspect": False,
            "smooth": False,
            "align": "left",
            "baseline": "top",
            "width": {"expr": "width"},
            "height": {"expr": "height"},
            "aria": True,  # the picture is what a screen reader is told of: its description below
            "tooltip": None,
        },
        "encoding": {
            "url": {"field": "url", "type": "nominal"},
            "x": {"value": 0},
            "y": {"value": 0},
            "description": {"value": ""},  # filled in below, once the words are written
        },
    }
    picture["params"] = [{**_near(), "name": near}]  # the pointer over it once: the cells' tooltip marks are made
    cells = _cells_layer(position, colour, 0, style.select)
    cells["mark"] = {"type": "rect", "fillOpacity": 0, "strokeOpacity": 0, "aria": False}
    cells["encoding"]["color"]["legend"] = None  # the legend is the scale layer's
    cells["transform"].insert(0, {"filter": f"length(data('{near}_store')) > 0"})
    layers = [picture, _scale_layer(position, colour), cells]  # masked cells: grey in the picture, no mark of their own
    df = _long_form(values, rows, cols, allowed, kind=style.kind, digits=style.digits)
    spec = _rect_frame(df, layers, n_r, n_c, style.title, style.subtitle, style.row_height)
    about = ". ".join(p for p in (style.title, style.subtitle) if p)
    grey = " Grey cells are masked." if allowed is not None and not allowed.all() else ""
    spec["description"] = f"Heatmap{': ' + about if about else ''}. " + describe(values, rows, cols, allowed) + grey
    picture["encoding"]["description"]["value"] = spec["description"]  # the image's own label (an svg's aria-label)
    if style.select:
        spec["params"].append(_cell_selection())
    return spec


PICTURES = "pictures"  # a chart of heads' table of what changes with the layer: each head's picture, titles, words
CELLS = "cells"  # a chart of heads' table of every head's cells (their tooltips)

# Every head of a layer as ONE chart. Nine heads as nine charts cost the browser nine Vega views (a layer switch took
# 4.5 times the floor app's edit); one chart holds them all: a picture a head (its cells one PNG), each titled, one
# colour scale and one legend, the cells of every head as one table sent once (their tooltips made only for the head
# the pointer comes over). A text longer than PANEL_CELLS is reduced by blocks, by the maximum for weights, so a sharp
# stripe or a sink stays visible.


def _panels(values: np.ndarray, rows: list[str], cols: list[str], style: Style, allowed: np.ndarray | None) -> dict:
    """A stack (heads, n_r, n_c) as one Vega-Lite chart: :func:`_image` a head, titled ``style.panels``, in rows of
    ``style.columns``, each plot ``style.panel_px`` wide and ``style.row_height`` a drawn row; one colour scale;
    a cell's tooltip names its head. ``allowed`` (n_r, n_c) or a stack of them. Masked cells are grey in the
    pictures and sent no row (half of a causal head's cells)."""
    if values.ndim != 3 or values.shape[0] != len(style.panels):
        raise AttentionError(f"{len(style.panels)} panels need a stack of as many matrices; got shape {values.shape}")
    stack = np.broadcast_to(allowed, values.shape) if allowed is not None else None  # (H, n_r, n_c)
    colour = style.colour or colour_for(style.kind, values, stack)
    values, rows, cols, stack, note = _reduced(values, rows, cols, style, stack)
    n_r, n_c = values.shape[1:]
    row_px = style.row_height or max(4, min(12, 216 // n_r))
    children, data, pictures = [], [], []
    for k, (title, subtitle) in enumerate(style.panels):
        head_style = style.but(title=title, subtitle=" · ".join(p for p in (subtitle, note) if p), colour=colour)
        spec = _image(values[k], rows, cols, head_style, None if stack is None else stack[k], near=f"{NEAR}{k}")
        data += [{**row, "panel": k, "head": title} for row in spec["data"]["values"] if not row["masked"]]
        pictures.append(_picture_row(spec, k))
        children.append(_panel(spec, k, style.panel_px, round(n_r * row_px)))
    cols = max(1, style.columns)
    return {
        "data": {"name": CELLS},
        "datasets": {CELLS: data, PICTURES: pictures},  # both named: Streamlit pours unnamed data into a lone one
        "params": [{"name": "fs", "value": 12}],  # one font size: a chart of several plots has no one width
        "vconcat": [{"hconcat": children[k : k + cols], "spacing": 32} for k in range(0, len(children), cols)],
        "spacing": 24,  # a row of ``cols`` plots each (Streamlit draws a "concat" with "columns" as nothing)
        "resolve": {"scale": {"color": "shared"}, "legend": {"color": "shared"}},
        "description": f"{len(children)} heatmaps on one colour scale, one a head; each picture says what it shows.",
        "padding": {"left": 5, "right": 5, "top": 5, "bottom": 16},
        "autosize": {"type": "pad", "contains": "padding"},  # its plots' own size: "fit" draws a concat as nothing
    }


def _reduced(
    values: np.ndarray, rows: list[str], cols: list[str], style: Style, stack: np.ndarray | None
) -> tuple[np.ndarray, list[str], list[str], np.ndarray | None, str]:
    """The stack as drawn, and what was done: as given when ``style.block`` says it is reduced already (its labels
    the blocks'); itself up to PANEL_CELLS a side; else each matrix pooled into blocks (:func:`panel_block`: the
    maximum for weights, so one strong cell shows; for signed values the one farthest from 0),
    labelled by token ranges."""
    if style.block > 1:
        return values, rows, cols, stack, reduced_note(style.block, style.kind)
    n_r, n_c = values.shape[1:]
    if max(n_r, n_c) <= PANEL_CELLS:
        return values, rows, cols, stack, ""
    factor = panel_block(max(n_r, n_c))
    pooled = pool_blocks(_unmasked(values, stack), factor, block_pool(style.kind))  # (H, n_r/f, n_c/f)
    kept = np.isfinite(pooled) if stack is not None else None
    return pooled, block_labels(n_r, factor), block_labels(n_c, factor), kept, reduced_note(factor, style.kind)


def _picture_row(spec: dict, k: int) -> dict:
    """Head k's row of the chart's PICTURES table: what its plot shows that changes with the head's layer (its
    picture, title, subtitle and description). The spec itself then stays the same for every layer of a model and
    text, so choosing another layer hands the browser new data, not a new chart to build."""
    title = spec["title"]
    return {
        "panel": k,
        "url": spec["layer"][0]["data"]["values"][0]["url"],
        "head": title["text"],  # the plot's title; named as the cells name their plot, so a selection reads both
        "subtitle": title.get("subtitle", ""),
        "description": spec["description"],
    }


def _panel(spec: dict, k: int, width: float, height: int) -> dict:
    """One head's :func:`_image` as a plot of a concatenated chart: its layers, a fixed size (a plot of several has
    no container width), its cells read from the chart's table (``panel`` k), a cell's head named; its picture,
    title, subtitle and description read from the PICTURES table's row k (:func:`_picture_row`)."""
    picture, scale, cells = spec["layer"]
    row, near = f"data('{PICTURES}')[{k}]", picture["params"][0]
    store = f"data('{near['name']}_store')"  # the plot the pointer came over: its title (layer and head) kept
    seen = f"length({store}) > 0 && {store}[0].values[0] === datum.head"  # this layer's plot, not an earlier one
    cells = {**cells, "transform": [{"filter": seen}, {"filter": f"datum.panel == {k}"}, *cells["transform"][1:]]}
    cells["encoding"] = {**cells["encoding"], "tooltip": [{"field": "head", "type": "nominal"},
                                                           *cells["encoding"]["tooltip"]]}  # fmt: skip
    legend = scale["encoding"]["color"]["legend"]
    scale["encoding"]["color"]["legend"] = {**legend, "gradientLength": 200}
    for axis in (cells, scale):
        x = axis["encoding"]["x"]
        axis["encoding"]["x"] = {**x, "axis": {**x["axis"], "labelAngle": -90}}
    picture = {
        **picture,
        "params": [{**near, "select": {**near["select"], "fields": ["head"]}}],  # the picture's or a cell's
        "data": {"name": PICTURES},
        "transform": [{"filter": f"datum.panel == {k}"}],
        "mark": {**picture["mark"], "width": width, "height": height},  # the plot's, in px
        "encoding": {**picture["encoding"], "description": {"field": "description", "type": "nominal"}},
    }
    title = {**spec["title"], "text": {"expr": f"{row} ? {row}.head : ''"}}
    if "subtitle" in title:  # a signal: Vega takes one for a subtitle, and Vega-Lite hands it on as it is
        title["subtitle"] = {"signal": f"{row} ? {row}.subtitle : ''"}
    return {"layer": [picture, scale, cells], "title": title, "width": width, "height": height}


def _scale_layer(position: dict, colour: Colour) -> dict:
    """The colour legend, from one invisible cell per stop of the domain (the image carries no scale of its own)."""
    first = {"query": position["y"]["scale"]["domain"][0], "key": position["x"]["scale"]["domain"][0]}
    legend_of = _cells_layer(position, colour, 0, False)["encoding"]["color"]
    return {
        "data": {"values": [{**first, "value": v} for v in colour.domain]},
        "mark": {"type": "rect", "opacity": 0, "aria": False, "tooltip": None},
        "encoding": {"x": position["x"], "y": position["y"], "color": legend_of},
    }


# ---------------------------------------------------------------- the routes of a prediction (a graph)

ROUTE_KINDS = {"head": "#3e4989", "mlp": "#b2182b", "residual": "#8c8c8c"}  # each part's colour, readable on white
ROUTE_LEVEL_PX = 18  # px between two levels of nodes (the graph's height follows the levels)


@dataclass(frozen=True)
class RouteSegment:
    """One drawn line of a routes graph: from (x, y) to (x2, y2) in positions and levels; ``edge`` names the edge
    (one MLP edge is two lines through its node beside the stream), ``kind`` "head", "mlp" or "residual", ``share``
    its width, ``label`` its tooltip, ``opens`` whether a click opens it (a head's edge)."""

    edge: str
    kind: str
    x: float
    y: float
    x2: float
    y2: float
    share: float
    label: str
    opens: bool


def routes_graph(
    segments: Sequence[RouteSegment],
    nodes: Sequence[tuple[float, float, str]],
    tokens: Sequence[str],
    levels: Sequence[str],
    title: str,
) -> dict:
    """The routes graph as a Vega-Lite spec: positions left to right (``tokens`` their labels), ``levels`` bottom to
    top, each segment a line whose width is its edge's share, coloured by kind; ``nodes`` (x, y, tooltip) the stream
    nodes reached (their positions labelled). A click on a head's edge selects it ("edge": its ``edge`` field); a
    double click clears."""
    xs, ys = _route_axes(tokens, levels, [int(x) for x, _, _ in nodes])
    dots = {
        "data": {"values": [{"x": x, "y": y, "label": label} for x, y, label in nodes]},
        "mark": {"type": "circle", "size": 36, "color": "#222", "opacity": 0.8},
        "encoding": {
            "x": {"field": "x", "type": "quantitative", **xs},
            "y": {"field": "y", "type": "quantitative", **ys},
            "tooltip": [{"field": "label", "type": "nominal", "title": "stream"}],
        },
    }
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": {"text": title, "fontSize": 14, "anchor": "start"},
        "width": "container",
        # the whole chart's height (autosize "fit"): the levels, plus about 150 px of title, position labels, legend
        "height": max(240, ROUTE_LEVEL_PX * len(levels)) + 150,
        "autosize": {"type": "fit", "contains": "padding"},
        "padding": {"left": 5, "right": 5, "top": 5, "bottom": 16},
        "params": [
            {
                "name": "edge",
                "select": {"type": "point", "fields": ["edge"], "on": "click", "clear": "dblclick"},
                "views": ["edges"],
            }
        ],
        "layer": [_route_edges(segments, xs, ys), dots],
    }


ROUTE_LINE_STYLES = (  # (colour, dash) of the 1st, 2nd ... route drawn as a line: told apart in colour and in dash
    ("#1f77b4", [1, 0]),
    ("#d62728", [8, 4]),
    ("#2ca02c", [2, 3]),
    ("#9467bd", [10, 3, 2, 3]),
    ("#ff7f0e", [4, 4]),
)
ROUTE_ROW_PX = 80  # px between two positions' rows in the routes-as-lines chart
ROUTE_SPREAD = 0.14  # rows between two routes' lines where they run together (11 px: room for a number each)


@dataclass(frozen=True)
class RouteLine:
    """One route drawn as one line: ``name`` its legend entry (its number, strength and parts), ``points`` (level,
    position, what is there: "stream", or the head or MLP the route has just passed) from the embeddings to the top,
    ``words`` the route said in words (the line's text alternative)."""

    name: str
    points: tuple[tuple[int, int, str], ...]
    words: str = ""


def routes_lines(
    lines: Sequence[RouteLine], tokens: Sequence[str], levels: Sequence[str], title: str, about: str
) -> dict:
    """The strongest routes as a Vega-Lite spec, each ONE line a person follows left to right: the levels (the
    embeddings, then after each layer's attention and MLP) along x, the positions the routes visit as rows (labelled
    "13 fa"), each route its own colour and dash, its number at its start, a dot at each head or MLP it passes, a
    legend naming it; where routes run together, side by side. ``about`` is the chart's description, and each line's
    ``words`` its own (what a screen reader is told of it)."""
    rows = sorted({p for line in lines for _, p, _ in line.points})
    row, k = {p: i for i, p in enumerate(rows)}, len(lines)
    values = [
        {"route": line.name, "words": line.words, "order": j, "x": level,
         "y": row[p] + (r - (k - 1) / 2) * ROUTE_SPREAD, "what": what,
         "level": levels[level], "token": f"{p + 1} {tokens[p]}", "part": what != "stream",
         "mark": str(r + 1) if j == 0 else ""}
        for r, line in enumerate(lines)
        for j, (level, p, what) in enumerate(line.points)
    ]  # fmt: skip
    parts = {level for line in lines for level, _, what in line.points if what != "stream"}
    labelled, names_of_rows = sorted({0, *parts, len(levels) - 1}), [f"{p + 1} {tokens[p]}" for p in rows]
    styles, names = ROUTE_LINE_STYLES[:k], [line.name for line in lines]
    legend = {"orient": "bottom", "direction": "vertical", "labelFontSize": 12, "titleFontSize": 12, "labelLimit": 0,
              "symbolStrokeWidth": 3, "symbolSize": 500}  # fmt: skip
    by_route = {"field": "route", "type": "nominal", "title": "route (its strength): its parts", "legend": legend}
    colour = {**by_route, "scale": {"domain": names, "range": [c for c, _ in styles]}}
    dash = {**by_route, "scale": {"domain": names, "range": [d for _, d in styles]}}
    tip = [{"field": "route", "title": "route"}, {"field": "what", "title": "part"},
           {"field": "level", "title": "level"}, {"field": "token", "title": "position"}]  # fmt: skip
    at_parts = [{"filter": "datum.part"}]
    dot = {"type": "point", "filled": True, "size": 90, "opacity": 1, "stroke": "white", "strokeWidth": 1.5}
    line_mark = {"type": "line", "strokeWidth": 3, "aria": True}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": {"text": title, "fontSize": 14, "anchor": "start"},
        "description": about,
        "width": "container",
        "height": max(160, ROUTE_ROW_PX * len(rows)) + 230 + 20 * k,  # the rows, the title, level labels, legend
        "autosize": {"type": "fit", "contains": "padding"},
        "data": {"values": values},
        "encoding": _route_line_axes(levels, labelled, names_of_rows),
        "layer": [
            {"mark": line_mark, "encoding": {"color": colour, "strokeDash": dash, "order": {"field": "order"},
                                             "description": {"field": "words"}}},
            {"transform": at_parts, "mark": dot, "encoding": {"color": {**colour, "legend": None}, "tooltip": tip}},
            {"transform": [{"filter": "datum.order == 0"}], "encoding": {"text": {"field": "mark"},
             "color": {**colour, "legend": None}}, "mark": {"type": "text", "dx": -7, "align": "right",
                                                           "baseline": "middle", "fontSize": 12, "fontWeight": "bold"}},
        ],
    }  # fmt: skip


def _route_line_axes(levels: Sequence[str], labelled: Sequence[int], rows: Sequence[str]) -> dict:
    """The x (levels; those in ``labelled`` named) and y (the ``rows``' labels) of the routes-as-lines chart."""
    x_axis = {"values": list(labelled), "labelExpr": f"{json.dumps(list(levels))}[datum.value]", "labelAngle": -40,
              "labelOverlap": "greedy",
              "labelLimit": 160, "labelFontSize": 12, "titleFontSize": 12, "grid": True, "gridOpacity": 0.3,
              "title": "level: the embeddings, then after each layer's attention and MLP"}  # fmt: skip
    y_axis = {"values": list(range(len(rows))), "labelExpr": f"{json.dumps(list(rows))}[datum.value]",
              "labelLimit": 120, "labelFontSize": 12, "titleFontSize": 12, "grid": True, "gridOpacity": 0.5,
              "gridDash": [2, 4], "title": "position (token)"}  # fmt: skip
    return {
        "x": {"field": "x", "type": "quantitative", "scale": {"domain": [-0.5, len(levels) - 0.5], "nice": False},
              "axis": x_axis},
        "y": {"field": "y", "type": "quantitative", "scale": {"domain": [-0.7, len(rows) - 0.3], "nice": False},
              "axis": y_axis},
    }  # fmt: skip


def _route_axes(tokens: Sequence[str], levels: Sequence[str], shown: Sequence[int]) -> tuple[dict, dict]:
    """The x (positions; those in ``shown`` labelled "13 fa") and y (levels, labelled by name) scales and axes of a
    routes graph."""
    n, top = len(tokens), len(levels) - 1
    x_axis = {
        "values": sorted(set(shown)),
        "labelExpr": f"{json.dumps([f'{i + 1} {t}' for i, t in enumerate(tokens)])}[datum.value]",
        "labelAngle": -45 if len(set(shown)) <= 16 else -90,
        "labelLimit": 90,
        "labelOverlap": False,
        "grid": False,
        "title": "position (token)",
        "labelFontSize": 12,
        "titleFontSize": 12,
    }
    y_axis = {
        "values": list(range(top + 1)),
        "labelExpr": f"{json.dumps(list(levels))}[datum.value]",
        "grid": True,
        "gridOpacity": 0.25,
        "title": None,
        "labelFontSize": 12,
        "labelLimit": 160,
    }
    xs = {"scale": {"domain": [-0.6, n - 0.4], "nice": False}, "axis": x_axis}
    return xs, {"scale": {"domain": [-0.4, top + 0.4], "nice": False}, "axis": y_axis}


def _route_edges(segments: Sequence[RouteSegment], xs: dict, ys: dict) -> dict:
    """The edges' layer ("edges", the click's view): a rule per segment, its width the share, its colour the kind."""
    kinds = {"domain": list(ROUTE_KINDS), "range": list(ROUTE_KINDS.values())}
    return {
        "name": "edges",
        "data": {"values": [vars(s).copy() for s in segments]},
        "mark": {"type": "rule", "strokeCap": "round"},
        "encoding": {
            "x": {"field": "x", "type": "quantitative", **xs},
            "y": {"field": "y", "type": "quantitative", **ys},
            "x2": {"field": "x2"},
            "y2": {"field": "y2"},
            "color": {
                "field": "kind",
                "type": "nominal",
                "scale": kinds,
                "title": "part",
                "legend": {"orient": "bottom", "labelFontSize": 12, "titleFontSize": 12},
            },
            "strokeWidth": {
                "field": "share",
                "type": "quantitative",
                "scale": {"domain": [0, 1], "range": [1.5, 10]},
                "legend": None,
            },
            "opacity": {"condition": {"param": "edge", "empty": True, "value": 0.85}, "value": 0.35},
            "tooltip": [
                {"field": "label", "type": "nominal", "title": "edge"},
                {"field": "share", "type": "quantitative", "format": ".3f", "title": "share"},
            ],
        },
    }
