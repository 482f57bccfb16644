"""A solution of a challenge found by gradient descent on its editable matrices (attention.learn.train).

In prose: the goal becomes a training target. A goal on the weights is a pattern for the cross-entropy loss, on
the rows it reads only: one-hot at the goal's column for a cell (≥, >) or an argmax, one-hot at the row's current
top for a low entropy, uniform over the keys it may see for a high entropy or a cell that must fall. A goal on the
output is a target output for the squared error: the output as it is, with the goal's cell moved one unit past the
goal's value. Only the editable matrices are learned; the result counts only if :func:`challenges.evaluate` says
it meets the goal. Goals on Q, K, V or the scores are not attempted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import AttentionError
from ..learn import train
from ..names import INPUTS, squeeze_batch
from ..targets import Target
from ..trace import Trace
from .challenges import ALL, SELF, SHOWN_OP, Challenge, challenge_preset, evaluate

SCHEDULE = ((0.05, 500), (0.2, 2000))  # (learning rate, steps) tried in turn with Adam
SOLVABLE = ("weights", "output")


@dataclass(frozen=True)
class Solution:
    """The learned editable matrices (2-D, as the dashboard holds them), the steps and learning rate it took."""

    matrices: dict[str, np.ndarray]
    steps: int
    lr: float
    loss: float


def solvable(challenge: Challenge) -> bool:
    """True when :func:`solve` knows how to turn this challenge's goal into a training target."""
    return challenge.condition.array in SOLVABLE


def solve(challenge: Challenge, schedule: Sequence[tuple[float, int]] = SCHEDULE) -> Solution | None:
    """Train the editable matrices from the challenge's start until the goal is met; None when no run of the
    schedule meets it (or the goal is not on the weights or the output)."""
    if not solvable(challenge):
        return None
    preset = challenge_preset(challenge)
    mats = {k: squeeze_batch(np.asarray(v, dtype=np.float64)) for k, v in preset.matrices().items()}  # 2-D
    start = preset.compute()
    cond = challenge.condition
    if cond.array == "weights":
        kwargs = {"target": _pattern(challenge, start)}
    else:
        kwargs = {"target": _output(challenge, start), "loss": "mse"}
    for lr, steps in schedule:
        try:
            result = train(preset.tokens, mats, preset.options, learn=challenge.editable, lr=lr, steps=steps, **kwargs)
        except AttentionError:
            continue  # diverged at this rate: try the next
        if evaluate(challenge, result.trace).met:
            learned = {k: result.matrices[k] for k in challenge.editable}
            return Solution(learned, result.steps_done, lr, result.loss)
    return None


def _rows(challenge: Challenge, n: int, live: np.ndarray) -> list[int]:
    row = challenge.condition.row
    if row == ALL:
        return [i for i in range(n) if live[i]]
    return [row if isinstance(row, int) else challenge_preset(challenge).tokens.index(row)]


def _col(challenge: Challenge, i: int) -> int:
    col = challenge.condition.col
    if col == SELF:
        return i
    return col if isinstance(col, int) else challenge_preset(challenge).tokens.index(col)


def _pattern(challenge: Challenge, start: Trace) -> Target:
    """The cross-entropy target (n, n) for a goal on the weights: only the rows the goal reads count. A goal on one
    head gives a target per head (h, n, n): the goal's pattern for that head, and for every other head its own
    current top key on the same rows (so the solution moves only where the named head looks)."""
    cond = challenge.condition
    w = squeeze_batch(start.weights)  # (n, n), or (h, n, n) with heads
    if cond.head is not None:
        goal = _pattern(
            dataclasses.replace(challenge, condition=dataclasses.replace(cond, head=None)),
            dataclasses.replace(start, weights=w[cond.head]),
        )
        pattern = np.zeros(w.shape)  # (h, n, n)
        for h in range(w.shape[0]):
            for i in np.flatnonzero(goal.rows):
                pattern[h, i, int(np.argmax(w[h, i]))] = 1.0  # keep its top key
        pattern[cond.head] = goal.pattern
        return Target("challenge", pattern, np.broadcast_to(goal.rows, w.shape[:2]).copy())  # (h, n)
    allowed = np.ones(w.shape, dtype=bool) if start.allowed is None else squeeze_batch(start.allowed).astype(bool)
    pattern = np.zeros(w.shape)
    counts = np.zeros(w.shape[0], dtype=bool)
    for i in _rows(challenge, w.shape[0], allowed.any(axis=-1)):
        up = cond.kind == "argmax" or cond.op in (">", ">=")
        if cond.kind == "entropy" and up:  # spread: uniform over the keys the row may see
            pattern[i] = allowed[i] / allowed[i].sum()
        elif cond.kind == "entropy":  # focus: on the key the row already likes best
            pattern[i, int(np.argmax(w[i]))] = 1.0
        elif up:
            pattern[i, _col(challenge, i)] = 1.0
        else:  # a weight that must fall: spread the row over the other keys it may see
            others = allowed[i].copy()
            others[_col(challenge, i)] = False
            pattern[i] = others / max(others.sum(), 1)
        counts[i] = pattern[i].sum() > 0
    return Target("challenge", pattern, counts)


def _output(challenge: Challenge, start: Trace) -> np.ndarray:
    """The squared-error target for a goal on the output: the output with the goal's cell one unit past the goal."""
    cond = challenge.condition
    out = np.array(start.output, dtype=np.float64)  # as the trace holds it (a batch of one kept)
    flat = squeeze_batch(out)  # a view: edits reach out
    step = 1.0 if cond.kind == "argmax" or cond.op in (">", ">=") else -1.0
    for i in _rows(challenge, flat.shape[0], np.ones(flat.shape[0], dtype=bool)):
        j = _col(challenge, i) if cond.col is not None else 0
        if cond.kind == "argmax":
            flat[i, j] = flat[i].max() + 1.0
        else:
            flat[i, j] = cond.value + step
    return out


# ------------------------------------------------------------------------------------------------ audit

# which inputs each array depends on: a goal on an array none of whose inputs the learner may edit cannot be moved
DEPENDS = {
    "X": {"X"},
    "W_q": {"W_q"},
    "W_k": {"W_k"},
    "W_v": {"W_v"},
    "Q": {"X", "W_q"},
    "K": {"X", "W_k"},
    "V": {"X", "W_v"},
    "scores": {"X", "W_q", "W_k"},
    "scaled": {"X", "W_q", "W_k"},
    "weights": {"X", "W_q", "W_k"},
    "output": {"X", "W_q", "W_k", "W_v"},
}


@dataclass(frozen=True)
class Audit:
    """What a teacher should know before sharing a challenge. verdict: "ok" (a solution was found), "met" (the
    unedited start already meets the goal), "impossible" (no numbers can meet it), "unsolvable" (the learner may
    not edit anything the goal depends on) or "unknown" (not met at the start, no solution found by training, but
    no reason it is impossible either); reason says why in the teacher's words."""

    verdict: str
    reason: str


def _bounds_reason(challenge: Challenge, start: Trace) -> str | None:
    """Why the goal's number is out of reach of its array whatever the learner does (weights lie in [0, 1]; a row's
    entropy lies between 0 and log2 of the keys it may see), or None."""
    cond = challenge.condition
    if cond.kind == "cell" and cond.array == "weights":
        if (cond.op == ">=" and cond.value > 1) or (cond.op == ">" and cond.value >= 1):
            return f"a weight is at most 1, so it can never be {SHOWN_OP[cond.op]} {cond.value:g}"
        if (cond.op == "<=" and cond.value < 0) or (cond.op == "<" and cond.value <= 0):
            return f"a weight is at least 0, so it can never be {SHOWN_OP[cond.op]} {cond.value:g}"
    if cond.kind == "entropy":
        w = squeeze_batch(start.weights)
        w = w[cond.head if cond.head is not None else 0] if w.ndim == 3 else w  # (n, n)
        allowed = np.ones(w.shape, dtype=bool) if start.allowed is None else squeeze_batch(start.allowed).astype(bool)
        keys = allowed.sum(axis=-1)  # (n,) keys each row may see
        rows = _rows(challenge, w.shape[0], keys > 0)
        most = min(float(np.log2(max(int(keys[i]), 1))) for i in rows)
        if (cond.op == ">=" and cond.value > most + 1e-12) or (cond.op == ">" and cond.value >= most):
            return (
                f"a row that may see k keys has an entropy of at most log2 k bits; here the most is {most:.3g} bits, "
                f"so it can never be {SHOWN_OP[cond.op]} {cond.value:g}"
            )
        if (cond.op == "<=" and cond.value < 0) or (cond.op == "<" and cond.value <= 0):
            return f"an entropy is never below 0 bits, so it can never be {SHOWN_OP[cond.op]} {cond.value:g}"
    return None


def audit(challenge: Challenge) -> Audit:
    """Check a challenge before it is shared: its start, the bounds of its goal, what it lets the learner edit,
    then the solver (a few seconds at most on a tutorial-sized preset)."""
    preset = challenge_preset(challenge)
    start = preset.compute()
    if evaluate(challenge, start).met:
        return Audit("met", "the unedited start already meets the goal: a student has nothing to do")
    reason = _bounds_reason(challenge, start)
    if reason:
        return Audit("impossible", reason)
    needs = [name for name in INPUTS if name in DEPENDS[challenge.condition.array]]
    if not set(needs) & set(challenge.editable):
        return Audit(
            "unsolvable",
            f"{challenge.condition.array} depends only on {', '.join(needs)}, and the learner may edit only "
            f"{', '.join(challenge.editable)}: no edit can move it",
        )
    if not solvable(challenge):
        return Audit("unknown", f"the solver does not try goals on {challenge.condition.array}; try it yourself first")
    found = solve(challenge)
    if found is None:
        return Audit("unknown", "training the editable matrices did not meet it; it may be very hard or impossible")
    return Audit("ok", f"a solution was found by training {', '.join(found.matrices)} for {found.steps} steps")
