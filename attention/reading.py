"""Reading the weights: for each query row, the key it attends to most, the next one, and how spread out it is.

For row i of A: top(i) = argmax_j A_ij; second(i) = the argmax once top(i) is set aside; the entropy
H_i = −Σ_j A_ij log₂ A_ij (0 bits: all on one key; log₂ n bits: spread evenly). A fully masked row (every key
masked, weights all 0) attends to nothing. Keys whose weight equals the top weight up to float rounding
(relative difference at most :data:`TIE_RTOL`) tie for the top: ``top_count`` says how many, :func:`tied` which.
Computed once per trace (``Trace.reading``), with two argmaxes over the rows, never a full sort.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TIE_RTOL = 1e-9  # two weights within this relative difference are equal but for rounding (float64 gives ~1e-16)


@dataclass(frozen=True, kw_only=True)
class Reading:
    """Per query row (shape (n,), or (h, n) with h heads): top key and its weight, second key and its weight,
    entropy in bits, and whether the row is fully masked. ``max_entropy`` is log₂ n; ``row_max_entropy`` is the
    most a row can have under the mask, log₂ (number of keys it may attend), 0 for a fully masked row.
    A fully masked row has top = second = 0 with weights 0 (check ``fully_masked`` first). ``top_count`` is how many
    keys tie for the top weight (1 when one key has it alone)."""

    top: np.ndarray
    top_weight: np.ndarray
    second: np.ndarray
    second_weight: np.ndarray
    entropy: np.ndarray
    fully_masked: np.ndarray
    max_entropy: float
    row_max_entropy: np.ndarray
    top_count: np.ndarray


def tied(w: np.ndarray, top_weight: np.ndarray) -> np.ndarray:
    """Which keys tie for the top weight of their row: w (..., n) and the rows' top weights (...) -> bool (..., n)."""
    top = np.asarray(top_weight)[..., None]
    return (w >= top - TIE_RTOL * np.abs(top)) & (top > 0)


def read(w: np.ndarray, allowed: np.ndarray | None = None) -> Reading:
    """The reading of a weights matrix (n, n), or a per-head stack (h, n, n); ``allowed`` is the mask in force."""
    n = w.shape[-1]
    top = np.argmax(w, axis=-1)  # (..., n)
    top_weight = np.take_along_axis(w, top[..., None], axis=-1)[..., 0]  # (..., n)
    rest = w.copy()
    np.put_along_axis(rest, top[..., None], -np.inf, axis=-1)
    second = np.argmax(rest, axis=-1) if n > 1 else top  # (..., n)
    second_weight = np.take_along_axis(w, second[..., None], axis=-1)[..., 0] if n > 1 else np.zeros_like(top_weight)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(w > 0, w * np.log2(w), 0.0), axis=-1)  # bits; 0 · log 0 counts as 0
    may = (w > 0) if allowed is None else np.broadcast_to(allowed, w.shape)  # (..., n, n)
    count = may.sum(axis=-1) if allowed is not None else np.full(w.shape[:-1], n)  # (..., n) keys each row may see
    row_max = np.log2(np.maximum(count, 1)).astype(float)  # (..., n)
    fully_masked = ~may.any(axis=-1)  # (..., n)
    top_count = np.maximum(tied(w, top_weight).sum(axis=-1), 1)  # (..., n)
    return Reading(
        top=top,
        top_weight=top_weight,
        second=second,
        second_weight=second_weight,
        entropy=entropy,
        fully_masked=fully_masked,
        max_entropy=float(np.log2(n)),
        row_max_entropy=row_max,
        top_count=top_count,
    )


HABITS = ("previous", "self", "next", "key")  # checked in this order; ties go to the earlier one
SPREAD = 0.85  # mean entropy, as a share of the most each row can have, from which a head "spreads out"


@dataclass(frozen=True, kw_only=True)
class Habit:
    """What one head mostly does, read from its weights: ``kind`` is "previous" (row i's top key is i − 1), "self"
    (i), "next" (i + 1), "key" (one key, ``key``, is the top key of most rows), "spread" (the rows' mean entropy is
    at least SPREAD of the most they can have, ``share`` then being that mean ratio), "mixed" (no pattern holds for
    half of the rows; ``share`` and ``key`` are then the strongest one's) or "none" (no row has two keys to choose
    from). ``rows`` counts the rows that follow it out of ``of`` rows that can choose (not fully masked, 2+ keys)."""

    kind: str
    key: int | None
    rows: int
    of: int
    share: float
    strongest: str = ""


def habit(r: Reading, head: int | None = None) -> Habit:
    """The habit of one head (``head`` of a per-head reading, or the single matrix's), from its top keys and
    entropies: which of "previous", "self", "next" or "one key" holds for the most rows, or "spread"."""
    pick = (lambda a: a[head]) if head is not None else (lambda a: a)
    top, masked, ent, most = pick(r.top), pick(r.fully_masked), pick(r.entropy), pick(r.row_max_entropy)
    rows = ~masked & (most > 0)  # (n,) rows that choose among 2+ keys
    of = int(rows.sum())
    if of == 0:
        return Habit(kind="none", key=None, rows=0, of=0, share=0.0)
    spread = float(np.mean(ent[rows] / most[rows]))
    if spread >= SPREAD:
        return Habit(kind="spread", key=None, rows=of, of=of, share=spread)
    i = np.arange(top.shape[0])
    mode = int(np.bincount(top[rows]).argmax())
    counts = {
        "previous": int(np.sum(rows & (top == i - 1))),
        "self": int(np.sum(rows & (top == i))),
        "next": int(np.sum(rows & (top == i + 1))),
        "key": int(np.sum(rows & (top == mode))),
    }
    best = max(HABITS, key=lambda k: (counts[k], -HABITS.index(k)))
    key = mode if best == "key" else None
    if 2 * counts[best] < of:
        return Habit(kind="mixed", key=key, rows=counts[best], of=of, share=counts[best] / of, strongest=best)
    return Habit(kind=best, key=key, rows=counts[best], of=of, share=counts[best] / of, strongest=best)
