"""This browser's class membership: kept by the browser in a cookie, never in the address.

A student joins with her class code and a display name; the board gives her browser a secret token, and the page
keeps ``CODE.TOKEN`` in a cookie of this site (a one-line script writes it: Streamlit itself sets no cookie; the
server reads the request's cookies, ``st.context.cookies``). Every page and link of this app opened in that browser
finds her membership there. An address is shared, bookmarked and projected, so it never says who you are: opening a
classmate's address gives her numbers at most, never her seat. An address that still carries ``member=`` or ``own=``
(an older version's) is not honoured: the page says so and drops them.

A membership found in the cookie is never silent: the Challenges page says "You are NAME in class CODE — not you?"
with the button to leave, since on a lab's shared computer the cookie may be the previous student's. The cookie
lasts COOKIE_HOURS and is marked secure when the page is served over https. A cookie that no longer checks out (the
teacher took her out, another board) is ignored without a word.

A student who lost her membership (a new browser, a cleared cookie) gets back in through her teacher: the board page
gives a rejoin link per student (``rejoin=CODE.TICKET``), used once; it gives her a new token (the old one stops
working) and leaves the address bar at once.

A running challenge's numbers hand in only when this browser reached them by its own edits since the challenge
started (``Session.arrived`` is ""). So that a reload, or a replica taking over, keeps that, the board keeps a hash of
each state she reached by her own edits (:meth:`attention.io.board.Board.keep_own`): the address she reloads counts as
her own work only when its shared parameters hash to one of hers. A classmate's address, a link edited by hand or a
paste of ``playing=`` onto other numbers arrive as "a link", which does not hand in.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Mapping

import streamlit as st

from ...errors import AttentionError
from ...io.board import Board, normal_code
from ..core import classboard
from ..core.classboard import Member
from ..core.session import Session
from ..state import board as state_board

STALE = ("member", "own")  # what an older version's address carried: never honoured, dropped from the address bar
CLASS = "class"  # the class a hand-in link was handed in to: its page says whether its challenge is set there
JOIN = "join"  # a join link's class code: the Challenges page's join box starts with it
REJOIN = "rejoin"  # a teacher's one-use rejoin link: CODE.TICKET
LIMIT = 100  # "K7QX2M." and a 32-character token or ticket


def restore(qp: Mapping[str, str], s: Session) -> list[str]:
    """Rejoin the class this browser's cookie keeps (into ``s``, the state built from the address), or the one a
    teacher's rejoin link gives back; notices for what the address carried and was not honoured."""
    named = qp.get(CLASS)
    if isinstance(named, str) and named:
        with contextlib.suppress(AttentionError):  # a code that does not read names no class
            state_board.name_class(normal_code(named))
    board = classboard.board()
    if board is None or s.member is not None:
        return []
    notices = []
    if any(qp.get(k) for k in STALE):
        notices.append(
            "This address carries a class membership from an older link (member= or own=). An address never says "
            "who you are, so it was ignored: your browser keeps your class, or join it on the Challenges page."
        )
    ticket = qp.get(REJOIN)
    if isinstance(ticket, str) and ticket:
        notices += _rejoin(board, ticket, s)
    value = classboard.cookie_member()
    if value and s.member is None:
        _check(board, value, s)
    return notices


def _rejoin(board: Board, value: str, s: Session) -> list[str]:
    """Use a teacher's rejoin link: this browser is its student again, with a new token (the old one stops)."""
    code, _, ticket = value[:LIMIT].partition(".")
    try:
        token, name = board.redeem(code, ticket)
        code = normal_code(code)
    except AttentionError as exc:
        return [exc.message]
    state_board.rejoined(s, Member(code, name, token))
    return []


def _check(board: Board, value: str, s: Session) -> None:
    """Rejoin as the cookie's ``value`` (class code and token) if the board knows it; quietly nothing otherwise."""
    if len(value) > LIMIT or "." not in value:
        return
    code, token = value.split(".", 1)
    try:
        _, name = board.student(code, token)
        code = normal_code(code)
    except AttentionError:
        return
    state_board.rejoin(s, Member(code, name, token, True))


SAFE = re.compile(r"[A-Z0-9]{6}\.[A-Za-z0-9_-]{20,64}")  # a code and a token: nothing a script could misread


def write(own: Mapping[str, str] | None = None) -> None:
    """Drop from the address bar what never belongs there (an older membership, a used rejoin link), and keep on the
    board that ``own`` (the shared parameters of a running challenge's state reached by this session's own edits;
    None: no such state) is this student's own work."""
    for name in (*STALE, REJOIN):
        if name in st.query_params:
            del st.query_params[name]
    board, who = classboard.board(), classboard.member()
    if own is None or board is None or who is None:
        return
    mark = own_mark(own)
    if state_board.mark_kept(who.token, mark):
        return
    try:
        board.keep_own(who.code, who.token, mark)
    except AttentionError:  # the database, just now: tried again on the next run
        state_board.mark_lost()


def join_code() -> str | None:
    """The class code a join link carries, when it reads as one, or None."""
    value = st.query_params.get(JOIN)
    if not isinstance(value, str) or not value:
        return None
    try:
        return normal_code(value)
    except AttentionError:
        return None


def own_mark(query: Mapping[str, str]) -> str:
    """A hash of ``query`` (a state's shared parameters): what the board keeps of a state reached by own edits."""
    text = "&".join(f"{k}={v}" for k, v in sorted(query.items()))
    return hashlib.sha256(f"own:{text}".encode()).hexdigest()


def owns(qp: Mapping[str, str], shared: tuple[str, ...], who: Member | None) -> bool:
    """Whether student ``who`` reached the state of the address's ``shared`` parameters by her own edits."""
    board = classboard.board()
    if board is None or who is None:
        return False
    try:
        return board.is_own(who.code, who.token, own_mark({k: v for k, v in qp.items() if k in shared}))
    except AttentionError:
        return False


def keep_in_cookie() -> None:
    """Write this browser's membership to its cookie when the request did not carry it (after she joined), or clear
    it once she left. It lasts COOKIE_HOURS (a lab session), and closing the browser forgets it too."""
    who = classboard.member()
    if who is None:
        if st.session_state.get(classboard.FORGET):
            script(cookie_text("", classboard.https()))
        return
    value = f"{who.code}.{who.token}"
    if classboard.cookie_member() == value or not SAFE.fullmatch(value):
        return
    script(cookie_text(value, classboard.https()))


def cookie_text(value: str, secure: bool, name: str = classboard.COOKIE, hours: int = classboard.COOKIE_HOURS) -> str:
    """The ``document.cookie`` text that keeps ``value`` as ``name`` for ``hours`` (an empty value clears it)."""
    age = hours * 3600 if value else 0
    return f"{name}={value}; path=/; max-age={age}; samesite=lax" + ("; secure" if secure else "")


def script(cookie: str) -> None:
    """Set ``cookie`` (a :func:`cookie_text`) in this browser."""
    st.html(f'<script>document.cookie = "{cookie}";</script>', unsafe_allow_javascript=True, width=1)
