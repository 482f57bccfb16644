"""Download buttons: one matrix as CSV, or everything as a zip, from the session's numbers; every head of a model.

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
from ...io import heads_files, tables
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


HEADS_EAGER = 65_536  # every head's weights made into files with the page up to this many (the shipped model: 2·2·24²)
HEADS_MOST = 1 << 26  # ... and made at all (67 million: 537 MB as float64; SmolLM2 at 2,046 tokens holds 1.1 billion)


def every_head(measure: Callable[[], heads_files.Measured], shape: tuple[int, ...], model_id: str) -> None:
    """Every head at once: all the heads' weights on the text as one .npz, and as a zip of one CSV per head, with the
    model, the text and the ablations recorded in each (:mod:`attention.io.heads_files`). ``measure`` makes the record
    (from the run cache: a deferred file holds it, never a run's weights); ``shape`` is the weights' (L, H, n, n). A
    large run's files are made when pressed."""
    L, H, n, _ = shape
    st.markdown(
        f"**Every head at once:** the weights of all {L * H} heads on these {n} tokens in one file, with the model, "
        "the text and the ablations recorded in it (about.json)."
    )
    if L * H * n * n > HEADS_MOST:  # a long text's files would be gigabytes: said, not made
        st.markdown(  # not a caption: its grey with code's grey fails the contrast check
            f"At {n:,} tokens these files would hold {L * H * n * n:,} weights ({L * H * n * n * 8 / 1e9:.1f} GB as "
            f"float64), more than the {HEADS_MOST:,} made here. In Python, `run.head(layer, head)` makes one head's "
            "weights, and `run.traces.rows(layer, rows)` every head's at chosen rows."
        )
        return
    stem = f"{model_id.split(':')[-1][:40]}_every_head"
    files = (
        ("npz", "Download every head's weights (.npz)", heads_files.heads_npz, ".npz", "application/octet-stream",
         "weights[layer, head, query, key] (float64), tokens, ids and about (JSON); np.load reads it without pickle."),
        ("zip", "Download every head's weights (.zip of CSVs)", heads_files.heads_zip, "_csv.zip", "application/zip",
         "One CSV per head (rows: query tokens, columns: key tokens), about.json and a README."),
    )  # fmt: skip
    for col, (kind, label, write, suffix, mime, about) in zip(st.columns(2, gap="medium"), files, strict=True):
        build = (lambda w: lambda: w(measure()))(write)  # this file's maker, now or when pressed
        col.download_button(  # ours: fixed labels
            label,
            data=build() if L * H * n * n <= HEADS_EAGER else build,
            file_name=f"{stem}{suffix}",
            mime=mime,
            key=keys.inside_export(kind),
            on_click="ignore",
            help=about,
        )
