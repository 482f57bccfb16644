"""What each head does on one text: its previous-token, induction and first-token scores, its role, the loss by half.

For one text of n tokens and a head's weights A (n, n), three scores, each the mean of the weight the head puts
where a head of that kind would:

    previous-token     mean over t ≥ 1 of A[t, t − 1]
    induction          mean over the positions t whose token occurred before, at j < t, of Σ_j A[t, j + 1]
                       (the token that followed the earlier occurrence: what an induction head copies)
    first-token sink   mean over t ≥ 1 of A[t, 0]

On a sequence of ``half`` distinct tokens repeated these are exactly :func:`attention.model.induction.head_scores`.
A head's role is the kind with the largest score when that score is at least ``ROLE_MIN``, else "none".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import AttentionError
from .layers import log_softmax, probabilities

ROLES = ("previous-token", "induction", "first-token sink")
ROLE_MIN = 0.25  # uniform causal attention over 24 tokens scores 0.12 previous-token and first-token


def induction_targets(ids: Sequence[int]) -> list[list[int]]:
    """For each position t, the positions j + 1 (≤ t) just after each earlier occurrence j of the token at t."""
    seen: dict[int, list[int]] = {}
    out = []
    for t, token in enumerate(ids):
        out.append([j + 1 for j in seen.get(int(token), [])])
        seen.setdefault(int(token), []).append(t)
    return out


def head_scores(weights: np.ndarray, ids: Sequence[int]) -> dict[str, np.ndarray]:
    """The three scores of every head, each (layers, heads), from weights (layers, heads, n, n) on the text ``ids``.
    The induction score is NaN when no token of the text occurs twice."""
    weights = np.asarray(weights, dtype=np.float64)
    n = weights.shape[-1]
    if weights.ndim != 4 or weights.shape[-2] != n or len(ids) != n:
        raise AttentionError(f"weights must be (layers, heads, n, n) for {len(ids)} tokens; got {weights.shape}")
    return scores_from_sums(score_sums(weights, 0, ids), ids)


def score_sums(rows: np.ndarray, start: int, ids: Sequence[int]) -> np.ndarray:
    """What the query rows ``start`` .. ``start`` + m − 1 of every head add to each score, (3, ...) in the order of
    ROLES, from their weights ``rows`` (..., m, n): a text's heads can be scored a block of rows at a time (the sums
    of its blocks are the sums of the whole; :func:`scores_from_sums` makes them means)."""
    m = rows.shape[-2]
    t = np.arange(max(start, 1), start + m)  # (k,): the rows after the first, as the text counts them
    prev = rows[..., t - start, t - 1].sum(axis=-1, dtype=np.float64)  # (...,)
    sink = rows[..., t - start, 0].sum(axis=-1, dtype=np.float64)  # (...,)
    pairs = [(q - start, j) for q, to in enumerate(induction_targets(ids)[: start + m]) if q >= start for j in to]
    at, to = (np.array(p, dtype=np.int64) for p in zip(*pairs, strict=True)) if pairs else ([], [])
    induction = rows[..., at, to].sum(axis=-1, dtype=np.float64)  # (...,): every target's weight
    return np.stack([prev, induction, sink])


def scores_from_sums(sums: np.ndarray, ids: Sequence[int]) -> dict[str, np.ndarray]:
    """The scores from the sums of every row (:func:`score_sums`), by kind: the previous-token and first-token sums
    over the n − 1 rows after the first, the induction sum over the positions whose token occurred before (NaN
    where there are none)."""
    n, nan = len(ids), np.full(sums.shape[1:], np.nan)
    counted = sum(1 for to in induction_targets(ids) if to)  # positions with an earlier copy of their token
    prev, sink = (sums[0] / (n - 1), sums[2] / (n - 1)) if n > 1 else (nan, nan)
    return {"previous-token": prev, "induction": sums[1] / counted if counted else nan, "first-token sink": sink}


def roles(scores: dict[str, np.ndarray]) -> np.ndarray:
    """Each head's role (layers, heads) of str: the kind with the largest score if it is ≥ ROLE_MIN, else "none"."""
    stack = np.stack([np.nan_to_num(scores[r], nan=-1.0) for r in ROLES])  # (3, L, H)
    best = np.argmax(stack, axis=0)  # (L, H)
    named = np.array(ROLES, dtype=object)[best]
    return np.where(np.max(stack, axis=0) >= ROLE_MIN, named, "none")


def uniform_scores(ids: Sequence[int]) -> dict[str, float]:
    """The scores of a head that spreads its weight evenly over every position it may see (causal): chance."""
    n = len(ids)
    A = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]  # (n, n): row t is 1/(t+1) on 0 .. t
    return {k: float(v[0, 0]) for k, v in head_scores(A[None, None], ids).items()}


LOSS_ROWS = 256  # positions whose log-probabilities are made at once (a 49,152-token vocabulary: 50 MB in float32)


def position_losses(logits: np.ndarray, ids: Sequence[int]) -> np.ndarray:
    """The next-token loss at each position t < n − 1: −log p(ids[t + 1] | tokens 0 .. t), (n − 1,), in nats; made
    LOSS_ROWS positions at a time (at 2,046 tokens the whole log-softmax would be 400 MB in float32)."""
    logits, targets = np.asarray(logits), np.asarray(ids[1:], dtype=np.int64)  # (n, V), (n − 1,)
    out = np.empty(len(targets), dtype=np.result_type(logits.dtype, np.float32))
    for r in range(0, len(targets), LOSS_ROWS):
        logp = log_softmax(logits[r : min(r + LOSS_ROWS, len(targets))])  # (m, V)
        out[r : r + len(logp)] = -logp[np.arange(len(logp)), targets[r : r + len(logp)]]  # (m,)
    return out


def half_split(ids: Sequence[int]) -> tuple[int, bool]:
    """Where the text's second half starts (n // 2) and whether it repeats the first half exactly."""
    half = len(ids) // 2
    return half, len(ids) == 2 * half and list(ids[:half]) == list(ids[half:])


def half_losses(losses: np.ndarray, half: int) -> tuple[float, float]:
    """The mean loss on the first half (targets 1 .. half − 1) and on the second (targets half + 1 .. n − 1), as
    :func:`attention.model.induction.half_losses` splits them: each second-half target's previous token is in the
    repeat. NaN for an empty half."""
    first, second = losses[: max(half - 1, 0)], losses[half:]
    return (float(first.mean()) if first.size else float("nan"), float(second.mean()) if second.size else float("nan"))


def top_next(logits_row: np.ndarray, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """The k most likely next tokens (ids, most likely first) and their probabilities, from one row of logits."""
    p = probabilities(logits_row)  # (V,), float64
    best = np.argsort(-p, kind="stable")[:k]
    return best, p[best]
