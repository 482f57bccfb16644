"""Runs of the chosen model, measured once per content (model, text and ablations) and shared by every session."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...model import roles
from ...model.attend import visible
from ...model.interventions import ablate
from ...model.model import Run
from ..core import models
from ..core.cache import TraceCache
from ..state import inside
from ..state.inside import Ablation, name

SHOWN = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "↵"}  # whitespace in a token, made visible
__all__ = ["Ablation", "Measured", "measure", "model", "model_id", "name", "pieces", "ready_made"]


def model() -> models.Model:
    """The model the learner chose (the shipped one until another is chosen)."""
    return inside.model()


def model_id() -> str:
    """The chosen model's id (see :mod:`attention.ui.core.models`)."""
    return inside.model_id()


def pieces(ids: Sequence[int]) -> list[str]:
    """The chosen model's tokens as a person reads them (a BPE piece's spaces made visible); user text: escape it."""
    return ["".join(SHOWN.get(ch, ch) for ch in t) or "∅" for t in inside.model().pieces(ids)]


def window(layer: int) -> int:
    """The chosen model's sliding window on ``layer`` (0 on a layer that sees every earlier token)."""
    c = inside.model().config
    return c.sliding_window if c.layer_type(layer) == "sliding" else 0


def allowed(layer: int, n: int) -> np.ndarray:
    """Which keys each query of ``layer`` may attend on an n-token text, (n, n), True = may attend: causal, and
    within the window on a sliding layer (the model's own rule, :func:`attention.model.attend.visible`)."""
    return visible(0, n, n, window(layer))


def ready_made() -> dict[str, tuple[int, ...]]:
    """The chosen model's ready-made texts, by label (none for a model without them)."""
    return models.ready_made(inside.model_id())


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


def run(model_id: str, ids: tuple[int, ...], ablations: tuple[Ablation, ...] = ()) -> Run:
    """The model's run on ``ids`` with these ablations: what it keeps (the streams, the heads' outputs, the logits;
    no n × n weights, which its traces make when read). The model's run cache holds it: a second reading of the same
    text runs nothing again."""
    m = models.get(model_id)
    with models.LOCK:
        return m.run(list(ids), [ablate(layer, head, how) for layer, head, how in ablations])


def last_logits(ids: tuple[int, ...], model_id: str | None = None) -> np.ndarray:
    """The chosen model's (or ``model_id``'s) logits after the last token of ``ids``, nothing ablated: (V,), without
    measuring every head's weights (which :func:`measure` does)."""
    return run(model_id or inside.model_id(), ids).logits[-1]


def measure(ids: tuple[int, ...], ablations: tuple[Ablation, ...] = (), model_id: str | None = None) -> Measured:
    """The chosen model's (or ``model_id``'s) run on ``ids`` with these ablations, measured; cached by content."""
    return _measure(model_id or inside.model_id(), ids, ablations)


def _bytes(m: Measured) -> int:
    return int(m.logits.nbytes + m.weights.nbytes + m.losses.nbytes)


# Runs by content, bounded by bytes: a GPT-2 run's logits alone are n × 50,257 float64 (26 MB at 64 tokens)
_RUNS = TraceCache(max_bytes=256 * 1024**2, max_entries=64, ttl=3600, measure=_bytes)


def _measure(model_id: str, ids: tuple[int, ...], ablations: tuple[Ablation, ...]) -> Measured:
    def run() -> Measured:
        m = models.get(model_id)
        with models.LOCK:
            out = m.run(list(ids), [ablate(layer, head, how) for layer, head, how in ablations])
        return measured(ids, ablations, out)

    return _RUNS.get(repr((model_id, ids, ablations)), run)


def measured(ids: tuple[int, ...], ablations: tuple[Ablation, ...], run: Run) -> Measured:
    """What the page shows of a run of the model on ``ids`` (its roles, losses by half and logits); read-only."""
    scores = roles.head_scores(run.weights, ids)
    losses = roles.position_losses(run.logits, ids)
    first, second = roles.half_losses(losses, roles.half_split(ids)[0])
    for a in (*scores.values(), losses, run.weights):
        a.flags.writeable = False  # shared by every session that shows this content
    return Measured(ids, ablations, run.weights, scores, roles.roles(scores), losses, first, second, run.logits)
