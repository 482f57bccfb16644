"""This browser's class membership in its own address bar, so a reload keeps the student in her class.

Written to the address bar only: the link a student shares or hands in (:func:`attention.ui.address.url.link`)
leaves it out, and the deployment's nginx log leaves query strings out. Whoever has a student's address bar can
hand in as her: a student shares the Copy-link box's link, not the address bar. The value is the class code and
her secret token; it is checked against the class board before it counts, and a value that does not check out is
ignored with a notice.

The same value is kept in a cookie of this site when she joins, so that any other link of this app opened in the
same browser (the teacher's challenge link, a bookmark) finds her membership again: Streamlit reads the request's
cookies on the server (``st.context.cookies``), and a one-line script writes it (Streamlit itself sets no cookie).
A cookie that no longer checks out (the teacher took her out, another board) is ignored without a word. A
membership found in the cookie is never silent: the Challenges page says "You are NAME in class CODE — not you?"
with the button to leave, since on a lab's shared computer the cookie may be the previous student's. The cookie
lasts COOKIE_HOURS and is marked secure when the page is served over https.

A running challenge's numbers hand in only when this browser reached them by its own edits since the challenge
started (``Session.arrived`` is ""). So that a reload, or a replica taking over, keeps that, the address bar carries
``own``: a signature, by the board's secret, over the student's token and the state's shared parameters. A shared
link leaves it out, and it checks out only for the same student and the very same numbers: a classmate's link, a
link edited by hand or a paste of ``playing=`` onto other numbers arrive as "a link", which does not hand in.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import re
from collections.abc import Mapping

import streamlit as st

from ...errors import AttentionError
from ...io.board import Board, normal_code
from ..core import classboard
from ..core.classboard import Member
from ..core.session import Session
from ..state import board as state_board

PARAM = "member"
CLASS = "class"  # the class a hand-in link was handed in to: its page says whether its challenge is set there
JOIN = "join"  # a join link's class code: the Challenges page's join box starts with it
OWN = "own"  # the address bar's mark that its running challenge's numbers are this student's own work
LIMIT = 100  # "K7QX2M." and a 32-character token


def param() -> dict[str, str]:
    """The address bar's part for this browser's membership (none when it has not joined a class)."""
    who = classboard.member()
    return {PARAM: f"{who.code}.{who.token}"} if who is not None else {}


def restore(qp: Mapping[str, str], s: Session) -> list[str]:
    """Rejoin the class the address names (into ``s``, the state built from the address), if the board knows this
    token in that class; notices otherwise."""
    named = qp.get(CLASS)
    if isinstance(named, str) and named:
        with contextlib.suppress(AttentionError):  # a code that does not read names no class
            state_board.name_class(normal_code(named))
    value, quiet = qp.get(PARAM), False
    if not value:
        value, quiet = classboard.cookie_member(), True
    if not value or s.member is not None:
        return []
    board = classboard.board()
    if board is None:
        return []
    notices = _check(board, value, s, from_cookie=quiet)
    return [] if quiet else notices


def _check(board: Board, value: str, s: Session, from_cookie: bool = False) -> list[str]:
    """Rejoin as ``value`` (class code and token) if the board knows it; notices otherwise."""
    if len(value) > LIMIT or "." not in value:
        return ["The address's class membership does not read; join your class again on the Challenges page."]
    code, token = value.split(".", 1)
    try:
        _, name = board.student(code, token)
        code = normal_code(code)
    except AttentionError:
        return ["The address's class membership is not known to this class board; join your class again."]
    state_board.rejoin(s, Member(code, name, token, from_cookie))
    return []


SAFE = re.compile(r"[A-Z0-9]{6}\.[A-Za-z0-9_-]{20,64}")  # a code and a token: nothing a script could misread


def write(own: Mapping[str, str] | None = None) -> None:
    """Keep the address bar's membership in step with this browser's, and its ``own`` mark with ``own``: the shared
    parameters of a running challenge's state reached by this session's own edits (None: no such state)."""
    for name, want in ((PARAM, param().get(PARAM)), (OWN, own_mark(own) if own is not None else None)):
        if want is not None and st.query_params.get(name) != want:
            st.query_params[name] = want
        elif want is None and name in st.query_params:
            del st.query_params[name]


def join_code() -> str | None:
    """The class code a join link carries, when it reads as one, or None."""
    value = st.query_params.get(JOIN)
    if not isinstance(value, str) or not value:
        return None
    try:
        return normal_code(value)
    except AttentionError:
        return None


def own_mark(query: Mapping[str, str], who: Member | None = None) -> str | None:
    """The signature that marks ``query`` (a state's shared parameters) as this student's own work (``who``: the
    student, else this browser's membership), or None when this browser is in no class or the board cannot sign now."""
    board, who = classboard.board(), who or classboard.member()
    if board is None or who is None:
        return None
    text = "&".join(f"{k}={v}" for k, v in sorted(query.items()))
    try:
        key = board.secret()
    except AttentionError:
        return None
    return hmac.new(key, f"own:{who.code}:{who.token}:{text}".encode(), hashlib.sha256).hexdigest()[:32]


def owns(qp: Mapping[str, str], shared: tuple[str, ...], who: Member | None) -> bool:
    """Whether the address's ``own`` mark checks out for student ``who`` and the ``shared`` parameters it carries."""
    mark = qp.get(OWN)
    if not isinstance(mark, str) or len(mark) != 32:
        return False
    want = own_mark({k: v for k, v in qp.items() if k in shared}, who)
    return want is not None and hmac.compare_digest(mark.encode(), want.encode())


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
