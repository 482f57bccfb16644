"""Small shared widget helpers: messages, whole numbers read back, lazy tabs, charts, a background job's progress.

The tab and expander labels are always the dashboard's own names (matrix names, step names), never user text."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa  # Streamlit's own table format (a dependency of streamlit)
import streamlit as st

from ... import names
from ..core import jobs, keys, session
from ..core.text import esc
from ..state import core as state_core
from ..state import pins

TOOLBAR_GAP = 28  # px: a chart's toolbar shows 44 px above its top on hover; 16 px of that is the usual gap


def chart_gap(where=st) -> None:
    """Room above a chart for the toolbar Streamlit shows over its top right corner on hover, so it covers no text."""
    where.space(TOOLBAR_GAP)


def vega_chart(spec: dict, where=st, **kwargs: Any) -> Any:
    """``st.vega_lite_chart`` of ``spec``; the rows of its inline data (``spec["data"]["values"]``, JSON-ready dicts
    with the same keys, as :func:`attention.charts.heatmap` writes them) and of each named dataset
    (``spec["datasets"]``) reach Streamlit as Arrow tables of their columns. Streamlit takes inline rows out of the
    spec and converts them to Arrow through a pandas frame, which was most of a heatmap's cost on the server (~1 ms
    for 3 × 3); the browser gets the same columns, names and values (None as null). Any other spec is passed on as
    it is."""
    data = spec.get("data")
    values = data.get("values") if isinstance(data, dict) and len(data) == 1 else None
    rows = [values] if values is not None else []
    rows += list(spec.get("datasets", {}).values())
    if not rows or not all(_rows(r) for r in rows):  # not JSON-ready rows: Streamlit's own conversion decides
        return where.vega_lite_chart(spec, **kwargs)
    try:
        table = _arrow(values) if values is not None else None
        named = {name: _arrow(r) for name, r in spec.get("datasets", {}).items()}  # each sent as its own
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # a column of mixed kinds: Streamlit's own conversion decides
        return where.vega_lite_chart(spec, **kwargs)
    rest = {k: v for k, v in spec.items() if k != "datasets" and (k != "data" or table is None)}
    return where.vega_lite_chart(table, {**rest, **({"datasets": named} if named else {})}, **kwargs)


def _rows(rows: object) -> bool:
    """Whether ``rows`` is a non-empty list of dicts with the same keys in the same order."""
    if not rows or not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        return False
    keys = list(rows[0])
    return all(list(row) == keys for row in rows)


def _arrow(rows: list[dict]) -> pa.Table:
    """JSON-ready rows with the same keys as one Arrow table of their columns."""
    return pa.table({k: [row[k] for row in rows] for k in rows[0]})


def formula(latex: str, where=st) -> None:
    """A displayed formula. KaTeX draws the 2 px spacer of a closing sub- or superscript about 1 px past the formula's
    box, which makes Streamlit's formula box a scroll container a keyboard cannot reach (axe-core's
    scrollable-region-focusable); a thin space at the end keeps the drawing inside its box."""
    where.latex(latex + r"\,")


def bind(key: str, value: Any, *, once: bool = False) -> None:
    """Show the session's value in widget ``key``, whatever page the widget was last drawn on: call it just before
    drawing the widget, which is given no value of its own. ``once``: only when the widget holds no value yet (so
    what a person typed and was refused stays as typed, with its message)."""
    if not once or key not in st.session_state:
        st.session_state[key] = value


def on_value(fn: Callable[[Any], None], key: str) -> Callable[[], None]:
    """A widget callback that hands the value of widget ``key`` to ``fn`` (a change in :mod:`attention.ui.state`)."""
    return lambda: fn(st.session_state[key])


def show_messages(place: str, where=st) -> None:
    """The messages left for ``place`` by the last change or refusal."""
    for kind, text in state_core.messages(place):
        if kind == "caption":  # a quiet note (what an edit changed), not a box
            where.caption(text)  # ours: messages are built with the escaping helper where they quote user text
            continue
        icon = {"success": ":material/check_circle:", "error": ":material/error:", "warning": ":material/warning:"}.get(
            kind
        )
        getattr(where, kind)(text, icon=icon)


def checked_number(
    key: str, what: str, lo: float, hi: float, place: str, stays: str, whole: bool = True, span: str = ""
) -> float | None:
    """The number in widget ``key`` when it is finite, from ``lo`` to ``hi`` and (``whole``) a whole number; else None
    after leaving at ``place`` "{what} must be a whole number from {span}; {value} was not applied and {stays}."
    (``span`` defaults to "lo to hi" with thousands separators, or in %g for a number that need not be whole).
    A refused value stays in the box: the caller puts the session's value back as its box requires."""
    value = typed_number(st.session_state.get(key))
    ok = (
        names.is_number(value)
        and math.isfinite(value)
        and lo <= value <= hi
        and (not whole or float(value).is_integer())
    )
    if ok:
        return value
    kind = "a whole number" if whole else "a number"
    span = span or (f"{lo:,} to {hi:,}" if whole else f"{lo:g} to {hi:g}")
    state_core.say(place, "error", f"{what} must be {kind} from {span}; {esc(value)} was not applied and {stays}.")
    return None


TYPED_MAX = 40  # characters of a typed number read; a longer text is refused as it is
WHOLE = re.compile(r"[+-]?[0-9]+")


def typed_number(value: object) -> object:
    """What a text box holds as a number: a whole number written in digits (an optional sign, spaces around, "_"
    and "," between digits allowed) as an int, any length up to :data:`TYPED_MAX`; anything else as it was (refused
    by the caller, with the text in its message). A number box's value passes through."""
    if not isinstance(value, str):
        return value
    text = value.strip().replace("_", "").replace(",", "")
    if len(text) <= TYPED_MAX and WHOLE.fullmatch(text):  # bounded before the pattern is tried
        return int(text)
    return value


def whole_number(key: str, what: str, lo: int, hi: int, place: str, current: int) -> int | None:
    """The whole number in widget ``key`` (a number box, or a text box holding digits), or None after leaving a
    message and putting ``current`` back (as text in a text box)."""
    value = checked_number(key, what, lo, hi, place, f"{what} stays {current:,}")
    if value is None:
        st.session_state[key] = str(current) if isinstance(st.session_state.get(key), str) else current
        return None
    return int(value)


def open_tab(place: str, labels: Sequence[str], s: session.Session) -> Iterator[str]:
    """Tabs whose content only the open one draws: yields the open tab's label once, inside that tab.

    Every tab's content would otherwise be computed and sent on every run (four grids where one is seen); choosing
    another tab reruns the page with that tab's content instead. The choice is kept in the session (display only)."""
    key = keys.tabs(place)
    labels = list(labels)
    chosen = s.tabs.get(place)

    def changed() -> None:
        if st.session_state.get(key) in labels:
            pins.set_tab(place, st.session_state[key])

    default = chosen if chosen in labels else labels[0]
    tabs = st.tabs(labels, key=key, default=default, on_change=changed)  # ours: matrix and step names
    for label, tab in zip(labels, tabs, strict=True):
        if tab.open:
            with tab:
                yield label


def open_expander(place: str, label: str, s: session.Session, where=st):
    """An expander whose content is drawn only while it is open: returns its container when open, else None.
    Opening or closing it reruns the fragment that drew it (or the page); whether it is open is kept in the session
    (display only), so it is drawn open again after a page switch, and a change made elsewhere (a click on a heatmap
    cell opens the explained cell) shows: the widget is given the session's value before it is drawn."""
    key = keys.expander(place)

    def changed() -> None:
        pins.set_tab(place, "open" if st.session_state.get(key) else "closed")

    st.session_state[key] = s.tabs.get(place) == "open"
    box = where.expander(label, key=key, on_change=changed)  # ours: a heading the pages choose
    return box if box.open else None


def open_view(place: str) -> None:
    """Open the lazy expander at ``place`` from a callback (it is drawn open in the run that follows)."""
    pins.set_tab(place, "open")


def duration(seconds: float) -> str:
    """A time as a person reads it: "8 s", "2 min 05 s"."""
    s = int(round(seconds))
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


def job_progress(
    job_id: str | None,
    key: tuple,
    polling: bool,
    steps: tuple[str, str],
    cancel: tuple[str, Callable[[], None]],
    *,
    after_cancel: str = "",
    while_running: Callable[[jobs.Job], None] | None = None,
) -> None:
    """The job ``job_id`` if it is the one for ``key``: running, a bar "Patch 40 of 270 · 3.1 s · about 18 s left"
    (``steps``: a step's name and its plural) and Cancel (``cancel``: its widget key and callback), then
    ``while_running(job)`` (what it made so far); cancelled, how far it got (and ``after_cancel``); failed, its
    message. ``polling`` (the caller redraws it on a timer): once the job has ended, the whole page runs again."""
    job = jobs.get(job_id)
    if job is None or job.key != key:
        return
    if polling and job.state != "running":
        st.rerun()  # it ended: the whole page again, without the timer, with what it made
    seconds = job.seconds if job.state != "running" else time.perf_counter() - job.started
    one, many = steps
    if job.state == "running":
        left = job.seconds_left
        more = "estimating the time left" if left is None else f"about {duration(left)} left"
        text = f"{one.capitalize()} {job.done:,} of {job.total:,} · {seconds:.1f} s · {more}"
        st.progress(min(job.done / job.total, 1.0), text=text)
        st.button("Cancel", key=cancel[0], on_click=cancel[1])
        if while_running is not None:
            while_running(job)
    elif job.state == "cancelled":
        st.info(
            f"Cancelled after {job.done:,} of {job.total:,} {many} ({seconds:.1f} s); nothing of it was kept"
            + (f" {after_cancel}" if after_cancel else ".")
        )
    elif job.state == "failed":
        st.error(esc(job.message, 400) + ". Nothing was kept.")
