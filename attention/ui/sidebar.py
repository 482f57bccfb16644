"""The shared controls, drawn by every page: navigation, preset, seed, conventions, mask, reset.

Each widget is bound to the session (``state.Session``) through an on-change callback, and its
displayed value is re-seeded from the session on every run, so settings survive page switches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from .. import presets as presets_mod
from ..export import token_labels
from ..trace import MASK_KINDS
from . import state

PRESET_LABELS = {
    "she_likes_coffee": "She likes coffee (000)",
    "i_am_batman": "I am Batman (001)",
    "the_cat_sat": "The cat sat (002)",
    "the_cat_sat_on_the_mat": "The cat sat on the mat (003)",
    "random_seed_42": "Random, seed 42 (004)",
    state.BLANK: "Blank n × d (random)",
}
PROJECTIONS = {"x_w": "Q = X · W  (W is d_model × d_k)", "x_wt": "Q = X · Wᵀ  (W is d_k × d_model, doc 001)"}
SOFTMAXES = {"row_max": "subtract each row's max (stable)", "global_max": "subtract the whole matrix's max", "none": "subtract nothing (doc 000)"}
SCALES = {"default": "1/√d_k (default)", "none": "none (× 1)", "custom": "custom factor"}
FACTOR_RANGE = (1e-6, 1e6)  # scale and temperature: what the widgets accept, and what a loaded preset file may ask for
MASKS = {"none": "no mask", "causal": "causal (token i sees tokens 1…i)", "padding": "padding (ignore marked tokens)"}


def _bind(key: str, value: Any) -> None:
    """Show the session's value in a widget, whatever page the widget was last drawn on."""
    st.session_state[key] = value


def _on(fn: Callable[[Any], None], key: str) -> Callable[[], None]:
    return lambda: fn(st.session_state[key])


def draw() -> None:
    """The controls (the navigation itself is declared in streamlit_app.py)."""
    s = state.get()
    sb = st.sidebar
    sb.markdown("### Self-attention, step by step")

    _bind("sb.preset", s.preset_id)
    sb.selectbox("Preset", list(PRESET_LABELS), format_func=PRESET_LABELS.get, key="sb.preset",
                 on_change=_on(lambda v: state.load(v), "sb.preset"),
                 help="The five documents' examples, or random matrices of a size you choose. Loading replaces all edits.")
    if s.preset_id == state.BLANK:
        c1, c2, c3 = sb.columns(3)
        n, dm, dk = s.blank_shape
        for col, label, idx, hi, val in ((c1, "n", 0, state.MAX_TOKENS, n), (c2, "d_model", 1, state.MAX_DIM, dm),
                                         (c3, "d_k", 2, state.MAX_DIM, dk)):
            _bind(f"sb.blank.{idx}", val)
            col.number_input(label, 1, hi, key=f"sb.blank.{idx}", on_change=_blank_size, args=(idx,))
    preset = state.preset_for(s)
    _bind("sb.seed", s.seed if s.seed is not None else 0)
    sb.number_input("Seed", 0, presets_mod.MAX_SEED, key="sb.seed", disabled=not preset.is_random,
                    on_change=_on(state.set_seed, "sb.seed"),
                    help=("Redraws only what this preset draws at random: " + ", ".join(preset.random.names)
                          + " (numpy's legacy RandomState(seed).rand, in the document's order)") if preset.is_random
                    else "This preset has no random parts: every matrix is typed in its document.")
    if sb.button("Reset to preset", width="stretch", help="Drop every edit and option change; reload the preset with this seed."):
        state.reset()
        st.rerun()

    sb.markdown("**Conventions**")
    o = s.options
    _bind("sb.projection", o.projection)
    sb.radio("Projection", list(PROJECTIONS), format_func=PROJECTIONS.get, key="sb.projection",
             on_change=_on(state.set_projection, "sb.projection"),
             help="Switching transposes W_q, W_k and W_v, so Q, K and V (and everything after) stay the same.")
    _bind("sb.softmax", o.softmax)
    sb.selectbox("Softmax stabiliser", list(SOFTMAXES), format_func=SOFTMAXES.get, key="sb.softmax",
                 on_change=_on(lambda v: _set_option(softmax=v), "sb.softmax"),
                 help="Mathematically the same weights; numerically, only 'row max' can never overflow or underflow.")
    # a custom factor of exactly 1 stays "custom" while the user is typing in it
    scale_kind = "default" if o.scale is None else (
        "custom" if o.scale != 1.0 or st.session_state.get("sb.scale") == "custom" else "none")
    _bind("sb.scale", scale_kind)
    sb.selectbox("Scale", list(SCALES), format_func=SCALES.get, key="sb.scale", on_change=_scale_kind)
    if scale_kind == "custom":
        _bind("sb.scale_value", float(o.scale))
        sb.number_input("Scale factor", min_value=FACTOR_RANGE[0], max_value=FACTOR_RANGE[1], format="%.6g", key="sb.scale_value",
                        on_change=_on(lambda v: _set_option(scale=float(v)), "sb.scale_value"))
    _bind("sb.temperature", float(o.temperature))
    sb.number_input("Temperature T (softmax of S/T)", min_value=FACTOR_RANGE[0], max_value=FACTOR_RANGE[1], step=0.1, format="%.6g",
                    key="sb.temperature",
                    on_change=_on(lambda v: _set_option(temperature=float(v)), "sb.temperature"))
    _bind("sb.mask", o.mask)
    sb.selectbox("Mask", list(MASK_KINDS), format_func=MASKS.get, key="sb.mask", on_change=_on(_set_mask, "sb.mask"))
    if o.mask == "padding":
        labels = token_labels(s.tokens)
        _bind("sb.padding", [labels[i] for i, p in enumerate(o.padding) if p])
        sb.multiselect("Padding tokens", labels, key="sb.padding",
                       on_change=_on(lambda v: _set_option(padding=tuple(lbl in v for lbl in labels)), "sb.padding"),
                       help="No token attends to a padding token; masked cells are grey in the heatmaps.")
    from .io_panel import sidebar_tools

    sidebar_tools()


def _set_option(**changes: Any) -> None:
    s = state.get()
    s.options = s.options.replace(**changes)


def _set_mask(kind: str) -> None:
    s = state.get()
    pad = s.options.padding if len(s.options.padding) == len(s.tokens) else (False,) * len(s.tokens)
    s.options = s.options.replace(mask=kind, padding=pad)


def _scale_kind() -> None:
    kind = st.session_state["sb.scale"]
    _set_option(scale={"default": None, "none": 1.0}.get(kind, 0.5))


def _blank_size(idx: int) -> None:
    s = state.get()
    shape = list(s.blank_shape)
    shape[idx] = int(st.session_state[f"sb.blank.{idx}"])
    state.load(state.BLANK, s.seed, tuple(shape))  # type: ignore[arg-type]
