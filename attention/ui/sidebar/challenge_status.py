"""The running challenge in the sidebar of every page: its title and whether the numbers meet its goal now."""

from __future__ import annotations

import streamlit as st

from ...labs import challenges as ch
from ...trace import Trace
from ..core import compute, session
from ..core.text import esc


def show(s: session.Session) -> None:
    """Nothing without a challenge; else its title and "✓ solved", "not yet" or why this state does not count."""
    if s.challenge is None:
        return
    sb = st.sidebar
    trace = compute.current_trace(s)
    title_md = esc(s.challenge.title, 120)
    if not isinstance(trace, Trace):
        sb.warning(f"**Challenge** · {title_md}: the numbers do not compute now.", icon=":material/block:")
        return
    p = ch.evaluate(s.challenge, trace)
    if p.blocked:
        sb.warning(f"**Challenge** · {title_md}: this state does not count.", icon=":material/block:")
    elif p.met:
        sb.success(f"**Challenge** · {title_md}: ✓ solved", icon=":material/check_circle:")
    else:
        sb.info(f"**Challenge** · {title_md}: not yet ({esc(p.description, 160)})", icon=":material/pending:")
