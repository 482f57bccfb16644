"""What a page shows of a trace array: 2-D tables (a batch of one dropped, heads stacked) and reading lines."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..names import squeeze_batch, token_labels
from ..trace import Trace
from . import session
from .text import esc


def as_2d(a: np.ndarray) -> np.ndarray:
    """The matrix a page shows: the single item of a batch of one; h heads' (h, n, n) stacked as (h·n, n)."""
    a = a[0] if a.ndim == 4 else squeeze_batch(a)  # (1, h, n, n) -> (h, n, n); (1, n, d) -> (n, d)
    return a.reshape(-1, a.shape[-1]) if a.ndim == 3 else a


def per_head(a: np.ndarray) -> np.ndarray:
    """A square array as (h, n, n): one matrix per head (h = 1 without heads), a batch of one dropped."""
    a = a[0] if a.ndim == 4 else squeeze_batch(a)
    return a if a.ndim == 3 else a[None]


def key_labels(s: session.Session) -> list[str]:
    """The keys' labels: the source sentence's in cross-attention, else the tokens' (the same as ``s.labels``)."""
    return token_labels(s.source or s.tokens)


def shown(s: session.Session, trace: Trace, name: str) -> tuple[np.ndarray, list[str], list[str]]:
    """A trace array as the 2-D table a page shows, with its row and column labels (rows "head 2 · cat" with heads)."""
    m = as_2d(getattr(trace, name))
    rows, cols = s.axis_labels(name, m.shape)
    if m.shape[0] != len(rows):  # heads stacked
        rows = [f"head {k + 1} · {t}" for k in range(m.shape[0] // len(rows)) for t in rows]
    return m, rows, cols


def reading_lines(t: Trace, tokens: Sequence[str], rows: Sequence[int], head: int = 0) -> list[str]:
    """“**The** attends most to **on** (89.7%)” for each of ``rows`` (or that the row is fully masked), in ``head``;
    the top keys are found once per trace (``Trace.reading``)."""
    r = t.reading
    pick = (lambda a: a[head]) if r.top.ndim == 2 else (lambda a: a)
    top, weight, masked = pick(r.top), pick(r.top_weight), pick(r.fully_masked)
    tk = [esc(t) for t in token_labels(tokens)]
    keys = [esc(x) for x in token_labels(t.tokens_kv)] if t.tokens_kv else tk  # cross-attention: the source's
    return [
        f"**{tk[i]}** attends to nothing (every key is masked; its weights and output are 0)"
        if masked[i]
        else f"**{tk[i]}** attends most to **{keys[top[i]]}** ({weight[i]:.1%})"
        for i in rows
    ]
