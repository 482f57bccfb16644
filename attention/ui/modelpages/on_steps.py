"""A model's head on the step pages: the edits that flow back into the model, and what the model then predicts.

The state was opened at one head (``Session.model_head``). An edit of that head's W_q, W_k, W_v or W_o is an
intervention: the model runs with the head's block replaced by the edited matrix (:func:`attention.model
.replace_matrix`: W_q, W_k, W_v's columns, W_o's rows), and the predictions, the loss and its split by half answer
back. So is an edit of a QK-norm head's gains (the options' q_norm, k_norm): the layer's gains, shared by its heads,
replaced (:func:`attention.model.replace_gains`). X is the layer's input, made by
the layers below: an edit of X, or of an option (mask, scale, softmax...), changes this page's attention only, and the
panel says so. The position predicted for is the query of the explained cell (a click on a heatmap cell moves it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import streamlit as st

from ...errors import AttentionError
from ...model import roles
from ...model.interventions import GAINS, ablate, replace_gains, replace_matrix
from ...names import WEIGHTS
from ...options import Options
from ..core import keys, models, session
from ..core.models import HeadRef
from ..core.text import esc
from ..state import presets
from ..widgets.common import bind, on_value
from . import answers, runs

FLOWS = (*WEIGHTS, "W_o")  # the head's matrices whose edits become interventions: W_q, W_k, W_v, W_o


def edits(s: session.Session) -> tuple[dict[str, np.ndarray], list[str]]:
    """The head's edited matrices that flow into the model (name -> (d_model [+1], d_head)), and what was changed
    that does not (X, the options, the sentence), in words."""
    base, preset = s.origin.base, s.origin.preset
    flows = {}
    stays = [n for n in ("X",) if not session.identical(s.matrices[n], base[n])]
    for name in FLOWS:
        m = s.matrices.get(name)
        if m is None:  # W_o dropped: the output here is the head's concat; the model keeps its own W_o
            stays.append(f"{name} (dropped here; the model applies its own)")
        elif session.identical(m, base[name]):
            continue
        elif m.shape == base[name].shape and (s.options.projection == "x_w" or name == "W_o"):
            flows[name] = m
        else:
            stays.append(f"{name} (its shape or projection differs from the head's)")
    flows.update(_gains(s, preset.options, stays))
    if s.options.replace(**{n: getattr(preset.options, n) for n in GAINS}) != preset.options:
        stays.append("the options (mask, scale, softmax, heads…)")
    if s.tokens != preset.tokens:
        stays.append("the tokens' labels")
    return flows, stays


def _gains(s: session.Session, preset: Options, stays: list[str]) -> dict[str, np.ndarray]:
    """The QK-norm gains edited here that flow into the model (name -> (d_head,), as the norm applies them): the
    layer's own, shared by its heads; gains of another width (the heads or sizes changed here) stay on the page."""
    out = {}
    for name in GAINS:
        now, was = getattr(s.options, name), getattr(preset, name)
        if now == was:
            continue
        if was and len(now) == len(was):
            out[name] = np.array(now, dtype=np.float64)  # (d_head,)
        else:
            stays.append(f"the {name} gains (their width differs from the layer's)")
    return out


def changed_cells(s: session.Session, name: str) -> int:
    """How many numbers of a flowing edit differ from the head's own: cells of a matrix, or gains."""
    if name in GAINS:
        return int(np.sum(np.array(getattr(s.options, name)) != np.array(getattr(s.origin.preset.options, name))))
    return int(np.sum(s.matrices[name] != s.origin.base[name]))


def run_with(ref: HeadRef, flows: dict[str, np.ndarray]) -> runs.Measured:
    """The model on the head's text with its ablations and the edited blocks in place (the engine keeps recent runs
    by content, so an unchanged state is not run again)."""
    if not flows:
        return runs.measure(ref.ids, ref.ablations, ref.model_id)
    m = models.get(ref.model_id)
    ivs = [ablate(layer, head, how) for layer, head, how in ref.ablations]
    ivs += [
        replace_gains(ref.layer, name, value) if name in GAINS else replace_matrix(ref.layer, ref.head, name, value)
        for name, value in flows.items()
    ]
    with models.LOCK:
        run = m.run(list(ref.ids), ivs)
    return runs.measured(ref.ids, ref.ablations, run)


@dataclass(frozen=True)
class Answer:
    """A panel that answers back below a step page's results, from beyond the page, when ``applies`` to the state.
    Its widgets change what the whole body shows (another head: new grids, new results), so when it applies, the page's
    body draws the results beside it in its own run, not in a results fragment of their own."""

    applies: Callable[[session.Session], bool]
    draw: Callable[[session.Session], None]


def is_model_head(s: session.Session) -> bool:
    """The state is a model's head (opened on Every head): its edits reach the model, and the model answers."""
    return s.model_head is not None


def panel(s: session.Session) -> None:
    """Below a step page's results: which edits reach the model, its top-5 next tokens at the explained cell's query,
    the loss by half against the unedited head, and ablating this head in the model."""
    ref = s.model_head
    if ref is None:
        return
    flows, stays = edits(s)
    try:  # a learner's model is held for a while only: once let go, the page keeps its numbers and says so
        m = models.get(ref.model_id)
        now, base = run_with(ref, flows), runs.measure(ref.ids, ref.ablations, ref.model_id)
    except AttentionError as e:
        st.warning(f"The model cannot answer back: {esc(e.message, 300)}. This page keeps the head's numbers.")
        return
    position = min(s.cell[0], len(ref.ids) - 1)
    pieces = m.pieces
    st.subheader(f"What the model predicts, with {ref.name} as it is here")
    heads = [(layer, head) for layer in range(m.config.n_layers) for head in range(m.config.n_heads)]
    bind(keys.HEAD_PICK, (ref.layer, ref.head))
    st.selectbox(
        "Head shown on these pages (the same text and ablations; your edits here are replaced)",
        heads,
        format_func=lambda lh: runs.name(*lh),
        key=keys.HEAD_PICK,
        on_change=on_value(presets.switch_head, keys.HEAD_PICK),
    )
    if flows:
        st.markdown(flow_line(s, ref, flows))  # ours: names and counts
        said = answers.moved(base, now, "With your edits", position, pieces)
        st.info(said)  # ours: built by answers.moved, tokens escaped
    else:
        st.markdown(
            f"Edit a cell of W_q, W_k, W_v or W_o (W_o on the Weights page) and the model runs with {ref.name}'s "
            "block replaced by your matrix"
            + (
                ", or a QK-norm gain (the Q·K·V page) and it runs with the layer's gains replaced"
                if s.options.q_norm
                else ""
            )
            + ": the predictions below answer back."
        )
    if stays:
        st.caption(
            "Changed here but not in the model: " + "; ".join(stays) + ". X is what the layers below give this "
            "layer; the options are this page's own."
        )
    left, right = st.columns([3, 2], gap="medium")
    with left:
        best, p = roles.top_next(now.logits[position])
        table = {"next token": pieces(best), "probability": p}
        if flows:
            table["unedited"] = answers.next_probs(base.logits[position])[best]
        st.markdown(
            f"After token {position + 1} (**{esc(pieces([ref.ids[position]])[0])}**, the query of the explained "
            "cell: click a heatmap cell to choose another):"
        )
        answers.prob_table(table, [c for c in table if c != "next token"])
    with right:
        answers.loss_metrics(now, base, "edited" if flows else None)
    ablation_buttons(ref)


def flow_line(s: session.Session, ref: HeadRef, flows: dict[str, np.ndarray]) -> str:
    """What of the edits reaches the model, in words: the head's blocks, and the layer's QK-norm gains (which every
    head of the layer shares)."""
    counts = {n: changed_cells(s, n) for n in flows}
    blocks = ", ".join(f"{n} ({k} cell{'s' if k != 1 else ''})" for n, k in counts.items() if n not in GAINS)
    gains = ", ".join(f"{n} ({k} gain{'s' if k != 1 else ''})" for n, k in counts.items() if n in GAINS)
    said = [f"{blocks} replace {ref.name}'s block"] if blocks else []
    if gains:
        said.append(f"{gains} replace layer {ref.layer + 1}'s QK-norm gains, for every head of that layer")
    return "**Your edits flow into the model:** " + "; ".join(said) + "."


def ablation_buttons(ref: HeadRef) -> None:
    """Ablate this head in the model (zero or mean), or restore it."""
    how = next((a[2] for a in ref.ablations if a[:2] == (ref.layer, ref.head)), None)
    if how:
        st.markdown(
            f"**{ref.name} is zero-ablated in the model:** its output is removed, so edits here cannot move it."
            if how == "zero"
            else f"**{ref.name} is mean-ablated in the model:** at each position its output is replaced by the mean "
            "of its outputs up to there, so what it attends to where no longer reaches the model; your edits reach "
            "it only through that mean."
        )
        st.button(f"Restore {ref.name}", key=keys.HEAD_RESTORE, on_click=presets.set_head_ablation, args=(None,))
        return
    left, right = st.columns(2)
    left.button(f"Ablate {ref.name} (zero)", key=keys.HEAD_ZERO, on_click=presets.set_head_ablation, args=("zero",))
    right.button(f"Ablate {ref.name} (mean)", key=keys.HEAD_MEAN, on_click=presets.set_head_ablation, args=("mean",))
