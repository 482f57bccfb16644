"""The state's guarded creation, its messages (left and read), and the bookkeeping every change shares."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ..core import parts
from ..core.session import KEY, Session, get


def ensure(initial: Callable[[], tuple[Session, list[str]]]) -> Session:
    """Create the session once, from ``initial()`` (the URL's state and notes on what it could not
    restore), and return it: the one guarded initialiser."""
    if KEY not in st.session_state:
        session, notices = initial()
        st.session_state[KEY] = session
        for i, note in enumerate(notices):
            say(f"page.notice.{i}", "warning", note, anywhere=True)  # ours: url.rebuild's notices quote user text
    return st.session_state[KEY]


def say(place: str, kind: str, text: str, *, anywhere: bool = False) -> None:
    """Leave a message ("success", "info", "warning" or "error") for the page to show at ``place``
    (e.g. ``"edit.X"``, ``"import.W_q"``, ``"sidebar.preset"``) until the state next changes, on the page it was
    left on only (``anywhere``: on every page, for what the address could not restore). One slot per place; an
    error replaces every other error (it answers the latest refusal, and the values refused before it were all put
    back), and :func:`unsay` takes it away once its input is valid.
    ``text`` is Markdown: user text in it must go through :mod:`attention.ui.core.text`."""
    s = get()
    if kind == "error":
        for other in [p for p, m in s.messages.items() if m[1] == "error"]:
            del s.messages[other]
    s.messages[place] = (s.epoch, kind, text, "*" if anywhere else page_id())


def page_id() -> str:
    """Which page this run draws (its script's hash; a widget's callback runs in the run of the page it is on)."""
    ctx = get_script_run_ctx()
    return "" if ctx is None else ctx.page_script_hash


def messages(prefix: str) -> list[tuple[str, str]]:
    """(kind, text) of the messages still current at places starting with ``prefix`` and left on this page, oldest
    first. A message belongs to the input that caused it and to the page it was left on."""
    s, page = get(), page_id()
    return [
        (kind, text)
        for place, (epoch, kind, text, where) in s.messages.items()
        if place.startswith(prefix) and epoch == s.epoch and where in (page, "*")
    ]


def unsay(place: str, kind: str = "error") -> None:
    """Take away the ``kind`` message at ``place`` (its input now holds a valid value)."""
    s = get()
    if place in s.messages and s.messages[place][1] == kind:
        del s.messages[place]


def touch(s: Session) -> None:
    """Record that the state changed (older messages and held imports no longer apply)."""
    s.epoch += 1
    s.messages.clear()
    s.held.clear()


def arrived_whole(how: str) -> None:
    """Mark the running challenge's numbers as arrived whole (``how``: "trained weights", "an imported matrix"...),
    not reached by the learner's own edits: from now until Start or Restart, a solve is not handed in."""
    s = get()
    if s.challenge is not None and not s.arrived:
        s.arrived = how


def replace_session(new: Session, keep_grids: bool = False) -> None:
    """A new state, keeping what the fields' declarations say survives a preset change (:func:`parts.carry`: the
    pin, the display digits and open tabs, the explained cell while it fits, the Learn page's settings and its last
    run while the tokens are the same...). The version moves, unless ``keep_grids`` and the new matrices have the old
    ones' shapes (another head of the same model): then ``sheet`` moves instead, so an edit typed over the numbers
    before is refused either way, and the grids stay mounted with only their numbers changed."""
    old = get()
    same = keep_grids and new.shapes() == old.shapes()
    parts.carry(old, new)
    new.version, new.epoch = old.version + (0 if same else 1), old.epoch + 1
    new.grids, new.sheet, new.edit_echo = old.grids, old.sheet + 1, dict(old.edit_echo)
    st.session_state[KEY] = new
    if old.challenge is not None:  # another preset ends the challenge (a challenge is played on its own preset)
        say("page.notice.challenge", "info", "The challenge stopped: another preset was loaded.")


def drew(s: Session, **fingerprints: object) -> None:
    """Record what a run drew (the Session's ``drawn``, ``body_drawn`` and ``whole_run``): the frame compares them
    with the state in its fragments, to tell a change that reached beyond a fragment. Bookkeeping: no epoch moves."""
    for name, value in fingerprints.items():
        if name not in ("drawn", "body_drawn", "whole_run"):
            raise ValueError(f"{name!r} is not a fingerprint of what was drawn")
        setattr(s, name, value)
