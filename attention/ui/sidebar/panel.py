"""The shared controls, drawn by every page: preset, seed, conventions, mask, reset, then save/share/export.

Each widget shows the session's value (re-seeded on every run, so settings survive page switches) and hands a
change to :mod:`attention.ui.state` in its callback. Number boxes have no browser-side limits: a value out of
range reaches the callback, which refuses it with a message under the box and puts the session's value back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import streamlit as st

from ... import masks, names
from ...io import presets as presets_mod
from ...trace import MASK_KINDS
from .. import state
from ..controls import family as familycontrols
from ..core import session
from ..core import source as crosssource
from ..core.text import esc
from ..views import compare
from ..widgets.common import open_expander, show_messages, whole_number
from . import share

PROJECTIONS = {
    "x_w": "Q = X · W  (W is d_model × d_k)",
    "x_wt": "Q = X · Wᵀ  (W is d_k × d_model, as in “I am Batman”)",
}
SOFTMAXES = {  # short: a select box shows its choice on one line of the sidebar's width
    "row_max": "row's max (stable)",
    "global_max": "whole matrix's max",
    "none": "nothing (She likes coffee)",
}
DIGITS = {d: "every digit (exact)" if d is None else f"{d} significant digits" for d in session.DIGIT_CHOICES}
SCALES = {"default": "1/√d_k (default)", "none": "none (× 1)", "custom": "custom factor"}
MASK_NAMES = {  # short, as SOFTMAXES; the select's help says more
    "causal": "causal (sees 1…i)",
    "padding": "padding (marked tokens)",
    "custom": "custom (Scaling page)",
    "window": "sliding window (last w)",
}


CONVENTION_PLACES = ("sidebar.scale", "sidebar.temperature", "sidebar.heads")  # messages under the conventions


def mask_label(kind: str) -> str:
    parts = masks.parts(kind)
    short = {"padding": "pad"}  # combined masks must fit the sidebar's box (about 22 characters)
    if len(parts) == 4:
        short["window"] = "win"
    joined = "+".join(short.get(p, p) for p in parts)
    return "no mask" if not parts else MASK_NAMES[kind] if len(parts) == 1 else joined


def _bind(key: str, value: Any) -> None:
    """Show the session's value in a widget, whatever page the widget was last drawn on."""
    st.session_state[key] = value


def _on(fn: Callable[[Any], None], key: str) -> Callable[[], None]:
    return lambda: fn(st.session_state[key])


def draw(s: session.Session, tools: bool = True) -> None:
    """The controls (the navigation itself is declared by the entry point); ``tools``: save/share/export too."""
    sb = st.sidebar
    sb.markdown("### Self-attention, step by step")
    _bind("sb.preset", s.preset_id)
    options = [*presets_mod.list_presets(), session.BLANK] + ([session.FILE] if s.preset_id == session.FILE else [])
    sb.selectbox(
        "Preset",
        options,
        format_func=lambda pid: session.preset_label(pid, s),
        key="sb.preset",
        on_change=_on(state.load_preset, "sb.preset"),
        help="Worked examples from five numpy tutorials (each reproduces the numbers its tutorial prints), or random "
        "matrices of a size you choose. Loading replaces all edits.",
    )
    if s.preset_id == session.BLANK:
        cols = sb.columns(3)
        for col, label, idx, hi in zip(
            cols, ("n", "d_model", "d_k"), range(3), (names.MAX_TOKENS, names.MAX_DIM, names.MAX_DIM), strict=True
        ):
            _bind(f"sb.blank.{idx}", s.blank_shape[idx])
            col.number_input(  # ours: n, d_model, d_k
                label, key=f"sb.blank.{idx}", step=1, on_change=_blank_size, args=(idx, label, hi), help=f"1 to {hi}"
            )
        show_messages("sidebar.blank", sb)
    preset = s.origin.preset
    from_file = s.preset_id == session.FILE
    _bind("sb.seed", s.seed if s.seed is not None else 0)
    sb.number_input(
        "Seed",
        key="sb.seed",
        step=1,
        disabled=from_file or not preset.is_random,
        on_change=_seed,
        help=(
            f"0 to {names.MAX_SEED}. Redraws only what this preset draws at random: "
            + ", ".join(preset.random.names)
            + " (numpy's legacy RandomState(seed).rand, in the document's order)"
        )
        if preset.is_random
        else "This preset has no random parts: every matrix is typed in its document.",
    )
    if from_file:
        sb.caption("The seed is off: a state loaded from a file keeps the file's numbers.")
    elif not preset.is_random:
        sb.caption("The seed is off: this preset has no random parts (every matrix is typed in).")
    show_messages("sidebar.seed", sb)
    sb.button(
        "Reset to preset",
        width="stretch",
        on_click=state.reset,
        key="sb.reset",
        help="Drop every edit and option change; reload the preset with this seed.",
    )

    if cross := crosssource.note(s):
        sb.info(cross, icon=":material/translate:")  # ours: counts and option names only
    box = open_expander("conventions", "Heads, mask and conventions", s, sb)
    if box is None:  # closed: say what is in force, build none of the eight boxes (a lighter page on every run)
        sb.caption(conventions_summary(s))  # ours: built from option names and numbers only
        for place in CONVENTION_PLACES:  # a note left by a change elsewhere (heads back to 1) is still said
            show_messages(place, sb)
    else:
        with box:
            _conventions(s)
    compare.pin_controls(s)
    if tools:
        share.sidebar_tools(s)


def conventions_summary(s: session.Session) -> str:
    """One line naming every convention in force, shown while the conventions are folded away."""
    o = s.options
    scale = "scale 1/√d_k" if o.scale is None else f"scale × {o.scale:g}"
    heads = f"{o.heads} head" + ("s" if o.heads != 1 else "") + (f", {o.kv} key/value" if o.kv != o.heads else "")
    digits = "every digit" if s.digits is None else f"{s.digits} digits"
    proj = "X·Wᵀ" if o.projection == "x_wt" else "X·W"
    mask = mask_label(o.mask) + (f" (w = {o.window})" if "window" in masks.parts(o.mask) else "")
    softmax = f"subtract {SOFTMAXES[o.softmax]}"
    return " · ".join([heads, mask, scale, f"T = {o.temperature:g}", proj, softmax, digits])


def _conventions(s: session.Session) -> None:
    """Projection, softmax stabiliser, scale, temperature, heads, mask (and padding tokens), digits shown."""
    o = s.options
    _bind("sb.projection", o.projection)
    st.radio(
        "Projection",
        list(PROJECTIONS),
        format_func=PROJECTIONS.get,
        key="sb.projection",
        on_change=_on(state.set_projection, "sb.projection"),
        help="Switching transposes W_q, W_k and W_v, so Q, K and V (and everything after) stay the same.",
    )
    _bind("sb.softmax", o.softmax)
    st.selectbox(
        "Softmax subtracts first",
        list(SOFTMAXES),
        format_func=SOFTMAXES.get,
        key="sb.softmax",
        on_change=_on(lambda v: state.set_option(softmax=v), "sb.softmax"),
        help="What softmax subtracts from each score before exp: each row's max, the whole matrix's max, or nothing "
        "(as “She likes coffee” does). Mathematically the same weights; numerically, only the row's max can never "
        "overflow or underflow.",
    )
    # a custom factor of exactly 1 stays "custom" while the user is typing in it
    scale_kind = (
        "default"
        if o.scale is None
        else ("custom" if o.scale != 1.0 or st.session_state.get("sb.scale") == "custom" else "none")
    )
    _bind("sb.scale", scale_kind)
    st.selectbox("Scale", list(SCALES), format_func=SCALES.get, key="sb.scale", on_change=_scale_kind)
    lo, hi = session.FACTOR_RANGE
    if scale_kind == "custom":
        _bind("sb.scale_value", float(o.scale))
        st.number_input(
            "Scale factor",
            format="%.6g",
            key="sb.scale_value",
            help=f"{lo:g} to {hi:g}",
            on_change=_factor,
            args=("sb.scale_value", "scale", "the scale factor"),
        )
        show_messages("sidebar.scale")
    _bind("sb.temperature", float(o.temperature))
    st.number_input(
        "Temperature T (softmax of S/T)",
        step=0.1,
        format="%.6g",
        key="sb.temperature",
        help=f"{lo:g} to {hi:g}",
        on_change=_factor,
        args=("sb.temperature", "temperature", "the temperature T"),
    )
    show_messages("sidebar.temperature")
    valid = session.valid_heads(s)
    _bind("sb.heads", o.heads if o.heads in valid else 1)
    d = s.dims
    st.selectbox(
        "Heads",
        valid,
        key="sb.heads",
        on_change=_on(state.set_heads, "sb.heads"),
        help=f"Split Q, K and V into h heads of d_k/h columns each, attended separately and concatenated. h must "
        f"divide d_k = {d.d_k} and d_v = {d.d_v}, so the choices are {', '.join(map(str, valid))}.",
    )
    show_messages("sidebar.heads")
    _bind("sb.mask", o.mask)
    st.selectbox(
        "Mask",
        list(MASK_KINDS),
        format_func=mask_label,
        key="sb.mask",
        on_change=_on(state.set_mask, "sb.mask"),
        help="A cell may be attended only where every chosen mask allows it; masked cells are grey and get weight 0. "
        "Causal: token i sees tokens 1…i only. Padding: no token attends the tokens you mark. Custom: a grid of "
        "ticks on the Scaling page.",
    )
    if "padding" in masks.parts(o.mask):
        labels = s.labels
        _bind("sb.padding", [labels[i] for i, p in enumerate(o.padding) if p])
        st.multiselect(
            "Padding tokens",
            labels,
            key="sb.padding",
            on_change=_on(lambda v: state.set_option(padding=tuple(lbl in v for lbl in labels)), "sb.padding"),
            help="No token attends to a padding token; masked cells are grey in the heatmaps.",
        )
    familycontrols.draw(s)  # key/value heads, the window, positions (ALiBi among them)
    _bind("sb.digits", s.digits)
    st.selectbox(
        "Numbers shown with",
        list(DIGITS),
        format_func=DIGITS.get,
        key="sb.digits",
        on_change=_on(lambda v: state.set_view(digits=v), "sb.digits"),
        help="Tables, editors and heatmaps; the heatmap's tooltip and every CSV always have full precision.",
    )


def _seed() -> None:
    s = session.get()
    seed = whole_number("sb.seed", "the seed", 0, names.MAX_SEED, "sidebar.seed", s.seed or 0)
    if seed is not None:
        state.set_seed(seed)


def _factor(key: str, option: str, what: str) -> None:
    """A scale factor or temperature from its box, if it is a number in range; else a message and no change."""
    if option == "scale" and st.session_state.get("sb.scale") != "custom":
        return  # the scale kind changed in the same run: the factor box no longer applies
    value = st.session_state.get(key)
    lo, hi = session.FACTOR_RANGE
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and lo <= value <= hi
    if ok:
        state.set_option(**{option: float(value)})
        return
    current = getattr(session.get().options, option)
    now = "1/√d_k (the default)" if current is None else f"{current:g}"
    state.say(
        f"sidebar.{option}",
        "error",
        f"{what[0].upper() + what[1:]} must be a number from {lo:g} to {hi:g}; {esc(repr(value))} was not "
        f"applied and it stays {now}.",
    )
    if current is not None:
        st.session_state[key] = float(current)


def _scale_kind() -> None:
    kind = st.session_state["sb.scale"]
    state.set_option(scale={"default": None, "none": 1.0}.get(kind, 0.5))


def _blank_size(idx: int, label: str, hi: int) -> None:
    s = session.get()
    value = whole_number(f"sb.blank.{idx}", label, 1, hi, "sidebar.blank", s.blank_shape[idx])
    if value is not None:
        shape = list(s.blank_shape)
        shape[idx] = value
        state.set_blank_shape(tuple(shape))  # type: ignore[arg-type]
