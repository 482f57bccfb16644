"""Download buttons: one matrix as CSV, or everything as a zip, from the session's numbers.

A small state's files are built with the page, so the file is the run's own and stays until the session's next run.
A large state's are deferred (built when clicked), so no session holds megabytes of CSV it never asks for; Streamlit
1.67 drops a deferred file after any two script runs end on the server, so in a busy class a deferred download can
answer 404 before the browser fetches it. Document presets and most edited states are small.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from ... import names
from ...io import tables
from ..core import compute, keys, session
from ..core.shown import shown

EAGER_CELLS = 1024  # input cells of a state whose downloads are built with the page (a zip of 1,024 takes ~10 ms)
T = TypeVar("T", bytes, str)


def payload(s: session.Session, build: Callable[[], T], name: str | None = None) -> T | Callable[[], T]:
    """A download's data: built now for a small state, else the callable (built when clicked). A ``name``d file
    depends on the state alone and is built once per state (:func:`session.derived`): a page switch or a whole run
    of the same numbers sends the bytes already made."""
    cells = sum(s.matrices[n].size for n in names.inputs_of(s.matrices))
    if cells > EAGER_CELLS:
        return build
    return build() if name is None else session.derived(s, f"download.{name}", build)


def matrix(name: str, s: session.Session, page_key: str) -> None:
    """A CSV download of one matrix from the session's current numbers (see :func:`payload`).

    A deferred callable holds the (small) session, never the trace: Streamlit keeps a session's deferred
    downloads alive, and a captured n = 2048 trace would pin ~100 MB per session."""

    def data() -> bytes:
        if name in names.inputs_of(s.matrices):
            m, rows, cols = s.matrices[name], *s.axis_labels(name, s.matrices[name].shape)
        else:
            m, rows, cols = shown(s, compute.session_trace(s), name)
        return tables.matrix_csv(m, rows, cols, corner=names.corner_label(name))

    st.download_button(
        f"Download {name}.csv",
        data=payload(s, data, f"{name}.csv"),
        file_name=f"{s.preset_id}_{name}.csv",
        mime="text/csv",
        key=keys.download(page_key, name),
        on_click="ignore",
    )


def everything(s: session.Session, page_key: str) -> None:
    def build() -> bytes:
        return tables.trace_zip(compute.session_trace(s), session.export_preset(s))

    st.download_button(
        "Download everything (.zip: every matrix as CSV + settings as a preset file)",
        data=payload(s, build, "zip"),
        file_name=f"{s.preset_id}_attention.zip",
        mime="application/zip",
        key=keys.download(page_key, "zip"),
        on_click="ignore",
    )
