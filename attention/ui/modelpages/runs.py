"""The shipped model, loaded once per process, and its runs measured once per content (text and ablations)."""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import numpy as np
import streamlit as st

from ...model import Model, ablate, builtin, roles
from ...model.induction import sequences

Ablation = tuple[int, int, str]  # (layer, head, "zero" or "mean"), 0-based as the engine counts
_LOCK = threading.Lock()  # a Model's run cache is not shared safely between sessions' threads


@st.cache_resource(show_spinner=False)
def model() -> Model:
    """The shipped induction model (2 layers × 2 heads, 32 words, 24 tokens), read once per process."""
    return builtin("induction")


@dataclass(frozen=True)
class Measured:
    """What the page shows of one run: ``weights`` (layers, heads, n, n); ``scores`` each kind's (layers, heads);
    ``roles`` (layers, heads); ``losses`` (n − 1,) per position; ``first`` and ``second`` the halves' mean losses;
    ``logits`` (n, V)."""

    ids: tuple[int, ...]
    ablations: tuple[Ablation, ...]
    weights: np.ndarray
    scores: dict[str, np.ndarray]
    roles: np.ndarray
    losses: np.ndarray
    first: float
    second: float
    logits: np.ndarray


@functools.lru_cache(maxsize=64)
def measure(ids: tuple[int, ...], ablations: tuple[Ablation, ...] = ()) -> Measured:
    """The model's run on ``ids`` with these ablations, measured; cached by content (a few KB each)."""
    m = model()
    with _LOCK:
        run = m.run(list(ids), [ablate(layer, head, how) for layer, head, how in ablations])
    scores = roles.head_scores(run.weights, ids)
    losses = roles.position_losses(run.logits, ids)
    first, second = roles.half_losses(losses, roles.half_split(ids)[0])
    for a in (*scores.values(), losses, run.weights):
        a.flags.writeable = False  # shared by every session that shows this content
    return Measured(ids, ablations, run.weights, scores, roles.roles(scores), losses, first, second, run.logits)


@functools.cache
def ready_made() -> dict[str, tuple[int, ...]]:
    """The ready-made sequences, by label: distinct random words, then the same words again."""
    from ...model.induction import history

    def repeat(half: int, seed: int) -> tuple[int, ...]:
        return tuple(int(i) for i in sequences(np.random.RandomState(seed), 1, model().config.vocab_size, half)[0])

    return {
        "12 words, then the same 12 again (the training snapshots' example)": tuple(
            int(i) for i in history("induction")["example"]
        ),
        "12 other words, repeated (draw 1)": repeat(12, 1),
        "12 other words, repeated (draw 2)": repeat(12, 2),
        "10 words, repeated (the shortest repeat it was trained on)": repeat(10, 1),
        "8 words, repeated (shorter than any repeat it saw in training)": repeat(8, 1),
    }


def name(layer: int, head: int) -> str:
    """A head as a person counts: "layer 1 · head 2" (the engine counts from 0)."""
    return f"layer {layer + 1} · head {head + 1}"
