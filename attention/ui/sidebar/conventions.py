"""The sidebar's "Heads, mask and conventions", or one line naming them while they are folded away.

Projection, softmax stabiliser, scale, temperature, heads, mask (and padding tokens), the family's settings (key/value
heads, window, positions) and the digits shown.

Each box shows the session's value and hands a change to :mod:`attention.ui.state` in its callback; a number out of
range is refused with a message under its box, and the box shows the session's value again.
"""

from __future__ import annotations

import streamlit as st

from ... import masks, names
from ...trace import MASK_KINDS
from ..controls import family
from ..core import keys, session
from ..state import edits, options, pins
from ..widgets.common import bind, checked_number, on_value, open_expander, show_messages

PROJECTIONS = {
    "x_w": "Q = X · W  (W is d_model × d_k)",
    "x_wt": "Q = X · Wᵀ  (W is d_k × d_model, as in “I am Batman”)",
}
SOFTMAXES = {v: names.SOFTMAX_WORDS[v].short for v in names.SOFTMAX_VARIANTS}  # one line of the sidebar's width
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


def draw(s: session.Session) -> None:
    """The conventions in an expander; while it is folded, one line saying what is in force."""
    sb = st.sidebar
    box = open_expander("conventions", "Heads, mask and conventions", s, sb)
    if box is None:  # closed: say what is in force, build none of the eight boxes (a lighter page on every run)
        sb.caption(conventions_summary(s))  # ours: built from option names and numbers only
        for place in CONVENTION_PLACES:  # a note left by a change elsewhere (heads back to 1) is still said
            show_messages(place, sb)
        return
    with box:
        _projection_and_softmax(s)
        _scale_and_temperature(s)
        _heads(s)
        _mask(s)
        family.draw(s)  # key/value heads, the window, positions (ALiBi among them)
        _digits(s)


def conventions_summary(s: session.Session) -> str:
    """One line naming every convention in force, shown while the conventions are folded away."""
    o = s.options
    scale = "scale 1/√d_k" if o.scale is None else f"scale × {o.scale:g}"
    heads = f"{o.heads} head" + ("s" if o.heads != 1 else "") + (f", {o.kv} key/value" if o.kv != o.heads else "")
    digits = "every digit" if s.digits is None else f"{s.digits} digits"
    proj = "X·Wᵀ" if o.projection == "x_wt" else "X·W"
    mask = mask_label(masks.join(o.mask)) + (f" (w = {o.window})" if "window" in o.mask else "")
    softmax = f"subtract {SOFTMAXES[o.softmax]}"
    return " · ".join([heads, mask, scale, f"T = {o.temperature:g}", proj, softmax, digits])


def _projection_and_softmax(s: session.Session) -> None:
    """How Q is written (X · W or X · Wᵀ) and what softmax subtracts first."""
    bind(keys.SB_PROJECTION, s.options.projection)
    st.radio(
        "Projection",
        list(PROJECTIONS),
        format_func=PROJECTIONS.get,
        key=keys.SB_PROJECTION,
        on_change=on_value(edits.set_projection, keys.SB_PROJECTION),
        help="Switching transposes W_q, W_k and W_v, so Q, K and V (and everything after) stay the same.",
    )
    bind(keys.SB_SOFTMAX, s.options.softmax)
    st.selectbox(
        "Softmax subtracts first",
        list(SOFTMAXES),
        format_func=SOFTMAXES.get,
        key=keys.SB_SOFTMAX,
        on_change=on_value(lambda v: options.set_option(softmax=v), keys.SB_SOFTMAX),
        help="What softmax subtracts from each score before exp: each row's max, the whole matrix's max, or nothing "
        "(as “She likes coffee” does). Mathematically the same weights; numerically, only the row's max can never "
        "overflow or underflow.",
    )


def _scale_and_temperature(s: session.Session) -> None:
    """The scale (1/√d_k, none or a custom factor, in its own box) and the temperature T."""
    o = s.options
    # a custom factor of exactly 1 stays "custom" while the user is typing in it
    scale_kind = (
        "default"
        if o.scale is None
        else ("custom" if o.scale != 1.0 or st.session_state.get(keys.SB_SCALE) == "custom" else "none")
    )
    bind(keys.SB_SCALE, scale_kind)
    st.selectbox("Scale", list(SCALES), format_func=SCALES.get, key=keys.SB_SCALE, on_change=_scale_kind)
    lo, hi = session.FACTOR_RANGE
    if scale_kind == "custom":
        bind(keys.SB_SCALE_VALUE, float(o.scale))
        st.number_input(
            "Scale factor",
            format="%.6g",
            key=keys.SB_SCALE_VALUE,
            help=f"{lo:g} to {hi:g}",
            on_change=_factor,
            args=(keys.SB_SCALE_VALUE, "scale", "The scale factor"),
        )
        show_messages("sidebar.scale")
    bind(keys.SB_TEMPERATURE, float(o.temperature))
    st.number_input(
        "Temperature T (softmax of S/T)",
        step=0.1,
        format="%.6g",
        key=keys.SB_TEMPERATURE,
        help=f"{lo:g} to {hi:g}",
        on_change=_factor,
        args=(keys.SB_TEMPERATURE, "temperature", "The temperature T"),
    )
    show_messages("sidebar.temperature")


def _heads(s: session.Session) -> None:
    """The number of heads: the divisors of both d_k and d_v."""
    valid = session.valid_heads(s)
    bind(keys.SB_HEADS, s.options.heads if s.options.heads in valid else 1)
    d = s.dims
    st.selectbox(
        "Heads",
        valid,
        key=keys.SB_HEADS,
        on_change=on_value(options.set_heads, keys.SB_HEADS),
        help=f"Split Q, K and V into h heads of d_k/h columns each, attended separately and concatenated. h must "
        f"divide d_k = {d.d_k} and d_v = {d.d_v}, so the choices are {', '.join(map(str, valid))}.",
    )
    show_messages("sidebar.heads")


def _mask(s: session.Session) -> None:
    """The mask, and the padding tokens when the mask includes padding."""
    o = s.options
    bind(keys.SB_MASK, masks.join(o.mask))
    st.selectbox(
        "Mask",
        list(MASK_KINDS),
        format_func=mask_label,
        key=keys.SB_MASK,
        on_change=on_value(options.set_mask, keys.SB_MASK),
        help="A cell may be attended only where every chosen mask allows it; masked cells are grey and get weight 0. "
        "Causal: token i sees tokens 1…i only. Padding: no token attends the tokens you mark. Custom: a grid of "
        "ticks on the Scaling page.",
    )
    if "padding" in o.mask:
        labels = s.labels
        bind(keys.SB_PADDING, [labels[i] for i, p in enumerate(o.padding) if p])
        st.multiselect(
            "Padding tokens",
            labels,
            key=keys.SB_PADDING,
            on_change=on_value(
                lambda v: options.set_option(padding=tuple(lbl in v for lbl in labels)), keys.SB_PADDING
            ),
            help="No token attends to a padding token; masked cells are grey in the heatmaps.",
        )


def _digits(s: session.Session) -> None:
    """How many significant digits tables, editors and heatmaps show."""
    bind(keys.SB_DIGITS, s.digits)
    st.selectbox(
        "Numbers shown with",
        list(DIGITS),
        format_func=DIGITS.get,
        key=keys.SB_DIGITS,
        on_change=on_value(lambda v: pins.set_view(digits=v), keys.SB_DIGITS),
        help="Tables, editors and heatmaps; the heatmap's tooltip and every CSV always have full precision.",
    )


def _factor(key: str, option: str, what: str) -> None:
    """A scale factor or temperature from its box, if it is a number in range; else a message and no change."""
    if option == "scale" and st.session_state.get(keys.SB_SCALE) != "custom":
        return  # the scale kind changed in the same run: the factor box no longer applies
    lo, hi = session.FACTOR_RANGE
    current = getattr(session.get().options, option)
    now = "1/√d_k (the default)" if current is None else f"{current:g}"
    value = checked_number(key, what, lo, hi, f"sidebar.{option}", f"it stays {now}", whole=False)
    if value is not None:
        options.set_option(**{option: float(value)})
    elif current is not None:
        bind(key, float(current))


def _scale_kind() -> None:
    kind = st.session_state[keys.SB_SCALE]
    options.set_option(scale={"default": None, "none": 1.0}.get(kind, 0.5))
