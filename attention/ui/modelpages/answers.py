"""What the model answers on the "Every head" page: ablation controls, what moved, next-token predictions, losses."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...model import roles
from ...model.layers import probabilities
from ..core import keys, session
from ..core.text import esc
from ..state import inside
from ..widgets.common import bind
from . import choose, runs

MOVED = 0.05  # a head's score is said to have moved when it changed by at least this much
DIGITS = next(f.default for f in dataclasses.fields(session.Session) if f.name == "digits")  # the control's default
NAMED = 6  # at most this many heads are named in what moved (the largest changes); the others are counted


def ablation_bar(now: runs.Measured, base: runs.Measured) -> None:
    """How the next ablation is made, which heads are ablated, Restore all, and what the last change moved."""
    left, right = st.columns([2, 3], gap="medium")
    with left:
        bind(keys.INSIDE_HOW, inside.now().how, once=True)
        st.radio(
            "Ablate a head by",
            inside.HOWS,
            format_func=lambda h: {"zero": "zero (its output removed)", "mean": "mean (its mean output so far)"}[h],
            key=keys.INSIDE_HOW,
            on_change=inside.on_how,
            horizontal=True,
        )
    with right:
        if now.ablations:
            names = ", ".join(f"{runs.name(layer, head)} ({how})" for layer, head, how in now.ablations)
            st.markdown(f"**Ablated:** {names}")  # ours: head names
            st.button("Restore every head", key=keys.INSIDE_RESTORE_ALL, on_click=inside.restore_all)
        else:
            st.markdown("**Nothing ablated.** Press *Ablate* under a head to remove its output from the model.")
    said = last_change()
    if said and inside.now().where == "all":  # a head's own change is said under its button
        st.info(said)  # ours: built by moved(), tokens escaped


def last_change() -> str:
    """What the last ablation or restore moved, or "" when nothing was changed on this text yet."""
    before = inside.now().before
    if before is None:
        return ""
    ids, position, now = inside.current()
    return moved(runs.measure(ids, before), runs.measure(ids, now), inside.now().change, position)


def moved(before: runs.Measured, now: runs.Measured, change: str, position: int, pieces: Callable | None = None) -> str:
    """One paragraph naming what the last change moved: the loss (on a repeated text, the repeated half's), the heads
    whose score of their role moved, the first half's loss on a repeated text, and the most likely next token at the
    chosen position."""
    repeats = roles.half_split(now.ids)[1]  # the halves mean something only when the second copies the first
    if repeats:
        parts = [f"{change}: the loss on the repeated half {_went(before.second, now.second)} nats."]
    else:
        whole = _went(float(before.losses.mean()), float(now.losses.mean()))
        parts = [f"{change}: the loss on the whole text {whole} nats."]
    shifts = []  # (how far, layer, head, role, before, after) of each head whose role's score moved
    for layer, head in np.ndindex(before.roles.shape):
        role = str(before.roles[layer, head])
        if role == "none":
            continue
        a, b = before.scores[role][layer, head], now.scores[role][layer, head]
        if abs(b - a) >= MOVED:
            shifts.append((abs(b - a), layer, head, role, a, b))
    named = sorted(shifts, key=lambda t: -t[0])[:NAMED] if len(shifts) > NAMED else shifts  # a big model: the largest
    for _, layer, head, role, a, b in sorted(named, key=lambda t: t[1:3]):
        parts.append(f"{runs.name(layer, head).capitalize()}'s {role} score {_went(a, b)}.")
    if len(shifts) > NAMED:
        parts.append(f"The scores of {len(shifts) - NAMED} other heads moved by {MOVED} or more too.")
    if repeats:
        parts.append(f"On the first half it {_went(before.first, now.first)} nats.")
    pieces = pieces or runs.pieces
    (was,), (p_was,) = (np.atleast_1d(v) for v in roles.top_next(before.logits[position], 1))
    (top,), (p_top,) = (np.atleast_1d(v) for v in roles.top_next(now.logits[position], 1))
    where = f"At position {position + 1} ({esc(pieces([now.ids[position]])[0])}) the most likely next token"
    fmt = prob_pattern([p_was, p_top]).format  # one format for the pair, from the digits control
    if was == top:
        parts.append(f"{where} is still {esc(pieces([top])[0])} ({fmt(p_was)} → {fmt(p_top)}).")
    else:
        parts.append(
            f"{where} went from {esc(pieces([was])[0])} ({fmt(p_was)}) to {esc(pieces([top])[0])} ({fmt(p_top)})."
        )
    return " ".join(parts)


def prob_pattern(values: object) -> str:
    """One ``str.format`` pattern for probabilities shown together (a sentence's pair, a table's columns): the
    digits control's significant digits for the largest of them (:func:`attention.charts.decimals_for`), so that a
    probability of 0.0003 on a large vocabulary is never written 0.00, and 0.0600 stands beside 0.0544."""
    s = st.session_state.get(session.KEY)  # (a sentence may be built outside a page's run: the default digits)
    digits = s.digits if s is not None else DIGITS
    return charts.decimals_for(np.asarray(values, dtype=float), digits)


def prob_table(table: dict[str, object], probs: Sequence[str], **kwargs: object) -> None:
    """``table`` as a dataframe whose ``probs`` columns share one format (:func:`prob_pattern` over all of them). A
    pattern of significant digits ("0.9485" beside "0.05440") has no printf form the browser keeps trailing zeros
    with, so those columns' texts are written here (a Styler); the numbers themselves are sent whole."""
    df = pd.DataFrame(table)
    pattern = prob_pattern(df[list(probs)].to_numpy(dtype=float))
    shown = df.style.format(pattern.format, subset=list(probs)) if pattern != "{!r}" else df
    st.dataframe(shown, hide_index=True, width="stretch", **kwargs)


def _went(a: float, b: float) -> str:
    if round(a, 2) == round(b, 2):
        return f"stayed at {a:.2f}"
    return f"{'rose' if b > a else 'fell'} from {a:.2f} to {b:.2f}"


@st.fragment
def predicting() -> None:
    """:func:`predictions` for the text, the position and the ablations now: a fragment of its own inside the page's,
    so choosing a position writes only this part again (the runs are cached by content: no model runs again)."""
    choose.whole_page_if_banner_went()
    ids, position, ablations = inside.current()
    now = runs.measure(ids, ablations)
    base = runs.measure(ids) if ablations else now
    predictions(now, base, position)


def predictions(now: runs.Measured, base: runs.Measured, position: int) -> None:
    """The top 5 next tokens at a chosen position (beside the unablated model's when heads are ablated), the loss on
    each half and on the whole text, and every position's prediction."""
    tokens = runs.pieces(now.ids)
    n = len(tokens)
    half, repeats = roles.half_split(now.ids)
    st.subheader("What the model predicts")
    positions = list(range(n))
    bind(keys.INSIDE_POSITION, position, once=True)
    st.selectbox(
        "Position (the prediction is for the token after it)",
        positions,
        format_func=lambda t: f"{t + 1}: {tokens[t]}",
        key=keys.INSIDE_POSITION,
        on_change=on_position,
    )
    left, right = st.columns([3, 2], gap="medium")
    with left:
        best, p = roles.top_next(now.logits[position])
        table = {"next token": runs.pieces(best), "probability": p}
        if now.ablations:
            table["without ablations"] = next_probs(base.logits[position])[best]
        prob_table(table, [c for c in table if c != "next token"])
        if position < n - 1:
            target = now.ids[position + 1]
            p_now, p_base = next_probs(now.logits[position])[target], next_probs(base.logits[position])[target]
            fmt = prob_pattern([p_now, p_base] if now.ablations else [p_now]).format
            st.markdown(
                f"The text's next token is **{esc(tokens[position + 1])}**: probability "
                f"{fmt(p_now)}, loss {now.losses[position]:.2f} nats"
                + (f" (without ablations {fmt(p_base)})" if now.ablations else "")
                + "."
            )
        else:
            st.markdown("This is the text's last token: nothing follows it to compare with.")
    with right:
        loss_metrics(now, base, "ablated" if now.ablations else None)
    every = st.expander("Every position's prediction", key=keys.INSIDE_EVERY, on_change="rerun")
    if not every.open:  # its table is built only while it is open: opening it writes the predictions again
        return
    with every:
        probs = probabilities(now.logits)  # (n, V), float64
        top = probs.argmax(axis=-1)  # (n,)
        rows = {
            "position": np.arange(1, n + 1),
            "token": tokens,
            "most likely next": runs.pieces(top),
            "p(most likely)": probs[np.arange(n), top],
            "next in the text": [*tokens[1:], ""],
            "p(next in the text)": [*probs[np.arange(n - 1), now.ids[1:]], np.nan],
        }
        prob_table(rows, ["p(most likely)", "p(next in the text)"])


def on_position() -> None:
    """A position was chosen: the page's fragment (``keys.INSIDE_ANSWERING``) is written again, since each head's
    card shows its share of the prediction at that position (and what the last change moved names it)."""
    inside.on_position()
    st.rerun(keys.INSIDE_ANSWERING)


def loss_metrics(now: runs.Measured, base: runs.Measured, changed: str | None) -> None:
    """The loss on the whole text and, on a repeated text, on its first half and its repeated half (what an induction
    head changes); with ``changed`` (what made ``now`` differ from ``base``: "ablated", "edited"), each one's change
    from ``base`` beside it."""
    half, repeats = roles.half_split(now.ids)
    n = len(now.ids)
    halves = (
        [
            (f"Loss on the first half (tokens 2–{half})", now.first, base.first),
            (f"Loss on the repeated half (tokens {half + 2}–{n})", now.second, base.second),
        ]
        if repeats
        else []
    )
    for label, value, was in (
        *halves,
        ("Loss on the whole text", float(now.losses.mean()), float(base.losses.mean())),
    ):
        delta = f"{value - was:+.2f} nats ({changed})" if changed and np.isfinite(value) else None
        shown = "n/a" if not np.isfinite(value) else f"{value:.2f} nats"
        st.metric(label, shown, delta, delta_color="inverse")  # ours: labels and numbers


def next_probs(logits_row: np.ndarray) -> np.ndarray:
    """The next-token probabilities of one row of logits: softmax in float64, (V,) -> (V,)."""
    return probabilities(logits_row)  # (V,)
