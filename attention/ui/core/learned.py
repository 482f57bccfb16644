"""What the Learn page keeps in the session: its settings and its last training run (data only)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ...learn import GAINS, LEARNABLE, TrainResult
from ...options import Options

MAX_STEPS = 5000  # the page's limit (the engine's is higher): 5,000 steps at n = 64, d = 64 take about 25 s
LR_RANGE = (1e-6, 1e6)  # large enough to show divergence
TARGETS = {
    "previous": "previous token",
    "next": "next token",
    "self": "itself (self)",
    "first": "the first token",
    "uniform": "every token equally (uniform)",
    "token": "one token j, for every row",
    "same_word": "the same word",
    "custom": "a grid you paint",
}
OPTIMISERS = {"sgd": "SGD (plain gradient descent)", "momentum": "momentum (β = 0.9)", "adam": "Adam"}


@dataclass(frozen=True)
class LearnSettings:
    """What the Learn page trains: the target (a kind of :data:`attention.targets.KINDS`; ``j`` for "token" (0-based),
    ``grid`` for "custom", query × key, () until painted), the matrices that learn, the optimiser and its numbers."""

    target: str = "previous"
    j: int = 0
    grid: tuple[tuple[bool, ...], ...] = ()
    learn: tuple[str, ...] = ("W_q", "W_k")
    optimiser: str = "adam"
    lr: float = 0.05
    steps: int = 300
    seed: int = 0


@dataclass(frozen=True)
class Learned:
    """A finished training run, the settings and tokens it ran with, and the content key (see
    :func:`attention.ui.core.compute.content_key`) of the state it started from: its matrices can go into that state."""

    result: TrainResult
    settings: LearnSettings
    tokens: tuple[str, ...]
    start: str


def learnable(matrices: Mapping[str, np.ndarray], options: Options) -> tuple[str, ...]:
    """What can learn in a state: its matrices, and QK-norm's gains (q_norm, k_norm) when its options have them."""
    return tuple(k for k in LEARNABLE if k in matrices or (k in GAINS and getattr(options, k)))


def held(name: str, matrices: Mapping[str, np.ndarray], options: Options) -> np.ndarray | None:
    """What a state holds of something that learns: a matrix, or QK-norm's gains as an array; None when it has none."""
    if name in GAINS:
        gains = getattr(options, name)
        return np.array(gains, dtype=np.float64) if gains else None
    return matrices.get(name)
