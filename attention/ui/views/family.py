"""The Q·K·V page's views of attention's family: which query heads share each K/V block, and the KV cache's size.

Both are functions of the session and the trace (the spec names them); the numbers typed for the cache are display
settings (:mod:`attention.ui.state.family`), changed in callbacks.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ... import heads, kvcache
from ...errors import AttentionError
from ...trace import Trace
from ..core import keys, session
from ..state import family as state_family
from ..widgets.common import show_messages, whole_number


def setting_box(label: str, name: str, s: session.Session, where=st, place: str = "kv.cache") -> None:
    """A number box for one display setting: value= the setting, a fresh key when it changes or is refused."""
    value = state_family.settings()[name]
    key = keys.family_setting(name, s.grids, value)
    where.number_input(  # ours: the setting labels are this module's own
        label,
        value=value,
        step=1,
        key=key,
        on_change=_on_setting,
        args=(name, key, place),
        help=f"{state_family.SETTINGS[name][1]:,} to {state_family.SETTINGS[name][2]:,}",
    )


def _on_setting(name: str, key: str, place: str) -> None:
    label, lo, hi, _ = state_family.SETTINGS[name]
    value = whole_number(key, label, lo, hi, place, state_family.settings()[name])
    if value is not None:
        state_family.set_setting(name, value)


def kv_groups(s: session.Session, trace: Trace, page_key: str) -> None:
    """Which query heads read each block of W_k and W_v (grouped-query attention), as a small table."""
    o = trace.options
    h, g = o.heads, o.kv
    if h == 1:
        return
    st.markdown(f"**Key/value heads** · {h} query heads, {g} key/value head(s): {heads.kind_of(h, g)}.")
    dh, dv = trace.K.shape[-1] // g, trace.V.shape[-1] // g
    size = h // g
    rows = [
        {
            "key/value block": b + 1,
            "columns of K (W_k)": _span("k", b, dh),
            "columns of V (W_v)": _span("v", b, dv),
            "query heads": ", ".join(str(i + 1) for i in range(b * size, (b + 1) * size)),
        }
        for b in range(g)
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


def _span(prefix: str, block: int, width: int) -> str:
    """Block ``block``'s columns: "k3–k4", or "k3" for a block one column wide."""
    first, last = block * width + 1, (block + 1) * width
    return f"{prefix}{first}" if first == last else f"{prefix}{first}–{prefix}{last}"


def kv_cache(s: session.Session, trace: Trace, page_key: str) -> None:
    """Bytes the KV cache holds per token, for MHA, the current key/value heads and MQA: for this state's heads and
    d_k/h and d_v/h with a number of layers, and for a model the learner describes."""
    o, cfg = trace.options, state_family.settings()
    st.markdown(
        "**KV cache** · a decoder keeps every past token's keys and values: per token, "
        "layers × key/value heads × (d_k/h + d_v/h) × bytes per number (a key and a value per key/value head; "
        "2 × d_head when they are equally wide)."
    )
    c1, c2, c3 = st.columns(3)
    setting_box("Layers", "layers", s, c1)
    setting_box("Tokens of context", "tokens", s, c2)
    setting_box("Bytes per number", "bytes", s, c3)
    show_messages("kv.cache")
    d_head, d_v_head = trace.K.shape[-1] // o.kv, trace.V.shape[-1] // o.kv  # d_k/h and d_v/h
    widths = f"d_k/h = {d_head}" + ("" if d_v_head == d_head else f", d_v/h = {d_v_head}")
    _table(cfg["layers"], o.heads, o.kv, d_head, cfg, f"this state: {o.heads} heads of {widths}", d_v_head)
    st.markdown("**A model you describe**")
    m1, m2, m3, m4 = st.columns(4)
    for col, (label, name) in zip(
        (m1, m2, m3, m4),
        (
            ("The model's layers", "m_layers"),
            ("Query heads", "m_heads"),
            ("Key/value heads", "m_kv"),
            ("d_head", "m_dhead"),
        ),
        strict=True,
    ):
        setting_box(label, name, s, col, "kv.model")
    show_messages("kv.model")
    _table(cfg["m_layers"], cfg["m_heads"], cfg["m_kv"], cfg["m_dhead"], cfg, "the model you describe")


def _table(
    layers: int, heads: int, kv: int, d_head: int, cfg: dict[str, int], what: str, d_v_head: int | None = None
) -> None:
    try:
        c = kvcache.compare(layers, heads, kv, d_head, cfg["tokens"], cfg["bytes"], d_v_head)
    except AttentionError as exc:
        st.error(f"For {what}: {exc.message}", icon=":material/error:")  # ours: numbers only
        return
    names = {"MHA": "MHA", "this": "yours" if kv not in (1, heads) else None, "MQA": "MQA"}
    rows = [
        {
            "attention": names[k] or k,
            "key/value heads": v.kv_heads,
            "bytes per token": v.bytes_per_token,
            f"for {cfg['tokens']:,} tokens": kvcache.readable(v.total_bytes),
        }
        for k, v in c.items()
        if names[k]
    ]
    st.caption(f"For {what}, {layers:,} layer(s), {cfg['bytes']} byte(s) per number.")
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
