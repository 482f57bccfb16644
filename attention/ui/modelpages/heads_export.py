"""Every head at once, as one download: every layer × head's weights on the current text, as an .npz or as a zip of
CSVs whose rows and columns are the tokens, each with the model, the text and the ablations recorded in it
(:mod:`attention.io.heads_files`). A small run's files are made with the page; a large one's when pressed."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from ...io import heads_files
from ..core import keys
from . import runs

EAGER_CELLS = 65_536  # weights made into files with the page up to this many (the shipped model: 2 × 2 × 24²)


def measured(now: runs.Measured) -> heads_files.Measured:
    """What the files record: the chosen model, the text as the pages show its tokens, the ablations, the weights."""
    m = runs.model()
    return heads_files.Measured(m.name, runs.model_id(), tuple(runs.pieces(now.ids)), now.ids, now.ablations,
                                now.weights)


def _data(now: runs.Measured, write: Callable[[heads_files.Measured], bytes]) -> bytes | Callable[[], bytes]:
    build = lambda: write(measured(now))  # noqa: E731 - the same maker, now or when pressed
    return build() if now.weights.size <= EAGER_CELLS else build


def downloads(now: runs.Measured) -> None:
    """Two buttons: every head's weights as .npz, and as a zip of one CSV per head."""
    L, H, n, _ = now.weights.shape
    st.markdown(
        f"**Every head at once:** the weights of all {L * H} heads on these {n} tokens in one file, with the model, "
        "the text and the ablations recorded in it (about.json)."
    )
    stem = f"{runs.model_id().split(':')[-1][:40]}_every_head"
    left, right = st.columns(2, gap="medium")
    left.download_button(
        "Download every head's weights (.npz)",
        data=_data(now, heads_files.heads_npz),
        file_name=f"{stem}.npz",
        mime="application/octet-stream",
        key=keys.INSIDE_EXPORT_NPZ,
        on_click="ignore",
        help="weights[layer, head, query, key] (float64), tokens, ids and about (JSON); np.load reads it "
        "without pickle.",
    )
    right.download_button(
        "Download every head's weights (.zip of CSVs)",
        data=_data(now, heads_files.heads_zip),
        file_name=f"{stem}_csv.zip",
        mime="application/zip",
        key=keys.INSIDE_EXPORT_ZIP,
        on_click="ignore",
        help="One CSV per head (rows: query tokens, columns: key tokens), about.json and a README.",
    )
