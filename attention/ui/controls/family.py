"""The conventions of attention's family in the sidebar: key/value heads, the sliding window, ALiBi among positions.

Drawn inside "Heads, mask and conventions" (:mod:`..sidebar.conventions`); each change goes to :mod:`attention.ui.state`
from its callback, and a refused value leaves a message under its control and the session as it was.
"""

from __future__ import annotations

import streamlit as st

from ... import heads, names
from ..core import keys, session
from ..state import options
from ..widgets.common import bind, on_value, show_messages, whole_number
from .steps import POSITION_NAMES

SHORT_POSITION_NAMES = {  # short: a sidebar select box shows about 24 characters; the help gives the long names
    "none": "none (no word order)",
    "sinusoidal": "sinusoidal",
    "learned": "learned P",
    "rotary": "rotary (RoPE)",
    "alibi": "ALiBi",
}


def draw(s: session.Session) -> None:
    """Key/value heads (only the divisors of the heads), the window when the mask has one, and the positions."""
    o = s.options
    divisors = heads.divisors(o.heads)
    bind(keys.SB_KV_HEADS, o.kv)
    st.selectbox(
        "Key/value heads",
        divisors,
        key=keys.SB_KV_HEADS,
        disabled=o.heads == 1,
        on_change=on_value(options.set_kv_heads, keys.SB_KV_HEADS),
        help="How many heads have their own keys and values. Only the divisors of the heads are offered: each "
        "key/value head serves the same number of query heads. Fewer key/value heads means a smaller KV cache "
        "(Q·K·V page); W_k and W_v then have one block of columns per key/value head.",
    )
    st.caption(
        f"Only divisors of the {o.heads} head(s) ({', '.join(map(str, divisors))}). "
        f"Now: {heads.kind_of(o.heads, o.kv)}."
    )
    show_messages("sidebar.kv_heads")
    if "window" in o.mask:
        key = keys.sb_window(s.grids, o.window)  # a fresh box whenever the window changes or a value is refused
        st.number_input(
            "Window w (tokens each query sees)",
            value=int(o.window),
            step=1,
            key=key,
            on_change=_window,
            args=(key,),
            help=f"1 to {names.MAX_TOKENS}. Query i may attend keys i − w + 1 … i: itself and the w − 1 tokens "
            "before it (a causal sliding window, as in Longformer and Mistral).",
        )
        show_messages("sidebar.window")
    bind(keys.SB_POSITIONS, o.positions)
    st.selectbox(
        "Positions",
        list(POSITION_NAMES),
        format_func=SHORT_POSITION_NAMES.get,
        key=keys.SB_POSITIONS,
        on_change=on_value(options.set_positions, keys.SB_POSITIONS),
        help="The same choice as on the Tokens page: " + "; ".join(POSITION_NAMES.values()) + ". ALiBi adds nothing "
        "to X, Q or K: each head subtracts m_h × (distance) from its scaled scores, with its own slope m_h.",
    )
    show_messages("control.positions")


def _window(key: str) -> None:
    """The window from its box, if it is a whole number in range; else a message and the box shows the old one."""
    w = whole_number(key, "Window w", 1, names.MAX_TOKENS, "sidebar.window", session.get().options.window)
    if w is not None:
        options.set_option(window=w)
