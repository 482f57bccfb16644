"""Optimisers for learning the matrices: plain gradient descent, momentum and Adam, as pure functions of their state.

Each optimiser has ``init(params) -> state`` and ``step(params, grads, state) -> (params, state)``; nothing is
modified in place, so a run is deterministic and a snapshot stays as it was. ``params`` and ``grads`` are dicts of
arrays with the same keys.

    SGD:       p ← p − η g
    momentum:  v ← β v + g;            p ← p − η v
    Adam:      m ← β₁ m + (1 − β₁) g;  v ← β₂ v + (1 − β₂) g²;  p ← p − η m̂ / (√v̂ + ε),
               m̂ = m / (1 − β₁ᵗ),  v̂ = v / (1 − β₂ᵗ)   (Kingma & Ba, 2015)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import AttentionError

Params = dict[str, np.ndarray]
NAMES = ("sgd", "momentum", "adam")


@dataclass(frozen=True)
class SGD:
    """Plain gradient descent with learning rate ``lr``."""

    lr: float

    def init(self, params: Params) -> dict[str, Any]:
        return {}

    def step(self, params: Params, grads: Params, state: dict[str, Any]) -> tuple[Params, dict[str, Any]]:
        return {k: p - self.lr * grads[k] for k, p in params.items()}, state


@dataclass(frozen=True)
class Momentum:
    """Gradient descent with heavy-ball momentum ``beta``."""

    lr: float
    beta: float = 0.9

    def init(self, params: Params) -> dict[str, Any]:
        return {"v": {k: np.zeros_like(p) for k, p in params.items()}}

    def step(self, params: Params, grads: Params, state: dict[str, Any]) -> tuple[Params, dict[str, Any]]:
        v = {k: self.beta * state["v"][k] + grads[k] for k in params}
        return {k: p - self.lr * v[k] for k, p in params.items()}, {"v": v}


@dataclass(frozen=True)
class Adam:
    """Adam with bias correction."""

    lr: float
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    def init(self, params: Params) -> dict[str, Any]:
        zeros = {k: np.zeros_like(p) for k, p in params.items()}
        return {"t": 0, "m": zeros, "v": dict(zeros)}

    def step(self, params: Params, grads: Params, state: dict[str, Any]) -> tuple[Params, dict[str, Any]]:
        t = state["t"] + 1
        m = {k: self.beta1 * state["m"][k] + (1 - self.beta1) * grads[k] for k in params}
        v = {k: self.beta2 * state["v"][k] + (1 - self.beta2) * grads[k] ** 2 for k in params}
        c1, c2 = 1 - self.beta1**t, 1 - self.beta2**t
        new = {k: p - self.lr * (m[k] / c1) / (np.sqrt(v[k] / c2) + self.eps) for k, p in params.items()}
        return new, {"t": t, "m": m, "v": v}


def make(name: str, lr: float) -> SGD | Momentum | Adam:
    """The optimiser called ``name`` ("sgd", "momentum" or "adam") with learning rate ``lr``."""
    kinds = {"sgd": SGD, "momentum": Momentum, "adam": Adam}
    if name not in kinds:
        raise AttentionError(f"optimiser must be one of {', '.join(NAMES)}; got {name!r}", field="optimiser")
    return kinds[name](lr)
