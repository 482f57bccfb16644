"""Download buttons: one matrix as CSV, or everything as a zip, built only when clicked from the session's numbers."""

from __future__ import annotations

import streamlit as st

from .. import names
from ..io import tables
from . import compute, session
from .arrays import shown


def matrix(name: str, s: session.Session, page_key: str) -> None:
    """A CSV download of one matrix, built when clicked from the session's current numbers.

    The callable holds the (small) session, never the trace: Streamlit keeps a session's deferred
    downloads alive, and a captured n = 2048 trace would pin ~100 MB per session."""

    def data() -> bytes:
        if name in names.INPUTS:
            m, rows, cols = s.matrices[name], *s.axis_labels(name, s.matrices[name].shape)
        else:
            m, rows, cols = shown(s, compute.compute(s.tokens, s.matrices, s.options), name)
        return tables.matrix_csv(m, rows, cols, corner=names.corner_label(name))

    st.download_button(
        f"Download {name}.csv",
        data=data,
        file_name=f"{s.preset_id}_{name}.csv",
        mime="text/csv",
        key=f"dl.{page_key}.{name}",
        on_click="ignore",
    )


def everything(s: session.Session, page_key: str) -> None:
    def build() -> bytes:
        return tables.trace_zip(compute.compute(s.tokens, s.matrices, s.options), session.export_preset(s))

    st.download_button(
        "Download everything (.zip: every matrix as CSV + settings as a preset file)",
        data=build,
        file_name=f"{s.preset_id}_attention.zip",
        mime="application/zip",
        key=f"dl.{page_key}.zip",
        on_click="ignore",
    )
