"""Target attention patterns to learn: previous token, next token, self, first, uniform, one key, same word, a grid.

A target is an n × n matrix T (query × key) whose rows sum to 1, and the rows that count: a row with nothing to
attend under the target (the first token has no previous token) or under the mask (a fully masked row) is left out
of the loss and of the accuracy. ``best`` marks, per row, the keys with the row's largest target weight: a row is
hit when the weights' argmax is one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .errors import AttentionError, as_matrix
from .names import is_whole

KINDS = ("previous", "next", "self", "first", "uniform", "token", "same_word", "custom")
LABELS = {
    "previous": "previous token",
    "next": "next token",
    "self": "itself",
    "first": "the first token",
    "uniform": "every token equally",
    "token": "one token (j) for every row",
    "same_word": "the same word (every occurrence of the query's own word)",
    "custom": "a grid you paint",
}


@dataclass(frozen=True)
class Target:
    """A target pattern (n, n), rows summing to 1 where ``rows`` is True (0 elsewhere), and its name."""

    name: str
    pattern: np.ndarray  # (n, n)
    rows: np.ndarray  # (n,) bool: the rows that count

    @property
    def best(self) -> np.ndarray:
        """(n, n) bool: the keys with their row's largest target weight (several on a tie, as for uniform)."""
        return (self.pattern == self.pattern.max(axis=-1, keepdims=True)) & self.rows[..., None]


def _from_rows(name: str, pattern: np.ndarray) -> Target:
    """A target from unnormalised non-negative rows; an all-zero row does not count."""
    total = pattern.sum(axis=-1, keepdims=True)  # (n, 1)
    rows = total[..., 0] > 0  # (n,)
    return Target(name, np.divide(pattern, total, out=np.zeros_like(pattern), where=total > 0), rows)


def previous(n: int) -> Target:
    """Row i attends token i − 1; row 0 has no previous token and does not count."""
    return _from_rows("previous", np.eye(n, k=-1))


def next_token(n: int) -> Target:
    """Row i attends token i + 1; the last row does not count."""
    return _from_rows("next", np.eye(n, k=1))


def itself(n: int) -> Target:
    """Row i attends token i."""
    return _from_rows("self", np.eye(n))


def first(n: int) -> Target:
    """Every row attends token 0."""
    return to_token(n, 0, name="first")


def uniform(n: int, allowed: np.ndarray | None = None) -> Target:
    """Every row spreads evenly over the keys it may attend (all n, or those ``allowed`` (n, n) leaves)."""
    return _from_rows("uniform", np.ones((n, n)) if allowed is None else np.asarray(allowed, dtype=float))


def to_token(n: int, j: int, name: str = "token") -> Target:
    """Every row attends token j (0-based)."""
    if not (is_whole(j) and 0 <= j < n):
        raise AttentionError(f"the target's key j must be a token index from 0 to {n - 1}; got {j!r}", field="target")
    pattern = np.zeros((n, n))
    pattern[:, j] = 1.0
    return _from_rows(name, pattern)


def same_word(tokens: Sequence[str], include_self: bool = True) -> Target:
    """Row i attends every occurrence of its own word (compared lower-cased).

    With ``include_self`` (the default) the row's own position is one of them, and a word that occurs once
    attends to itself, so every row counts. This is the version a content rule can reach: without positions two
    occurrences of a word are the same vector, so no pattern of Q and K can prefer the other occurrence to the
    query's own. With ``include_self=False`` row i attends only the other occurrences, and rows of words that
    occur once do not count."""
    words = [str(t).lower() for t in tokens]
    pattern = np.array([[float(a == b) for b in words] for a in words])  # (n, n)
    if not include_self:
        np.fill_diagonal(pattern, 0.0)
    return _from_rows("same_word", pattern)


def custom(grid: object, tokens: Sequence[str] | None = None) -> Target:
    """A painted grid (n, n) of non-negative weights, each row normalised to sum to 1. An all-zero row is an error
    naming the row: every row must attend something."""
    rows = list(tokens) if tokens else None
    g = as_matrix("target", grid, rows=rows, cols=rows)
    if g.shape[0] != g.shape[1] or (rows is not None and g.shape[0] != len(rows)):
        want = f"{len(rows)} × {len(rows)}" if rows is not None else "square"
        raise AttentionError(f"the target grid must be {want} (query × key); got {g.shape}", matrix="target")
    if (g < 0).any():
        i, j = (int(v) for v in np.argwhere(g < 0)[0])
        raise AttentionError(
            f"the target grid has a negative weight at row {i + 1}, column {j + 1} ({g[i, j]:g}); weights are ≥ 0",
            matrix="target",
            cell=(i, j),
        )
    empty = np.flatnonzero(g.sum(axis=-1) == 0)
    if empty.size:
        i = int(empty[0])
        name = f"row {i + 1}" + (f" ({rows[i]!r})" if rows else "")
        raise AttentionError(
            f"the target grid's {name} is all zero; give every row at least one key to attend",
            matrix="target",
            cell=(i, 0),
        )
    return _from_rows("custom", g)


def make(
    kind: str,
    tokens: Sequence[str],
    *,
    j: int | None = None,
    grid: object = None,
    include_self: bool = True,
    allowed: np.ndarray | None = None,
) -> Target:
    """The target ``kind`` (one of KINDS) for these tokens, fitted to the mask ``allowed`` (see :func:`fit`).
    "token" needs ``j``; "custom" needs ``grid``."""
    n = len(tokens)
    if kind == "token" and j is None:
        raise AttentionError("the target 'token' needs the key j every row attends", field="target")
    if kind == "custom" and grid is None:
        raise AttentionError("the target 'custom' needs a grid (query × key)", field="target")
    builders = {
        "previous": lambda: previous(n),
        "next": lambda: next_token(n),
        "self": lambda: itself(n),
        "first": lambda: first(n),
        "uniform": lambda: uniform(n, allowed),
        "token": lambda: to_token(n, j),  # type: ignore[arg-type]
        "same_word": lambda: same_word(tokens, include_self),
        "custom": lambda: custom(grid, tokens),
    }
    if kind not in builders:
        raise AttentionError(f"target must be one of {', '.join(KINDS)}; got {kind!r}", field="target")
    return fit(builders[kind](), allowed, tokens)


def fit(target: Target, allowed: np.ndarray | None, tokens: Sequence[str] | None = None) -> Target:
    """The target under a mask (n, n), True = may attend: fully masked rows stop counting, and a counted row that
    puts weight on a masked key is an error naming the row and the key (no weights can reach it)."""
    if allowed is None:
        return target
    allowed = np.broadcast_to(np.asarray(allowed, dtype=bool), target.pattern.shape)
    rows = target.rows & allowed.any(axis=-1)  # (n,)
    bad = (target.pattern > 0) & ~allowed & rows[..., None]  # (n, n)
    if bad.any():
        *_, i, k = (int(v) for v in np.argwhere(bad)[0])
        label = (lambda r: f"{r + 1} ({tokens[r]!r})") if tokens else (lambda r: f"{r + 1}")
        raise AttentionError(
            f"the target '{target.name}' asks row {label(i)} to attend key {label(k)}, which the mask forbids; "
            "choose another target or mask",
            field="target",
            cell=(i, k),
        )
    return Target(target.name, target.pattern, rows)
