"""A run's attention traces, made when read from each layer's input and its heads' outputs.

A run keeps no n × n array of any head. A run of n tokens keeps, per layer l, the stream entering it (n, d) and the
concatenation of its heads' outputs (n, H·dₕ), after any ablation or patch. A trace is made when read, from that
layer's input, by the forward pass's own functions (:func:`.attend.project` and :func:`.attend.weigh`, with the same
weights and interventions):

    X = N₁(x_l);  q, K, V = project(X)                 the pass's projections, QK-norm and rotation   (H, n, dₕ) ...
    S, scaled, A = weigh(q, K, V)                      the pass's blocks of query rows                (H, n, n) × 3
    concat: kept;  output = concat W_o                 (n, H·dₕ), (n, d)

so every array equals the pass's (the same steps on the same numbers). :meth:`Traces.head` makes one head's
(n, n) arrays only. Made traces are kept in the model's bounded memo (:data:`MEMO_BYTES`), shared by the runs of
the same text and interventions. A run with hooks keeps its traces as the pass made them (a hook may have changed
them), as before.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence

import numpy as np

from ..errors import AttentionError
from ..heads import kv_block, split_heads
from ..trace import Trace
from . import attend
from .attend import Attended

MEMO_BYTES = 1 << 29  # the traces made on demand that a model keeps (its most recent ones, at least one)


class Memo:
    """Made traces by key, the most recent kept within ``MEMO_BYTES`` (safe across threads: the pages' sessions
    read runs of one model at once)."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple, Trace] = OrderedDict()
        self._bytes: dict[tuple, int] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Trace | None:
        """The trace under ``key`` (now the most recent), or None."""
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: tuple, trace: Trace) -> Trace:
        """Keep ``trace`` (its arrays made read-only: later runs of the same text share it); the oldest go past the
        bound."""
        for f in dataclasses.fields(trace):
            a = getattr(trace, f.name)
            if isinstance(a, np.ndarray):
                a.flags.writeable = False
        with self._lock:
            self._items[key] = trace
            self._bytes[key] = sum(a.nbytes for a in (trace.scores, trace.scaled, trace.weights))
            while len(self._items) > 1 and sum(self._bytes.values()) > MEMO_BYTES:
                old, _ = self._items.popitem(last=False)
                del self._bytes[old]
        return trace

    def clear(self) -> None:
        """Forget every made trace."""
        with self._lock:
            self._items.clear()
            self._bytes.clear()


class Traces(Sequence):
    """The traces of a run's layers (``traces[l]``; ``len``, iteration), made when read (see the module's
    docstring). ``eager`` holds a run's traces as its pass made them (a run with hooks), else None."""

    def __init__(self, model, residuals: tuple, concats: tuple, interventions: tuple, tokens: Sequence[str],
                 key: bytes, eager: tuple[Trace, ...] | None = None):
        self.model, self.residuals, self.concats, self.interventions = model, residuals, concats, interventions
        self.tokens, self.key, self.eager = tuple(tokens), key, eager
        self._last: tuple[int, Attended] | None = None  # the layer light() made last (a reader asks it again soon)

    def __len__(self) -> int:
        return len(self.eager) if self.eager is not None else len(self.concats)

    def __iter__(self) -> Iterator[Trace]:
        return (self[layer] for layer in range(len(self)))

    def __getitem__(self, layer):  # type: ignore[override]
        if isinstance(layer, slice):
            return [self[i] for i in range(len(self))[layer]]
        layer = self._layer(layer)
        if self.eager is not None:
            return self.eager[layer]
        made = self.model._memo.get((self.key, layer))
        if made is not None:
            return made
        a = self.light(layer)
        S, scaled, A, _ = attend.weigh(a.q, a.K, a.V, a.allowed, a.scale)  # (..., H, n, n) × 3
        return self.model._memo.put((self.key, layer), self._trace(layer, a._replace(scores=S, scaled=scaled,
                                                                                      weights=A)))

    def light(self, layer: int) -> Attended:
        """Layer ``layer``'s attention without its n × n arrays (None): X, q, K, V, the kept concatenation and
        the output, remade from the layer's input as the pass made them (a run with hooks: its trace's own)."""
        layer = self._layer(layer)
        if self.eager is not None:
            return _attended(self.eager[layer], self.model.config.n_heads, self.model.config.kv_heads)
        last = self._last
        if last is not None and last[0] == layer:
            return last[1]
        ivs = [iv for iv in self.interventions if iv.layer == layer]
        params, X, W, _ = self.model.attention_inputs(layer, self.residuals[layer], ivs)
        q_raw, k_raw, q, K, V, allowed, scale = attend.project(self.model.config, params, layer, X, W)
        concat = self.concats[layer]  # (..., n, H·dₕ): the pass's, after any ablation or patch
        output = attend.linear(concat, W[3])  # (..., n, d)
        made = Attended(X, W, q_raw, k_raw, q, K, V, None, None, None, concat, output, allowed, scale)
        self._last = (layer, made)
        return made

    def output(self, layer: int, rows: slice | Sequence[int] = slice(None)) -> np.ndarray:
        """Layer ``layer``'s attention output at ``rows``, (..., m, d), as the pass made it: the kept heads' outputs
        there times W_o as the layer ran (a replaced block included), with no q, K, V or n × n array (a run with
        hooks: its trace's own, a hook on the heads' results included)."""
        layer = self._layer(layer)
        if self.eager is not None:
            return self.eager[layer].output[..., rows, :]
        last = self._last
        if last is not None and last[0] == layer:
            return last[1].output[..., rows, :]
        return attend.linear(self.concats[layer][..., rows, :], self.W_o(layer))  # (..., m, d)

    def W_o(self, layer: int) -> np.ndarray:
        """W_o (H·dₕ, d) as layer ``layer`` ran with it (a replaced block of rows included)."""
        layer = self._layer(layer)
        mine = [iv for iv in self.interventions if iv.layer == layer and iv.kind == "replace"]
        return attend.replaced(self.model.config, self.model.layer_weights(layer), [iv for iv in mine
                                                                                    if iv.matrix == "W_o"])[3]

    def head(self, layer: int, head: int) -> Trace:
        """Query head ``head`` of layer ``layer`` as a single-head trace (:meth:`~attention.Trace.head`), making
        only its own (n, n) arrays."""
        layer = self._layer(layer)
        full = self.eager[layer] if self.eager is not None else self.model._memo.get((self.key, layer))
        if full is not None:
            return full.head(head)
        made = self.model._memo.get((self.key, layer, head))
        if made is not None:
            return made
        a, c = self.light(layer), self.model.config
        if not (isinstance(head, (int, np.integer)) and 0 <= head < c.n_heads):
            raise AttentionError(f"there is no head {head!r}: this trace has {c.n_heads} head(s), numbered 0 to "
                                 f"{c.n_heads - 1}")
        g = kv_block(head, c.n_heads, c.kv_heads)
        one = slice(head, head + 1)
        S, scaled, A, _ = attend.weigh(a.q[..., one, :, :], a.K[..., g : g + 1, :, :], a.V[..., g : g + 1, :, :],
                                       a.allowed, a.scale)  # (..., 1, n, n) × 3
        n = a.q.shape[-2]
        nothing = np.broadcast_to(np.zeros((), a.q.dtype), (*a.q.shape[:-3], c.n_heads, n, n))  # no memory
        shell = self._trace(layer, a._replace(scores=nothing, scaled=nothing, weights=nothing)).head(head)
        made = dataclasses.replace(shell, scores=S[..., 0, :, :], scaled=scaled[..., 0, :, :], weights=A[..., 0, :, :])
        return self.model._memo.put((self.key, layer, head), made)

    def rows(self, layer: int, rows: slice | Sequence[int]) -> np.ndarray:
        """Every head's weights at the query rows ``rows`` of layer ``layer``: (..., H, m, n), made for those rows
        only (the pass's steps on the same numbers)."""
        layer = self._layer(layer)
        if self.eager is not None or self.model._memo.get((self.key, layer)) is not None:
            w = self[layer].weights
            return (w if w.ndim == self.residuals[0].ndim + 1 else w[..., None, :, :])[..., rows, :]
        a = self.light(layer)
        picked = np.arange(a.q.shape[-2])[rows]  # (m,)
        return attend.weigh(a.q[..., picked, :], a.K, a.V, a.allowed[picked], a.scale)[2]  # (..., H, m, n)

    def row(self, b: int, tokens: Sequence[str], n: int) -> Traces:
        """Text ``b`` of a batch's traces, at its first ``n`` positions (a padded text's own)."""
        residuals, concats = tuple(x[b, :n] for x in self.residuals), tuple(c[b, :n] for c in self.concats)
        key = self.key + b.to_bytes(4, "little")
        if self.eager is not None:
            eager = tuple(dataclasses.replace(t, tokens=tuple(tokens), **_batch_row(t, b, n)) for t in self.eager)
            return Traces(self.model, residuals, concats, self.interventions, tokens, key, eager)
        return Traces(self.model, residuals, concats, self.interventions, tokens, key)

    def _layer(self, layer: object) -> int:
        """The layer's index (negative ones count from the end), or an AttentionError."""
        L = len(self)
        if not (isinstance(layer, (int, np.integer)) and -L <= layer < L):
            raise AttentionError(f"there is no layer {layer!r}: the model has {L} layers", field="layer")
        return int(layer) % L

    def _trace(self, layer: int, a: Attended) -> Trace:
        """The layer's Trace from its attention's arrays."""
        return attend.to_trace(a, self.model.layer_options_for(layer, a.q.shape[-2], self.interventions), self.tokens)


def _attended(t: Trace, H: int, G: int) -> Attended:
    """A layer's trace (a run with hooks) as :func:`Traces.light` gives it: its heads split, (..., H, n, dₕ) and
    (..., G, n, dₕ), without its n × n arrays."""
    q_raw, k_raw = (None, None) if t.Q_raw is None else (split_heads(t.Q_raw, H), split_heads(t.K_raw, G))
    return Attended(t.X, (t.W_q, t.W_k, t.W_v, t.W_o), q_raw, k_raw, split_heads(t.Q, H), split_heads(t.K, G),
                    split_heads(t.V, G), None, None, None, t.concat, t.output, t.allowed, t.scale)


BATCHED_ARRAYS = ("X", "Q", "K", "V", "scores", "scaled", "weights", "output", "Q_raw", "K_raw", "concat")


SQUARES = ("scores", "scaled", "weights")


def _batch_row(trace: Trace, b: int, n: int) -> dict[str, object]:
    """Row b of each array of a batched trace that has the batch axis, at its first n positions (rows, and keys of
    the n × n arrays)."""
    out: dict[str, object] = {name: getattr(trace, name)[b, ..., :n, :] for name in BATCHED_ARRAYS
                              if getattr(trace, name) is not None}
    out.update({name: out[name][..., :n] for name in SQUARES})
    return out | {"allowed": None if trace.allowed is None else trace.allowed[:n, :n]}
