"""The shared controls, drawn by every page: preset, seed, reset, conventions, then compare and save/share/export.

The conventions (heads, mask, scale and the rest) are drawn by :mod:`.conventions`.

Each widget shows the session's value (re-seeded on every run, so settings survive page switches) and hands a
change to :mod:`attention.ui.state` in its callback. Number boxes have no browser-side limits: a value out of
range reaches the callback, which refuses it with a message under the box and puts the session's value back.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ... import names
from ...io import presets as presets_mod
from ..core import keys, parts, session, source
from ..state import presets as state_presets
from ..views import compare
from ..widgets import history, reconnect, uploads
from ..widgets.common import bind, on_value, show_messages, whole_number
from . import challenge_status, conventions, share


def draw(s: session.Session, tools: bool = True) -> None:
    """The controls (the navigation itself is declared by the entry point); ``tools``: save/share/export too."""
    sb = st.sidebar
    sb.markdown("### Self-attention, step by step")
    challenge_status.show(s)
    bind(keys.SB_PRESET, s.preset_id)
    kind = s.origin.kind
    held = [] if kind.offered else [s.preset_id]  # a file or a model's head: listed while in force
    options = [*presets_mod.list_presets(), session.BLANK, *held]
    sb.selectbox(
        "Preset",
        options,
        format_func=lambda pid: session.preset_label(pid, s),
        key=keys.SB_PRESET,
        on_change=on_value(state_presets.load_preset, keys.SB_PRESET),
        help="Worked examples from five numpy tutorials (each reproduces the numbers its tutorial prints), or random "
        "matrices of a size you choose. Loading replaces all edits.",
    )
    if kind is parts.BLANK_KIND:
        _blank_sizes(s, sb)
    _seed_box(s, sb)
    sb.button(
        "Reset to preset",
        width="stretch",
        on_click=state_presets.reset,
        key=keys.SB_RESET,
        help="Drop every edit and option change; reload the preset with this seed.",
    )

    if cross := source.note(s):
        sb.info(cross, icon=":material/translate:")  # ours: counts and option names only
    conventions.draw(s)
    compare.pin_controls(s)
    if tools:
        share.sidebar_tools(s)
    # one element (each takes a gap): keys typed into a grid before it has the focus reach its cell editor; a change
    # of the address replaces its history entry, so Back leaves the page at once; an upload refused after a failover
    # is said in plain words under its uploader; a tab that reconnected (a failover) reruns in full; the seed box's
    # own hint hidden (its label says "press Enter"; the hint sat over a long seed)
    scripts = history.SCRIPT + uploads.SCRIPT + reconnect.SCRIPT
    sb.html(scripts + SEED_CSS, unsafe_allow_javascript=True)


SEED_CSS = "<style>.st-key-sb-seed [data-testid='InputInstructions'] { display: none; }</style>"


def _seed_box(s: session.Session, sb: Any) -> None:
    """The seed: typed, then Enter; off (with why) for a preset with no random parts or a state that keeps none."""
    kind, preset = s.origin.kind, s.origin.preset
    bind(keys.SB_SEED, str(s.seed if s.seed is not None else 0))
    sb.text_input(  # a text box: a number box's browser refused a seed of 17 digits or more with a red frame alone
        f"Seed (0 to {names.MAX_SEED:,}): type it, then press Enter",
        key=keys.SB_SEED,
        disabled=not kind.seeded or not preset.is_random,
        on_change=_seed,
        help=(
            f"0 to {names.MAX_SEED}. Redraws only what this preset draws at random: "
            + ", ".join(preset.random.names)
            + " (numpy's legacy RandomState(seed).rand, in the document's order)"
        )
        if preset.is_random
        else "This preset has no random parts: every matrix is typed in its document.",
    )
    if not kind.seeded:
        sb.caption(f"The seed is off: {kind.keeps}.")
    elif not preset.is_random:
        sb.caption("The seed is off: this preset has no random parts (every matrix is typed in).")
    show_messages("sidebar.seed", sb)


def _blank_sizes(s: session.Session, sb: Any) -> None:
    """A blank preset's sizes: n, d_model and d_k, each a whole number from 1 to its limit."""
    cols = sb.columns(3)
    for col, label, idx, hi in zip(
        cols, ("n", "d_model", "d_k"), range(3), (names.MAX_TOKENS, names.MAX_DIM, names.MAX_DIM), strict=True
    ):
        bind(keys.sb_blank(idx), s.blank_shape[idx])
        col.number_input(  # ours: n, d_model, d_k
            label, key=keys.sb_blank(idx), step=1, on_change=_blank_size, args=(idx, label, hi), help=f"1 to {hi}"
        )
    show_messages("sidebar.blank", sb)


def _seed() -> None:
    s = session.get()
    seed = whole_number(keys.SB_SEED, "the seed", 0, names.MAX_SEED, "sidebar.seed", s.seed or 0)
    if seed is not None:
        state_presets.set_seed(seed)


def _blank_size(idx: int, label: str, hi: int) -> None:
    s = session.get()
    value = whole_number(keys.sb_blank(idx), label, 1, hi, "sidebar.blank", s.blank_shape[idx])
    if value is not None:
        shape = list(s.blank_shape)
        shape[idx] = value
        state_presets.set_blank_shape(tuple(shape))  # type: ignore[arg-type]
