"""Changes for the class board: join a class, unlock the teacher page, open or show a class, hand in a solve.

The board's rows live in its database (the server's), not in the session; what this browser knows (who it joined
as, whether the teacher key was given, which class the teacher page shows) is kept in ``st.session_state`` here.
"""

from __future__ import annotations

import hashlib

import streamlit as st

from ...errors import AttentionError
from ...io.board import full_link, normal_code
from ...labs.challenges import Challenge, Progress, fingerprint
from ..core import classboard, keys
from ..core.classboard import LINK_CLASS, MEMBER, NAMED, SHOWN_CLASS, TEACHER, Member
from ..core.compute import matrix_digest
from ..core.session import Session
from ..core.text import esc, quoted
from .core import say

RECORDED = "board.recorded"  # session_state: the (class code, challenge key) pairs this browser has handed in
REFUSED = "board.refused"  # session_state: the pairs whose hand-in was refused since their goal was last unmet
REPORTED = "board.reported"  # session_state: (class code, challenge key) -> the value last told the board


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
    st.session_state.pop(classboard.FORGET, None)
    st.session_state[RECORDED] = set()
    say("board.join", "success", f"You joined class {code} as {quoted(' '.join(name.split()), 60)}.")


def leave() -> None:
    """Forget this browser's membership (a shared computer: the next student joins as herself); the board keeps her
    row and her solves."""
    who = classboard.member()
    st.session_state.pop(MEMBER, None)
    st.session_state[classboard.FORGET] = True  # the page clears the cookie on its next draw
    if who is not None:
        say("board.join", "info", f"This browser left class {who.code}; join again with your code and name.")


def unlock() -> None:
    """Give the teacher page (every class) to this browser session if the key typed matches the server's teacher key."""
    if classboard.key_matches(st.session_state.get(keys.BOARD_KEY, "")):
        st.session_state[TEACHER] = True
        st.session_state.pop(LINK_CLASS, None)
        say("board.teacher", "success", "Teacher page unlocked for this browser session.")
    else:
        say("board.teacher", "error", "That is not this server's teacher key.")


def open_class() -> None:
    """Open a new class with the title in its box, and show it."""
    board = classboard.board()
    if board is None or not classboard.key_session():
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
    if board is None or not classboard.key_session():
        return
    try:
        code = normal_code(st.session_state.get(keys.BOARD_SHOW, ""))
        board.title(code)
    except AttentionError as exc:
        say("board.class", "error", f"{esc(exc.message, 300)} Nothing changed.")
        return
    st.session_state[SHOWN_CLASS] = code


def hand_in(s: Session, progress: Progress, link: str) -> str | None:
    """Record the running challenge as solved by this browser's student, the first run its goal is met (the goal
    was just recomputed by this server from the session's numbers); ``link`` is the state's address (relative: the
    board keeps it as a full address). Refused, with a message, when the teacher did not set this challenge, exactly
    as it runs, for the class. What was said (for a toast where the student looks), or None when nothing was."""
    board, who = classboard.board(), classboard.member()
    if board is None or who is None or s.challenge is None or not progress.met or progress.blocked:
        return None
    cid = fingerprint(s.challenge)
    done, refused = st.session_state.setdefault(RECORDED, set()), st.session_state.setdefault(REFUSED, set())
    if (who.code, cid) in done or (who.code, cid) in refused:
        return None
    if s.arrived:  # not this student's own work: said once, until the goal is met again
        refused.add((who.code, cid))
        said_md = f"Not handed in: {not_own(s.arrived)}"
        say("board.handin", "warning", said_md, anywhere=True)
        return said_md
    try:
        handed = full_link(f"{link}&class={who.code}", classboard.app_base())  # its page says if the class set it
        first = board.record(who.code, who.token, cid, handed, numbers_digest(s))
    except AttentionError as exc:
        if exc.field:  # refused (not set, class closed): said once, until the goal is met again
            refused.add((who.code, cid))
        said_md = f"Not handed in: {esc(exc.message, 300)}."
        say("board.handin", "warning", said_md, anywhere=True)
        return said_md
    done.add((who.code, cid))
    said = "Handed in" if first else "Already handed in"
    said_md = f"{said} to class {who.code}: {quoted(s.challenge.title, 80)}."
    say("board.handin", "success", said_md, anywhere=True)
    return said_md


def set_for(s: Session) -> str | None:
    """Whether the running challenge is one set for the class this browser is in, shows, or its address names, in a
    sentence (Markdown); None when the board is off or nothing runs."""
    board = classboard.board()
    if board is None or s.challenge is None:
        return None
    who = classboard.member()
    code = who.code if who is not None else st.session_state.get(SHOWN_CLASS) or st.session_state.get(NAMED)
    if not code:
        return "This link names no class, so it is no hand-in: grade from the class board."
    try:
        set_ids = {a.challenge_id for a in board.assignments(code)}
    except AttentionError:
        return None
    if fingerprint(s.challenge) in set_ids:
        return f"This is a challenge set for class {code}."
    return (
        f"**Not a challenge set for class {code}**: whatever its title, its goal or numbers differ from every "
        "challenge set there, so it does not count there."
    )


def numbers_digest(s: Session) -> str:
    """A fingerprint of the numbers a solve hands in: every matrix the challenge lets the student edit, bit for bit."""
    parts = [f"{name}:{matrix_digest(s.matrices[name])}" for name in sorted(s.challenge.editable) if name in s.matrices]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def not_own(how: str) -> str:
    """Why a solve whose numbers arrived whole (``how``: "a link"...) is not handed in, and what to do instead."""
    return (
        f"these numbers arrived whole, by {esc(how, 80)}, so they are not your own work since the challenge started "
        "in this browser. Editing from here is fine, to explore; to hand in, press Restart on the Challenges page and "
        "reach the goal with your own edits."
    )


def report(s: Session, progress: Progress) -> None:
    """Tell the class board where this browser's student stands on the running challenge (its goal's value now),
    when it changed since last said; a challenge the teacher did not set is left out, with a message."""
    board, who = classboard.board(), classboard.member()
    if board is None or who is None or s.challenge is None:
        return
    cid = fingerprint(s.challenge)
    if not progress.met:  # a refused hand-in is tried again the next time the goal is met
        st.session_state.setdefault(REFUSED, set()).discard((who.code, cid))
    value = standing(progress)
    said = st.session_state.setdefault(REPORTED, {})
    if said.get((who.code, cid)) == value:
        return
    said[(who.code, cid)] = value
    try:
        board.report(who.code, who.token, cid, value)
    except AttentionError as exc:
        if not exc.field:  # the database, not the challenge: quietly, and again next run (the log has it)
            said.pop((who.code, cid), None)
            return
        say("board.handin", "warning", f"Your class board does not follow this challenge: {esc(exc.message, 300)}.")


def standing(p: Progress) -> str:
    """A goal's value now as the board shows it: "0.4123 (1 of 3 rows)", "✓ 0.6", or why it does not count."""
    if p.blocked or p.value is None:
        return "does not count (locked matrix or options changed)"
    rows = f" ({p.rows_met} of {p.rows_total} rows)" if p.rows_total > 1 else ""
    return f"{'✓ ' if p.met else ''}{p.value:.4g}{rows}"


def assign(code: str, challenge: Challenge, link: str) -> None:
    """Set ``challenge`` (exactly as it is) for class ``code``: from now on its solves are handed in there."""
    board = classboard.board()
    if board is None or not classboard.may_manage(code):
        return
    try:
        new = board.assign(code, fingerprint(challenge), challenge.title, link)
    except AttentionError as exc:
        say("board.assign", "error", f"{esc(exc.message, 300)} Nothing changed.")
        return
    said = "is now set" if new else "was already set"
    say("board.assign", "success", f"{quoted(challenge.title, 120)} {said} for class {code}.")


def manage(code: str, action: str) -> None:
    """Rename or remove the student picked in the teacher's box, or close the class ``code``."""
    board = classboard.board()
    if board is None or not classboard.may_manage(code):
        return
    name = str(st.session_state.get(keys.BOARD_WHO) or "")
    try:
        if action == "rename":
            new = str(st.session_state.get(keys.BOARD_RENAME, ""))
            board.rename(code, name, new)
            done_md = f"{quoted(name, 60)} is now {quoted(' '.join(new.split()), 60)}."
        elif action == "remove":
            board.remove(code, name)
            done_md = f"{quoted(name, 60)} was taken out of class {code}, with her solves."
        else:
            board.close_class(code)
            done_md = f"Class {code} is closed: nobody can join it or hand in any more; its board stays here."
    except AttentionError as exc:
        say("board.manage", "error", f"{esc(exc.message, 300)} Nothing changed.")
        return
    say("board.manage", "success", done_md)


def unlock_from_address(value: str) -> None:
    """Give back the teacher page for one class to a browser whose address carries that class's signed teacher link
    (a reload, a replica restart): that class only, until the link is older than the board allows; opening or
    showing another class needs the key typed."""
    board = classboard.board()
    if board is None:
        return
    try:
        code = board.check_teacher_link(value)
    except AttentionError as exc:
        say("board.teacher", "warning", esc(exc.message, 300))
        return
    st.session_state[LINK_CLASS] = code
    st.session_state[SHOWN_CLASS] = code
