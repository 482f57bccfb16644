"""Save, share, export (in the sidebar): preset file download and load, script, notebook, and a link.

The state goes out as a preset file, a Python script or a notebook, and a link that carries small edits.
Loading a file goes through :func:`attention.ui.state.presets.apply_preset`."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

import streamlit as st

from ... import names
from ...errors import AttentionError
from ...io import codegen
from ...io.parse import dispatch
from ...io.presets import Preset, parse_preset
from ..address import url
from ..core import compute, keys, session
from ..core.text import esc, quoted
from ..state import core as state_core
from ..state import presets
from ..widgets import downloads
from ..widgets.common import open_expander, show_messages


def _on_preset_upload() -> None:
    f = st.session_state.get(keys.PRESET_FILE)
    if f is None:
        return
    data = f.getvalue()
    try:
        if len(data) > names.MAX_UPLOAD_BYTES:
            raise AttentionError(
                f"the file is too large ({len(data) / 1024 / 1024:.1f} MB); the limit is {names.MAX_UPLOAD_MB} MB"
            )
        preset = parse_preset(data, f.name)
        presets.apply_preset(preset)
    except AttentionError as exc:
        message = exc.message.removeprefix(f"{f.name}: ")
        state_core.say("sidebar.preset_file", "error", f"{quoted(f.name)} was not loaded: {esc(message, 2000)}")
        return
    state_core.say("sidebar.preset_file", "success", f"Loaded preset {quoted(preset.title)} from {quoted(f.name)}.")


def _export(s: session.Session, build: Callable[[Preset], str], memo: dict) -> Callable[[], str]:
    """A download's data (see :func:`..widgets.downloads.payload`); the state's preset is made once per run for
    every export (``memo``); a state that cannot be exported gives a note instead of a crash."""

    def data() -> str:
        try:
            if "preset" not in memo:
                memo["preset"] = session.export_preset(s)
            return build(memo["preset"])
        except AttentionError as exc:
            return f"The current state cannot be exported: {exc.message}\n"

    return data


EXPORTS: dict[str, tuple[str, Callable[[Preset], str], str, str, str | None]] = {
    # key: (button, what builds it from the state's preset, file name after the stem, MIME type, what it is)
    "preset": (
        "Download preset file (.json)",
        Preset.to_json,
        ".json",
        "application/json",
        "Tokens, matrices and options in one file; load it here later to get this exact state back.",
    ),
    "py": (
        "Export as Python script",
        codegen.python_script,
        "_attention.py",
        "text/x-python",
        "A self-contained numpy script that rebuilds this state and prints every step.",
    ),
    "ipynb": (
        "Export as Jupyter notebook (.ipynb)",
        codegen.notebook,
        "_attention.ipynb",
        "application/x-ipynb+json",
        None,
    ),
}


def _download(kind: str, s: session.Session, stem: str, memo: dict, why: str | None) -> None:
    """One export of :data:`EXPORTS` as a download button; ``why`` (the page's error) disables it and is said on
    hover instead of what the file is."""
    label, build, suffix, mime, about = EXPORTS[kind]
    st.download_button(  # ours: the label and help are EXPORTS' words or the page's note
        label,
        data=downloads.payload(s, _export(s, build, memo)),
        file_name=f"{stem}{suffix}",
        mime=mime,
        key=keys.share_download(kind),
        on_click="ignore",
        width="stretch",
        disabled=why is not None,
        help=why or about,
    )


def sidebar_tools(s: session.Session) -> None:
    """Preset file download/upload, export as code / notebook, copy link."""
    show_messages("sidebar.preset_file", st.sidebar)
    params, notes = url.link(s)
    if notes:  # said outside the (often closed) expander: a reload would lose this
        st.sidebar.warning(  # ours: url.link's notes quote user text
            "Not in the address, so a reload or a link loses it: " + "; ".join(notes), icon=":material/warning:"
        )
    memo: dict = {}
    box = open_expander("io", "Save, share, export", s, st.sidebar)
    if box is None:  # closed: nothing inside is built (three exports and a link every run, otherwise)
        return
    with box:
        broken = isinstance(compute.current_trace(s), AttentionError)
        why = "Fix the error shown on the page first." if broken else None
        stem = s.preset_id if session.is_unedited(s) else f"{s.preset_id}_edited"
        _download("preset", s, stem, memo, why)
        st.file_uploader(
            "Load a preset file saved earlier",
            type=dispatch.uploader_types(dispatch.PRESET_FORMATS),
            key=keys.PRESET_FILE,
            on_change=_on_preset_upload,
        )
        for kind in ("py", "ipynb"):
            _download(kind, s, stem, memo, why)
        st.markdown("**Copy link**")
        link_box(params)


LINK_SHOWN = 300  # characters of link shown whole; a longer one scrolls in a box LINK_HEIGHT px tall
LINK_HEIGHT = 160


def link_box(params: dict[str, str]) -> None:
    """The link for the session as it is now (edits were applied in callbacks, before this run)."""
    query = urlencode(params)
    try:
        base = st.context.url
    except Exception:  # noqa: BLE001 - older or test contexts have no URL
        base = None
    text = f"{base}?{query}" if base else f"?{query}"
    long = len(text) > LINK_SHOWN
    # a long link (many edits) would wrap into a box taller than the screen: it scrolls within a few lines instead
    st.code(text, language=None, wrap_lines=True, height=LINK_HEIGHT if long else "content")
    st.caption(
        (
            f"The link is {len(text):,} characters long: the box scrolls, and the button copies all of it. "
            if long
            else ""
        )
        + ("Copy it with the button at the top right of the box. " if base else "Append this to the app's address. ")
        + "It carries the whole state: preset, seed, sentence, sizes, options"
        + (" and your cell edits." if "edits" in params else ".")
    )
