"""The running challenge in the sidebar of every page: its title and whether the numbers meet its goal now."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from ...labs import challenges as ch
from ...trace import Trace
from ..address import url
from ..core import classboard, compute, session
from ..core.text import esc
from ..state import board as board_state
from ..widgets.common import show_messages


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
    if classboard.member() is not None:
        board_state.report(s, p)
        query, _ = url.link(s)
        said = board_state.hand_in(s, p, "challenges?" + urlencode(query)) if p.met else None
        if said:  # where the student is looking, not only in the sidebar below the navigation
            st.toast(said, icon=":material/assignment_turned_in:", duration="long")
    show_messages("board.handin", sb)
    if p.blocked:
        sb.warning(f"**Challenge** · {title_md}: this state does not count.", icon=":material/block:")
    elif p.met:
        sb.success(f"**Challenge** · {title_md}: ✓ solved", icon=":material/check_circle:")
        where = board_state.set_for(s)
        if where is not None:  # a solved link says whether it is what the class was set
            (sb.warning if where.startswith("**Not") else sb.caption)(where)
    else:
        sb.info(f"**Challenge** · {title_md}: not yet ({esc(p.description, 160)})", icon=":material/pending:")
