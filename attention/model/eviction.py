"""The KV cache at length: which keys an eviction policy keeps, what dropping the rest costs, and retrieval heads.

The measurement (:func:`evict`, or :func:`evict_curve` for many policies and budgets over one prefix), on a text
of n tokens whose last m are scored:

    1. the first p = n − m tokens run with the full cache, layer by layer              K, V (G, p, dₕ) per layer
    2. each layer's key/value head g keeps ``budget`` of its p keys, as the policy says   kept (L, G, p) bool
    3. the last m tokens run against the kept keys (and each other, causally)        logits (m, V)
    4. the same m tokens against the full cache                                       logits (m, V)
    scored: the next-token loss at the m − 1 positions whose next token is in the text, and whether each of the
    m positions' top-1 token is the full cache's

The policies (each layer and key/value head chooses its own keys; a query head reads its group's):

    window    the last b keys
    sinks     StreamingLLM (Xiao et al. 2024): the first s keys (s = 4) and the last b − s
    heavy     H2O (Zhang et al. 2023): the last b // 2 keys, and the b − b // 2 earlier keys with the largest
              attention summed over every prefix query (and the query heads of the group)
    snapkv    SnapKV (Li et al. 2024): the last w keys (the observation window, w = min(32, b // 2)), and the b − w
              earlier keys the window's w queries attend to most (summed over them and the group's heads),
              the sums averaged over 5 neighbouring keys first (a 1-d average pool, as SnapKV's code)
    random    b keys drawn without replacement (numpy's RandomState(seed)): a floor

H2O here is its one-shot form (choose once after the prefix, as NVIDIA's kvpress presses do), not the paper's
step-by-step eviction during generation. The scored rows attend the kept keys at their own positions (their keys were
rotated where they stood), so a kept key's contribution is exactly what it was: the attention over the kept keys
renormalised.

Retrieval heads (Wu et al. 2024, :func:`retrieval_scores`): while the model copies a needle sentence from far
back, head h copies a token w when w is in the needle, the model's top-1 there is w, and the key the head attends
most is a needle position holding w; its score is the copied tokens over the needle's length.

Nothing here keeps a layer's n × n weights: the prefix runs in blocks of ``chunk`` rows through the cached-step
path (:meth:`.Model.layer` with the keys and values of the rows before), and only one layer's keys and values,
the column sums and the observation window's rows are held at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import AttentionError
from ..names import is_whole
from . import attend
from .interventions import Hooks, ablate, as_hooks
from .layers import log_softmax
from .model import Model, attention_input, block_out, embed, final_logits

POLICIES = ("window", "sinks", "heavy", "snapkv", "random")
SINKS, OBSERVE, POOL = 4, 32, 5
CHUNK = 256
LONG_TEXT = Path(__file__).resolve().parent.parent / "data" / "long_text.txt"


def long_text() -> str:
    """The shipped long text (public domain): the Declaration of Independence (1776), then the Gettysburg Address
    (1863): 2,046 tokens for SmolLM2's tokenizer."""
    return LONG_TEXT.read_text(encoding="utf-8")


@dataclass(frozen=True)
class EvictionResult:
    """One policy at one budget: ``kept`` (layers, key/value heads, n − m) the keys each head keeps; ``loss`` and
    ``full_loss`` (m − 1,) the next-token loss (nats) at each scored position with a next token, with the policy's
    cache and the full one; ``top1`` and ``full_top1`` (m,) the most likely next token at each scored position."""

    policy: str
    budget: int
    kept: np.ndarray  # (L, G, p) bool
    loss: np.ndarray  # (m − 1,)
    full_loss: np.ndarray  # (m − 1,)
    top1: np.ndarray  # (m,)
    full_top1: np.ndarray  # (m,)

    @property
    def mean_loss(self) -> float:
        """The policy's mean next-token loss over the scored positions."""
        return float(self.loss.mean())

    @property
    def full_mean_loss(self) -> float:
        """The full cache's mean next-token loss over the same positions."""
        return float(self.full_loss.mean())

    @property
    def agreement(self) -> float:
        """The share of scored positions whose top-1 token is the full cache's."""
        return float(np.mean(self.top1 == self.full_top1))


@dataclass
class Prefix:
    """One layer's prefix: its keys and values, the attention each key got summed over every prefix query, and the
    last rows of weights (the observation window)."""

    K: np.ndarray  # (G, p, dₕ)
    V: np.ndarray  # (G, p, dₕ)
    received: np.ndarray  # (H, p)
    last: np.ndarray  # (H, w, p)


def keep(policy: str, budget: int, prefix: Prefix | None, p: int, G: int, rs: np.random.RandomState) -> np.ndarray:
    """The positions each key/value head keeps, (G, min(budget, p)) ascending, by ``policy`` (see the module's
    docstring); every position when budget ≥ p."""
    b = min(budget, p)
    if b == p:
        return np.broadcast_to(np.arange(p), (G, p)).copy()
    if policy == "window":
        return np.broadcast_to(np.arange(p - b, p), (G, b)).copy()
    if policy == "sinks":
        s = min(SINKS, b)
        chosen = np.concatenate([np.arange(s), np.arange(p - (b - s), p)])  # (b,)
        return np.broadcast_to(chosen, (G, b)).copy()
    if policy == "random":
        return np.sort(np.stack([rs.choice(p, b, replace=False) for _ in range(G)]), axis=-1)
    assert prefix is not None
    H = prefix.received.shape[0]
    if policy == "heavy":
        score = prefix.received.reshape(G, H // G, p).sum(axis=1)  # (G, p): attention received, group summed
        return _top_with_recent(score, b, b // 2)
    w = min(OBSERVE, b // 2, prefix.last.shape[1])
    votes = prefix.last[:, -w:, :].sum(axis=1) if w else np.zeros((H, p))  # (H, p): the window's attention
    score = _pooled(votes.reshape(G, H // G, p).sum(axis=1))  # (G, p)
    return _top_with_recent(score, b, w)


def _top_with_recent(score: np.ndarray, b: int, recent: int) -> np.ndarray:
    """Per head (G, p) scores: the last ``recent`` positions, and the b − recent earlier ones scoring highest (ties
    to the earlier position), ascending: (G, b)."""
    G, p = score.shape
    early = score[:, : p - recent]  # (G, p − recent)
    top = np.argsort(-early, axis=-1, kind="stable")[:, : b - recent]  # (G, b − recent)
    tail = np.broadcast_to(np.arange(p - recent, p), (G, recent))  # (G, recent)
    return np.sort(np.concatenate([top, tail], axis=-1), axis=-1)  # (G, b)


def _pooled(x: np.ndarray) -> np.ndarray:
    """A 1-d average pool of width POOL over the last axis, zero-padded, same length (SnapKV's avg_pool1d)."""
    pad = POOL // 2
    padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(pad, pad)])  # (..., p + 2·pad)
    windows = np.lib.stride_tricks.sliding_window_view(padded, POOL, axis=-1)  # (..., p, POOL)
    return windows.mean(axis=-1)  # (..., p)


def _check(model: Model, ids: Sequence[int], m: int, policies: Sequence[str], budgets: Sequence[int]) -> list[int]:
    """The token ids as the model takes them; m, the policies and the budgets checked."""
    ids = model.check_ids(ids)
    if not (is_whole(m) and 1 <= m < len(ids)):
        raise AttentionError(f"m, the tokens scored, must be a whole number from 1 to {len(ids) - 1}; got {m!r}",
                             field="m")
    for policy in policies:
        if policy not in POLICIES:
            raise AttentionError(f"the policy must be one of {', '.join(POLICIES)}; got {policy!r}", field="policy")
    for b in budgets:
        if not (is_whole(b) and b >= 1):
            raise AttentionError(f"a budget is a whole number of keys ≥ 1; got {b!r}", field="budget")
    return ids


def _prefix_layer(model: Model, layer: int, x: np.ndarray, observe: int, chunk: int,
                  hooks: Hooks | None = None, rows: np.ndarray | None = None) -> tuple[Prefix, np.ndarray, list]:
    """Layer ``layer`` on the prefix stream x (p, d) in blocks of ``chunk`` rows, each attending the keys and values
    of the blocks before (the cached-step path): the layer's prefix record, the stream after it, and the weight
    rows (H, p) of the query positions ``rows`` (ascending), when asked."""
    p, H = x.shape[0], model.config.n_heads
    received, last, picked, out = np.zeros((H, p), x.dtype), [], [], []
    K = V = None
    for start in range(0, p, chunk):
        past = None if K is None else (K, V)
        a, y = model.layer(layer, x[start : start + chunk], start, past, hooks=hooks)
        K, V = a.K, a.V  # (G, end, dₕ)
        end = K.shape[-2]
        received[:, :end] += a.weights.sum(axis=1)  # (H, end)
        if end > p - observe:
            last.append(a.weights[:, max(p - observe - start, 0) :, :])  # (H, ·, end)
        if rows is not None:
            inside = rows[(rows >= start) & (rows < end)] - start
            picked.extend(np.pad(a.weights[:, i, :], [(0, 0), (0, p - end)]) for i in inside)  # (H, p) each
        out.append(y)
    window = np.concatenate([np.pad(w, [(0, 0), (0, 0), (0, p - w.shape[-1])]) for w in last], axis=1)  # (H, w, p)
    return Prefix(K, V, received, window), np.concatenate(out, axis=0), picked


def _scored_layer(model: Model, layer: int, x: np.ndarray, start: int, prefix: Prefix,
                  chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Layer ``layer`` on the scored rows x (m, d) at positions start .. start + m − 1, attending only the kept
    positions ``chosen`` (G, b) of the prefix at their own positions, and each other causally: the stream after, and
    each head's weight on the first kept key from each row (H, m)."""
    cfg, m = model.config, x.shape[0]
    H, G = cfg.n_heads, cfg.kv_heads
    K = np.take_along_axis(prefix.K, chosen[:, :, None], axis=1)  # (G, b, dₕ)
    V = np.take_along_axis(prefix.V, chosen[:, :, None], axis=1)  # (G, b, dₕ)
    where = np.concatenate([chosen, np.broadcast_to(np.arange(start, start + m), (G, m))], axis=1)  # (G, b + m)
    keys = np.repeat(where, H // G, axis=0)[:, None, :]  # (H, 1, b + m): query head i reads group i // (H/G)
    query = np.arange(start, start + m)[None, :, None]  # (1, m, 1)
    allowed = keys <= query  # (H, m, b + m)
    window = cfg.sliding_window if cfg.layer_type(layer) == "sliding" else 0
    if window:
        allowed &= query - keys < window
    X = attention_input(cfg, model.params, layer, x)  # (m, d [+1])
    a = attend.attend(cfg, model.params, layer, X, model.layer_weights(layer), start, (K, V), allowed=allowed)
    return block_out(cfg, model.params, layer, x, a.output), a.weights[..., 0]  # (m, d), (H, m)


def _scores(model: Model, x: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The next-token losses at the rows with a target (m − 1,) and every row's top-1 token (m,)."""
    logp = log_softmax(final_logits(model.config, model.params, x))  # (m, V)
    loss = -logp[np.arange(len(targets)), targets]  # (m − 1,)
    return loss, np.argmax(logp, axis=-1)


class Stopped(Exception):
    """Raised when a progress callback asks the work to stop (a page's Cancel)."""


def evict_curve(model: Model, ids: Sequence[int], m: int, runs: Sequence[tuple[str, int]], seed: int = 0,
                chunk: int = CHUNK) -> list[EvictionResult]:
    """Every (policy, budget) of ``runs`` on one text: the first n − m tokens run once with the full cache, then the
    last m tokens against each run's kept keys and against the full cache (see the module's docstring)."""
    return _curve(model, ids, m, runs, seed, chunk)[0]


def _curve(model: Model, ids: Sequence[int], m: int, runs: Sequence[tuple[str, int]], seed: int = 0,
           chunk: int = CHUNK, rows: Sequence[int] = (), on_layer: Callable[[int], bool] | None = None,
           ) -> tuple[list[EvictionResult], np.ndarray]:
    """:func:`evict_curve`, and every head's weight on the first token from the query positions ``rows`` (0-based,
    ascending; read from the prefix's pass or the full cache's scored pass): (L, H, len(rows)). ``on_layer(layer)``
    is called after each layer; when it returns False the work stops (:class:`Stopped`)."""
    ids = _check(model, ids, m, [r[0] for r in runs], [r[1] for r in runs])
    cfg, n = model.config, len(ids)
    p, L, G = n - m, cfg.n_layers, cfg.kv_heads
    at = np.array(rows, dtype=int)  # (k,)
    tokens = np.array(ids)
    x = embed(cfg, model.params, tokens[:p])  # (p, d)
    full = embed(cfg, model.params, tokens[p:], start=p)  # (m, d)
    streams = [full.copy() for _ in runs]  # (m, d) each
    kept = np.zeros((len(runs), L, G, p), bool)
    shares = np.zeros((L, cfg.n_heads, len(at)))  # (L, H, k)
    draws = [np.random.RandomState(seed) for _ in runs]  # one generator a run: its draws are evict()'s own
    for layer in range(L):
        prefix, x, picked = _prefix_layer(model, layer, x, OBSERVE, chunk, rows=at[at < p])
        for r, (policy, budget) in enumerate(runs):
            chosen = keep(policy, budget, prefix, p, G, draws[r])  # (G, b)
            np.put_along_axis(kept[r, layer], chosen, True, axis=-1)
            streams[r] = _scored_layer(model, layer, streams[r], p, prefix, chosen)[0]
        full, first = _scored_layer(model, layer, full, p, prefix, np.broadcast_to(np.arange(p), (G, p)))
        shares[layer] = np.concatenate([np.stack(picked, axis=-1)[:, 0] if picked else np.zeros((cfg.n_heads, 0)),
                                        first[:, at[at >= p] - p]], axis=-1)  # (H, k)
        if on_layer is not None and not on_layer(layer):
            raise Stopped(f"stopped after layer {layer + 1} of {L}")
    full_loss, full_top1 = _scores(model, full, tokens[p + 1 :])
    out = []
    for r, (policy, budget) in enumerate(runs):
        loss, top1 = _scores(model, streams[r], tokens[p + 1 :])
        out.append(EvictionResult(policy, int(budget), kept[r], loss, full_loss, top1, full_top1))
    return out, shares


SHARES = (1 / 128, 1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 3 / 4)  # the curve's budgets, as shares of the prefix
SINK_AT = (64, 512, 2048)  # the positions (1-based) whose share on the first token a study measures
SCORED = 128  # the tokens a study scores, at most (a quarter of a short text)


@dataclass(frozen=True)
class Study:
    """What the page shows of one text: ``positions`` (1-based) and every head's weight on the first token from
    each, ``shares`` (L, H, k); ``m`` the tokens scored; ``budgets`` the curve's; ``results`` every policy at every
    budget (policy-major, in :data:`POLICIES` order)."""

    positions: tuple[int, ...]
    shares: np.ndarray  # (L, H, k)
    m: int
    budgets: tuple[int, ...]
    results: tuple[EvictionResult, ...]

    def result(self, policy: str, budget: int) -> EvictionResult:
        """The result of ``policy`` at ``budget`` (a KeyError when the study did not make it)."""
        for r in self.results:
            if (r.policy, r.budget) == (policy, budget):
                return r
        raise KeyError((policy, budget))


STUDY_LEAST = 8  # tokens a study needs: a prefix of 6 keys to evict from and 2 scored tokens (one next-token loss)


def scored(n: int) -> int:
    """The tokens a study of an n-token text scores: :data:`SCORED`, or a quarter of a short text (at least 2, so
    at least one next-token loss is scored)."""
    return max(2, min(SCORED, n // 4))


def curve_budgets(p: int) -> tuple[int, ...]:
    """The curve's budgets for a prefix of p keys: each share of :data:`SHARES` of p, rounded, at least 1, distinct."""
    return tuple(sorted({max(1, round(p * f)) for f in SHARES}))


def sink_positions(n: int) -> tuple[int, ...]:
    """The positions (1-based) a study measures the sink at: those of :data:`SINK_AT` within the text, and its last
    token when the text is shorter than the last of them."""
    return tuple(sorted({p for p in SINK_AT if p <= n} | ({n} if n < SINK_AT[-1] else set())))


def study(model: Model, ids: Sequence[int], budgets: Sequence[int] = (),
          on_layer: Callable[[int], bool] | None = None, chunk: int = CHUNK) -> Study:
    """One pass over a text for the page: the sink's share from :func:`sink_positions`, and every policy at every
    budget (the ``budgets`` given, else :func:`curve_budgets`) with the last
    :func:`scored` tokens scored. ``on_layer`` as in :func:`evict_curve`'s work (:class:`Stopped` when it says
    stop)."""
    ids = model.check_ids(ids)
    n = len(ids)
    if n < STUDY_LEAST:
        raise AttentionError(f"the text has {n} tokens; a study of the KV cache needs at least {STUDY_LEAST} (a "
                             "prefix to evict keys from, and tokens to score against it)", field="ids")
    m = scored(n)
    chosen = tuple(sorted(set(budgets or curve_budgets(n - m))))
    runs = [(policy, b) for policy in POLICIES for b in chosen]
    positions = sink_positions(n)
    results, shares = _curve(model, ids, m, runs, 0, chunk, [k - 1 for k in positions], on_layer)
    return Study(positions, shares, m, chosen, tuple(results))


def evict(model: Model, ids: Sequence[int], m: int, policy: str, budget: int, seed: int = 0,
          chunk: int = CHUNK) -> EvictionResult:
    """One policy at one budget: the first n − m tokens of ``ids`` with the full cache, ``budget`` keys kept per
    layer and key/value head as ``policy`` says, the last m tokens scored against them and against the full cache
    (see the module's docstring)."""
    return evict_curve(model, ids, m, [(policy, budget)], seed, chunk)[0]


def attention_rows(model: Model, ids: Sequence[int], rows: Sequence[int], heads: Sequence[tuple[int, int]] = (),
                   chunk: int = CHUNK, on_layer: Callable[[int], bool] | None = None,
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The whole text layer by layer in blocks, with the query heads ``heads`` ((layer, head) pairs) zero-ablated:
    every head's attention weights at the query positions ``rows`` (L, H, len(rows), n), and the logits there
    (len(rows), V). No layer's n × n weights are kept. ``on_layer`` as in :func:`study`."""
    ids = model.check_ids(ids)
    cfg, n = model.config, len(ids)
    at = np.array(sorted(set(int(r) for r in rows)))
    if at.size == 0 or at[0] < 0 or at[-1] >= n:
        raise AttentionError(f"the rows must be positions from 0 to {n - 1}", field="rows")
    hooks = Hooks(as_hooks(ablate(layer, head) for layer, head in heads))
    x = embed(cfg, model.params, np.array(ids))  # (n, d)
    weights = np.zeros((cfg.n_layers, cfg.n_heads, len(at), n), x.dtype)
    for layer in range(cfg.n_layers):
        _, x, picked = _prefix_layer(model, layer, x, 1, chunk, hooks, at)
        weights[layer] = np.stack(picked, axis=1)  # (H, rows, n)
        if on_layer is not None and not on_layer(layer):
            raise Stopped(f"stopped after layer {layer + 1} of {cfg.n_layers}")
    order = np.searchsorted(at, np.asarray(rows))
    return weights[:, :, order], final_logits(cfg, model.params, x[at])[order]


def retrieval_scores(model: Model, ids: Sequence[int], needle: tuple[int, int], answer: tuple[int, int],
                     chunk: int = CHUNK, on_layer: Callable[[int], bool] | None = None,
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Wu et al.'s retrieval score of every head, (L, H), on a text ``ids`` holding a needle at positions
    needle[0] .. needle[1] − 1 and, later, the model's copy of it fed at positions answer[0] .. answer[1] − 1:
    for each answer token w that the model's top-1 predicts (the query is the position before it), a head copies
    it when w is a needle token and the key it attends most is a needle position holding w. Its score is the
    tokens it copies over the needle's length. Also returned: which answer tokens the model predicts (top-1)."""
    ids = model.check_ids(ids)
    (a, b), (c, d) = needle, answer
    if not (0 <= a < b <= c < d <= len(ids)) or c == 0:
        raise AttentionError("the needle must come before the answer, both inside the text", field="needle")
    queries = np.arange(c - 1, d - 1)  # (k,): the positions that predict each answer token
    weights, logits = attention_rows(model, ids, queries, chunk=chunk, on_layer=on_layer)  # (L, H, k, n), (k, V)
    tokens = np.array(ids)
    copied = np.argmax(logits, axis=-1) == tokens[c:d]  # (k,): the model predicts the answer token
    in_needle = np.isin(tokens[c:d], tokens[a:b])  # (k,)
    top = np.argmax(weights, axis=-1)  # (L, H, k): the key each head attends most
    lands = (top >= a) & (top < b) & (tokens[top] == tokens[c:d])  # (L, H, k)
    hits = lands & (copied & in_needle)  # (L, H, k)
    return hits.sum(axis=-1) / (b - a), copied


def copy_accuracy(model: Model, ids: Sequence[int], answer: tuple[int, int],
                  heads: Sequence[tuple[int, int]] = (), chunk: int = CHUNK) -> tuple[float, float]:
    """With the query heads ``heads`` zero-ablated: the share of answer tokens (positions answer[0] ..
    answer[1] − 1) the model's top-1 predicts, and their mean loss (nats)."""
    ids = model.check_ids(ids)
    c, d = answer
    if not (1 <= c < d <= len(ids)):
        raise AttentionError(f"the answer must lie inside the text's positions 1 .. {len(ids) - 1}", field="answer")
    _, logits = attention_rows(model, ids, np.arange(c - 1, d - 1), heads, chunk)  # (k, V)
    target = np.array(ids[c:d])  # (k,)
    logp = log_softmax(logits)  # (k, V)
    return float(np.mean(np.argmax(logp, axis=-1) == target)), float(-logp[np.arange(len(target)), target].mean())


NEEDLE = "The secret password for the old vault is purple elephant seventeen."
QUESTION = "the secret password for the old vault"
HAYSTACK = 1900  # tokens of the long text around the needle in the page's case (a 2,048-token context holds it)


def needle_case(model: Model, haystack: int = HAYSTACK) -> tuple[list[int], tuple[int, int], tuple[int, int]]:
    """The page's needle-in-a-haystack case: :data:`NEEDLE` in about ``haystack`` tokens of the shipped long text
    (:func:`needle_text`, its question :data:`QUESTION`)."""
    return needle_text(model, long_text(), NEEDLE, QUESTION, haystack)


def needle_text(model: Model, text: str, needle: str, question: str, haystack: int,
                depth: float = 0.25) -> tuple[list[int], tuple[int, int], tuple[int, int]]:
    """A needle-in-a-haystack case (Wu et al.'s test): the paragraphs of ``text`` up to about ``haystack`` tokens,
    the needle sentence as a paragraph of its own after the first ``depth`` of them, then "Question: What is
    {question}?" and "Answer:" with the needle copied on the next line. The token ids, the needle's positions and
    the answer's (start, stop): the needle and its copy are the same tokens (each opens a line)."""
    if not (isinstance(needle, str) and needle.strip() and len(needle) <= 500 and isinstance(question, str)):
        raise AttentionError("the needle must be a sentence of at most 500 characters", field="needle")
    paragraphs, kept, count = text.split("\n\n"), [], 0
    for para in paragraphs:
        if count >= haystack:
            break
        kept.append(para)
        count += len(model.vocab.encode(para + "\n\n"))
    cut = max(1, round(len(kept) * depth))
    before = model.vocab.encode("\n\n".join(kept[:cut]) + "\n\n")
    inner = model.vocab.encode(needle)
    after = model.vocab.encode("\n\n" + "\n\n".join(kept[cut:]) + f"\n\nQuestion: What is {question}?\nAnswer:\n")
    ids = before + inner + after + inner
    start = len(before)
    return ids, (start, start + len(inner)), (len(ids) - len(inner), len(ids))


def first_token_shares(model: Model, ids: Sequence[int], positions: Sequence[int],
                       chunk: int = CHUNK) -> np.ndarray:
    """Each layer's and query head's attention on the first token (the sink, StreamingLLM's observation) from the
    queries at ``positions`` (0-based): (L, H, len(positions))."""
    weights, _ = attention_rows(model, ids, positions, chunk=chunk)  # (L, H, k, n)
    return weights[..., 0]
