"""The routes of a prediction: which positions, through which heads and MLPs, carry information to it.

After Ferrando & Voita (2024), "Information Flow Routes: Automatically Interpreting Language Models at Scale". Every
residual update is a sum of parts, each written by one piece of the model:

    attention:  y[t] = x[t] + Σ_h Σ_s A_h[t, s] · (v_h[s] W_o^h) (+ b_o)           one part per head and source s
    MLP:        y[t] = x'[t] + MLP(N₂(x'[t]))                                      the residual and the MLP's write
    parallel:   y[t] = x[t] + Σ_h Σ_s A_h[t, s] · (v_h[s] W_o^h) (+ b_o) + MLP(N₂(x[t]))     (GPT-NeoX, one sum)

v_h[s] is the value of source s for head h's group (after N₁ and with b_v), so a head's parts over s add up to its
output. Gemma 3's post-norm on the attention output is held at the whole output (as :func:`.readout.attribute` holds
it): a part is what it writes through that fixed scale, and the parts still add up to the update exactly.

Each part z_i of a sum y gets a share by its proximity to the sum, in L1:

    proximity_i = max(0, ‖y‖₁ − ‖y − z_i‖₁)          share_i = proximity_i / Σ_j proximity_j

A part that points away from the sum gets 0; a part that is the whole sum gets 1.

**The graph.** Its nodes are the stream at each position at each level (the embeddings, then after each attention
and after each MLP; after each layer for a parallel or attention-only model). Starting from the chosen position at
the top, each update's parts whose share exceeds the threshold become edges from their source nodes, and only those
sources are followed down: what is left is connected to the prediction. Shares are computed per layer and only for
the rows still reached, in chunks of rows, so heads × n × n × d numbers never exist at once. The MLP's write is read
off the run (the stream after the layer minus the stream after its attention), not run again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from ..errors import AttentionError
from .model import Run
from .readout import _model, _position

CHUNK = 4_000_000  # numbers of one chunk of head parts (heads × rows × n × d): 32 MB in float64


@dataclass(frozen=True, eq=False)
class Update:
    """One residual update of layer ``layer`` at the positions ``rows`` (m,): ``stage`` "attention", "mlp" or
    "block" (a parallel or attention-only layer's one sum); it goes from level ``below`` to level ``above`` (see
    :func:`levels`). Its parts, each (m, d) unless said: ``residual`` the stream carried through, ``heads``
    (H, m, n, d) each head's write from each source position (None without attention), ``bias`` b_o's write (None
    without), ``mlp`` the MLP's write (None without). ``y`` (m, d) the stream after the update, as the run has it."""

    layer: int
    stage: str
    below: int
    above: int
    rows: np.ndarray
    y: np.ndarray
    residual: np.ndarray
    heads: np.ndarray | None
    bias: np.ndarray | None
    mlp: np.ndarray | None

    def total(self) -> np.ndarray:
        """The parts added up: (m, d), equal to ``y`` to rounding."""
        out = self.residual.copy()
        for part in (self.bias, self.mlp):
            if part is not None:
                out += part
        return out if self.heads is None else out + self.heads.sum(axis=(0, 2))

    def shares(self) -> dict[str, np.ndarray]:
        """Each part's share of the sum (:func:`shares`): "residual", "bias", "mlp" (m,) and "heads" (H, m, n)."""
        parts = {"residual": self.residual, "bias": self.bias, "mlp": self.mlp}
        near = {k: proximity(self.y, v) for k, v in parts.items() if v is not None}
        if self.heads is not None:  # row t's sources 0 .. t only: a causal head writes nothing from later ones
            near["heads"] = np.zeros(self.heads.shape[:3], dtype=self.y.dtype)  # (H, m, n)
            for i, t in enumerate(self.rows.tolist()):
                near["heads"][:, i, : t + 1] = proximity(self.y[i], self.heads[:, i, : t + 1])  # (H, t + 1)
        whole = sum(v.sum(axis=(0, 2)) if k == "heads" else v for k, v in near.items())  # (m,)
        whole = np.where(whole > 0, whole, 1.0)  # no part near the sum (y = 0): every share 0
        return {k: v / (whole[None, :, None] if k == "heads" else whole) for k, v in near.items()}


def proximity(y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """max(0, ‖y‖₁ − ‖y − z‖₁) over the last axis (y broadcast against z): (..., d) -> (...)."""
    return np.maximum(0.0, np.abs(y).sum(axis=-1) - np.abs(y - z).sum(axis=-1))


def levels(run: Run) -> tuple[str, ...]:
    """The graph's rows of nodes, bottom to top: "embeddings", then "layer 1 attention", "layer 1 MLP", ... (or
    "layer 1", ... when each layer is one sum: parallel residual or attention-only)."""
    c = _model(run).config
    one = c.attention_only or c.parallel_residual
    each = [
        [f"layer {k + 1}"] if one else [f"layer {k + 1} attention", f"layer {k + 1} MLP"] for k in range(c.n_layers)
    ]
    return ("embeddings", *(name for names in each for name in names))


def _checked(run: Run) -> None:
    """Routes read the heads' A and V: a run whose heads' outputs or streams were replaced is refused."""
    if any(iv.kind != "replace" for iv in run.interventions):
        raise AttentionError(
            "routes split each head's output into A[t, s] · v[s] W_o: run the model without ablations or patches "
            "(a replaced weight matrix is fine)",
            field="run",
        )


def stages(run: Run) -> int:
    """The updates each layer makes: 1 (parallel residual or attention-only: one sum) or 2 (attention, then MLP)."""
    c = _model(run).config
    return 1 if c.attention_only or c.parallel_residual else 2


def updates(run: Run, layer: int, rows: np.ndarray | None = None, stage: int | None = None) -> list[Update]:
    """Layer ``layer``'s updates at the positions ``rows`` (all by default), bottom first: the attention's and the
    MLP's, or the layer's one sum (``stage`` 0 or 1: that one only). Its head parts are heads × m × n × d numbers:
    pass few rows for a large model."""
    _checked(run)
    c = _model(run).config
    rows = np.arange(len(run.ids)) if rows is None else np.asarray(rows, dtype=int)
    x, below = run.residuals[layer][rows], layer * stages(run)  # (m, d)
    y = run.residuals[layer + 1][rows]  # (m, d): the stream after the layer
    # the MLP's write is what the layer added beyond the attention's: y − mid, the run's own sum (not run again)
    if stages(run) == 1:
        mlp = None if c.attention_only else y - x - _attention_write(run, layer, rows)  # (m, d)
        return [Update(layer, "block", below, below + 1, rows, y, x, *_attention_parts(run, layer, rows), mlp)]
    mid = x + _attention_write(run, layer, rows)  # (m, d): the stream after the attention
    out = []
    if stage in (None, 0):
        out.append(
            Update(layer, "attention", below, below + 1, rows, mid, x, *_attention_parts(run, layer, rows), None)
        )
    if stage in (None, 1):
        out.append(Update(layer, "mlp", below + 1, below + 2, rows, y, mid, None, None, y - mid))
    return out


def _held_scale(run: Run, layer: int, rows: np.ndarray) -> np.ndarray | None:
    """Gemma 3's post-attention RMSNorm as a fixed scale per row (m, d), held at the whole output; None without."""
    model = _model(run)
    c, p = model.config, model.params
    if not c.post_norms:
        return None
    a = run.traces.output(layer, rows) + (p[f"{layer}.b_o"] if c.bias else 0.0)  # (m, d)
    rms = np.sqrt(np.mean(a * a, axis=-1, keepdims=True) + c.ln_eps)  # (m, 1)
    return (c.norm_offset + p[f"{layer}.ln_post_attn.g"]) / rms  # (m, d)


def _attention_write(run: Run, layer: int, rows: np.ndarray) -> np.ndarray:
    """What the attention adds to the stream at ``rows``: concat W_o + b_o, through a held post-norm: (m, d)."""
    model = _model(run)
    a = run.traces.output(layer, rows) + (model.params[f"{layer}.b_o"] if model.config.bias else 0.0)  # (m, d)
    scale = _held_scale(run, layer, rows)
    return a if scale is None else a * scale


def _attention_parts(run: Run, layer: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Each head's write from each source, A_h[t, s] · v_h[s] W_o^h (held), (H, m, n, d), and b_o's (m, d) or None."""
    model = _model(run)
    c = model.config
    written = _written(run, layer)  # (H, n, d): v_h[s] W_o^h
    A = run.traces.rows(layer, rows).reshape(c.n_heads, len(rows), len(run.ids))  # (H, m, n): those rows only
    heads = A[..., None] * written[:, None]  # (H, m, n, d)
    scale = _held_scale(run, layer, rows)  # (m, d) or None
    if scale is not None:
        heads *= scale[None, :, None]
    if not c.bias:
        return heads, None
    b = np.broadcast_to(model.params[f"{layer}.b_o"], (len(rows), c.d_model))  # (m, d)
    return heads, (b * scale if scale is not None else b.copy())


def _written(run: Run, layer: int) -> np.ndarray:
    """Each head's value at each source through its own rows of W_o: v_h[s] W_o^h, (H, n, d)."""
    c = _model(run).config
    H, G, dh = c.n_heads, c.kv_heads, c.d_head
    V = run.traces.light(layer).V  # (G, n, dₕ)
    W_o = run.traces.W_o(layer).reshape(H, dh, c.d_model)  # (H, dₕ, d)
    # one product per head: numpy's stacked matmul runs ~100× slower here than H plain ones through BLAS
    return np.stack([V[h // (H // G)] @ W_o[h] for h in range(H)])  # (H, n, d)


class Edge(NamedTuple):  # a named tuple: a graph can hold 100,000s of edges, made 2× faster than a dataclass's
    """One kept part: ``kind`` "head", "mlp" or "residual"; ``layer``; ``head`` (−1 unless a head); from position
    ``source`` at level ``below`` to position ``target`` at level ``above``; its ``share`` of that update."""

    kind: str
    layer: int
    head: int
    source: int
    target: int
    below: int
    above: int
    share: float


@dataclass(frozen=True)
class Routes:
    """The graph of a prediction at ``position``: ``edges`` above ``threshold`` and connected to the top node
    (strongest first); ``levels`` the names of the node rows, bottom to top; ``nodes`` (level, position) reached."""

    position: int
    threshold: float
    edges: tuple[Edge, ...]
    levels: tuple[str, ...]
    nodes: frozenset[tuple[int, int]]

    def strongest(self, k: int = 10) -> list[tuple[float, tuple[Edge, ...]]]:
        """The k strongest routes from the embeddings to the top node, strongest first, each (strength, its edges
        bottom to top). A route's strength is the product of its edges' shares: the part of each sum it joins that
        flows on along it. Found level by level, keeping the k best routes into each node."""
        best: dict[tuple[int, int], list[tuple[float, tuple[Edge, ...]]]] = {
            (0, p): [(1.0, ())] for level, p in self.nodes if level == 0
        }
        for e in sorted(self.edges, key=lambda e: e.above):  # an edge's source row is complete before it is read
            longer = [(w * e.share, (*path, e)) for w, path in best.get((e.below, e.source), [])]
            mine = best.setdefault((e.above, e.target), [])
            mine.extend(longer)
            mine.sort(key=lambda wp: -wp[0])
            del mine[k:]
        return best.get((len(self.levels) - 1, self.position), [])[:k]


def routes(run: Run, position: int = -1, threshold: float = 0.04) -> Routes:
    """The routes to the prediction at ``position`` (negative counts from the end): every update's parts with a
    share above ``threshold`` (0 to 1) that are connected to that position's top node, walked from the top down."""
    t, model = _position(run, position), _model(run)
    _checked(run)
    if not (isinstance(threshold, (int, float)) and 0 <= threshold < 1):
        raise AttentionError(f"the threshold is a share from 0 up to 1; got {threshold!r}", field="threshold")
    names = levels(run)
    reached: dict[int, set[int]] = {len(names) - 1: {t}}
    edges: list[Edge] = []
    for layer in range(model.config.n_layers - 1, -1, -1):
        for update in _chunks_top_down(run, layer, reached):
            edges += _kept(update, float(threshold), reached.setdefault(update.below, set()))
    nodes = frozenset((level, p) for level, ps in reached.items() for p in ps)
    edges.sort(key=attrgetter("share"), reverse=True)
    return Routes(t, float(threshold), tuple(edges), names, nodes)


def _chunks_top_down(run: Run, layer: int, reached: dict[int, set[int]]) -> Iterator[Update]:
    """Layer ``layer``'s updates, top one first, at the rows reached from above, in chunks of rows. The attention's
    rows are known only once the MLP's edges are kept, so each stage is made when its turn comes."""
    c, each = _model(run).config, stages(run)
    per = max(1, CHUNK // max(1, c.n_heads * len(run.ids) * c.d_model))  # rows per chunk
    for stage in range(each - 1, -1, -1):
        rows = np.array(sorted(reached.get(layer * each + stage + 1, ())), dtype=int)
        for k in range(0, len(rows), per):
            yield updates(run, layer, rows[k : k + per], stage)[0]


def _kept(update: Update, threshold: float, sources: set[int]) -> list[Edge]:
    """The edges of one update above the threshold; their source positions are added to ``sources``."""
    shares, u, out = update.shares(), update, []
    rows = u.rows.tolist()
    for kind in ("residual", "mlp"):
        if kind in shares:
            for i in np.flatnonzero(shares[kind] > threshold).tolist():
                out.append(Edge(kind, u.layer, -1, rows[i], rows[i], u.below, u.above, float(shares[kind][i])))
    if "heads" in shares:
        h, i, s = np.nonzero(shares["heads"] > threshold)  # every head's kept sources, all rows at once
        values = shares["heads"][h, i, s].tolist()
        targets = u.rows[i].tolist()
        out += [
            Edge("head", u.layer, a, b, c, u.below, u.above, v)
            for a, b, c, v in zip(h.tolist(), s.tolist(), targets, values, strict=True)
        ]
    sources.update(e.source for e in out)
    return out
