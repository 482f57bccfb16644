"""A decoder-only transformer in numpy whose every head of every layer is an attention :class:`~attention.Trace`.

The forward pass, one line per step (n tokens, d = d_model, H heads of width d/H, V = vocabulary):

    x₀ = W_E[ids] (+ W_pos[:n] learned, or + PE sinusoidal)                 (n, d)
    for each layer l:
        h = LN₁(x)  (x itself when attention-only)                        (n, d)
        trace = the attention steps on h: H causal heads, W_o mixing them   (n, d); rotary turns each head's Q, K
        x = x + trace.output + b_o                                          (n, d)
        x = x + MLP(LN₂(x))  (not when attention-only)                      (n, d)
    logits = LN_f(x) W_U  (W_U = W_Eᵀ when tied)                            (n, V)

A projection's bias rides in the trace as the last row of its weight: the trace's X is [h, 1] (n, d + 1), so
Q = [h, 1] [W_q; b_q] = h W_q + b_q and every step is the project's own attention code.

Runs are cached by a content key (the token ids and the interventions of the layers before): an intervention on
layer l reuses the residual streams and traces of layers 0 .. l − 1 and recomputes from l on. Every array the cache
holds is read-only (later runs share it) and counted once in its byte bound, however many cached runs share it.
"""

from __future__ import annotations

import functools
import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import numpy as np

from .. import positions, steps
from ..errors import AttentionError
from ..heads import merge_heads, split_heads
from ..names import is_whole
from ..options import Options
from ..trace import Trace, run_steps, scaled_dot_product_attention
from .config import Config
from .interventions import Intervention, check
from .layers import layer_norm, mlp, with_ones
from .vocab import BPEVocab, WordVocab

Params = dict[str, np.ndarray]
CACHE_RUNS = 4  # the cache keeps the layer boundaries of about this many recent runs
CACHE_BYTES = 1 << 30  # and at most about this much of their arrays (a GPT-2 small run of 1024 tokens is ~4.6 GB)


def param_shapes(config: Config) -> dict[str, tuple[int, ...]]:
    """Every parameter's name and shape, in order. Layer l's parameters are named "l.W_q", "l.ln1.g" ..."""
    c = config
    d, V = c.d_model, c.vocab_size
    s: dict[str, tuple[int, ...]] = {"W_E": (V, d)}
    if c.positions == "learned":
        s["W_pos"] = (c.n_ctx, d)
    for layer in range(c.n_layers):
        p = f"{layer}."
        if not c.attention_only:
            s[p + "ln1.g"], s[p + "ln1.b"] = (d,), (d,)
        for m in ("W_q", "W_k", "W_v", "W_o"):
            s[p + m] = (d, d)
        if c.bias:
            for b in ("b_q", "b_k", "b_v", "b_o"):
                s[p + b] = (d,)
        if not c.attention_only:
            s[p + "ln2.g"], s[p + "ln2.b"] = (d,), (d,)
            s[p + "W_fc"], s[p + "W_proj"] = (d, c.d_mlp), (c.d_mlp, d)
            if c.bias:
                s[p + "b_fc"], s[p + "b_proj"] = (c.d_mlp,), (d,)
    if not c.attention_only:
        s["ln_f.g"], s["ln_f.b"] = (d,), (d,)
    if not c.tied:
        s["W_U"] = (d, V)
    return s


def init_params(config: Config, seed: int = 0, std: float = 0.02) -> Params:
    """Random parameters: weights normal(0, std), LayerNorm gains 1, biases and shifts 0 (GPT-2's scheme)."""
    rs = np.random.RandomState(seed)
    out: Params = {}
    for name, shape in param_shapes(config.validate()).items():
        last = name.rsplit(".", 1)[-1]
        if last == "g":
            out[name] = np.ones(shape)
        elif last.startswith("b"):  # biases b_q ... and LayerNorm shifts .b
            out[name] = np.zeros(shape)
        else:
            out[name] = rs.normal(0.0, std, shape)
    return out


def layer_options(config: Config, layer: int) -> Options:
    """The attention options of one layer: n_heads causal heads, rotary or no positions, the score scale."""
    scale = None if config.scale_attn else 1.0
    if config.scale_by_layer:
        scale = (steps.default_scale(config.d_head) if config.scale_attn else 1.0) / (layer + 1)
    return Options(
        heads=config.n_heads, mask="causal", positions="rotary" if config.positions == "rotary" else "none", scale=scale
    )


def attention_weights(config: Config, params: Params, layer: int) -> tuple[np.ndarray, ...]:
    """W_q, W_k, W_v (d [+1], d) and W_o (d, d) as the trace takes them: with a bias, the bias as the last row."""
    p = f"{layer}."
    if not config.bias:
        return tuple(params[p + m] for m in ("W_q", "W_k", "W_v", "W_o"))
    qkv = tuple(
        np.vstack([params[p + m], params[p + b][None, :]]) for m, b in (("W_q", "b_q"), ("W_k", "b_k"), ("W_v", "b_v"))
    )
    return (*qkv, params[p + "W_o"])  # (d + 1, d) × 3, (d, d)


def embed(config: Config, params: Params, ids: np.ndarray) -> np.ndarray:
    """x₀ = W_E[ids] plus the learned or sinusoidal positions: (..., n) -> (..., n, d)."""
    n = ids.shape[-1]
    x = params["W_E"][ids]  # (..., n, d)
    if config.positions == "learned":
        x = x + params["W_pos"][:n]  # (..., n, d)
    elif config.positions == "sinusoidal":
        x = x + positions.sinusoidal(n, config.d_model)  # (..., n, d)
    return x


def unembedding(config: Config, params: Params) -> np.ndarray:
    """W_U (d, V): W_Eᵀ when tied."""
    return params["W_E"].T if config.tied else params["W_U"]


def attention_input(config: Config, params: Params, layer: int, x: np.ndarray) -> np.ndarray:
    """What layer l's attention reads: LN₁(x) (x when attention-only), with a column of ones when there are biases."""
    h = x if config.attention_only else layer_norm(x, params[f"{layer}.ln1.g"], params[f"{layer}.ln1.b"], config.ln_eps)
    return with_ones(h) if config.bias else h  # (..., n, d [+1])


def final_logits(config: Config, params: Params, x: np.ndarray) -> np.ndarray:
    """logits = LN_f(x) W_U (x W_U when attention-only): (..., n, d) -> (..., n, V)."""
    h = x if config.attention_only else layer_norm(x, params["ln_f.g"], params["ln_f.b"], config.ln_eps)
    return h @ unembedding(config, params)  # (..., n, V)


def mlp_out(config: Config, params: Params, layer: int, x: np.ndarray) -> np.ndarray:
    """MLP(LN₂(x)) of layer l: (..., n, d) -> (..., n, d)."""
    p = f"{layer}."
    h = layer_norm(x, params[p + "ln2.g"], params[p + "ln2.b"], config.ln_eps)  # (..., n, d)
    b_fc, b_proj = (params[p + "b_fc"], params[p + "b_proj"]) if config.bias else (None, None)
    return mlp(h, params[p + "W_fc"], b_fc, params[p + "W_proj"], b_proj, config.activation)


@dataclass(frozen=True, eq=False)
class Run:
    """One forward pass. ``logits`` (n, V); ``traces[l]`` layer l's attention over all heads (its ``head(i)`` one
    head); ``residuals[l]`` the stream entering layer l ((n, d), the last one after every layer, before LN_f);
    ``weights`` (layers, heads, n, n); ``recomputed_from`` the first layer this run computed (the earlier ones came
    from the cache)."""

    ids: tuple[int, ...]
    tokens: tuple[str, ...]
    logits: np.ndarray
    traces: tuple[Trace, ...]
    residuals: tuple[np.ndarray, ...]
    interventions: tuple[Intervention, ...] = ()
    recomputed_from: int = 0

    @functools.cached_property
    def weights(self) -> np.ndarray:
        """Every head's attention weights: (layers, heads, n, n)."""
        return np.stack([t.weights if t.weights.ndim == 3 else t.weights[None] for t in self.traces])

    def head(self, layer: int, head: int) -> Trace:
        """Head ``head`` of layer ``layer`` as a single-head trace."""
        if not (isinstance(layer, (int, np.integer)) and 0 <= layer < len(self.traces)):
            raise AttentionError(f"there is no layer {layer!r}: the model has {len(self.traces)} layers", field="layer")
        return self.traces[layer].head(head)

    @property
    def predictions(self) -> list[int]:
        """The most likely next token after each position."""
        return [int(i) for i in np.argmax(self.logits, axis=-1)]


@dataclass(frozen=True, eq=False)
class Generation:
    """Greedy generation: ``tokens`` the prompt then the new tokens; ``logits[s]`` (V,) the logits that chose new
    token s; ``cache[l]`` = (K, V), each (heads, tokens fed, d_head): layer l's keys (after any rotation) and values;
    ``cache_lengths[s]`` how many positions the cache held when new token s was chosen."""

    tokens: list[int]
    prompt_length: int
    logits: np.ndarray
    cache: tuple[tuple[np.ndarray, np.ndarray], ...]
    cache_lengths: tuple[int, ...]


KVCache = tuple[tuple[np.ndarray, np.ndarray], ...]  # per layer (K, V), each (heads, tokens, d_head)


@dataclass(frozen=True, eq=False)
class Step:
    """One token through the key/value cache, at ``position`` (0-based). Per layer l: ``queries[l]`` (heads, d_head)
    its query (after any rotation), ``weights[l]`` (heads, position + 1) its attention row over the cache, which
    holds ``position + 1`` rows of K and of V per layer after it (its own included); ``logits`` (V,) for the token
    after it."""

    position: int
    token: int
    queries: tuple[np.ndarray, ...]
    weights: tuple[np.ndarray, ...]
    logits: np.ndarray

    @property
    def cache_length(self) -> int:
        """The rows each layer's K and V hold once this token is in: position + 1."""
        return self.position + 1


class Model:
    """A transformer: ``config``, ``params`` (read-only float64 arrays, named as in :func:`param_shapes`) and a
    vocabulary (``encode``/``decode``/``pieces``)."""

    def __init__(self, config: Config, params: Params, vocab: WordVocab | BPEVocab, name: str = "model"):
        self.config = config.validate()
        self.vocab = vocab
        self.name = name
        self.params = check_params(config, params)
        if len(vocab) > config.vocab_size:
            raise AttentionError(
                f"the vocabulary has {len(vocab)} tokens but the model's embedding has {config.vocab_size} rows",
                field="vocab_size",
            )
        self._options = tuple(layer_options(config, layer) for layer in range(config.n_layers))
        self._weights: dict[int, tuple[np.ndarray, ...]] = {}
        self._cache: OrderedDict[bytes, tuple[tuple[np.ndarray, ...], tuple[Trace, ...], np.ndarray | None]] = (
            OrderedDict()
        )
        self._held: dict[int, list] = {}  # id(array) -> [the array, how many cache entries hold it]
        self._bytes = 0  # the bytes of the distinct arrays in _held

    def __repr__(self) -> str:
        c = self.config
        return (
            f"Model({self.name!r}: {c.n_layers} layers, {c.n_heads} heads, d_model {c.d_model}, "
            f"vocabulary {c.vocab_size}, context {c.n_ctx})"
        )

    # ------------------------------------------------------------ text

    def encode(self, text: str) -> list[int]:
        """Token ids of a text."""
        return self.vocab.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of token ids."""
        return self.vocab.decode(self.check_ids(ids))

    def pieces(self, ids: Sequence[int]) -> list[str]:
        """Each token's own text, for labels."""
        return self.vocab.pieces(self.check_ids(ids))

    def check_ids(self, token_ids: object, longest: int | None = None) -> list[int]:
        """Token ids as a list of ints, each in the vocabulary, 1 to n_ctx of them; else a clear error."""
        longest = self.config.n_ctx if longest is None else longest
        arr = np.asarray(token_ids) if not isinstance(token_ids, str) else np.array([])
        if isinstance(token_ids, str) or arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
            raise AttentionError(
                "token ids must be a non-empty list of whole numbers (use encode(text))", field="token_ids"
            )
        if arr.size > longest:
            raise AttentionError(
                f"{arr.size} tokens is more than this model's context of {self.config.n_ctx}", field="token_ids"
            )
        bad = np.flatnonzero((arr < 0) | (arr >= self.config.vocab_size))
        if bad.size:
            k = int(bad[0])
            raise AttentionError(
                f"token {k + 1} has id {int(arr[k])}, outside the vocabulary 0 .. {self.config.vocab_size - 1}",
                field="token_ids",
            )
        return [int(i) for i in arr]

    # ------------------------------------------------------------ forward

    def layer_weights(self, layer: int) -> tuple[np.ndarray, ...]:
        """W_q, W_k, W_v, W_o of a layer as its trace takes them (see :func:`attention_weights`), computed once."""
        if layer not in self._weights:
            ws = attention_weights(self.config, self.params, layer)
            for w in ws:
                w.flags.writeable = False
            self._weights[layer] = ws
        return self._weights[layer]

    def run(self, token_ids: Sequence[int], interventions: Sequence[Intervention] = ()) -> Run:
        """The forward pass over ``token_ids`` with the given interventions (see :mod:`.interventions`)."""
        ids = self.check_ids(token_ids)
        ivs = tuple(check(self.config, iv) for iv in interventions)
        L = self.config.n_layers
        keys = [self._key(ids, ivs, layer) for layer in range(L + 1)]
        start = next((layer for layer in range(L, -1, -1) if keys[layer] in self._cache), None)
        if start is None:
            x0 = embed(self.config, self.params, np.array(ids))  # (n, d)
            residuals, traces, logits = (x0,), (), None
            start = 0
        else:
            self._cache.move_to_end(keys[start])
            residuals, traces, logits = self._cache[keys[start]]
        tokens = tuple(self.vocab.pieces(ids))
        x = residuals[-1]
        for layer in range(start, L):
            trace, x = self.block(layer, x, tokens, [iv for iv in ivs if iv.layer == layer])
            residuals, traces = (*residuals, x), (*traces, trace)
            self._remember(keys[layer + 1], (residuals, traces, None))
        if logits is None:
            logits = final_logits(self.config, self.params, x)  # (n, V)
            self._remember(keys[L], (residuals, traces, logits))
        return Run(tuple(ids), tokens, logits, traces, residuals, ivs, start)

    def block(
        self, layer: int, x: np.ndarray, tokens: Sequence[str] | None = None, interventions: Sequence[Intervention] = ()
    ) -> tuple[Trace, np.ndarray]:
        """One block on the stream x (n, d): (its attention trace, the stream after it)."""
        cfg, p = self.config, self.params
        W_q, W_k, W_v, W_o = self.layer_weights(layer)
        replaced = [iv for iv in interventions if iv.kind == "replace"]
        if replaced:
            W = {"W_q": W_q.copy(), "W_k": W_k.copy(), "W_v": W_v.copy(), "W_o": W_o.copy()}
            dh = cfg.d_head
            for iv in replaced:
                cols = slice(iv.head * dh, (iv.head + 1) * dh)
                if iv.matrix == "W_o":
                    W["W_o"][cols, :] = iv.value  # (d_head, d): the head's rows
                else:
                    W[str(iv.matrix)][:, cols] = iv.value  # (d [+1], d_head): the head's columns
            W_q, W_k, W_v, W_o = W["W_q"], W["W_k"], W["W_v"], W["W_o"]
        X_in = attention_input(cfg, p, layer, x)  # (n, d [+1])
        trace = run_steps(X_in, W_q, W_k, W_v, self._options[layer], W_o=W_o, tokens=list(tokens) if tokens else None)
        ablated = [iv for iv in interventions if iv.kind in ("zero", "mean")]
        if ablated:
            concat = trace.concat.copy()  # (n, d): the heads' outputs side by side
            count = np.arange(1, concat.shape[-2] + 1)[:, None]  # (n, 1): t + 1 positions up to t
            for iv in ablated:
                cols = slice(iv.head * cfg.d_head, (iv.head + 1) * cfg.d_head)
                causal_mean = np.cumsum(concat[..., cols], axis=-2) / count  # (n, d_head): row t, mean over 0 .. t
                concat[..., cols] = 0.0 if iv.kind == "zero" else causal_mean
            trace = replace(trace, concat=concat, output=concat @ W_o)  # (n, d)
        attn = trace.output + p[f"{layer}.b_o"] if cfg.bias else trace.output  # (n, d)
        x = x + attn  # (n, d)
        if not cfg.attention_only:
            x = x + mlp_out(cfg, p, layer, x)  # (n, d)
        return trace, x

    def _key(self, ids: list[int], ivs: tuple[Intervention, ...], layer: int) -> bytes:
        """The content key of the stream entering ``layer``: the ids and the interventions of the layers before."""
        h = hashlib.blake2b(np.asarray(ids, dtype=np.int64).tobytes(), digest_size=20)
        h.update(layer.to_bytes(4, "little"))
        for iv in ivs:
            if iv.layer < layer:
                h.update(iv.key())
        return h.digest()

    @property
    def cache_bytes(self) -> int:
        """The bytes of the distinct arrays the run cache holds (each once, however many cached runs share it; not
        the model's own weights)."""
        return self._bytes

    def _remember(self, key: bytes, entry: tuple) -> None:
        """Keep a layer boundary (its arrays made read-only: later runs share them); the oldest go first past the
        bound in runs or in bytes."""
        if key in self._cache:
            self._let_go(self._cache[key])
        for a in self._arrays(entry):
            a.flags.writeable = False
            held = self._held.setdefault(id(a), [a, 0])
            held[1] += 1
            self._bytes += a.nbytes if held[1] == 1 else 0
        self._cache[key] = entry
        self._cache.move_to_end(key)
        while len(self._cache) > 1 and (
            len(self._cache) > CACHE_RUNS * (self.config.n_layers + 1) or self._bytes > CACHE_BYTES
        ):
            self._let_go(self._cache.popitem(last=False)[1])

    def _let_go(self, entry: tuple) -> None:
        """Stop counting a cache entry's arrays; an array's bytes leave the count when no entry holds it."""
        for a in self._arrays(entry):
            held = self._held[id(a)]
            held[1] -= 1
            if held[1] == 0:
                del self._held[id(a)]
                self._bytes -= a.nbytes

    def _arrays(self, entry: tuple) -> list[np.ndarray]:
        """The distinct arrays of a cache entry (streams, every trace array, logits), not the model's own weights."""
        residuals, traces, logits = entry
        mine = {id(w) for ws in self._weights.values() for w in ws}
        found = [*residuals, logits, *(getattr(t, f.name) for t in traces for f in fields(t))]
        return list({id(a): a for a in found if isinstance(a, np.ndarray) and id(a) not in mine}.values())

    def clear_cache(self) -> None:
        """Forget every cached run."""
        self._cache.clear()
        self._held.clear()
        self._bytes = 0

    # ------------------------------------------------------------ generation

    def generate(self, token_ids: Sequence[int], steps: int) -> list[int]:
        """Greedy generation: the prompt followed by ``steps`` new tokens, each the most likely next token."""
        return self.generate_cached(token_ids, steps).tokens

    def generate_cached(self, token_ids: Sequence[int], steps: int) -> Generation:
        """Greedy generation with a key/value cache: the prompt runs once (a full forward), then each new token
        runs alone, its query attending the cached keys and values of every earlier position."""
        if not (is_whole(steps) and steps >= 0):
            raise AttentionError(f"steps must be a whole number ≥ 0; got {steps!r}", field="steps")
        ids = self.check_ids(token_ids)
        fed = len(ids) + max(int(steps) - 1, 0)
        if fed > self.config.n_ctx:
            raise AttentionError(
                f"{len(ids)} prompt tokens and {steps} new ones need {fed} positions; the context is "
                f"{self.config.n_ctx}",
                field="steps",
            )
        cfg, H = self.config, self.config.n_heads
        out, step_logits, lengths = list(ids), [], []
        if steps == 0:
            return Generation(out, len(ids), np.zeros((0, cfg.vocab_size)), (), ())
        run = self.run(ids)
        cache = [(split_heads(t.K, H), split_heads(t.V, H)) for t in run.traces]  # (H, n, d_head) each
        logits = run.logits[-1]  # (V,)
        for s in range(steps):
            step_logits.append(logits)
            lengths.append(len(out))
            nxt = int(np.argmax(logits))
            out.append(nxt)
            if s == steps - 1:
                break
            logits = self._decode_one(nxt, len(out) - 1, cache)
        cache_t = tuple((K, V) for K, V in cache)
        return Generation(out, len(ids), np.array(step_logits), cache_t, tuple(lengths))

    def _decode_one(self, token: int, pos: int, cache: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """One new token at position ``pos`` through every layer with the cache (extended in place); its logits."""
        step, grown = self.feed(token, tuple(cache))
        cache[:] = grown
        return step.logits

    def prefill(self, token_ids: Sequence[int]) -> tuple[Step, KVCache]:
        """The prompt in one full forward: the last prompt token as a :class:`Step` (its query and attention row
        from the run) and the cache of every prompt position's keys and values, per layer (H, n, d_head) each."""
        ids = self.check_ids(token_ids)
        H, n = self.config.n_heads, len(ids)
        run = self.run(ids)
        cache = tuple((split_heads(t.K, H), split_heads(t.V, H)) for t in run.traces)  # (H, n, d_head) each
        queries = tuple(split_heads(t.Q, H)[:, -1] for t in run.traces)  # (H, d_head) each
        weights = tuple(run.weights[layer, :, -1] for layer in range(self.config.n_layers))  # (H, n) each
        return Step(n - 1, ids[-1], queries, weights, run.logits[-1]), cache

    def feed(self, token: int, cache: KVCache) -> tuple[Step, KVCache]:
        """One token at the next position (the cache's length) through every layer, attending the cached keys and
        values and its own: its :class:`Step` and the cache one row longer per layer (the given one is unchanged).

        Per layer: h = LN₁(x) (1, d); q, k, v = h W_q, h W_k, h W_v (H, 1, d_head); K, V = [K; k], [V; v]
        (H, pos + 1, d_head); a = softmax(q Kᵀ · scale) (H, 1, pos + 1); x = x + (a V merged) W_o (1, d)."""
        cfg, p, H = self.config, self.params, self.config.n_heads
        pos = int(cache[0][0].shape[-2]) if cache else 0
        (token,) = self.check_ids([token], longest=1)
        if len(cache) != cfg.n_layers or pos + 1 > cfg.n_ctx:
            raise AttentionError(
                f"a cache of {len(cache)} layers and {pos} tokens cannot take one more token: the model has "
                f"{cfg.n_layers} layers and a context of {cfg.n_ctx}",
                field="cache",
            )
        x = p["W_E"][[token]]  # (1, d)
        if cfg.positions == "learned":
            x = x + p["W_pos"][pos : pos + 1]  # (1, d): the token sits at position pos
        elif cfg.positions == "sinusoidal":
            x = x + positions.sinusoidal(pos + 1, cfg.d_model)[pos:]  # (1, d)
        grown, queries, rows = [], [], []
        for layer in range(cfg.n_layers):
            W_q, W_k, W_v, W_o = self.layer_weights(layer)
            X_in = attention_input(cfg, p, layer, x)  # (1, d [+1])
            q, k, v = (split_heads(steps.project(X_in, W), H) for W in (W_q, W_k, W_v))  # (H, 1, d_head) each
            if cfg.positions == "rotary":
                q, k = _rotate_at(q, pos), _rotate_at(k, pos)
            K, V = np.concatenate([cache[layer][0], k], axis=-2), np.concatenate([cache[layer][1], v], axis=-2)
            grown.append((K, V))  # (H, pos + 1, d_head) each
            scale = self._options[layer].scale
            o, a = scaled_dot_product_attention(q, K, V, scale=scale)  # (H, 1, d_head), (H, 1, pos + 1)
            queries.append(q[:, 0])  # (H, d_head)
            rows.append(a[:, 0])  # (H, pos + 1)
            attn = merge_heads(o) @ W_o  # (1, d)
            x = x + (attn + p[f"{layer}.b_o"] if cfg.bias else attn)  # (1, d)
            if not cfg.attention_only:
                x = x + mlp_out(cfg, p, layer, x)  # (1, d)
        logits = final_logits(cfg, p, x)[0]  # (V,)
        return Step(pos, token, tuple(queries), tuple(rows), logits), tuple(grown)

    def step_through(self, token_ids: Sequence[int], prompt_length: int) -> tuple[list[Step], KVCache]:
        """The first ``prompt_length`` tokens in one forward (:meth:`prefill`), then every later token one at a time
        through the cache (:meth:`feed`): a Step per position from prompt_length − 1 on, and the final cache."""
        ids = self.check_ids(token_ids)
        if not (is_whole(prompt_length) and 1 <= prompt_length <= len(ids)):
            raise AttentionError(
                f"prompt_length must be a whole number from 1 to {len(ids)}; got {prompt_length!r}",
                field="prompt_length",
            )
        step, cache = self.prefill(ids[:prompt_length])
        out = [step]
        for token in ids[prompt_length:]:
            step, cache = self.feed(token, cache)
            out.append(step)
        return out, cache


def _rotate_at(x: np.ndarray, pos: int) -> np.ndarray:
    """Rotary positions for one row at position ``pos``: x (..., 1, d) turned as row pos of a sequence."""
    padded = np.zeros((*x.shape[:-2], pos + 1, x.shape[-1]))  # (..., pos + 1, d)
    padded[..., pos:, :] = x
    return positions.rotary(padded)[..., pos:, :]  # (..., 1, d)


def check_params(config: Config, params: object, where: str = "the parameters") -> Params:
    """The parameters as read-only float64 arrays, exactly the names and shapes of :func:`param_shapes`, finite."""
    if not isinstance(params, dict):
        raise AttentionError(f"{where} must be a dict of arrays", field="params")
    want = param_shapes(config)
    missing = [k for k in want if k not in params]
    extra = sorted(str(k) for k in params if k not in want)
    if missing or extra:
        raise AttentionError(
            f"{where} do not fit the config: "
            + (f"missing {', '.join(missing[:5])}" if missing else f"unexpected {', '.join(extra[:5])}"),
            field="params",
        )
    out: Params = {}
    for name, shape in want.items():
        arr = np.asarray(params[name], dtype=np.float64)
        if arr.flags.writeable:  # a copy the caller cannot change; arrays already read-only are kept as they are
            arr = arr.copy()
        if arr.shape != shape:
            raise AttentionError(f"{where}: {name} has shape {arr.shape}; the config needs {shape}", matrix=name)
        with np.errstate(over="ignore", invalid="ignore"):
            quick = np.isfinite(arr.sum())  # one pass: a finite sum means every value is finite
        bad = np.zeros(1, bool) if quick else ~np.isfinite(arr)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise AttentionError(f"{where}: {name} at {idx} is {arr[idx]}; every weight must be finite", matrix=name)
        arr.flags.writeable = False
        out[name] = arr
    return out
