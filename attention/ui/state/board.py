"""Changes for the class board: join a class, unlock the teacher page, open or show a class, hand in a solve.

The board's rows live in its database (the server's), not in the session; what this browser knows (who it joined
as, whether the teacher key was given, which class the teacher page shows) is kept in ``st.session_state`` here.
"""

from __future__ import annotations

import hashlib
import hmac

import streamlit as st

from ...errors import AttentionError
from ...io.board import normal_code
from ...labs.challenges import Challenge, Progress, load_challenge, to_json
from ..core import classboard, keys
from ..core.classboard import MEMBER, SHOWN_CLASS, TEACHER, Member
from ..core.session import Session
from ..core.settings import server_settings
from ..core.text import esc, quoted
from .core import say

RECORDED = "board.recorded"  # session_state: the (class code, challenge id) pairs this browser has handed in


def join() -> None:
    """Join the class whose code and display name are in the join form's boxes."""
    board = classboard.board()
    if board is None:
        return
    code, name = st.session_state.get(keys.BOARD_CODE, ""), st.session_state.get(keys.BOARD_NAME, "")
    try:
        token = board.join(code, name)
        code = normal_code(code)
    except AttentionError as exc:
        say("board.join", "error", f"{esc(exc.message, 300)} Nothing changed.")
        return
    st.session_state[MEMBER] = Member(code, " ".join(name.split()), token)
    st.session_state[RECORDED] = set()
    say("board.join", "success", f"You joined class {code} as {quoted(' '.join(name.split()), 60)}.")


def unlock() -> None:
    """Give the teacher page to this browser session if the key typed matches the server's teacher key."""
    key = server_settings().teacher_key
    typed = str(st.session_state.get(keys.BOARD_KEY, ""))[:500]
    if key and hmac.compare_digest(typed.encode(), key.encode()):
        st.session_state[TEACHER] = True
        say("board.teacher", "success", "Teacher page unlocked for this browser session.")
    else:
        say("board.teacher", "error", "That is not this server's teacher key.")


def open_class() -> None:
    """Open a new class with the title in its box, and show it."""
    board = classboard.board()
    if board is None or not st.session_state.get(TEACHER):
        return
    try:
        code = board.open_class(st.session_state.get(keys.BOARD_TITLE, ""))
    except AttentionError as exc:
        say("board.class", "error", f"{esc(exc.message, 300)} Nothing changed.")
        return
    st.session_state[SHOWN_CLASS] = code
    say("board.class", "success", f"Class {code} is open: give your students this code.")


def show_class() -> None:
    """Show the class whose code is in its box."""
    board = classboard.board()
    if board is None or not st.session_state.get(TEACHER):
        return
    try:
        code = normal_code(st.session_state.get(keys.BOARD_SHOW, ""))
        board.title(code)
    except AttentionError as exc:
        say("board.class", "error", f"{esc(exc.message, 300)} Nothing changed.")
        return
    st.session_state[SHOWN_CLASS] = code


def hand_in(s: Session, progress: Progress, link: str) -> None:
    """Record the running challenge as solved by this browser's student, the first run its goal is met (the goal
    was just recomputed by this server from the session's numbers); ``link`` is the state's address (relative)."""
    board, who = classboard.board(), classboard.member()
    if board is None or who is None or s.challenge is None or not progress.met or progress.blocked:
        return
    cid, title = recorded_as(s.challenge)
    done = st.session_state.setdefault(RECORDED, set())
    if (who.code, cid) in done:
        return
    try:
        first = board.record(who.code, who.token, cid, title, link)
    except AttentionError as exc:
        say("board.handin", "warning", f"Your solve was not handed in: {esc(exc.message, 300)}")
        return
    done.add((who.code, cid))
    said = "Handed in" if first else "Already handed in"
    say("board.handin", "success", f"{said} to class {who.code}: {quoted(s.challenge.title, 80)}.", anywhere=True)


def recorded_as(challenge: Challenge) -> tuple[str, str]:
    """The id and title a solve is recorded under: a built-in's own when the running challenge is exactly that
    built-in, else an id from the challenge's whole definition and a title that says it is not a built-in (a link
    carries its challenge, so a student could rewrite a built-in's goal under its id: the board shows that apart)."""
    try:
        known = load_challenge(challenge.id)
    except AttentionError:
        known = None
    if known is not None and to_json(known) == to_json(challenge):
        return challenge.id, challenge.title
    digest = hashlib.sha256(to_json(challenge).encode()).hexdigest()[:12]
    return f"custom-{digest}", f"{challenge.title[:150]} (not a built-in: open the link for its goal)"
