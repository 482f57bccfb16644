"""Under a chart: take it home as SVG, as a PNG at twice the size, or as its Vega-Lite spec with the data.

The files are drawn on the server from the same spec the page draws (:mod:`attention.io.figures`), only when a
button is pressed (the buttons hold the spec, not the file): a page with many charts pays nothing until asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import altair as alt
import streamlit as st

from ...io import figures
from ..core import keys

_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]+")  # runs on at most 200 characters (file_stem cuts first)
FORMATS = (  # (label, extension, mime, maker)
    ("SVG (for slides and print)", "svg", "image/svg+xml", lambda spec: figures.svg(spec).encode()),
    ("PNG at twice the size", "png", "image/png", figures.png),
    ("Vega-Lite spec with its data", "json", "application/json", lambda spec: figures.vega_lite_json(spec).encode()),
)


def _maker(chart: dict | alt.TopLevelMixin, make: Callable[[dict], bytes]) -> Callable[[], bytes]:
    def build() -> bytes:
        spec = chart if isinstance(chart, dict) else chart.to_dict(validate=False)
        return make(spec)

    return build


def file_stem(text: str) -> str:
    """``text`` as a file name's stem: letters, digits, '-' and '_' only (at most 80 characters)."""
    return "_".join(part for part in _NOT_NAME.split(text[:200]) if part)[:80] or "chart"


def chart_files(chart: dict | alt.TopLevelMixin, stem: str, key: str, where=st) -> None:
    """A small "Download chart" menu for ``chart`` (a Vega-Lite dict or an Altair chart): files named ``stem.svg``,
    ``stem.png`` and ``stem.vl.json``, drawn once the menu is opened; ``key`` makes its widgets unique on the page."""
    stem, key = file_stem(stem), file_stem(key)
    menu = where.popover(
        "Download chart",
        icon=":material/download:",
        help="This chart as a file: SVG, PNG or its spec",
        key=keys.chart_file(key, "menu"),
        on_change="rerun",  # its buttons are sent only while it is open: three messages fewer for every edit
    )
    if not menu.open:
        return
    with menu:
        for label, ext, mime, make in FORMATS:
            st.download_button(  # ours: the FORMATS labels
                label,
                data=_maker(chart, make),
                file_name=f"{stem}.{'vl.json' if ext == 'json' else ext}",
                mime=mime,
                key=keys.chart_file(key, ext),
                on_click="ignore",
            )
