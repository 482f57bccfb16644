"""The class board: students join a class on the Challenges page; here the teacher opens a class and watches it."""

from __future__ import annotations

from datetime import UTC

import pandas as pd
import streamlit as st

from ...errors import AttentionError
from ...io.board import solves_csv
from ..core import classboard, keys, session
from ..core.settings import server_settings
from ..core.text import esc
from ..state import board as board_state
from ..widgets.common import show_messages

REFRESH_S = 5  # the board redraws itself this often while the page is open


def body(s: session.Session) -> None:
    """The teacher page: off, locked, or a class to open and watch."""
    settings = server_settings()
    if classboard.board() is None:
        st.info(
            "The class board is off on this server, or its database cannot be reached just now (the server's log "
            "says which). To turn it on, the server's owner adds a `[board]` section "
            "with a database `url` and a `teacher_key` to `.streamlit/secrets.toml` (see "
            "docs/deploying.md, *The class board*).",
            icon=":material/info:",
        )
        return
    if not settings.teacher_key:
        st.warning("The class board has no teacher key set on this server, so this page stays locked.")
        return
    if not st.session_state.get(classboard.TEACHER):
        st.text_input("Teacher key", type="password", key=keys.BOARD_KEY, on_change=board_state.unlock)
        show_messages("board.teacher")
        return
    _classes()
    code = st.session_state.get(classboard.SHOWN_CLASS)
    if code:
        _live(code)


def _classes() -> None:
    left, right = st.columns(2, gap="medium")
    with left.form(keys.BOARD_OPEN, border=True):
        st.text_input("A new class's title", key=keys.BOARD_TITLE, max_chars=80, placeholder="Tuesday lab")
        st.form_submit_button("Open a class", on_click=board_state.open_class, icon=":material/group_add:")
    with right.form(keys.BOARD_PICK, border=True):
        st.text_input("Show the class with the code", key=keys.BOARD_SHOW, max_chars=24)
        st.form_submit_button("Show it", on_click=board_state.show_class, icon=":material/visibility:")
    show_messages("board.class")


@st.fragment(run_every=REFRESH_S)
def _live(code: str) -> None:
    """Who solved what in class ``code``, redrawn every few seconds while the page is open."""
    board = classboard.board()
    try:
        title, names, rows = board.title(code), board.roster(code), board.solves(code)
    except AttentionError as exc:
        st.error(esc(exc.message, 300))
        return
    st.subheader(f"Class {code} · {esc(title, 80)}")
    st.caption(f"{len(names)} students joined · {len(rows)} challenges solved · refreshed every {REFRESH_S} s")
    table = pd.DataFrame(
        {
            "student": [r.name for r in rows],
            "challenge": [r.challenge_title for r in rows],
            "solved at (UTC)": [r.solved_at.astimezone(UTC).strftime("%H:%M:%S") for r in rows],
            "hand-in link": [r.link for r in rows],
        }
    )
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={"hand-in link": st.column_config.LinkColumn("hand-in link", display_text="open")},
    )
    st.download_button(
        "Download the board (.csv)",
        solves_csv(rows),
        file_name=f"class_{code}.csv",
        mime="text/csv",
        key=keys.BOARD_CSV,
        on_click="ignore",
    )
    if names:
        st.caption("Joined: " + ", ".join(esc(n, 40) for n in names))


def join_box() -> None:
    """On the Challenges page when the board is on: join a class with its code and a display name."""
    if classboard.board() is None:
        return
    who = classboard.member()
    with st.expander("Class board: join your class", icon=":material/groups:", expanded=who is None):
        if who is not None:
            st.caption(
                f"You are {esc(who.name, 40)} in class {who.code}: every challenge you solve is handed in, with "
                "its link."
            )
        with st.form(keys.BOARD_JOIN, border=False):
            a, b = st.columns(2)
            a.text_input("Class code", key=keys.BOARD_CODE, max_chars=24, placeholder="K7QX2M")
            b.text_input("Your display name", key=keys.BOARD_NAME, max_chars=40)
            st.form_submit_button("Join", on_click=board_state.join, icon=":material/login:")
        show_messages("board.join")
