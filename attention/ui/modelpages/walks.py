"""Greedy generation through the KV cache, step by step, kept per (model, prompt, steps) and shared by every session."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import kvcache
from ...model.layers import probabilities
from ...model.model import KVCache, Step
from ..core import models
from ..core.cache import TraceCache

TOP = 5  # next tokens shown at each step
KEEP_WALKS = 8  # walks kept (each extends the one before it: a press feeds only the new tokens)
KEEP_BYTES = 256 << 20  # and at most about this many bytes of their caches (GPT-2 small: 144 KiB a token)
_WALKS = TraceCache(max_bytes=KEEP_BYTES, max_entries=KEEP_WALKS, ttl=math.inf, measure=lambda w: w.cache_bytes)


@dataclass(frozen=True, eq=False)
class Said:
    """One step as the history table shows it: the token fed at ``position`` and the top next tokens after it."""

    position: int
    token: int
    top: np.ndarray  # (TOP,) token ids, most likely first
    probs: np.ndarray  # (TOP,) their probabilities


@dataclass(frozen=True, eq=False)
class Walk:
    """The prompt in one forward, then ``steps`` greedy tokens each fed through the cache. ``tokens`` the prompt and
    the new tokens (every one is in the cache); ``step`` the last token fed (its queries, attention rows over the
    cache and logits: what the page shows); ``cache`` per layer (K, V), each (heads, len(tokens), d_head);
    ``said`` every step's token and top next tokens, the prompt's last token first."""

    model_id: str
    prompt: tuple[int, ...]
    tokens: tuple[int, ...]
    step: Step
    cache: KVCache
    said: tuple[Said, ...]

    @property
    def steps(self) -> int:
        return len(self.tokens) - len(self.prompt)

    @property
    def cache_bytes(self) -> int:
        """The bytes the cache's arrays hold, counted from the arrays themselves."""
        return sum(K.nbytes + V.nbytes for K, V in self.cache)


def _said(step: Step) -> Said:
    p = probabilities(step.logits)
    top = np.argsort(-p, kind="stable")[:TOP]  # (TOP,)
    return Said(step.position, step.token, top, p[top])


def walk(model_id: str, prompt: tuple[int, ...], steps: int) -> Walk:
    """The walk of ``steps`` greedy tokens after ``prompt`` on the model ``model_id``, extending the longest walk
    kept for the same prompt (each new token is the most likely one after the last; it is fed through the cache)."""
    return _WALKS.get((model_id, prompt, steps), lambda: _walked(model_id, prompt, steps))


def _walked(model_id: str, prompt: tuple[int, ...], steps: int) -> Walk:
    """The walk made: from the longest one kept for the prompt, or from the prompt's one forward."""
    shorter = [w for (who, said, _), w in _WALKS.items() if (who, said) == (model_id, prompt) and w.steps < steps]
    start = max(shorter, key=lambda w: w.steps) if shorter else None
    m = models.get(model_id)
    if start is None:
        with models.LOCK:
            step, cache = m.prefill(list(prompt))
        start = Walk(model_id, prompt, prompt, step, cache, (_said(step),))
    tokens, step, cache, said = list(start.tokens), start.step, start.cache, list(start.said)
    for _ in range(steps - start.steps):
        nxt = int(said[-1].top[0])  # the most likely next token: greedy
        with models.LOCK:  # one token at a time: a long walk (redone after its cache was let go) never holds
            step, cache = m.feed(nxt, cache)  # every other session's runs for its whole length
        tokens.append(nxt)
        said.append(_said(step))
    return Walk(model_id, prompt, tuple(tokens), step, cache, tuple(said))


def cache_bytes(model: models.Model, tokens: int, bytes_per_value: int) -> int:
    """What a cache of ``tokens`` tokens holds: layers × 2 (K and V) × key/value heads × d_head × tokens × bytes a
    number (grouped query heads share their key/value head's cache)."""
    c = model.config
    return kvcache.bytes_per_token(c.n_layers, c.kv_heads, c.d_head, bytes_per_value) * tokens
