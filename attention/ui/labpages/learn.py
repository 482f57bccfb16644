"""The Learn page: choose a target pattern and what learns, train with a moving progress bar, use the weights."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import streamlit as st

from ... import learn
from ...errors import AttentionError
from ...labs.challenges import locked_edit
from ..address import url
from ..core import compute, keys, session
from ..core.learned import LR_RANGE, MAX_STEPS, OPTIMISERS, TARGETS, Learned, LearnSettings, learnable
from ..core.text import esc, quoted
from ..state import challenges as state_challenges
from ..state import core as state_core
from ..state import learning as state_learning
from ..state import pins
from ..state.challenges import refused_while_playing
from ..widgets.common import chart_gap, checked_number, show_messages
from ..widgets.tick_grid import tick_grid, ticked
from . import learnviews

SETTING_NAMES = {"lr": "Learning rate", "steps": "Steps", "seed": "Seed", "target": "Target", "learn": "What learns"}
NUMBERS = {  # setting: (label, low, high, whole number?)
    "lr": ("Learning rate", *LR_RANGE, False),
    "steps": ("Steps", 1, MAX_STEPS, True),
    "seed": ("Seed", 0, 2**32 - 1, True),
}
SNAPSHOTS = 20
REDRAW_SECONDS = 0.15  # the progress bar and live loss curve are redrawn at most this often


def _key(s: session.Session, name: str) -> str:
    """A widget's key; renewed (``s.grids``) after a refused value, so the widget shows the kept value again."""
    return keys.learn_setting(name, s.grids)


def body(s: session.Session) -> None:
    """Settings, the Train button (training runs in this script run, so its progress bar can move), the result."""
    settings_panel(s)
    _challenge_trap(s)
    clicked = st.button("Train", type="primary", key=keys.LEARN_TRAIN, icon=":material/model_training:")
    show_messages("learn.train")
    if clicked:
        train(s)
    learnviews.result(s)


def _challenge_trap(s: session.Session) -> None:
    """Said before training while a challenge runs: training starts from the challenge's numbers, and what it would
    change of a locked matrix cannot be used (Use these weights is refused), with the button that stops it."""
    if s.challenge is None:
        return
    locked = [k for k in s.learn.learn if k in s.matrices and locked_edit(s.challenge, k) is not None]
    if not locked:
        return
    st.warning(
        f"The challenge {quoted(s.challenge.title, 120)} is running: training starts from its numbers, and "
        f"{' and '.join(locked)} {'is' if len(locked) == 1 else 'are'} locked while it runs, so *Use these weights* "
        "would be refused. Stop the challenge first to use what you train (your numbers stay as they are).",
        icon=":material/lock:",
    )
    st.button(
        "Stop the challenge",
        key=keys.LEARN_STOP_CHALLENGE,
        on_click=state_challenges.stop_challenge,
        icon=":material/stop_circle:",
    )


# ------------------------------------------------------------------------------------------ settings


def settings_panel(s: session.Session) -> None:
    cfg, n = s.learn, len(s.tokens)
    left, right = st.columns([3, 2], gap="medium")
    with left:
        _choice(s, "target", "Target: what each query (row) should attend", TARGETS)
        if cfg.target == "token":
            st.selectbox(
                "Token j that every row attends",
                list(range(n)),
                index=min(cfg.j, n - 1),
                format_func=lambda j: f"{j + 1}: {s.labels[j]}",
                key=_key(s, "j"),
                on_change=_on_pick,
                args=("j", _key(s, "j")),
            )
        if cfg.target == "custom":
            painted_grid(s)
        show_messages("learn.target")
        st.markdown("**What learns**")
        offered = list(learnable(s.matrices, s.options))
        for col, name in zip(st.columns(len(offered)), offered, strict=True):
            key = _key(s, f"learns.{name}")
            col.checkbox(name, value=name in cfg.learn, key=key, on_change=_on_learns, args=(name, key))
        if learn.GAINS[0] in offered or learn.GAINS[1] in offered:
            st.caption("q_norm and k_norm are QK-norm's gains (the Q·K·V page's norm step): they learn like a matrix.")
        after = [k for k in ("W_v", "W_o") if k in offered]
        if after and cfg.learn and set(cfg.learn) <= set(after):
            st.caption(
                f"The target is a pattern of attention weights, and {' and '.join(after)} come after the weights: "
                "learning only them cannot move the loss. Tick X, W_q or W_k too."
            )
        show_messages("learn.learn")
    with right:
        _choice(s, "optimiser", "Optimiser", OPTIMISERS)
        c1, c2, c3 = st.columns(3)
        for col, name in zip((c1, c2, c3), NUMBERS, strict=True):
            setting, lo, hi, whole = NUMBERS[name]
            key = _key(s, name)
            col.number_input(
                setting,
                value=int(getattr(cfg, name)) if whole else float(getattr(cfg, name)),
                step=1 if whole else None,
                format=None if whole else "%g",
                key=key,
                on_change=_on_number,
                args=(name, key),
                help=f"{lo:g} to {hi:g}",
            )
        for name in NUMBERS:
            show_messages(f"learn.{name}")


def _on_number(name: str, key: str) -> None:
    """A number box's callback: apply the value if it is in range, else name the setting and keep the old value."""
    setting, lo, hi, whole = NUMBERS[name]
    current = getattr(session.get().learn, name)
    value = checked_number(
        key, setting, lo, hi, f"learn.{name}", f"it stays {current:g}", whole=whole, span=f"{lo:g} to {hi:g}"
    )
    if value is None:
        pins.renew_grids()
        return
    state_learning.set_learn(**{name: int(value) if whole else float(value)})


def _choice(s: session.Session, name: str, label: str, choices: dict[str, str]) -> None:
    """A select box for the setting ``name``: one of ``choices`` (value: what it is called), the session's chosen."""
    key = _key(s, name)
    options = list(choices)
    st.selectbox(  # ours: the label and choices are this page's own words
        label,
        options,
        index=options.index(getattr(s.learn, name)),
        format_func=choices.get,
        key=key,
        on_change=_on_pick,
        args=(name, key),
    )


def _on_pick(name: str, key: str) -> None:
    """A choice from a list (target, j, optimiser): every option is valid, so it is applied as it is."""
    state_learning.set_learn(**{name: st.session_state[key]})


def _on_learns(name: str, key: str) -> None:
    cfg = session.get().learn
    ticked = {k for k in cfg.learn if k != name} | ({name} if st.session_state[key] else set())
    chosen = tuple(k for k in learn.LEARNABLE if k in ticked)
    if not chosen:
        state_core.say("learn.learn", "error", "What learns: choose at least one matrix; the last one stays ticked.")
        pins.renew_grids()
        return
    state_learning.set_learn(learn=chosen)


def grid_of(s: session.Session) -> tuple[tuple[bool, ...], ...]:
    """The painted target grid (query × key), or the identity until one is painted for these tokens."""
    n = len(s.tokens)
    return s.learn.grid if len(s.learn.grid) == n else tuple(tuple(i == j for j in range(n)) for i in range(n))


def painted_grid(s: session.Session) -> None:
    """A query × key grid of checkboxes: tick the keys each row should attend (each row is normalised to sum 1)."""
    labels = s.labels
    key = _key(s, f"grid.{len(labels)}")
    tick_grid(grid_of(s), labels, key, _on_grid)
    st.caption("Tick the keys (columns) each query (row) should attend; a row's ticked keys share its weight equally.")


def _on_grid(key: str) -> None:
    s = session.get()
    labels = s.labels
    grid, sent = ticked(key, labels, grid_of(s))
    if grid is None:
        state_core.say("learn.target", "error", f"The target grid sent {sent}; nothing changed.")
        pins.renew_grids()
        return
    empty = [i for i, row in enumerate(grid) if not any(row)]
    if empty:
        i = empty[0]
        state_core.say(
            "learn.target",
            "error",
            f"Target grid: row {i + 1} ({quoted(labels[i])}) would attend nothing; every row needs at least one "
            "ticked key. The grid was not changed.",
        )
        pins.renew_grids()
        return
    state_learning.set_learn(grid=grid)


# ------------------------------------------------------------------------------------------ training


def target_of(s: session.Session, cfg: LearnSettings) -> object:
    """The ``target`` argument of :func:`attention.learn.train` for these settings."""
    return np.array(grid_of(s), dtype=float) if cfg.target == "custom" else cfg.target


NOTHING_CHANGED = "Nothing was changed: the matrices are exactly as they were."


def _refused(bar: Any, live: Any) -> None:
    """A run that stopped or made things worse: the progress and the live curve go, and the message said under
    ``learn.train`` (with :data:`NOTHING_CHANGED`) shows where the eye is."""
    bar.empty()
    live.empty()
    show_messages("learn.train")


def train(s: session.Session) -> None:
    """Run :func:`attention.learn.train` on the session's matrices with a moving progress bar and a live loss curve;
    keep the result (a state function), or name the setting that stopped it (the matrices are never changed)."""
    if refused_while_playing("learn.train"):
        show_messages("learn.train")
        return
    cfg = s.learn
    learned = tuple(k for k in cfg.learn if k in learnable(s.matrices, s.options))
    start = compute.content_key(s.tokens, s.matrices, s.options)
    bar = st.progress(0.0, text="Starting…")
    chart_gap()
    live = st.empty()
    losses: list[float] = []
    last = [-math.inf]

    def on_step(step: int, loss: float) -> None:
        losses.append(loss)
        now = time.perf_counter()
        if step == cfg.steps or now - last[0] >= REDRAW_SECONDS:
            last[0] = now
            bar.progress(step / cfg.steps, text=f"Step {step:,} of {cfg.steps:,} · loss {loss:.4g}")
            live.altair_chart(
                learnviews.loss_chart(np.array(losses), cfg.steps), width="stretch", height=learnviews.LOSS_HEIGHT
            )

    try:
        result = learn.train(
            s.tokens,
            s.matrices,
            s.options,
            target_of(s, cfg),
            learn=learned or cfg.learn,
            optimiser=cfg.optimiser,
            lr=cfg.lr,
            steps=cfg.steps,
            seed=cfg.seed,
            snapshots=SNAPSHOTS,
            on_step=on_step,
            j=min(cfg.j, len(s.tokens) - 1),
        )
    except AttentionError as exc:
        what = SETTING_NAMES.get(exc.field or "", "Training")
        state_core.say("learn.train", "error", f"**{what}**: {esc(exc.message, 2000)}. {NOTHING_CHANGED}")
        _refused(bar, live)
        return
    if result.loss > result.losses[0]:  # saturated: finite numbers, but every step made things worse
        state_core.say(
            "learn.train",
            "error",
            f"**Learning rate**: training made the loss worse ({result.losses[0]:.4g} → {result.loss:.4g}): the "
            f"learning rate {cfg.lr:g} is too large for {OPTIMISERS[cfg.optimiser]}. The first steps threw the "
            "weights so far that softmax saturated (each weight 0 or 1, the wrong way) and the gradient vanished. "
            f"Try a smaller one (for example {cfg.lr / 100:g}). {NOTHING_CHANGED}",
        )
        _refused(bar, live)
        return
    bar.progress(1.0, text=f"Done: {result.steps_done:,} steps, loss {result.losses[0]:.4g} → {result.loss:.4g}")
    live.empty()
    state_learning.store_learned(Learned(result, cfg, s.tokens, start))
    url.write(session.get())  # the address bar says a run is kept: after a failover the page says it was lost
