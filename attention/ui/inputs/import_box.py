"""Bring your own numbers: under each matrix editor, upload a file or paste a numpy array for that matrix.

Every import is applied in a widget callback (before the page is drawn), so the editors above it already
show the new numbers; a refused import changes nothing (not the matrices, not the version that keys the
editors, not the pasted text). An import of another shape is held, and a button offers to resize to it.
Nothing pasted or uploaded is ever evaluated: parsing is :mod:`attention.io.parse`.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from ... import names
from ...errors import AttentionError
from ...io.parse import dispatch
from ..core import keys, session
from ..core.text import esc, quoted
from ..state import core as state_core
from ..state import edits, pins
from ..widgets.common import bind, open_expander, show_messages


def parse_import(
    name: str,
    expected: tuple[int, int] | None,
    projection: str,
    *,
    text: str | None = None,
    data: bytes | None = None,
    filename: str = "",
) -> np.ndarray:
    """A pasted text or an uploaded file as a float64 matrix of the expected shape (AttentionError if not)."""
    dims = names.axis_names(name, projection)
    if text is not None:
        arr = dispatch.parse_matrix_text(text, name, expected, dims=dims)
    else:
        arr = dispatch.read_upload(data if data is not None else b"", filename, name, expected, dims=dims)
    return np.array(arr, dtype=np.float64)


def resized_shapes(name: str, shape: tuple[int, int], projection: str) -> tuple[int | None, int, int | None] | None:
    """(n tokens, d_model, d_out) that would make ``shape`` fit ``name`` (d_out is d_v for W_v, else d_k; None where
    it says nothing); None when out of range, or for W_o and P (no resize follows from their shape)."""
    if name not in ("X", *names.WEIGHTS):
        return None
    r, c = shape
    if name == "X":
        n, dm, dk = r, c, None
    else:
        n = None
        dm, dk = (r, c) if projection == "x_w" else (c, r)
    if (
        (n is not None and not 1 <= n <= names.MAX_TOKENS)
        or not 1 <= dm <= names.MAX_DIM
        or (dk is not None and not 1 <= dk <= names.MAX_DIM)
    ):
        return None
    return n, dm, dk


def _place(name: str) -> str:
    return f"import.{name}"


def _refused_at(name: str, how: str) -> str:
    """Where a refused paste or upload is said: just above the box it came from ("paste" or "file"), where the eye
    is (a place of its own, so the outcome shown below the expander does not repeat it)."""
    return f"import.{how}.{name}"


def _applied(name: str, arr: np.ndarray, what: str) -> None:
    state_core.say(_place(name), "success", f"{name} replaced by {what}: shape {arr.shape[0]} × {arr.shape[1]}.")


def _refuse(
    name: str, exc: AttentionError, *, text: str | None = None, data: bytes | None = None, filename: str = ""
) -> None:
    """Say why; when only the shape is wrong, hold the array so it can be applied with a resize."""
    s = session.get()
    pins.hold_import(name, None)
    try:
        arr = parse_import(name, None, s.options.projection, text=text, data=data, filename=filename)
    except AttentionError:
        arr = None
    if (
        arr is not None
        and arr.shape != s.matrices[name].shape
        and resized_shapes(name, arr.shape, s.options.projection)
    ):
        pins.hold_import(name, (arr, quoted(filename) if filename else "the pasted matrix"))
    state_core.say(_refused_at(name, "file" if text is None else "paste"), "error", esc(exc.message, 2000))


def _on_paste(name: str) -> None:
    s = session.get()
    text = st.session_state.get(keys.import_box(name, "text"), "")
    if not str(text or "").strip():  # nothing to apply (Ctrl+Enter may already have applied and emptied the box)
        if not any(kind == "success" for kind, _ in state_core.messages(_place(name))):
            state_core.say(
                _place(name), "info", f"The paste box is empty: paste {name}, then press Apply (or Ctrl+Enter)."
            )
        return
    try:
        arr = parse_import(name, s.matrices[name].shape, s.options.projection, text=text)
    except AttentionError as exc:
        _refuse(name, exc, text=text)  # the text stays in the box, to be fixed
        return
    if not edits.replace_matrix(name, arr):
        return  # refused (a challenge locks it): the message says so
    _applied(name, arr, "the pasted matrix")
    bind(keys.import_box(name, "text"), "")  # applied: the box is emptied


def _on_upload(name: str) -> None:
    f = st.session_state.get(keys.import_box(name, "file"))
    if f is None:
        return
    s = session.get()
    data = f.getvalue()
    try:
        arr = parse_import(name, s.matrices[name].shape, s.options.projection, data=data, filename=f.name)
    except AttentionError as exc:
        _refuse(name, exc, data=data, filename=f.name)
        return
    if edits.replace_matrix(name, arr):
        _applied(name, arr, quoted(f.name))


def _on_resize(name: str) -> None:
    s = session.get()
    held = s.held.get(name)
    if held is None:
        return
    arr, what = held
    n, dm, dk = resized_shapes(name, arr.shape, s.options.projection)  # type: ignore[misc]
    if edits.resize_and_replace(name, arr, n, dm, dk):
        _applied(name, arr, what)


def matrix_import(name: str, s: session.Session) -> None:
    """Upload a CSV or paste a numpy literal for one matrix, under its editor (its boxes are sent only while its
    expander is open)."""
    box = open_expander(f"import.{name}", f"Import {name}: upload a CSV or paste a numpy array", s)
    if box is not None:
        with box:
            _import_boxes(name, s)
    # Any other outcome is shown below the expander (not inside), so it is seen even when the expander is closed:
    # a new matrix gives the editor above a fresh key, and the browser may then redraw the expander collapsed.
    show_messages(_place(name))


def _resize_button(name: str, s: session.Session) -> None:
    """When only the shape of an import was wrong: a button that resizes the state to it and applies it."""
    shape = s.matrices[name].shape
    held = s.held.get(name)
    if held is not None:
        n, dm, dk = resized_shapes(name, held[0].shape, s.options.projection)  # type: ignore[misc]
        parts = []
        if n is not None and n != shape[0]:
            parts.append(f"{n} tokens" + (f" (new ones named t{shape[0] + 1}…)" if n > shape[0] else ""))
        if dm != s.dims.d_model:
            parts.append(f"d_model = {dm}")
        if dk is not None and dk != s.dims.d_k:
            parts.append(f"d_k = {dk}")
        st.button(
            f"Change the shape to match: {', '.join(parts) or 'resize'}",
            key=keys.import_box(name, "resize"),
            on_click=_on_resize,
            args=(name,),
            help="Resizes the other matrices too, keeping every value that still fits; new cells are drawn from the "
            "seed.",
        )


def _import_boxes(name: str, s: session.Session) -> None:
    """What the open import box holds: the shape it takes, an uploader and a paste box with its Apply."""
    shape = s.matrices[name].shape
    d = names.axis_names(name, s.options.projection)
    st.markdown(  # not a caption: its grey text on the code's grey fails contrast (axe: color-contrast, serious)
        f"{name} is {shape[0]} × {shape[1]} ({d[0]} × {d[1]}). A CSV may have a label row and column; "
        "a paste may be `np.array([[0.2, 0.9], [0.1, 0.5]])`, nested lists, or numpy's printed form "
        "`[[0.2 0.9]\\n [0.1 0.5]]`. Nothing you paste is run as code."
    )
    formats = ", ".join("." + f for f in dispatch.MATRIX_FORMATS)
    show_messages(_refused_at(name, "file"))
    st.file_uploader(
        f"Upload {name} ({formats})",
        type=dispatch.uploader_types(dispatch.MATRIX_FORMATS),
        key=keys.import_box(name, "file"),
        on_change=_on_upload,
        args=(name,),
    )
    with st.form(keys.import_box(name, "form"), border=False):
        show_messages(_refused_at(name, "paste"))
        st.text_area(
            f"Paste {name}",
            key=keys.import_box(name, "text"),
            height=120,
            placeholder="np.array([[0.2, 0.9], [0.1, 0.5]])  or  [[0.2 0.9]\n [0.1 0.5]]",
        )
        st.form_submit_button("Apply", key=keys.import_box(name, "apply"), on_click=_on_paste, args=(name,))
    _resize_button(name, s)  # after a refusal of the shape alone: its fix, under Apply
