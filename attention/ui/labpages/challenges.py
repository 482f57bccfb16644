"""The "Challenges" page: choose one (built-in, link or file), start it, edit, and watch the goal checked live."""

from __future__ import annotations

import hashlib

import streamlit as st

from ...errors import AttentionError
from ...io.presets import preset_label
from ...labs import challenges as ch
from ...labs.solutions import solvable
from ...trace import Trace
from ..core import classboard, compute, keys, session
from ..core.cache import kept
from ..core.settings import server_settings
from ..core.text import esc, quoted
from ..inputs import editors
from ..state import board as board_state
from ..state import challenges as state_challenges
from ..state.challenges import BEFORE
from ..views.steps import show_error, show_heatmap, show_matrix
from ..widgets.common import show_messages
from . import board, challenge_form

SAID = {"x_w": "X·W", "x_wt": "X·Wᵀ"}  # option values in the learner's words
MAX_UPLOAD = ch.MAX_BYTES


@kept(1)
def builtins() -> dict[str, ch.Challenge]:
    return {cid: ch.load_challenge(cid) for cid in ch.list_challenges()}


@kept(64)
def from_link(token: str) -> ch.Challenge | AttentionError:
    try:
        return ch.decode_link(token)
    except AttentionError as exc:
        return exc


@kept(64, key=lambda data, name: (hashlib.sha256(data).hexdigest(), name))
def from_file(data: bytes, name: str) -> ch.Challenge | AttentionError:
    try:
        return ch.parse_challenge(data, name)
    except AttentionError as exc:
        return exc


def body(s: session.Session) -> None:
    if not server_settings().hide_authoring:  # the intro's last sentence, only where the form is drawn
        st.markdown("Teachers can write their own at the bottom of the page and share it as a link or a file.")
    board.join_box()
    show_messages("challenge.start")
    if s.challenge is not None:
        _playing(s, s.challenge)
        with st.expander("Choose another challenge"):
            _chooser()
    else:
        _chooser()
    if not server_settings().hide_authoring:
        challenge_form.draw(s)


def _chooser() -> None:
    """A challenge from this page's address, a built-in, or one from a file, each with its Start button. A link or
    file that does not read is named in an error; nothing changes."""
    token = session.get().offered  # the address's challenge= (address.params.BAR)
    if token:
        got = from_link(token)
        if isinstance(got, AttentionError):
            st.error(
                f"The challenge in this page's address cannot be used: {esc(_clause(got.message), 500)}. "
                "Nothing changed."
            )
        else:
            _offer(got, "link", "The challenge in this page's address")
    table = builtins()
    cid = st.selectbox("A built-in challenge", list(table), format_func=lambda k: table[k].title, key=keys.CH_CHOICE)
    if cid is not None:
        _offer(table[cid], "builtin", None)
    upload = st.file_uploader("…or open a challenge file (.json)", type=["json"], key=keys.CH_UPLOAD)
    if upload is not None:
        data = upload.getvalue()
        got = (
            AttentionError(f"{upload.name}: the file is larger than {MAX_UPLOAD // 1024} KB")
            if len(data) > MAX_UPLOAD
            else from_file(data, upload.name)
        )
        if isinstance(got, AttentionError):
            st.error(f"That challenge file cannot be used: {esc(_clause(got.message), 500)}. Nothing changed.")
        else:
            _offer(got, "file", "The challenge in the file")


def _offer(c: ch.Challenge, where: str, heading: str | None) -> None:
    with st.container(border=True):
        if heading:
            st.caption(heading)  # ours
        _describe(c)
        st.button(
            "Start",
            type="primary",
            key=keys.ch_start(where),
            on_click=state_challenges.start_challenge,
            args=(c,),
            icon=":material/flag:",
        )
        handing = (
            "once you joined your class, a solve you reach by your own edits is handed in as it happens (a link "
            "shows numbers, it hands nothing in)"
            if classboard.board() is not None
            else "your link opens your numbers, solved or not, for whoever you send it to"
        )
        st.caption(
            'Start replaces the numbers on every page with the challenge\'s own; "Back to my numbers from before" '
            f"brings yours back. While it runs, the address carries it: a reload keeps it, and {handing}."
        )


def _describe(c: ch.Challenge) -> None:
    st.markdown(f"## {esc(c.title, 200)}")
    st.markdown(esc(c.goal, 2000))
    opts = ", ".join(f"{k} = {esc(SAID.get(v, v) if isinstance(v, str) else v, 60)}" for k, v in c.options.items())
    seed = f", seed {c.seed}" if c.seed is not None else ""
    st.caption(
        f"On the preset {quoted(preset_label(c.preset))}{seed}"
        + (f" with {opts}" if opts else "")
        + f". You may edit: **{', '.join(c.editable)}**; every other matrix is locked."
    )


def _playing(s: session.Session, c: ch.Challenge) -> None:
    st.markdown(f"## Playing: {esc(c.title, 200)}")
    st.markdown(esc(c.goal, 2000))
    trace = compute.current_trace(s)
    if not isinstance(trace, Trace):
        show_error(trace)
    else:
        _progress(ch.evaluate(c, trace))
    if s.arrived and classboard.board() is not None:  # says why a solve from here is not handed in
        st.info(f"Not your own work for the class board: {board_state.not_own(s.arrived)}", icon=":material/info:")
    with st.container(horizontal=True):
        st.button(
            "Restart",
            key=keys.CH_RESTART,
            on_click=state_challenges.start_challenge,
            args=(c,),
            icon=":material/replay:",
        )
        st.button(
            "Stop the challenge",
            key=keys.CH_STOP,
            on_click=state_challenges.stop_challenge,
            icon=":material/stop_circle:",
        )
        if BEFORE in st.session_state:
            st.button(
                "Back to my numbers from before",
                key=keys.CH_BACK,
                on_click=state_challenges.back_to_before,
                icon=":material/undo:",
                help="Stops the challenge and brings back the numbers, options and sentence you had before Start.",
            )
        if solvable(c) and not server_settings().hide_solutions:
            st.button(
                "Show a solution",
                key=keys.CH_SOLVE,
                on_click=state_challenges.show_solution,
                icon=":material/auto_fix_high:",
                help="Trains only the matrices you may edit until the goal is met; replaces your edits.",
            )
    show_messages("challenge.solution")
    if c.hint:
        with st.expander("Show the hint", icon=":material/lightbulb:"):
            st.markdown(esc(c.hint, 2000))
    locked = [m for m in ("X", "W_q", "W_k", "W_v") if m not in c.editable]
    st.caption(f"You may edit **{', '.join(c.editable)}** (here or on any page); locked: {', '.join(locked)}.")
    cols = st.columns(2) if len(c.editable) > 1 else [st.container()]
    for i, name in enumerate(c.editable):
        with cols[i % len(cols)]:
            editors.matrix_editor(name, s)
    if isinstance(trace, Trace):
        _show_array(s, trace, c.condition.array)


def _progress(p: ch.Progress) -> None:
    if p.blocked:
        st.warning(
            f"This state does not count: {esc(_clause(p.blocked), 500)}. Press Restart to begin again.",
            icon=":material/block:",
        )
        return
    rows = f" ({p.rows_met} of {p.rows_total} rows)" if p.rows_total > 1 else ""
    if p.met:
        st.success(f"✓ Goal met{rows}: {esc(p.description, 500)}")
    else:
        st.info(f"Not yet{rows}: {esc(p.description, 500)}", icon=":material/pending:")


def _show_array(s: session.Session, trace: Trace, name: str) -> None:
    """The array the goal reads, as the step pages show it."""
    if name in ("scores", "scaled", "weights"):
        show_heatmap(name, s, trace, "challenges")
    else:
        show_matrix(name, s, trace, compute.base_trace(s), "challenges")


def _clause(text: str) -> str:
    """A message to be followed by a sentence of ours: without its own closing full stop (no "..")."""
    return text.rstrip().rstrip(".")
