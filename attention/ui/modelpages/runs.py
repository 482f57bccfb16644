"""Runs of the chosen model, measured once per content (model, text and ablations) and shared by every session."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ... import charts
from ...model import roles
from ...model.attend import BLOCK_CELLS, visible, weigh
from ...model.interventions import ablate
from ...model.model import Run
from ..core import jobs, models
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
    """What the page shows of one run: ``scores`` each kind's (layers, heads); ``roles`` (layers, heads); ``losses``
    (n − 1,) per position; ``first`` and ``second`` the halves' mean losses; ``logits`` (n, V); ``pictures``
    (layers, heads, b, b) each head's weights as drawn (NaN where masked), reduced by blocks of ``block`` tokens a
    side, each the largest weight in it (:func:`attention.charts.panel_block`: 1, every cell, up to 128 tokens);
    ``after`` (layers, heads, n) each head's mean weight on key j over the queries after it (the First token page's
    w_lh(j); the last key, which no query follows, its own row's).
    Every head's weights (layers, heads, n, n), ``weights``, are ``held`` when given, else made from ``run`` when
    first read (4.5 GB at 2,048 tokens on SmolLM2: a long text's page reads ``pictures`` and :meth:`window`)."""

    ids: tuple[int, ...]
    ablations: tuple[Ablation, ...]
    held: np.ndarray | None
    scores: dict[str, np.ndarray]
    roles: np.ndarray
    losses: np.ndarray
    first: float
    second: float
    logits: np.ndarray
    run: Run | None = None
    pictures: np.ndarray | None = None
    block: int = 1
    after: np.ndarray | None = None

    @property
    def weights(self) -> np.ndarray:
        """Every head's weights (layers, heads, n, n), read-only (made from the run when first read)."""
        if self.held is not None:
            return self.held
        w = self.run.weights  # the run keeps it once made
        w.flags.writeable = False
        return w

    @property
    def shape(self) -> tuple[int, int, int]:
        """(layers, heads, n)."""
        return (*self.roles.shape, len(self.ids))

    def window(self, layer: int, head: int, rows: slice, cols: slice) -> np.ndarray:
        """One head's weights at query rows ``rows`` and key columns ``cols`` (m_r, m_c), made for those rows only."""
        if self.held is not None or self.run is None:
            return np.asarray(self.weights[layer, head, rows, cols])
        return self.run.traces.rows(layer, rows)[head, :, cols]  # (m_r, n) → (m_r, m_c)


def run(model_id: str, ids: tuple[int, ...], ablations: tuple[Ablation, ...] = ()) -> Run:
    """The model's run on ``ids`` with these ablations: what it keeps (the streams, the heads' outputs, the logits;
    no n × n weights, which its traces make when read). The model's run cache holds it: a second reading of the same
    text runs nothing again."""
    m = models.get(model_id)
    with models.LOCK:
        return m.run(list(ids), [ablate(layer, head, how) for layer, head, how in ablations])


def last_logits(ids: tuple[int, ...], model_id: str | None = None) -> np.ndarray:
    """The chosen model's (or ``model_id``'s) logits after the last token of ``ids``, nothing ablated: (V,), without
    measuring every head's weights (which :func:`measure` does); read-only, kept by content
    (:func:`attention.ui.core.jobs.last_logits`)."""
    return jobs.last_logits(model_id or inside.model_id(), tuple(ids))


def measure(ids: tuple[int, ...], ablations: tuple[Ablation, ...] = (), model_id: str | None = None) -> Measured:
    """The chosen model's (or ``model_id``'s) run on ``ids`` with these ablations, measured; cached by content."""
    return _measure(model_id or inside.model_id(), ids, ablations)


def _bytes(m: Measured) -> int:
    held = [*m.run.residuals, *m.run.traces.concats] if m.run is not None else [m.weights]
    pictures = m.pictures.nbytes if m.pictures is not None else 0
    after = m.after.nbytes if m.after is not None else 0
    return int(m.logits.nbytes + m.losses.nbytes + sum(a.nbytes for a in held) + pictures + after)


# Runs by content, bounded by bytes: a GPT-2 run's logits alone are n × 50,257 float64 (26 MB at 64 tokens). With
# an ablation Every head reads two measurements on each run (the ablated one and the one without), and at 2,048
# tokens on SmolLM2-135M each holds about 0.7 GB (its logits 0.4 GB, its streams and heads' outputs 0.29 GB, most of
# them the same arrays the model's run cache holds): the bound keeps two, so a rerun recomputes neither.
RUNS_BYTES = 3 * 1024**3 // 2
_RUNS = TraceCache(max_bytes=RUNS_BYTES, max_entries=64, ttl=3600, measure=_bytes)


def _measure(model_id: str, ids: tuple[int, ...], ablations: tuple[Ablation, ...]) -> Measured:
    def run() -> Measured:
        m = models.get(model_id)
        with models.LOCK:
            out = m.run(list(ids), [ablate(layer, head, how) for layer, head, how in ablations])
        return measured(ids, ablations, out)

    return _RUNS.get(repr((model_id, ids, ablations)), run)


def measured(ids: tuple[int, ...], ablations: tuple[Ablation, ...], run: Run) -> Measured:
    """What the page shows of a run of the model on ``ids`` (its roles, pictures, losses by half and logits), every
    head's weights read layer by layer in blocks of query rows (:func:`summary`); read-only."""
    scores, pictures, block, after = summary(run, ids)
    losses = roles.position_losses(run.logits, ids)
    first, second = roles.half_losses(losses, roles.half_split(ids)[0])
    for a in (*scores.values(), losses, pictures, after):
        a.flags.writeable = False  # shared by every session that shows this content
    return Measured(ids, ablations, None, scores, roles.roles(scores), losses, first, second, run.logits, run,
                    pictures, block, after)  # fmt: skip


CHUNK_CELLS = BLOCK_CELLS  # weights of one block of query rows, every head: weigh's own block, so it makes no more


def summary(run: Run, ids: tuple[int, ...]) -> tuple[dict[str, np.ndarray], np.ndarray, int, np.ndarray]:
    """Every head's scores (each kind's (layers, heads)), its picture (layers, heads, b, b: blocks of ``block``
    tokens a side, each its largest weight, NaN where every key is masked) and its mean weight on each key over the
    queries after it (layers, heads, n: :class:`Measured`'s ``after``), read a layer at a time in blocks of query
    rows: no layer's n × n weights exist at once (at 2,046 tokens on SmolLM2 a block is 224 rows)."""
    n, c = len(ids), run.model.config
    f = charts.panel_block(n)
    step = max(f, CHUNK_CELLS // (c.n_heads * n) // f * f)  # query rows a block: a multiple of f
    sums = np.zeros((3, c.n_layers, c.n_heads))
    columns = np.zeros((c.n_layers, c.n_heads, n))  # Σ_i A[i, j], every query i
    diagonal = np.zeros((c.n_layers, c.n_heads, n))  # A[j, j]
    pictures = np.full((c.n_layers, c.n_heads, -(-n // f), -(-n // f)), np.nan, run.logits.dtype)
    for layer in range(c.n_layers):
        seen = visible(0, n, n, c.sliding_window if c.layer_type(layer) == "sliding" else 0)  # (n, n)
        for r, A in _row_blocks(run, layer, n, step):  # A: (H, m, e), the keys up to the block's last row
            sums[:, layer] += roles.score_sums(A, r, ids)
            m, e = A.shape[-2:]
            columns[layer, :, :e] += A.sum(axis=-2, dtype=np.float64)  # (H, e)
            diagonal[layer, :, r : r + m] = np.diagonal(A[..., r : r + m], axis1=-2, axis2=-1)  # (H, m)
            if f == 1:
                pictures[layer, :, r : r + m, :e] = np.where(seen[r : r + m, :e], A, np.nan)
                continue
            live = charts.pool_blocks(seen[r : r + m, :e].astype(np.float32), f, "max") > 0  # a key to see
            pooled = charts.pool_blocks(A, f, "max")  # (H, m/f, e/f): a masked key's weight is 0, never the max
            pictures[layer, :, r // f : r // f + pooled.shape[-2], : pooled.shape[-1]] = np.where(live, pooled, np.nan)
    return roles.scores_from_sums(sums, ids), pictures, f, mean_after(columns - diagonal, diagonal)


def mean_after(below: np.ndarray, diagonal: np.ndarray) -> np.ndarray:
    """Each head's mean weight on every key j over the queries after it, w(j) = 1/(n − 1 − j) · Σ_{i > j} A[i, j],
    from ``below`` (..., n) the sums Σ_{i > j} A[i, j] and ``diagonal`` (..., n) the A[j, j]: (..., n); the last
    key, which no query follows, its own row's A[n − 1, n − 1]. Causal: the rows above key j hold 0 there."""
    n = below.shape[-1]
    return np.concatenate([below[..., :-1] / np.arange(n - 1, 0, -1), diagonal[..., -1:]], axis=-1)


def _row_blocks(run: Run, layer: int, n: int, step: int) -> Iterator[tuple[int, np.ndarray]]:
    """Layer ``layer``'s weights of every head, ``step`` query rows at a time, over the keys up to the block's last
    row (a causal row sees no later key): (first row, (H, m, e)), as ``run.traces.rows`` makes them (the pass's own
    :func:`~attention.model.attend.weigh`), the layer's q, K and V made once (not once a block: they cost more than
    a block's weights)."""
    if run.traces.eager is not None:  # a run with hooks keeps its traces whole
        yield from ((r, run.traces.rows(layer, slice(r, r + step))[..., : r + step]) for r in range(0, n, step))
        return
    a = run.traces.light(layer)
    for r in range(0, n, step):
        rows, keys = slice(r, r + step), slice(0, min(n, r + step))
        yield r, weigh(a.q[..., rows, :], a.K[..., keys, :], a.V[..., keys, :], a.allowed[rows, keys], a.scale)[2]
