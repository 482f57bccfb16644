"""The Q·K·V page's QK-norm step (Qwen3, Gemma 3), between X·W and the rotation, and its gains, editable.

Each row of a head's q is divided by its root mean square and multiplied by the gains, one per column:
q̂ = q / √(mean(q²) + ε) ⊙ g_q, and k likewise with g_k. The page says it in prose, then shows the numbers: q and k
before the norm (X·W, with each row's RMS) and after it, then the gains as a small grid (one row per column of a
head, one column per norm). An edit is checked cell by cell in the grid's callback (the same cell rule and payload
check as the matrix grids, :mod:`attention.ui.widgets.cells`); a bad cell is named and nothing changes, a good edit
changes the options (:func:`attention.ui.state.options.set_gains`), so every page, the address and a preset file
carry it, and on a model's head the model runs with it (:mod:`attention.ui.modelpages.on_steps`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts, steps
from ...io.parse.cells import cell_number
from ...names import dimension_labels, token_labels
from ...trace import Trace
from ..core import keys, session
from ..state import core as state_core
from ..state import options as state_options
from ..widgets import matrix_grid, number_tables
from ..widgets.cells import check_payload, not_a_number, to_text
from ..widgets.common import show_messages

NORMS = ("q_norm", "k_norm")
LABELS = {"q_norm": "g_q", "k_norm": "g_k"}  # the gains' columns in the grid, as the formula names them
SHOWN_COLS, ROWS = 6, 64  # each table's first columns of head 1 and rows (q before, with each row's RMS, and after)
PLACE = "edit.gains"


def norms_of(s: session.Session) -> tuple[str, ...]:
    """The norms the state's pass has ("q_norm", "k_norm", or one of them; none without QK-norm)."""
    return tuple(n for n in NORMS if getattr(s.options, n))


def qk_norm(s: session.Session, trace: Trace, page_key: str) -> None:
    """The norm step in prose, q and k before and after it, and the gains' grid; nothing without QK-norm."""
    norms = norms_of(s)
    if not norms:
        return
    o = trace.options
    st.markdown(
        "**The norm (QK-norm).** Between X·W and the rotation, each row of a head's q is divided by its root mean "
        "square, then multiplied by the gains, one per column: **q̂ = q / √(mean(q²) + ε) ⊙ g_q**, with "
        f"ε = {float(o.qk_norm_eps):g}; k likewise with g_k. However large X·W makes a row, after the norm its size "
        "is set by the gains alone, so the scores q̂·k̂ cannot grow without bound. Before and after the norm:"
    )
    before, after = _before_after(trace)
    rows = token_labels(list(s.tokens))[:ROWS]
    whose = "head 1's " if o.heads > 1 else ""
    for name in ("q", "k"):  # one under the other: the results column is narrow
        if f"{name}_norm" not in norms:
            continue
        x, y = before[name][: len(rows)], after[name][: len(rows)]
        cols = min(SHOWN_COLS, x.shape[1])
        rms = np.sqrt(np.mean(x * x, axis=-1) + float(o.qk_norm_eps))  # (n,): what each row is divided by
        st.caption(
            f"{name} = X·W_{name} before the norm · {whose}first {cols} of {x.shape[1]} columns, and each row's RMS"
        )
        frame = pd.DataFrame(x[:, :cols], index=rows, columns=dimension_labels("c", cols)).assign(rms=rms)
        number_tables.number_table(frame, charts.decimals_for(x, s.digits))
        st.caption(f"{name} after the norm (÷ rms, ⊙ g_{name}) · the same columns")
        frame = pd.DataFrame(y[:, :cols], index=rows, columns=dimension_labels("c", cols))
        number_tables.number_table(frame, charts.decimals_for(y, s.digits))
    gains_grid(s, norms)


def _before_after(trace: Trace) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Head 1's q and k (key/value head 1) before the norm (X·W: X with any positions added) and after it (before
    the rotation), (n, dₕ) each, batch item 1."""
    o = trace.options
    width = int(np.asarray(trace.Q).shape[-1]) // o.heads
    X = trace.X if trace.X_in is None else trace.X_in
    X_kv = X if trace.X_kv is None else trace.X_kv
    before = {"q": steps.project(X, trace.W_q, o.projection), "k": steps.project(X_kv, trace.W_k, o.projection)}
    after = {"q": trace.Q if trace.Q_raw is None else trace.Q_raw, "k": trace.K if trace.K_raw is None else trace.K_raw}

    def head_1(m: np.ndarray) -> np.ndarray:
        m = np.asarray(m)
        return (m[0] if m.ndim == 3 else m)[:, :width]  # (n, dₕ)

    return {k: head_1(v) for k, v in before.items()}, {k: head_1(v) for k, v in after.items()}


def grid_key(s: session.Session) -> str:
    """The gains grid's key: one, kept across reruns (the page keeps what was typed there)."""
    return keys.GAINS_GRID


def _drawn(s: session.Session, norms: tuple[str, ...]) -> str:
    """Which gains the grid is drawn over (not the gains themselves: an edit typed right after another is theirs)."""
    return f"{s.version}.{s.sheet}.{'.'.join(norms)}"


def gains_grid(s: session.Session, norms: tuple[str, ...]) -> None:
    """The gains, one row per column of a head and one column per norm, editable as text (checked in the callback)."""
    width = len(getattr(s.options, norms[0]))
    values = np.array([getattr(s.options, n) for n in norms]).T  # (dₕ, 1 or 2)
    left, right = st.columns([2, 3], gap="medium")
    key = grid_key(s)
    with left:
        matrix_grid.draw(
            key,
            "QK-norm gains",
            dimension_labels("c", width),
            [LABELS[n] for n in norms],
            to_text(values, charts.decimals_for(values, s.digits)),
            to_text(values),
            lambda: _on_gains(key, norms),
            changed=values != 1.0,
            locked="A running challenge holds the gains as they are." if s.challenge is not None else "",
            ver=_drawn(s, norms),
        )
    said = (
        "**The gains**, one per column of a head, as the norm multiplies by them (a Gemma 3 model stores w and "
        "multiplies by 1 + w: shown here as 1 + w). Edit any cell and every step after the norm redraws."
    )
    if s.model_head is not None:
        layer = s.model_head.layer + 1
        said += (
            f" They are layer {layer}'s, shared by all its heads: an edit here changes every head of layer {layer} "
            "in the model, which answers back below."
        )
    if s.challenge is not None:
        said += " A running challenge holds them as they are."
    right.markdown(said)
    show_messages(PLACE, where=right)
    show_messages(PLACE + ".last", where=right)


def _on_gains(key: str, norms: tuple[str, ...]) -> None:
    """The grid's callback: the payload checked against the grid, then each cell; the good ones taken (a bad cell is
    named, with the gain it keeps, while the others are taken). A send already taken does nothing again."""
    s = session.get()
    payload = matrix_grid.sent(key)
    if payload is None or not matrix_grid.fresh(key, payload):
        return
    drawn = isinstance(payload, dict) and payload.get("ver") == _drawn(s, norms)
    if not drawn or norms_of(s) != norms or s.challenge is not None:
        why = "a running challenge holds them" if s.challenge else "they were typed over gains no longer shown"
        state_core.say(PLACE, "error", f"QK-norm's gains: {why}; nothing was changed.")  # ours: fixed wording
        return
    width = len(getattr(s.options, norms[0]))
    problem, edits = check_payload(payload, width, {LABELS[n]: j for j, n in enumerate(norms)})
    new = {n: list(getattr(s.options, n)) for n in norms}
    bad = []
    for (r, c), raw in sorted(edits.items()):
        value = cell_number(raw)
        if value is None or not math.isfinite(value):
            bad.append(f"{LABELS[norms[c]]} c{r + 1} {not_a_number(raw, value)}; it keeps {new[norms[c]][r]!r}")
        else:
            new[norms[c]][r] = value
    if problem:
        state_core.say(PLACE, "error", f"QK-norm's gains: {problem}. Nothing was changed.")  # ours: cells escaped
        return
    if bad:  # named; every other cell sent is taken
        said = "; ".join(bad[:5]) + (f"; and {len(bad) - 5} more" if len(bad) > 5 else "")
        rest = "The others sent with it were taken." if len(bad) < len(edits) else "Nothing was changed."
        state_core.say(PLACE, "error", f"QK-norm's gains: {said}. {rest}")  # ours: cells escaped
    else:
        state_core.unsay(PLACE)
    changed = state_options.set_gains({n: tuple(v) for n, v in new.items()})
    if changed:
        state_core.say(PLACE + ".last", "caption", ":material/edit: Changed " + "; ".join(changed[:3]))
