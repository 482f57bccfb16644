"""The class board: a teacher opens a class, sets its challenges and grades every student's progress.

Students join on the Challenges page (:func:`join_box`)."""

from __future__ import annotations

from datetime import UTC
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import streamlit as st

from ...errors import AttentionError
from ...io.board import board_csv, full_link, short_link
from ...labs import challenges as ch
from ...labs import copies
from ..address import membership
from ..address import teacher as teacher_address
from ..core import classboard, keys, session
from ..core.cache import kept
from ..core.settings import server_settings
from ..core.text import esc, plural, quoted
from ..state import board as board_state
from ..state import core as state_core
from ..widgets.common import bind, show_messages

REFRESH_S = 5  # the board redraws itself this often while the page is open
NO_BUILTIN = "(none: a link of my own)"
LINK_BOX_CHARS = ch.MAX_LINK_CHARS + 500  # a challenge's link and its address; Streamlit cuts a longer paste here


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
    stale = teacher_address.restore()  # the key kept in this browser's signed cookie, once per session
    teacher_address.draw()
    if not classboard.key_session():
        if stale:
            st.info(esc(stale, 300), icon=":material/key:")
        st.text_input("Teacher key", type="password", key=keys.BOARD_KEY, on_change=board_state.unlock)
        st.caption("Asked once in this browser: it then keeps a signed cookie (never the key) for 12 hours.")
        show_messages("board.teacher")
        return
    named = teacher_address.shown()
    if named and classboard.SHOWN_CLASS not in st.session_state:  # a reload: the class its address names
        board_state.show(named)
    code = board_state.shown_class()  # None once the class shown was closed (here or in another browser)
    _classes()
    teacher_address.show(code)
    if code and (asked := teacher_address.solve_asked()) is not None:
        _hand_in(code, asked)
    if code:
        _live(code)
        if _closed(code):  # read only: the board, and Reopen
            return
        _links(code)
        _set_challenge(code)
        _manage(code)


def _classes() -> None:
    left, right = st.columns(2, gap="medium")
    with left.form(keys.BOARD_OPEN, border=True):
        st.text_input("A new class's title", key=keys.BOARD_TITLE, max_chars=80, placeholder="Tuesday lab")
        st.form_submit_button("Open a class", on_click=board_state.open_class, icon=":material/group_add:")
    with right.form(keys.BOARD_PICK, border=True):
        st.text_input("Show the class with the code", key=keys.BOARD_SHOW, max_chars=24)
        st.form_submit_button("Show it", on_click=board_state.show_class, icon=":material/visibility:")
    show_messages("board.class")
    show_messages("board.teacher")
    st.caption(
        "Open the class before the lesson and set its challenges below; when students reach the Challenges page, "
        "hand out its join link or write its "
        "code on the board. This page's address names the class only: without the key kept in this browser it "
        "opens nothing."
    )
    st.button("Lock this page in this browser", key=keys.BOARD_LOCK, on_click=board_state.lock, icon=":material/lock:")


@st.fragment(run_every=REFRESH_S)
def _live(code: str) -> None:
    """Every student of class ``code``, one row each: where they stand on each challenge set, redrawn every few
    seconds while the page is open (one narrow column per challenge and one for its hand-in, so five fit 1280 px)."""
    board = classboard.board()
    try:
        title, closed = board.title(code), board.is_closed(code)
        tasks, rows = board.standings(code)
    except AttentionError as exc:
        st.error(esc(exc.message, 300))
        return
    if board_state.roster_changed(tuple(r.name for r in rows)):  # someone joined or left: the rename list follows
        st.rerun(scope="app")
    st.subheader(f"Class {code} · {esc(title, 80)}" + (" · closed" if closed else ""))
    solved = sum(c.solved_at is not None for r in rows for c in r.cells)
    st.caption(
        f"{plural(len(rows), 'student')} joined · {plural(solved, 'challenge')} solved · "
        f"{plural(len(tasks), 'challenge')} set · times in UTC · refreshed every {REFRESH_S} s"
    )
    if not tasks:
        st.info("No challenge is set for this class yet: set one below. Only the challenges set here are handed in.")
    _copies(tasks, rows)
    base = classboard.app_base()
    table, config = {"student": [r.name for r in rows]}, {"student": st.column_config.TextColumn("student")}
    for i, a in enumerate(tasks):
        label, link = f"{i + 1}. {_short(a.title)}", f"{i + 1} ↗"
        table[label] = [_cell_text(r.cells[i]) for r in rows]
        table[link] = [
            short_link(code, c.solve_id, base) if c.solve_id is not None else "" for c in (r.cells[i] for r in rows)
        ]
        config[label] = st.column_config.TextColumn(label, help=esc(a.title, 200), width=90)
        config[link] = st.column_config.LinkColumn(
            link, display_text="open", help=f"The hand-in of {esc(a.title, 200)}", width=46
        )
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch", column_config=config)
    _refused(tasks, rows)
    st.download_button(
        "Download the board (.csv)",
        board_csv(tasks, rows, base, code),
        file_name=f"class_{code}.csv",
        mime="text/csv",
        key=keys.BOARD_CSV,
        on_click="ignore",
    )


MAX_FLAGS = 12  # pairs named per challenge: more says how many


def _copies(tasks, rows) -> None:
    """The copy check (attention.labs.copies): each pair of hand-ins of one challenge closer than chance makes likely,
    with what agreed, for the teacher to judge."""
    for i, a in enumerate(tasks):
        found = copies.near_copies([(r.name, r.cells[i].edits) for r in rows if r.cells[i].edits])
        for (one, other), why in found[:MAX_FLAGS]:
            st.warning(
                f"Worth a word: {esc(one, 40)} and {esc(other, 40)} handed in {quoted(a.title, 120)} with "
                f"{esc(why, 600)}. Following the hint is not counted.",
                icon=":material/content_copy:",
            )
        if len(found) > MAX_FLAGS:
            st.caption(f"…and {plural(len(found) - MAX_FLAGS, 'more pair')} for {quoted(a.title, 120)}.")


def _short(title: str, limit: int = 22) -> str:
    """A challenge's title cut to fit a narrow column (the whole title is in the column's help)."""
    return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"


def _cell_text(c) -> str:
    """One student on one challenge: "✓ solved 10:42" (handed in, UTC), "refused: WHY", "0.41 (1 of 3 rows)", "–"
    (not started): the ✓ means handed in, and nothing else; the words are the CSV's status."""
    if c.solved_at is not None:
        return f"✓ {c.status} {c.solved_at.astimezone(UTC).strftime('%H:%M')}"
    if c.refused:
        return c.status
    return c.value or "–"


def _refused(tasks, rows) -> None:
    """Each goal reached but not handed in, with its reason in full (a narrow column cuts it)."""
    lines = [
        f"- {esc(r.name, 40)}, {quoted(a.title, 80)}: {esc(c.status, 240)}"
        for r in rows
        for a, c in zip(tasks, r.cells, strict=True)
        if c.solved_at is None and c.refused
    ]
    if lines:
        st.markdown("**Reached the goal, not handed in** (no ✓ on the board):\n" + "\n".join(lines))


def _hand_in(code: str, solve_id: int) -> None:
    """The hand-in a short link (the CSV's) names: whose, which challenge, when, and the button that opens it."""
    try:
        got = classboard.board().solve_by_id(code, solve_id)
    except AttentionError as exc:
        st.warning(esc(exc.message, 300), icon=":material/link_off:")
        return
    with st.container(border=True):
        st.markdown(
            f"**Hand-in {solve_id}**: {esc(got.name, 40)} solved {quoted(got.challenge_title, 120)} at "
            f"{got.solved_at.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S')} UTC."
        )
        st.link_button("Open the hand-in", full_link(got.link, classboard.app_base()), icon=":material/open_in_new:")


def _set_challenge(code: str) -> None:
    """Set a built-in, or a challenge of the teacher's own by its link, for class ``code``."""
    with st.form(keys.BOARD_SET, border=True):
        st.markdown("**Set a challenge for this class**: only the challenges set here, exactly as set, are handed in.")
        a, b = st.columns(2)
        table = _builtins()
        a.selectbox(
            "A built-in challenge",
            [NO_BUILTIN, *table],
            format_func=lambda k: table.get(k, k),
            key=keys.BOARD_SET_BUILTIN,
        )
        b.text_input("…or the link of a challenge you wrote", key=keys.BOARD_SET_LINK, max_chars=LINK_BOX_CHARS)
        st.form_submit_button("Set it", on_click=_on_set, args=(code,), icon=":material/assignment_add:")
    show_messages("board.assign")


@kept(4)
def _builtins() -> dict[str, str]:
    return {cid: ch.load_challenge(cid).title for cid in ch.list_challenges()}


def _on_set(code: str) -> None:
    link = str(st.session_state.get(keys.BOARD_SET_LINK) or "")
    if len(link) >= LINK_BOX_CHARS:  # bounded before any parser runs (a full box: the paste was cut)
        state_core.say(
            "board.assign", "error", "That link is too long to be a challenge's link (it was cut). Nothing changed."
        )
        return
    link = link.strip()
    if link:
        token = parse_qs(urlsplit(link).query).get("challenge", [link])[0] if "?" in link else link
        try:
            challenge = ch.decode_link(token)
        except AttentionError as exc:
            state_core.say(
                "board.assign", "error", f"That link cannot be read: {esc(exc.message, 300)} Nothing changed."
            )
            return
    else:
        cid = st.session_state.get(keys.BOARD_SET_BUILTIN)
        if cid not in _builtins():
            state_core.say("board.assign", "error", "Choose a built-in challenge or paste a link. Nothing changed.")
            return
        challenge = ch.load_challenge(cid)
        token = ch.encode_link(challenge)
    board_state.assign(code, challenge, full_link(f"challenges?challenge={token}", classboard.app_base()))


def _manage(code: str) -> None:
    """Rename or remove a student (asked first, undone with one press), or close the class."""
    pending = st.session_state.get(board_state.PENDING)
    removed = st.session_state.get(board_state.REMOVED)
    with st.expander(
        "Students and the class: rename, remove, close",
        icon=":material/manage_accounts:",
        expanded=bool(pending) or removed is not None or st.session_state.get(board_state.CLOSING) == code,
    ):
        try:
            names = classboard.board().roster(code)
        except AttentionError:
            names = []
        board_state.roster_drawn(tuple(names))  # the board's refresh compares with it
        with st.form(keys.BOARD_MANAGE, border=False):
            a, b = st.columns(2)
            a.selectbox("Student", names, index=None, placeholder="Choose a student", key=keys.BOARD_WHO)
            b.text_input("New display name", key=keys.BOARD_RENAME, max_chars=40)
            c, d, e = st.columns(3)
            c.form_submit_button("Rename", on_click=board_state.manage, args=(code, "rename"))
            d.form_submit_button("Remove from the class…", on_click=board_state.manage, args=(code, "remove"))
            e.form_submit_button(
                "Rejoin link",
                on_click=board_state.manage,
                args=(code, "rejoin"),
                help="For a student who lost this class in a new or cleared browser: a link for that student alone, "
                "used once (the old membership stops working).",
            )
        _rejoin_link(code)
        if pending and pending[0] == code:
            st.warning(
                f"Remove {esc(pending[1], 40)} from class {code} ({_handed(code, pending[1])})? Undo brings them back.",
                icon=":material/person_remove:",
            )
            with st.container(horizontal=True):
                st.button("Yes, remove", key=keys.BOARD_YES, on_click=board_state.remove, args=(code, True))
                st.button("Cancel", key=keys.BOARD_NO, on_click=board_state.remove, args=(code, False))
        if removed is not None and removed.code == code:
            st.button(
                f"Undo: bring {removed.name[:40]} back",
                key=keys.BOARD_UNDO,
                on_click=board_state.undo_remove,
                args=(code,),
                icon=":material/undo:",
            )
        st.button(
            "Close the class…",
            key=keys.BOARD_CLOSE,
            on_click=board_state.manage,
            args=(code, "close"),
            icon=":material/lock:",
            help="Asked first. Nobody can join or hand in any more; the board stays readable; Reopen undoes it.",
        )
        _close_asked(code)
    show_messages("board.manage")


def _close_asked(code: str) -> None:
    """ "Close class … ?" with its two answers, once the teacher pressed Close."""
    if st.session_state.get(board_state.CLOSING) != code:
        return
    st.warning(
        f"Close class {code}? Nobody can join it or hand in any more (a student who solves is told so), "
        "until you reopen it; the board stays readable.",
        icon=":material/lock:",
    )
    with st.container(horizontal=True):
        st.button("Yes, close", key=keys.BOARD_CLOSE_YES, on_click=board_state.close, args=(code, True))
        st.button("Cancel", key=keys.BOARD_CLOSE_NO, on_click=board_state.close, args=(code, False))


def _closed(code: str) -> bool:
    """When class ``code`` is closed: say since when, offer Reopen, and True (the page offers nothing else)."""
    try:
        when = classboard.board().closed_at(code)
    except AttentionError:
        return False
    if when is None:
        return False
    st.info(
        f"Class {code} was closed at {when.astimezone(UTC).strftime('%H:%M')} UTC: nobody can join it or hand in. "
        "Its board stays readable; Reopen lets students join and hand in again.",
        icon=":material/lock:",
    )
    st.button(
        "Reopen the class",
        key=keys.BOARD_REOPEN,
        on_click=board_state.reopen,
        args=(code,),
        icon=":material/lock_open:",
    )
    show_messages("board.manage")
    return True


def _handed(code: str, name: str) -> str:
    """ "2 solves handed in", "no solve handed in": what a removal takes with the student."""
    try:
        n = sum(s.name == name for s in classboard.board().solves(code))
    except AttentionError:
        return "with whatever was handed in"
    return f"{plural(n, 'solve')} handed in" if n else "no solve handed in"


def _rejoin_link(code: str) -> None:
    """The rejoin link last made on this page, for the student it gives back (shown until another is made)."""
    made = st.session_state.get(board_state.REJOIN_LINK)
    if not made or made[0] != code:
        return
    st.caption(
        f"Give this link to {esc(made[1], 40)} alone: it works once, within 12 hours, and puts whoever opens it in "
        "that student's seat (the old membership stops working). A newer rejoin link for the same student ends "
        "this one."
    )
    st.code(made[2], language=None, wrap_lines=True)


def join_box() -> None:
    """On the Challenges page when the board is on: join a class with its code and a display name."""
    if classboard.board() is None:
        return
    who = classboard.member()
    membership.keep_in_cookie()
    joining = membership.join_code()  # a join link: the box starts with its class code
    if joining and (who is None or who.code != joining) and not st.session_state.get(keys.BOARD_CODE):
        bind(keys.BOARD_CODE, joining)
    show_messages("board.join")  # above the box: seen whether it is open or folded
    back = board_state.take_rejoined()
    if back is not None and who is not None:
        st.success(
            f"You are back in class {back[0]} as {esc(back[1], 40)}: this browser keeps it.", icon=":material/login:"
        )
    show_messages("board.handin")
    if who is not None and who.from_cookie:  # a shared computer: the previous student's membership, maybe
        st.warning(
            f"You are {esc(who.name, 40)} in class {who.code} — not you? Leave the class in this browser (the button "
            "below), then join as yourself.",
            icon=":material/warning:",
        )
    label_md = "Class board: join your class" if who is None else f"Class board: you are in class {who.code}"
    opened = who is None or who.from_cookie or (joining is not None and who.code != joining)
    with st.expander(label_md, icon=":material/groups:", expanded=opened):
        if who is not None:
            st.caption(
                f"You are {esc(who.name, 40)} in class {who.code}: every challenge your teacher set that you solve "
                "is handed in, with its link. This browser stays in the class on every page and link of this app."
            )
            st.button(
                "Not you? Leave the class in this browser",
                key=keys.BOARD_LEAVE,
                on_click=board_state.leave,
                icon=":material/logout:",
                help="On a shared computer: the next student joins as themselves. Your solves stay on the board.",
            )
        with st.form(keys.BOARD_JOIN, border=False):
            a, b = st.columns(2)
            a.text_input("Class code", key=keys.BOARD_CODE, max_chars=24, placeholder="K7QX2M")
            b.text_input("Your display name", key=keys.BOARD_NAME, max_chars=40)
            st.form_submit_button("Join", on_click=board_state.join, icon=":material/login:")


def _links(code: str) -> None:
    """The links to hand out: one that joins class ``code``, and one per set challenge that joins it and opens it."""
    base = classboard.app_base()
    with st.expander("Links to hand out: join the class, open a challenge", icon=":material/link:", expanded=True):
        st.caption(f"Joins class {code} (each student types a display name):")
        st.code(full_link(f"challenges?{membership.JOIN}={code}", base), language=None, wrap_lines=True)
        for a in classboard.board().assignments(code):
            st.caption(f"Joins class {code} and opens {quoted(a.title, 120)}:")
            st.code(f"{full_link(a.link, base)}&{membership.JOIN}={code}", language=None, wrap_lines=True)
