"""The print layout: a step page printed (or saved as PDF) is its title, formula, words, heatmap and tables on A4.

The browser applies these rules only when printing: the sidebar, the header, buttons, uploads, editors and the
panels a page marks with :func:`screen_only` are left out, and what stays takes the page's whole width.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from ..core import keys

PRINTED_VIEWS = ("concat", "reading_lines", "reading_table", "kv_groups")  # a spec's views kept on paper; the
# others (explain a cell, softmax's middle steps, what a step takes in, the KV cache sizes) are for the screen

# a step page's lazy views printed when open (widgets.open_expander's places): the result tables and the printed views;
# their heading and frame are left out, their content printed as if drawn at once; every other expander is left out
PRINTED_PLACES = ("table.", *(f"view.{name}" for name in PRINTED_VIEWS))


def _key_class(key: str) -> str:
    """The CSS class Streamlit gives the container of the element keyed ``key`` (a prefix of it, for a prefix)."""
    return "st-key-" + re.sub(r"[^A-Za-z0-9_-]", "-", key)


def _printed(then: str) -> str:
    """A selector of ``then`` inside each open printed expander (``then`` "": the expander itself)."""
    return ", ".join(
        f'[class*="{_key_class(keys.expander(place))}"] [data-testid="stExpander"]:has(details[open]) {then}'.strip()
        for place in PRINTED_PLACES
    )


PRINT_ZOOM = 0.75  # the page's text at 75 %: a formula, two heads' heatmaps and a 6-row table fit one A4 sheet

_LEFT_OUT = ", ".join(
    [
        '[data-testid="stSidebar"]',
        '[data-testid="stSidebarCollapsedControl"]',
        '[data-testid="stHeader"]',
        '[data-testid="stToolbar"]',
        '[data-testid="stDecoration"]',
        '[data-testid="stElementToolbar"]',
        '[data-testid="stButton"]',
        '[data-testid="stDownloadButton"]',
        '[data-testid="stPopover"]',
        '[data-testid="stFileUploader"]',
        '[data-testid="stExpander"]',
        f'[class*="st-key-{keys.SCREEN_ONLY}"]',
        f'[data-testid="stColumn"]:has([class*="st-key-{keys.SCREEN_ONLY}-panel"])',
    ]
)

PRINT_CSS = f"""<style>
@page {{ size: A4 portrait; margin: 10mm; }}
@media print {{
  {_LEFT_OUT} {{ display: none !important; }}
  [data-testid="stMain"] {{ margin: 0 !important; }}
  [data-testid="stMainBlockContainer"] {{ padding: 0 !important; max-width: 100% !important; zoom: {PRINT_ZOOM}; }}
  [data-testid="stVerticalBlock"] {{ gap: 0.5rem !important; }}
  [data-testid="stHorizontalBlock"] {{ display: flex !important; flex-wrap: nowrap !important; }}
  [data-testid="stHorizontalBlock"]:not(:has([class*="st-key-{keys.SCREEN_ONLY}-panel"])) > [data-testid="stColumn"] {{
    flex: 1 1 0 !important; width: auto !important; min-width: 0 !important;
  }}
  [data-testid="stHorizontalBlock"]:has([class*="st-key-{keys.SCREEN_ONLY}-panel"]) > [data-testid="stColumn"] {{
    width: 100% !important; flex: 1 1 100% !important;
  }}
  [data-testid="stVegaLiteChart"], [data-testid="stDataFrame"] {{ break-inside: avoid; }}
  [class*="st-key-heads-view-"] {{ display: grid !important; grid-template-columns: 1fr 1fr; gap: 0.5rem !important; }}
  [class*="st-key-heads-view-"] [data-testid="stVegaLiteChart"] :is(svg, canvas) {{
    max-width: 100% !important; height: auto !important;
  }}
  h1 {{ padding-top: 0 !important; }}
  {_printed("")} {{ display: block !important; }}
  {_printed("summary")} {{ display: none !important; }}
  {_printed("details")} {{ border: none !important; }}
  {_printed('[data-testid="stExpanderDetails"]')} {{ padding: 0 !important; border: none !important; }}
}}
</style>"""


def print_layout() -> None:
    """Add the print rules to this page (drawn nowhere on screen)."""
    st.html(PRINT_CSS)


@contextmanager
def screen_only(name: str, panel: bool = False) -> Iterator[None]:
    """A container left out of the printed page; ``panel=True`` leaves out the whole column it sits in."""
    with st.container(key=keys.screen_only(name, panel)):
        yield


@contextmanager
def view(name: str) -> Iterator[None]:
    """Where a spec's view ``name`` is drawn: on paper too if it is one of :data:`PRINTED_VIEWS`, else screen only."""
    if name in PRINTED_VIEWS:
        yield
    else:
        with screen_only(name):
            yield
