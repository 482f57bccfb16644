"""Changes for the class board: join a class, unlock the teacher page, open or show a class, hand in a solve.

The board's rows live in its database (the server's), not in the session; what this browser knows (who it joined
as, whether the teacher key was given, which class the teacher page shows) is kept in ``st.session_state`` here.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

import numpy as np
import streamlit as st

from ...errors import AttentionError
from ...io.board import BoardError, Removed, full_link, normal_code
from ...labs import copies
from ...labs.challenges import Challenge, Progress, challenge_preset, fingerprint
from ..core import classboard, keys
from ..core.classboard import NAMED, PASS_WRITE, SHOWN_AT, SHOWN_CLASS, TEACHER, Member
from ..core.session import Session, get
from ..core.text import esc, plural, quoted
from .core import say

PENDING = "board.remove.pending"  # session_state: (class code, name) the teacher asked to remove, not yet confirmed
REMOVED = "board.removed"  # session_state: the Removed record of the student last taken out (for Undo)
RECORDED = "board.recorded"  # session_state: the (class code, challenge key) pairs this browser has handed in
REFUSED = "board.refused"  # session_state: the pairs whose hand-in was refused since their goal was last unmet
REPORTED = "board.reported"  # session_state: (class code, challenge key) -> the value last told the board
CLOSING = "board.closing"  # session_state: the class code the teacher asked to close, not yet confirmed
REJOINED = "board.rejoined"  # session_state: the (class code, name) a rejoin link gave back, said once on the page
MARKED = "board.own.kept"  # session_state: the (token, own-work mark) last kept on the board (written once per state)
ROSTER = "board.roster.drawn"  # session_state: the names the teacher's rename list was drawn with
REJOIN_LINK = "board.rejoin.link"  # session_state: (class code, name, link) of the rejoin link last made here


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
    get().member = Member(code, " ".join(name.split()), token)
    st.session_state.pop(classboard.FORGET, None)
    st.session_state[RECORDED] = set()
    say("board.join", "success", f"You joined class {code} as {quoted(' '.join(name.split()), 60)}.")


def teacher_kept(valid: bool) -> None:
    """This browser's kept teacher key was read: it checks out (the teacher page is this session's), or it no longer
    counts (too old, another key) and the page clears its cookie."""
    st.session_state[TEACHER] = valid  # either way read once a session: a stale cookie is not checked again
    if not valid:
        st.session_state[PASS_WRITE] = ""


def take_teacher_cookie() -> str | None:
    """The teacher cookie's value the page has to write ("" clears it), taken once; None when there is none."""
    return st.session_state.pop(PASS_WRITE, None)


def name_class(code: str) -> None:
    """The address names class ``code`` (a hand-in link's): the page says whether its challenge is set there."""
    st.session_state[NAMED] = code


def rejoin(s: Session, member: Member) -> None:
    """This browser is ``member`` again: its address or cookie named a membership the board knows (``s``: the state
    being built from the address)."""
    s.member = member


def rejoined(s: Session, member: Member) -> None:
    """A teacher's rejoin link gave this browser ``member`` back (``s``: the state being built): the page says so."""
    s.member = member
    st.session_state[REJOINED] = (member.code, member.name)


def take_rejoined() -> tuple[str, str] | None:
    """The (class code, name) a rejoin link gave back, taken once (said once), or None."""
    return st.session_state.pop(REJOINED, None)


def mark_kept(token: str, mark: str) -> bool:
    """Whether the own-work ``mark`` was kept on the board for ``token`` already in this session; notes it if not."""
    if st.session_state.get(MARKED) == (token, mark):
        return True
    st.session_state[MARKED] = (token, mark)
    return False


def mark_lost() -> None:
    """The board could not keep the last own-work mark: try again on the next run."""
    st.session_state.pop(MARKED, None)


def roster_changed(names: tuple[str, ...]) -> bool:
    """Whether the class's names differ from those the rename list was last drawn with (then kept as drawn)."""
    was = st.session_state.get(ROSTER)
    st.session_state[ROSTER] = names
    return was is not None and was != names


def roster_drawn(names: tuple[str, ...]) -> None:
    """The rename list was drawn with ``names``."""
    st.session_state[ROSTER] = names


def leave() -> None:
    """Forget this browser's membership (a shared computer: the next student joins as themselves); the board keeps her
    row and her solves."""
    who = classboard.member()
    get().member = None
    st.session_state[classboard.FORGET] = True  # the page clears the cookie on its next draw
    if who is not None:
        say("board.join", "info", f"This browser left class {who.code}; join again with your code and name.")


def unlock() -> None:
    """Give the teacher page (every class) to this browser if the key typed matches the server's teacher key, and keep
    it in the browser's signed cookie (the key is asked once per browser)."""
    typed = st.session_state.get(keys.BOARD_KEY, "")
    st.session_state[keys.BOARD_KEY] = ""  # the box never keeps the key
    board = classboard.board()
    if board is None or not classboard.key_matches(typed):
        say("board.teacher", "error", "That is not this server's teacher key. Nothing changed.")
        return
    st.session_state[TEACHER] = True
    with contextlib.suppress(AttentionError):  # the database cannot sign now: this session only
        st.session_state[PASS_WRITE] = board.teacher_pass(str(typed))  # the page writes it to the cookie
    say("board.teacher", "success", "Teacher page unlocked in this browser (for 12 hours, or until you lock it).")


def lock() -> None:
    """Forget the teacher key in this browser (its cookie) and this session: the page asks for it again."""
    st.session_state[TEACHER] = False
    st.session_state.pop(SHOWN_CLASS, None)
    st.session_state[PASS_WRITE] = ""  # the page clears the cookie
    say("board.teacher", "info", "This page is locked in this browser: the teacher key is asked again.")


def _show(code: str) -> None:
    """The teacher page shows class ``code`` from now on (what earlier said about another class is dropped)."""
    st.session_state[SHOWN_CLASS] = code
    st.session_state[SHOWN_AT] = datetime.now(UTC)
    st.session_state[keys.BOARD_RENAME] = ""
    st.session_state.pop(keys.BOARD_WHO, None)
    st.session_state.pop(REMOVED, None)
    st.session_state.pop(PENDING, None)
    st.session_state.pop(CLOSING, None)
    for place in ("board.manage", "board.assign", "board.class"):  # what was said of another class
        get().messages.pop(place, None)


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
    _show(code)
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
    _show(code)


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
        _refused_on_board(who, cid, f"the numbers arrived whole, by {s.arrived}")
        said_md = f"Not handed in: {not_own(s.arrived)}"
        say("board.handin", "warning", said_md, anywhere=True)
        return said_md
    try:
        handed = full_link(f"{link}&class={who.code}", classboard.app_base())  # its page says if the class set it
        first = board.record(who.code, who.token, cid, handed, handed_edits(s))
    except AttentionError as exc:
        if exc.field:  # refused (not set, class closed): said once, until the goal is met again
            refused.add((who.code, cid))
        said_md = f"Not handed in: {esc(_clause(exc.message), 300)}."
        if exc.field and _closed(who.code):
            _refused_on_board(who, cid, "solved after the class was closed")
            said_md = f"Not handed in: class {who.code} was closed, so this solve was not recorded. {CLOSED_WORDS}"
        say("board.handin", "warning", said_md, anywhere=True)
        return said_md
    done.add((who.code, cid))
    said = "Handed in" if first else "Already handed in"
    said_md = f"{said} to class {who.code}: {quoted(s.challenge.title, 80)}."
    say("board.handin", "success", said_md, anywhere=True)
    return said_md


CLOSED_WORDS = "Tell your teacher, who can reopen the class; then reach the goal again."


def _closed(code: str) -> bool:
    """Whether class ``code`` is closed (False when the board cannot say just now)."""
    try:
        return classboard.board().is_closed(code)
    except AttentionError:
        return False


def _refused_on_board(who: Member, cid: str, reason: str) -> None:
    """Tell the board this student reached the goal but it was not handed in, and why (quietly when it cannot)."""
    board = classboard.board()
    with contextlib.suppress(AttentionError):
        board.refuse(who.code, who.token, cid, reason)


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


def handed_edits(s: Session) -> str:
    """What a solve hands in for the copy check: every cell of the matrices the challenge lets the student edit that
    differs from the challenge's start, as typed, and whether its hint names it ("" when the start cannot load)."""
    try:
        start = challenge_preset(s.challenge).matrices()
    except AttentionError:
        return ""
    editable = {n: np.asarray(start[n]).reshape(s.matrices[n].shape) for n in s.challenge.editable if n in s.matrices}
    labels = {n: s.axis_labels(n, m.shape) for n, m in editable.items()}
    try:
        return copies.encode(copies.hand_in(editable, s.matrices, s.challenge.hint, labels))
    except ValueError:  # a start of another shape (a reshaped state does not count anyway)
        return ""


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
        say(
            "board.handin",
            "warning",
            f"Your class board does not follow this challenge: {esc(_clause(exc.message), 300)}.",
        )


def standing(p: Progress) -> str:
    """A goal's value now as the board shows it: "0.4123 (1 of 3 rows)", "0.6 (goal met)", or why it does not count;
    never a ✓, which on the board means handed in."""
    if p.blocked or p.value is None:
        return "does not count (locked matrix or options changed)"
    rows = f" ({p.rows_met} of {p.rows_total} rows)" if p.rows_total > 1 else ""
    return f"{p.value:.6g}{rows}{' (goal met)' if p.met else ''}"


def _fresh() -> None:
    """A new teacher action: what the page said of the last one goes (a rename's word does not stay on)."""
    for place in ("board.manage", "board.assign"):
        get().messages.pop(place, None)


def assign(code: str, challenge: Challenge, link: str) -> None:
    """Set ``challenge`` (exactly as it is) for class ``code``: from now on its solves are handed in there."""
    _fresh()
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
    """Rename the student picked in the teacher's box, ask before removing them, or close the class ``code``."""
    _fresh()
    board = classboard.board()
    if board is None or not classboard.may_manage(code):
        return
    name = str(st.session_state.get(keys.BOARD_WHO) or "")
    try:
        if action == "rename":
            new = str(st.session_state.get(keys.BOARD_RENAME, ""))
            board.rename(code, name, new)
            st.session_state[keys.BOARD_RENAME] = ""  # the box starts empty for the next rename
            st.session_state[keys.BOARD_WHO] = None
            done_md = f"{quoted(name, 60)} is now {quoted(' '.join(new.split()), 60)}."
        elif action == "rejoin":
            ticket = board.rejoin_ticket(code, name)
            link = full_link(f"challenges?rejoin={code}.{ticket}", classboard.app_base())
            st.session_state[REJOIN_LINK] = (code, name, link)
            return
        elif action == "remove":
            if not name:
                raise BoardError("Choose a student first.", field="display name")
            st.session_state[PENDING] = (code, name)  # asked first: the page shows "Remove … ?"
            return
        else:
            st.session_state[CLOSING] = code  # asked first: the page shows "Close … ?"
            return
    except AttentionError as exc:
        say("board.manage", "error", f"{esc(_clause(exc.message), 300)}. Nothing changed.")
        return
    say("board.manage", "success", done_md)


def close(code: str, yes: bool) -> None:
    """The answer to "Close class … ?": close it (this page goes on showing it, with Reopen; every other teacher page
    showing it ends its session on it), or leave it open."""
    _fresh()
    board, asked = classboard.board(), st.session_state.pop(CLOSING, None)
    if board is None or not classboard.may_manage(code) or asked != code:
        return
    if not yes:
        say("board.manage", "info", f"Class {code} stays open. Nothing changed.")
        return
    try:
        board.close_class(code)
    except AttentionError as exc:
        say("board.manage", "error", f"{esc(_clause(exc.message), 300)}. Nothing changed.")
        return
    st.session_state[SHOWN_AT] = datetime.now(UTC)  # this page keeps showing it, closed
    say(
        "board.manage",
        "success",
        f"Class {code} is closed: nobody can join it or hand in any more (a student who solves now is told so), "
        "and every other teacher page showing it has ended its session on it. Its board stays readable; Reopen "
        "undoes the close.",
    )


def reopen(code: str) -> None:
    """Open the closed class ``code`` again."""
    _fresh()
    board = classboard.board()
    if board is None or not classboard.may_manage(code):
        return
    try:
        board.reopen_class(code)
    except AttentionError as exc:
        say("board.manage", "error", f"{esc(_clause(exc.message), 300)}. Nothing changed.")
        return
    say(
        "board.manage",
        "success",
        f"Class {code} is open again: students join and hand in as before. A solve refused while it was closed is "
        "handed in when its student reaches the goal again.",
    )


def remove(code: str, yes: bool) -> None:
    """The answer to "Remove … ?": take the student out (Undo brings them back), or leave everything as it was."""
    _fresh()
    board, pending = classboard.board(), st.session_state.pop(PENDING, None)
    if board is None or not classboard.may_manage(code) or not pending or pending[0] != code:
        return
    if not yes:
        say("board.manage", "info", f"{quoted(pending[1], 60)} stays in class {code}. Nothing changed.")
        return
    try:
        st.session_state[REMOVED] = board.remove(code, pending[1])
    except AttentionError as exc:
        say("board.manage", "error", f"{esc(_clause(exc.message), 300)}. Nothing changed.")
        return
    st.session_state[keys.BOARD_WHO] = None
    taken = _with(_solves_of(st.session_state[REMOVED]))
    say("board.manage", "success", f"{quoted(pending[1], 60)} was taken out of class {code}{taken}.")


def undo_remove(code: str) -> None:
    """Bring back the student last removed from class ``code``, with their solves and progress."""
    _fresh()
    board, removed = classboard.board(), st.session_state.get(REMOVED)
    if board is None or not classboard.may_manage(code) or removed is None or removed.code != code:
        return
    try:
        board.undo_remove(removed)
    except AttentionError as exc:
        say("board.manage", "error", f"{esc(_clause(exc.message), 300)}. Nothing changed.")
        return
    st.session_state.pop(REMOVED, None)
    say("board.manage", "success", f"{quoted(removed.name, 60)} is back in class {code}{_with(_solves_of(removed))}.")


def _solves_of(removed: Removed) -> int:
    """How many solves went (or came back) with a removed student."""
    return len(dict(removed.rows).get("board_solves", ()))


def _with(n: int) -> str:
    """ ", with 2 solves", or " (no solve was handed in)" for a student who handed nothing in."""
    return f", with {plural(n, 'solve')}" if n else " (no solve was handed in)"


def _clause(text: str) -> str:
    """A message without its closing full stop, to be followed by one of ours (never "..")."""
    return text.rstrip().rstrip(".")


def show(code: str) -> None:
    """Show class ``code`` (named by the page's address after a reload) when it exists; else nothing changes."""
    board = classboard.board()
    if board is None or not classboard.key_session():
        return
    try:
        board.title(code)
    except AttentionError:
        return
    _show(code)


def shown_class() -> str | None:
    """The class the teacher page shows, or None; a class closed since this page began showing it ends its session
    here (every teacher page showing it, in any browser), with a word."""
    board, code = classboard.board(), st.session_state.get(SHOWN_CLASS)
    if board is None or not code:
        return None
    try:
        closed = board.closed_at(code)
    except AttentionError:
        return code
    began = st.session_state.get(SHOWN_AT)
    if closed is None or (began is not None and began > closed):
        return code
    st.session_state.pop(SHOWN_CLASS, None)
    say(
        "board.class",
        "info",
        f"Class {code} was closed at {closed.strftime('%H:%M')} UTC, so this page's session on it ended. Its board "
        "stays readable: show it again with its code.",
    )
    return None
