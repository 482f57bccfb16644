"""Bring your own numbers, take them home as code (issue 5): upload/paste matrices, load a preset
file, export the state as a Python script or notebook, and a shareable link carrying small edits.

Hooks called by the page frame (attention/ui/page.py) and state (attention/ui/state.py):
- ``matrix_import(name, rows, cols)``: under each matrix editor (X, W_q, W_k, W_v).
- ``sidebar_tools()``: in the sidebar, after the controls.
- ``restore_link_edits(session)``: once, when a session is created from the URL.

Every import is applied in a widget callback (before the page is drawn), so the editors above it
already show the new numbers; a refused import changes nothing (not the matrices, not the version
that keys the editors, not the pasted text). Nothing pasted or uploaded is ever evaluated: parsing
is :mod:`attention.parse` and :func:`attention.parse_preset`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from urllib.parse import urlencode

import numpy as np
import streamlit as st

from .. import export, links, parse
from ..errors import AttentionError
from ..presets import Preset, parse_preset
from . import state
from .sidebar import FACTOR_RANGE

_LINK_PREFIX = "the link's edits cannot be restored: "
_LINK = threading.local()  # this script run's link box (each session's runs happen on its own thread)


# ------------------------------------------------------------------------------------ pure helpers


def dims_for(name: str, projection: str) -> tuple[str, str]:
    """The axis names of a matrix for messages: W is d_k × d_model under the X @ W.T convention."""
    if name == "X":
        return ("tokens", "d_model")
    out = "d_v" if name == "W_v" else "d_k"
    return (out, "d_model") if projection == "x_wt" else ("d_model", out)


def parse_import(name: str, expected: tuple[int, int] | None, projection: str, *, text: str | None = None,
                 data: bytes | None = None, filename: str = "") -> np.ndarray:
    """A pasted text or an uploaded file as a float64 matrix of the expected shape (AttentionError if not)."""
    dims = dims_for(name, projection)
    if text is not None:
        arr = parse.parse_matrix_text(text, name, expected, dims=dims)
    else:
        arr = parse.read_upload(data if data is not None else b"", filename, name, expected, dims=dims)
    return np.array(arr, dtype=np.float64)


def resized_shapes(name: str, shape: tuple[int, int], projection: str) -> tuple[int, int, int] | None:
    """(n tokens, d_model, d_k) that would make ``shape`` fit ``name``; None for the X shape when it is out of range."""
    r, c = shape
    if name == "X":
        n, dm, dk = r, c, None
    elif projection == "x_wt":
        n, dk, dm = None, r, c
    else:
        n, dm, dk = None, r, c
    if (n is not None and not 1 <= n <= state.MAX_TOKENS) or not 1 <= dm <= state.MAX_DIM or (dk is not None and not 1 <= dk <= state.MAX_DIM):
        return None
    return n, dm, dk  # type: ignore[return-value]


def session_from_preset(s: state.Session, preset: Preset) -> None:
    """Put a loaded preset's tokens, matrices (2-D) and options into the session (checked first)."""
    if preset.options.heads != 1:
        raise AttentionError(f"{preset.title!r} asks for {preset.options.heads} heads; the dashboard shows single-head attention "
                             "(export it as code to run the heads). Nothing was changed.")
    matrices = state.matrices_2d(preset)  # fresh arrays the session may own
    n, d_model = matrices["X"].shape
    if n > state.MAX_TOKENS or d_model > state.MAX_DIM:
        raise AttentionError(f"{preset.title!r} has {n} tokens × {d_model} dimensions; the dashboard supports up to "
                             f"{state.MAX_TOKENS} × {state.MAX_DIM}. Nothing was changed.")
    lo, hi = FACTOR_RANGE
    for what, v in (("temperature", preset.options.temperature), ("scale", preset.options.scale)):
        if v is not None and not lo <= v <= hi:
            raise AttentionError(f"{preset.title!r} asks for {what} {v:g}; the dashboard accepts {lo:g} to {hi:g}. Nothing was changed.")
    preset.compute()  # raises AttentionError when the file's numbers cannot be computed; nothing is changed then
    s.tokens = tuple(preset.tokens)
    s.matrices = matrices
    s.options = preset.options
    s.version += 1





def link_params(s: state.Session) -> tuple[dict[str, str], list[str]]:
    """The URL query that reproduces the session (preset, seed, size, edits) and notes on what it leaves out."""
    params = state.url_params(s)
    base = state.base_for(s)
    preset = state.preset_for(s)
    notes: list[str] = []
    changed = {n: s.matrices[n] for n in state.MATRICES
               if s.matrices[n].shape == base[n].shape and not np.array_equal(s.matrices[n], base[n])}
    reshaped = [n for n in state.MATRICES if s.matrices[n].shape != base[n].shape]
    if reshaped:
        notes.append(f"{', '.join(reshaped)} changed shape, which a link cannot carry.")
    if s.tokens != preset.tokens and not reshaped:
        notes.append("The tokens (the sentence) are not in the link.")
    if s.options != preset.options:
        notes.append("Option changes (projection, softmax, scale, temperature, mask) are not in the link.")
    cells = sum(m.size for m in changed.values())
    if changed and cells > links.MAX_LINK_CELLS:
        notes.append(f"The edited matrices ({', '.join(changed)}) hold {cells:,} numbers, more than the {links.MAX_LINK_CELLS} "
                     "a link can carry, so the link gives the unedited preset.")
    elif changed:
        try:
            params["edits"] = links.encode_edits(changed)
        except AttentionError as exc:
            notes.append(f"The edits cannot go in a link: {exc.message}.")
    return params, notes


# ------------------------------------------------------------------------------------ matrix import


def _msg_key(name: str) -> str:
    return f"imp.{name}.msg"


def _stamp(s: state.Session, name: str | None) -> tuple[int, int]:
    """What a message is about: it is shown until the version or the matrix object changes (an edit makes a new array)."""
    return s.version, id(s.matrices[name]) if name else id(s.matrices)


def _say(key: str, name: str | None, kind: str, text: str) -> None:
    st.session_state[key] = (_stamp(state.get(), name), kind, text)


def _said(key: str, name: str | None) -> tuple[str, str] | None:
    """The message stored under ``key`` while it still applies (it survives reruns, not changes)."""
    msg = st.session_state.get(key)
    if msg is None:
        return None
    if msg[0] != _stamp(state.get(), name):
        del st.session_state[key]
        return None
    return msg[1], msg[2]


def _apply(name: str, arr: np.ndarray, what: str) -> None:
    s = state.get()
    s.matrices[name] = arr
    s.version += 1
    _say(_msg_key(name), name, "success", f"{name} replaced by {what}: shape {arr.shape[0]} × {arr.shape[1]}.")
    st.session_state.pop(f"imp.{name}.pending", None)


def _refuse(name: str, exc: AttentionError, *, text: str | None = None, data: bytes | None = None, filename: str = "") -> None:
    """Show the message; when only the shape is wrong, remember the array so it can be applied with a resize."""
    _say(_msg_key(name), name, "error", exc.message)
    st.session_state.pop(f"imp.{name}.pending", None)
    s = state.get()
    try:
        arr = parse_import(name, None, s.options.projection, text=text, data=data, filename=filename)
    except AttentionError:
        return
    if arr.shape != s.matrices[name].shape and resized_shapes(name, arr.shape, s.options.projection) is not None:
        st.session_state[f"imp.{name}.pending"] = (s.version, arr, filename or "the pasted matrix")


def _on_paste(name: str) -> None:
    s = state.get()
    text = st.session_state.get(f"imp.{name}.text", "")
    try:
        arr = parse_import(name, s.matrices[name].shape, s.options.projection, text=text)
    except AttentionError as exc:
        _refuse(name, exc, text=text)  # the text stays in the box, to be fixed
        return
    _apply(name, arr, "the pasted matrix")
    st.session_state[f"imp.{name}.text"] = ""  # applied: the box is emptied (the browser redraws it empty anyway)


def _on_upload(name: str) -> None:
    f = st.session_state.get(f"imp.{name}.file")
    if f is None:
        return
    seen = st.session_state.setdefault("imp.applied_files", set())
    if f.file_id in seen:  # the same upload is applied once, however often the page reruns
        return
    seen.add(f.file_id)
    s = state.get()
    data = f.getvalue()
    try:
        arr = parse_import(name, s.matrices[name].shape, s.options.projection, data=data, filename=f.name)
    except AttentionError as exc:
        _refuse(name, exc, data=data, filename=f.name)
        return
    _apply(name, arr, f"{f.name}")


def _on_resize(name: str) -> None:
    pending = st.session_state.pop(f"imp.{name}.pending", None)
    s = state.get()
    if pending is None or pending[0] != s.version:
        return
    _, arr, what = pending
    n, dm, dk = resized_shapes(name, arr.shape, s.options.projection)  # type: ignore[misc]
    if n is not None and n != len(s.tokens):
        tokens = tuple(s.tokens[:n]) + tuple(f"t{i + 1}" for i in range(len(s.tokens), n))
        state.resize(tokens=tokens, d_model=dm)
    else:
        state.resize(d_model=dm, d_k=dk)
    _apply(name, arr, what)


def matrix_import(name: str, rows: Sequence[str], cols: Sequence[str]) -> None:
    """Upload a CSV or paste a numpy literal for one matrix, under its editor."""
    s = state.get()
    shape = s.matrices[name].shape
    msg = _said(_msg_key(name), name)
    pending = st.session_state.get(f"imp.{name}.pending")
    if pending is not None and pending[0] != s.version:
        st.session_state.pop(f"imp.{name}.pending", None)
        pending = None
    d = dims_for(name, s.options.projection)
    with st.expander(f"Import {name}: upload a CSV or paste a numpy array", key=f"imp.{name}.exp"):
        st.caption(f"{name} is {shape[0]} × {shape[1]} ({d[0]} × {d[1]}). A CSV may have a label row and column; a paste may be "
                   "`np.array([[0.2, 0.9], [0.1, 0.5]])`, nested lists, or numpy's printed form `[[0.2 0.9]\\n [0.1 0.5]]`. "
                   "Nothing you paste is run as code.")
        st.file_uploader(f"Upload {name} (.csv, .tsv or .txt)", type=["csv", "txt", "tsv"], key=f"imp.{name}.file",
                         on_change=_on_upload, args=(name,))
        with st.form(f"imp.{name}.form", border=False):
            st.text_area(f"Paste {name}", key=f"imp.{name}.text", height=120,
                         placeholder="np.array([[0.2, 0.9], [0.1, 0.5]])  or  [[0.2 0.9]\n [0.1 0.5]]")
            st.form_submit_button("Apply", key=f"imp.{name}.apply", on_click=_on_paste, args=(name,))
    # The outcome is shown below the expander (not inside), so it is seen even when the expander is closed:
    # a new matrix gives the editor above a fresh key, and the browser may then redraw the expander collapsed.
    if msg is not None:
        kind, text = msg
        (st.success if kind == "success" else st.error)(text, icon=":material/check_circle:" if kind == "success" else ":material/error:")
    if pending is not None:
        arr = pending[1]
        n, dm, dk = resized_shapes(name, arr.shape, s.options.projection)  # type: ignore[misc]
        parts = []
        if n is not None and n != shape[0]:
            parts.append(f"{n} tokens" + (f" (new ones named t{shape[0] + 1}…)" if n > shape[0] else ""))
        if dm != s.matrices["X"].shape[1]:
            parts.append(f"d_model = {dm}")
        if dk is not None and dk != state.d_k_of(s):
            parts.append(f"d_k = {dk}")
        st.button(f"Change the shape to match: {', '.join(parts) or 'resize'}", key=f"imp.{name}.resize",
                  on_click=_on_resize, args=(name,),
                  help="Resizes the other matrices too, keeping every value that still fits; new cells are drawn from the seed.")
    _draw_link()


# ------------------------------------------------------------------------------------ sidebar tools


def _on_preset_upload() -> None:
    f = st.session_state.get("io.preset.file")
    if f is None:
        return
    seen = st.session_state.setdefault("imp.applied_files", set())
    if f.file_id in seen:
        return
    seen.add(f.file_id)
    data = f.getvalue()
    try:
        if len(data) > parse.MAX_UPLOAD_BYTES:
            raise AttentionError(f"{f.name}: the file is too large ({len(data) / 1024 / 1024:.1f} MB); the limit is {parse.MAX_UPLOAD_MB} MB")
        preset = parse_preset(data, f.name)
        session_from_preset(state.get(), preset)
    except AttentionError as exc:
        _say("io.preset.msg", None, "error", exc.message)
        return
    _say("io.preset.msg", None, "success", f"Loaded preset “{preset.title}” from {f.name}.")


def _export(s: state.Session, build: Callable[[Preset], str]) -> Callable[[], str]:
    """A download's data, built only when clicked; a state that cannot be exported gives a note instead of a crash."""
    def data() -> str:
        try:
            return build(state.export_preset(s))
        except AttentionError as exc:
            return f"The current state cannot be exported: {exc.message}\n"
    return data


def sidebar_tools() -> None:
    """Preset file download/upload, export as code / notebook, copy link."""
    s = state.get()
    msg = _said("io.preset.msg", None)
    if msg is not None:
        (st.sidebar.success if msg[0] == "success" else st.sidebar.error)(
            msg[1], icon=":material/check_circle:" if msg[0] == "success" else ":material/error:")
    with st.sidebar.expander("Save, share, export", key="io.exp"):
        broken = isinstance(state.current_trace(s), AttentionError)
        why = "Fix the error shown on the page first." if broken else None
        stem = s.preset_id if state.is_unedited(s) else f"{s.preset_id}_edited"
        st.download_button("Download preset file (.json)", data=_export(s, Preset.to_json), file_name=f"{stem}.json",
                           mime="application/json", key="io.dl.preset", on_click="ignore", width="stretch", disabled=broken,
                           help=why or "Tokens, matrices and options in one file; load it here later to get this exact state back.")
        st.file_uploader("Load a preset file saved earlier", type=["json"], key="io.preset.file", on_change=_on_preset_upload)
        st.download_button("Export as Python script", data=_export(s, export.python_script),
                           file_name=f"{stem}_attention.py", mime="text/x-python", key="io.dl.py", on_click="ignore",
                           width="stretch", disabled=broken,
                           help=why or "A self-contained numpy script that rebuilds this state and prints every step.")
        st.download_button("Export as Jupyter notebook (.ipynb)", data=_export(s, export.notebook),
                           file_name=f"{stem}_attention.ipynb", mime="application/x-ipynb+json", key="io.dl.ipynb",
                           on_click="ignore", width="stretch", disabled=broken, help=why)
        st.markdown("**Copy link**")
        _LINK.slot = st.empty()
    _draw_link()


def _draw_link() -> None:
    """(Re)draw the link box for the session as it is now. The sidebar is drawn before the page's
    editors apply this run's edits, so ``matrix_import`` (after each editor) redraws it."""
    slot = getattr(_LINK, "slot", None)
    if slot is None:
        return
    s = state.get()
    params, notes = link_params(s)
    if "edits" in st.query_params and st.query_params.get("edits") != params.get("edits"):
        del st.query_params["edits"]  # a reload must not bring back edits the state no longer has
    query = urlencode(params)
    try:
        base = st.context.url
    except Exception:  # noqa: BLE001 - older or test contexts have no URL
        base = None
    with slot.container():
        st.code(f"{base}?{query}" if base else f"?{query}", language=None, wrap_lines=True)
        st.caption(("Copy it with the button at the top right of the box. " if base else "Append this to the app's address. ")
                   + ("It carries the preset, seed and your cell edits." if "edits" in params else "It carries the preset and seed."))
        for note in notes:
            st.caption(note + " Download the preset file to share everything.")


# ------------------------------------------------------------------------------------ link restore


def restore_link_edits(session: state.Session) -> None:
    """Apply edits carried by the URL's ``edits`` parameter; a bad token leaves the unedited preset and a notice."""
    token = st.query_params.get("edits")
    if not token:
        return
    try:
        decoded = links.decode_edits(token, expected_shapes={n: session.matrices[n].shape for n in state.MATRICES})
    except AttentionError as exc:
        why = exc.message.removeprefix(_LINK_PREFIX)
        session.notices.append(f"The link's edits could not be restored: {why}; showing the unedited preset.")
        return
    for name, arr in decoded.items():
        session.matrices[name] = np.array(arr, dtype=np.float64)
    session.version += 1
