"""The frame every page is drawn in: set-up, then any step page from its spec (no per-page branches), and the overview.

Every page file is one call: ``render("scores")``. :func:`setup` is the one guarded entry that every page runs
first, so a page works when opened by URL, after any page switch, and under AppTest.

A step page's body (everything below its formula, and the sidebar's *Save, share, export*) is one ``st.fragment``:
an edit, a tab or a click on a heatmap cell reruns only that body, not the navigation, the sidebar's controls and
the title. The body starts by comparing what the rest of the page was drawn from (:func:`drawn_from`) with the
state now: when a change reached beyond the body (a preset, an option, a size, a message outside it), it asks for
the whole page instead (``st.rerun()``), so nothing a learner sees is ever left stale. The address is written by
the body too, so it follows every edit. Inside the body, the results column is a fragment of its own: a click on a
heatmap cell (the explained cell), a head or a window reruns only that column, checked the same way; except when a
panel the spec asks for answers back from beyond the page (the model, on a model's head): then the body draws the
results and the panel itself, so that choosing another head (same shapes, same sidebar) reruns the body alone.
"""

from __future__ import annotations

from contextlib import nullcontext

import altair as alt
import pandas as pd
import streamlit as st

from ... import charts
from ...names import inputs_of
from ...trace import Trace
from ..address import url
from ..controls import registry as controls
from ..core import cache, compute, parts, session
from ..core.shown import key_labels, per_head
from ..core.text import esc
from ..inputs import editors
from ..inputs import import_box as imports
from ..modelpages import ANSWERS
from ..sidebar import panel as sidebar
from ..sidebar import share
from ..state import core as state_core
from ..views import compare
from ..views import steps as views
from ..widgets import common as widgets
from ..widgets import downloads, printing
from . import nav, tour
from .specs import INSIDE, LABS, OVERVIEW, STEPS

# Altair re-validates every chart object against the Vega-Lite JSON schema as it is built ("debug mode", for better
# tracebacks while writing a chart). Our charts are built by tested code, and that validation was ~10% of each run.
alt.utils.schemapi.disable_debug_mode()


def setup(title: str, page_file: str, tools: bool = True) -> session.Session:
    """Navigation, page config, session state, sidebar and address; every page calls this first (``tools``: draw the
    sidebar's *Save, share, export* here; a step page's body draws it instead)."""
    nav.bootstrap(page_file)
    st.set_page_config(
        page_title=f"{title} · Self-attention, step by step",
        page_icon=str(nav.ROOT / "docs" / "icon.png"),
        layout="wide",
    )
    s = state_core.ensure(url.read)
    cache.collect_if_large(len(s.tokens))
    sidebar.draw(s, tools=tools)
    url.write(s)
    controls.show_messages("page.notice")
    state_core.drew(s, drawn=drawn_from(s), whole_run=True)  # whole_run: read (and dropped) by a step page's body
    return s


def drawn_from(s: session.Session) -> tuple:
    """What the part of a step page outside its body shows depends on: the fields declared to rerun the whole page
    (:mod:`attention.ui.core.parts`: the preset, seed, sizes, options, digits, the pin, the source sentence...), the
    preset's name, the running challenge's standing and the messages left outside the body. Without a challenge,
    grid edits, tabs, the explained cell and imports of the same shape change none of it, nor does another head of
    the same model on the same text."""
    outside = parts.said_outside(s.messages)  # the places' reruns are declared (parts.PLACES)
    # a running challenge: the sidebar says whether the numbers meet its goal (and hands a solve in), so every change
    # of the numbers redraws the whole page
    playing = s.epoch if s.challenge is not None else None
    # the preset's name: a model's, not its head's
    return (session.preset_label(s.preset_id, s), parts.fingerprint(s, parts.PAGE), playing, outside)


def render(key: str) -> None:
    """Draw one step page from its spec: title, formula, explanation, controls, editors, tables, heatmap, views
    (or a lab page: title, intro and its body)."""
    if key in LABS or key in INSIDE:
        lab = LABS.get(key) or INSIDE[key]
        s = setup(lab.nav, lab.file)
        st.title(lab.title)  # ours: the spec's title
        st.markdown(lab.intro(s) if callable(lab.intro) else lab.intro)  # ours: the spec's intro (names escaped)
        lab.body(s)
        return
    step = STEPS[key]
    s = setup(step.nav, step.file, tools=False)
    printing.print_layout()
    st.title(step.title)  # ours: the spec's title
    widgets.formula(step.latex(s) if callable(step.latex) else step.latex)
    body(key)


@st.fragment
def body(key: str) -> None:
    """A step page below its formula, and the sidebar's *Save, share, export*: rerun alone by the widgets drawn here
    (grid edits, tabs, a heatmap cell), or the whole page when a change reached beyond them."""
    s = session.get()
    if s.drawn != drawn_from(s):
        st.rerun()  # a change beyond the body: the whole page (never in a whole run: setup just set it)
    cache.collect_if_large(len(s.tokens))  # as setup does: a fragment rerun is a run too
    step = STEPS[key]
    share.sidebar_tools(s)
    url.write(s)
    trace = compute.current_trace(s)
    ok = isinstance(trace, Trace)
    st.markdown(step.explain(s, trace if ok else None))
    if step.controls or step.editors or step.controls_after:  # no empty container: each element costs every edit
        with printing.screen_only("controls"):
            for name in step.controls:
                controls.CONTROLS[name](s)
            for name in step.editors:
                editors.matrix_editor(name, s)
                imports.matrix_import(name, s)
            for name in step.controls_after:
                controls.CONTROLS[name](s)
    results, inputs = st.columns([3, 2], gap="medium") if step.inputs else (st.container(), None)
    whole_run = s.whole_run
    state_core.drew(s, body_drawn=body_drawn_from(s), whole_run=False)
    # A whole run sends the grids first (their code loads while the rest is built); a rerun of the body after an edit
    # sends the results first, so the browser redraws the heatmap while the grid beside it is still being built.
    first = (inputs, results) if whole_run else (results, inputs)
    for column in first:
        if column is inputs and inputs is not None:
            with inputs, printing.screen_only("inputs", panel=True):
                input_panel(s)
        elif column is results:
            with results:
                results_column(key, s, ok)
    page_downloads(key, s, ok)


def page_downloads(key: str, s: session.Session, ok: bool) -> None:
    """The page's files, drawn only while the learner has them open: each matrix edited or shown here as CSV, and
    everything as a zip."""
    step = STEPS[key]
    matrices = [*step.editors, *(step.show if ok else ())]
    files = [f"{name}.csv" for name in matrices] + (["everything as a .zip"] if ok else [])
    box = widgets.open_expander("downloads", "Downloads: " + ", ".join(files), s) if files else None
    if box is None:
        return
    with box:
        for name in matrices:
            downloads.matrix(name, s, key)
        if ok:
            downloads.everything(s, key)


def body_drawn_from(s: session.Session) -> tuple:
    """What a step page's body outside its results column depends on: everything outside the body, and the fields
    declared to rerun the body (the numbers: ``epoch`` moves with every change; the refreshed grids, open tabs and
    every message)."""
    return (drawn_from(s), parts.fingerprint(s, parts.BODY))


def results_column(key: str, s: session.Session, ok: bool) -> None:
    """The results column: a fragment of its own (:func:`result_panel`), or, when a panel the spec asks for answers
    back (:data:`attention.ui.modelpages.ANSWERS`: the model, on a model's head), the results and that panel in the
    body's run, since the panel's widgets change the grids beside it too (choosing another head reruns the body, not
    the whole page)."""
    answers = [ANSWERS[name] for name in STEPS[key].answers if ANSWERS[name].applies(s)]
    if not answers:
        result_panel(key)
        return
    results_of(key)
    for answer in answers if ok else ():  # below the results, once they are computed
        answer.draw(s)


@st.fragment
def result_panel(key: str) -> None:
    """A step page's results: the tutorial check, the heatmap, tables and views. A click on a heatmap cell, a head,
    a window or a zoom reruns only this column; a change beyond it reruns the whole page."""
    if session.get().body_drawn != body_drawn_from(session.get()):
        st.rerun()  # a change beyond the results: the whole page (never when the body runs: it just set it)
    results_of(key)


def results_of(key: str) -> None:
    """What :func:`result_panel` draws, in whatever run draws it."""
    s = session.get()
    step, trace = STEPS[key], compute.current_trace(s)
    if not isinstance(trace, Trace):
        views.show_error(trace)
        return
    views.doc_check(s, trace)
    if step.heatmap:  # the picture first: it is what an edit beside it visibly moves
        views.show_heatmap(step.heatmap, s, trace, key)
    base = compute.base_trace(s)
    for name in step.show:  # beside a heatmap of it, a table is a view a learner opens
        box = widgets.open_expander(f"table.{name}", views.table_label(name), s) if step.heatmap else nullcontext()
        if box is not None:
            with box:
                views.show_matrix(name, s, trace, base, key, download=False)
    for name in step.views:
        lazy = views.OPENED.get(name)
        box = (
            nullcontext()
            if lazy is None
            else lazy.applies(s, trace) and widgets.open_expander(f"view.{name}", lazy.label, s)
        )
        if box:
            with box, printing.view(name):
                views.VIEWS[name](s, trace, key)
    if step.compare and s.pin is not None:  # A beside now: only once a state is pinned
        with printing.screen_only("compare"):
            for name in step.compare:
                compare.show(name, s, trace, key)


def input_panel(s: session.Session) -> None:
    """The four input matrices as editors in tabs, beside a step's result: one edit redraws the result next to it."""
    st.markdown("**Inputs** · edit any cell; the result beside redraws")
    inputs = inputs_of(s.matrices)
    for name in widgets.open_tab("inputs", list(inputs), s):
        editors.matrix_editor(name, s, beside=True)
        if editors.cut_beside(name, s) and (page := nav.editing_page(name)) is not None:  # a clear way to the rest
            st.page_link(
                page,
                label=f"All {s.matrices[name].shape[1]} columns: {page.title}",
                icon=":material/open_in_full:",
            )


def render_overview() -> None:
    """The home page: the whole pipeline at a glance with the current shapes, and links to each step."""
    s = setup("Overview", OVERVIEW)
    preset = s.origin.preset
    st.title("Self-attention, step by step")
    st.markdown(
        "Every matrix of scaled dot-product attention, computed live from numbers you can change. The presets in the "
        "sidebar are worked examples from five numpy tutorials (each gives the numbers its tutorial prints), a "
        "GloVe example with real word vectors, and random matrices of any size. Edit any cell of X or the weights "
        "and watch every later step move; each step has its own page, and everything downloads as CSV."
    )
    toks_md = ", ".join(esc(t, 60) for t in s.tokens[:20])
    st.markdown(f"**{esc(preset.title)}** · tokens: {toks_md}" + (" …" if len(s.tokens) > 20 else ""))
    if preset.description:
        st.caption(esc(preset.description, 2000))
    tour.show(s)
    trace = compute.current_trace(s)
    if not isinstance(trace, Trace):
        views.show_error(trace)
        return
    views.doc_check(s, trace)
    rows = [(step.nav.split(" (")[0], *step.overview(s, trace)) for step in STEPS.values() if step.overview]
    # a plain table of text, which wraps where a grid's cells cut it ("Q = XW_q, K = XW_k, V = XW_" at 1280 px)
    st.table(pd.DataFrame(rows, columns=["step", "computes", "shape"]).set_index("step"))
    for column, (section, pages) in zip(st.columns(3), nav.sections(nav.pages()).items(), strict=True):
        column.caption(section)  # ours: the sections' names
        for p in pages:
            if p.title != "Overview":
                column.page_link(p, label=f"→ {p.title}")
    # full width, so the keys and the colour bar fit at any size up to the cell-by-cell limit
    widgets.chart_gap()
    widgets.vega_chart(
        charts.heatmap(
            per_head(trace.weights)[0],
            s.labels,
            key_labels(s),
            charts.Style(
                kind="weights",
                title="Attention weights" + (" (head 1)" if trace.options.heads > 1 else ""),
                subtitle="each row sums to 1",
                digits=s.digits,
            ),
            trace.allowed,
        ),
        width="stretch",
    )
    downloads.everything(s, "overview")
