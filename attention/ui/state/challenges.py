"""Changes for the labs: start and stop a challenge, refuse edits of the matrices it locks, the overview's tour."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import streamlit as st

from ...errors import AttentionError
from ...labs.challenges import Challenge, challenge_preset, locked_edit
from ...labs.solutions import solve
from ..core.session import Session, get, new_session
from ..core.settings import server_settings
from ..core.text import esc, quoted
from .core import replace_session, say, touch
from .pins import renew_grids

BEFORE = "challenge.before"  # session_state key: the session a challenge replaced, until the learner goes back


def keep_before(before: Session) -> None:
    """Keep ``before`` as the numbers the running challenge replaced (read back from the address after a reload)."""
    st.session_state[BEFORE] = before


def start_challenge(challenge: Challenge) -> bool:
    """Load the challenge's preset (its seed, its options with the challenge's overrides) and make it the active
    challenge: from now on an edit of a matrix it locks is refused. Changes nothing if the preset cannot load."""
    try:
        preset = challenge_preset(challenge)
        fresh = new_session(challenge.preset, challenge.seed, get().blank_shape)
    except AttentionError as exc:
        say("challenge.start", "error", f"The challenge could not start: {esc(exc.message, 500)}. Nothing changed.")
        return False
    fresh.options = preset.options
    if preset.options.kv != preset.options.heads:  # grouped key/value heads: the challenge's regrouped W_k, W_v
        start = preset.matrices()
        fresh.matrices.update({k: np.array(start[k], dtype=np.float64) for k in ("W_k", "W_v")})
    before = get()
    if before.challenge is None:  # what the learner had: kept so that she can go back to it
        st.session_state[BEFORE] = before
    before.challenge = None  # a restart or another challenge: no "stopped" notice
    replace_session(fresh)
    s = get()
    s.challenge = challenge
    say("challenge.start", "success", f"Challenge {quoted(challenge.title)} started on its own preset.")
    return True


def show_solution() -> None:
    """Restart the active challenge and put in the editable matrices that training found to meet it (the learner's
    own edits are replaced); says how it was found, or that training found none (then nothing changes)."""
    s = get()
    challenge = s.challenge
    if challenge is None:
        return
    if server_settings().hide_solutions:  # the button is not drawn then; a forged click changes nothing either
        say("challenge.solution", "info", "Solutions are turned off on this server.")
        return
    found = solve(challenge)
    if found is None:
        say("challenge.solution", "info", "Training the editable matrices did not meet this goal; nothing changed.")
        return
    if not start_challenge(challenge):  # its preset did not load: the learner's numbers stay as they are
        return
    s = get()
    for name, value in found.matrices.items():
        s.matrices[name] = np.array(value, dtype=np.float64).reshape(s.matrices[name].shape)
    s.arrived = "the solution shown"
    s.version += 1
    touch(s)
    names = " and ".join(found.matrices)
    say(
        "challenge.solution",
        "info",
        f"A solution: {names} after {found.steps} steps of gradient descent (Adam, learning rate {found.lr:g}) "
        "from the challenge's start, learning only what you may edit. Your edits were replaced; press Restart to "
        "try again yourself.",
    )


def back_to_before() -> None:
    """Stop the challenge and bring back the numbers, options and sentence the learner had before starting it."""
    before = st.session_state.pop(BEFORE, None)
    if before is None:
        return
    title = get().challenge.title if get().challenge is not None else "the challenge"
    get().challenge = None
    replace_session(before)
    say("challenge.start", "info", f"Back to your numbers from before {quoted(title)}; every matrix may be edited.")


def stop_challenge() -> None:
    """End the active challenge: every matrix may be edited again; the numbers stay as they are."""
    s = get()
    if s.challenge is None:
        return
    title = s.challenge.title
    s.challenge = None
    touch(s)
    say("challenge.start", "info", f"Challenge {quoted(title)} stopped; every matrix may be edited again.")


def refuse_any_locked(names: Iterable[str], place: str) -> bool:
    """True (after a message at ``place``) when a change would alter any of ``names`` and the challenge locks one:
    a size, a projection, new embeddings or learned weights change a locked matrix as surely as a typed cell."""
    return any(refuse_locked(name, place) for name in names)


def refused_while_playing(place: str) -> bool:
    """True (after a message at ``place``) when this server hides solutions and a challenge runs: training, or
    using trained weights, would reach its goal for the learner (the lab setting hide_solutions covers it)."""
    s = get()
    if s.challenge is None or not server_settings().hide_solutions:
        return False
    say(
        place,
        "error",
        f"Training is off while the challenge {quoted(s.challenge.title, 120)} runs: this server hides solutions, "
        "and training toward its goal would solve it for you. Stop the challenge on the Challenges page to train. "
        "Nothing was changed.",
    )
    return True


def refuse_locked(name: str, place: str) -> bool:
    """True (after leaving a message at ``place`` naming the matrix) when the active challenge locks ``name``."""
    s = get()
    message = locked_edit(s.challenge, name) if s.challenge is not None else None
    if message is None:
        return False
    renew_grids()  # the refused value must not stay in the grid's widget
    say(place, "error", f"Refused: {esc(message)} Nothing was changed.")
    return True


def set_tour(dismissed: bool) -> None:
    """Put the overview's "Start here" away, or bring it back."""
    s = get()
    s.tour_dismissed = bool(dismissed)


def set_form(kind: str | None = None, hint_cleared: bool | None = None) -> None:
    """The challenge form's own record: the condition type its fields were last filled for, and whether the
    example's hint was taken out of it."""
    s = get()
    s.form_kind = s.form_kind if kind is None else kind
    s.form_hint_cleared = s.form_hint_cleared if hint_cleared is None else bool(hint_cleared)
