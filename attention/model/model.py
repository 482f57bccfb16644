"""A decoder-only transformer in numpy whose every head of every layer is an attention :class:`~attention.Trace`.

The forward pass, one line per step (n tokens, d = d_model, H query heads and G key/value heads of width dₕ,
V = vocabulary; N is LayerNorm or RMSNorm, as the config says; every family is a set of config fields):

    x₀ = W_E[ids] · embed_scale (+ W_pos[:n] learned, or + PE sinusoidal)           (n, d)
    for each layer l:
        h = N₁(x)  (x itself when attention-only, or without pre-norms: OLMo-2)    (n, d)
        q, k, v = h W_q + b_q, h W_k + b_k, h W_v + b_v                             (H, n, dₕ), (G, n, dₕ) × 2
        q, k = RoPE(RMS(q)), RoPE(RMS(k))  (RMS: QK-norm, per head or across all heads)  as above
        A = softmax(q kᵀ · scale, causal [and a window]), query head i on group i // (H/G)   (H, n, n)
        a = concat(A v) W_o + b_o, then N(a) with post-norms (Gemma 3, OLMo-2)      (n, d)
        sequential: x = x + a;  x = x + MLP(N₂(x)), then N(·) with post-norms       (n, d)
        parallel:   x = x + a + MLP(N₂(x_l))  (GPT-NeoX: both read the layer's input)   (n, d)
    logits = N_f(x) W_U  (W_U = W_Eᵀ when tied)                                     (n, V)

The attention lines are :func:`.attend.attend`; their arrays are the layer's Trace, so each head is a Trace with
its group's K and V.

A projection's bias rides in the trace as the last row of its weight: the trace's X is [h, 1] (n, d + 1), so
Q = [h, 1] [W_q; b_q] = h W_q + b_q and every step is the project's own attention code.

One path serves the full pass and the cached step: :meth:`Model.run` feeds every row at positions 0 .. n − 1, and
:meth:`Model.feed` one new row at position p after the cache's keys and values; both go through
:meth:`Model.layer`, which runs :func:`.attend.attend` and the rest of the block.

Runs are cached by a content key (the token ids and the interventions of the layers before; see
:mod:`.runcache`): an intervention on layer l reuses the residual streams and traces of layers 0 .. l − 1.

Precision: a model computes in the dtype of its parameters, float64 (the default) or float32. Every array of a
run is in that dtype.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import positions
from ..errors import AttentionError
from ..heads import split_heads
from ..names import is_whole
from ..trace import Trace
from . import attend
from .attend import Attended, Weights, layer_options
from .config import Config
from .interventions import (
    FINAL_HOOK,
    GAINS,
    NO_HOOKS,
    HookFn,
    Hooks,
    Intervention,
    as_hooks,
    check,
    hook_layer,
    hook_names,
    user_hooks,
    with_gains,
)
from .layers import layer_norm, mlp, rms_norm, with_ones
from .runcache import RunCache
from .vocab import BPEVocab, WordVocab

Params = dict[str, np.ndarray]
DTYPES = (np.float64, np.float32)


def param_shapes(config: Config) -> dict[str, tuple[int, ...]]:
    """Every parameter's name and shape, in order. Layer l's parameters are named "l.W_q", "l.ln1.g" ..."""
    c = config
    d, V, H, G, dh = c.d_model, c.vocab_size, c.n_heads, c.kv_heads, c.d_head
    s: dict[str, tuple[int, ...]] = {"W_E": (V, d)}
    if c.positions == "learned":
        s["W_pos"] = (c.n_ctx, d)
    for layer in range(c.n_layers):
        p = f"{layer}."
        if not c.attention_only and c.pre_norms:
            s.update(norm_shapes(c, p + "ln1"))
        s.update({p + "W_q": (d, H * dh), p + "W_k": (d, G * dh), p + "W_v": (d, G * dh), p + "W_o": (H * dh, d)})
        if c.has_qkv_bias:
            s.update({p + "b_q": (H * dh,), p + "b_k": (G * dh,), p + "b_v": (G * dh,)})
        if c.bias:
            s[p + "b_o"] = (d,)
        if c.qk_norm:  # one gain per column of a head, or of every head (qk_norm_scope "all")
            wide = c.qk_norm_scope == "all"
            s[p + "q_norm.g"], s[p + "k_norm.g"] = ((H * dh,), (G * dh,)) if wide else ((dh,), (dh,))
        if c.post_norms:
            s.update(norm_shapes(c, p + "ln_post_attn"))
        if not c.attention_only:
            s.update(mlp_shapes(c, p))
    if not c.attention_only:
        s.update(norm_shapes(c, "ln_f"))
    if not c.tied:
        s["W_U"] = (d, V)
    return s


def norm_shapes(config: Config, name: str) -> dict[str, tuple[int, ...]]:
    """A norm's parameters: gain .g, and shift .b for LayerNorm."""
    d = config.d_model
    return {name + ".g": (d,), name + ".b": (d,)} if config.norm == "layernorm" else {name + ".g": (d,)}


def mlp_shapes(config: Config, p: str) -> dict[str, tuple[int, ...]]:
    """A layer's MLP parameters (``p`` is "l."): its norm, W_gate when gated, W_fc, W_proj, biases, post-norm."""
    c, d, m = config, config.d_model, config.d_mlp
    s = norm_shapes(c, p + "ln2") if c.pre_norms else {}
    if c.mlp == "gated":
        s[p + "W_gate"] = (d, m)
    s[p + "W_fc"], s[p + "W_proj"] = (d, m), (m, d)
    if c.bias:
        if c.mlp == "gated":
            s[p + "b_gate"] = (m,)
        s[p + "b_fc"], s[p + "b_proj"] = (m,), (d,)
    if c.post_norms:
        s.update(norm_shapes(c, p + "ln_post_mlp"))
    return s


def init_params(config: Config, seed: int = 0, std: float = 0.02) -> Params:
    """Random parameters: weights normal(0, std), norm gains 1 (as the norm applies them: 1 − norm_offset stored),
    biases and shifts 0 (GPT-2's scheme)."""
    rs = np.random.RandomState(seed)
    out: Params = {}
    for name, shape in param_shapes(config.validate()).items():
        last = name.rsplit(".", 1)[-1]
        if last == "g":
            out[name] = np.full(shape, 1.0 - config.norm_offset)
        elif last.startswith("b"):  # biases b_q ... and LayerNorm shifts .b
            out[name] = np.zeros(shape)
        else:
            out[name] = rs.normal(0.0, std, shape)
    return out


def attention_weights(config: Config, params: Params, layer: int) -> Weights:
    """W_q, W_k, W_v (d [+1], H·dₕ or G·dₕ) and W_o (H·dₕ, d) as the trace takes them: a bias as the last row."""
    p = f"{layer}."
    W_o = params[p + "W_o"]
    if not config.has_qkv_bias:
        return params[p + "W_q"], params[p + "W_k"], params[p + "W_v"], W_o
    W_q, W_k, W_v = (np.vstack([params[f"{p}W_{m}"], params[f"{p}b_{m}"][None, :]]) for m in "qkv")
    return W_q, W_k, W_v, W_o  # (d + 1, ·) × 3, (H·dₕ, d)


def embed(config: Config, params: Params, ids: np.ndarray, start: int = 0) -> np.ndarray:
    """x₀ = W_E[ids] · embed_scale plus the learned or sinusoidal positions start .. start + n − 1:
    (..., n) -> (..., n, d)."""
    n, W_E = ids.shape[-1], params["W_E"]
    x = W_E[ids] if config.embed_scale == 1 else W_E[ids] * config.embed_scale  # (..., n, d)
    if config.positions == "learned":
        x = x + params["W_pos"][start : start + n]  # (..., n, d)
    elif config.positions == "sinusoidal":
        x = x + positions.sinusoidal(start + n, config.d_model)[start:].astype(W_E.dtype)  # (..., n, d)
    return x


def unembedding(config: Config, params: Params) -> np.ndarray:
    """W_U (d, V): W_Eᵀ when tied."""
    return params["W_E"].T if config.tied else params["W_U"]


def normed(config: Config, params: Params, name: str, x: np.ndarray) -> np.ndarray:
    """The norm called ``name`` ("0.ln1", "ln_f" ...) on x: LayerNorm or RMSNorm, (..., n, d) -> (..., n, d)."""
    if config.norm == "layernorm":
        return layer_norm(x, params[name + ".g"], params[name + ".b"], config.ln_eps)
    return rms_norm(x, params[name + ".g"], config.ln_eps, config.norm_offset)


def attention_input(config: Config, params: Params, layer: int, x: np.ndarray) -> np.ndarray:
    """What layer l's attention reads: N₁(x) (x when attention-only or without pre-norms), with a column of ones when
    W_q, W_k, W_v have biases."""
    h = normed(config, params, f"{layer}.ln1", x) if config.pre_norms and not config.attention_only else x
    return with_ones(h) if config.has_qkv_bias else h  # (..., n, d [+1])


def final_logits(config: Config, params: Params, x: np.ndarray, hooks: Hooks = NO_HOOKS) -> np.ndarray:
    """logits = N_f(x) W_U (x W_U when attention-only): (..., n, d) -> (..., n, V). ``hooks`` may read or replace
    N_f(x), ``ln_final.hook_normalized``."""
    h = x if config.attention_only else hooks(FINAL_HOOK, normed(config, params, "ln_f", x))
    return attend.linear(h, unembedding(config, params))  # (..., n, V)


def mlp_out(config: Config, params: Params, layer: int, x: np.ndarray) -> np.ndarray:
    """MLP(N₂(x)) of layer l (MLP(x) without pre-norms), plain or gated, then its post-norm if any:
    (..., n, d) -> (..., n, d)."""
    c, p = config, f"{layer}."
    h = normed(c, params, p + "ln2", x) if c.pre_norms else x  # (..., n, d)
    b = (lambda name: params[p + name]) if c.bias else (lambda name: None)
    gate = (params[p + "W_gate"], b("b_gate")) if c.mlp == "gated" else (None, None)
    rows = h.reshape(-1, h.shape[-1])  # (rows, d): a batch's rows in one matrix product each (see attend.linear)
    out = mlp(rows, params[p + "W_fc"], b("b_fc"), params[p + "W_proj"], b("b_proj"), c.activation, *gate)
    out = out.reshape(h.shape)  # (..., n, d)
    return normed(c, params, p + "ln_post_mlp", out) if c.post_norms else out  # (..., n, d)


def block_out(
    config: Config, params: Params, layer: int, x: np.ndarray, attn: np.ndarray, hooks: Hooks = NO_HOOKS
) -> np.ndarray:
    """The stream after layer l, from the stream x entering it and its attention's output (both (..., n, d)).
    ``hooks`` may read or replace ``blocks.{l}.hook_attn_out``, ``hook_resid_mid``, ``hook_mlp_out`` and
    ``hook_resid_post``."""
    c, p, at = config, f"{layer}.", f"blocks.{layer}."
    a = attn + params[p + "b_o"] if c.bias else attn  # (..., n, d)
    if c.post_norms:
        a = normed(c, params, p + "ln_post_attn", a)  # (..., n, d)
    a = hooks(at + "hook_attn_out", a)  # (..., n, d)
    if c.attention_only:
        return hooks(at + "hook_resid_post", x + a)
    if c.parallel_residual:  # the MLP reads the layer's input too
        return hooks(at + "hook_resid_post", x + a + hooks(at + "hook_mlp_out", mlp_out(c, params, layer, x)))
    x = hooks(at + "hook_resid_mid", x + a)  # (..., n, d)
    return hooks(at + "hook_resid_post", x + hooks(at + "hook_mlp_out", mlp_out(c, params, layer, x)))  # (..., n, d)


@dataclass(frozen=True, eq=False)
class Run:
    """One forward pass. ``logits`` (n, V); ``traces[l]`` layer l's attention over all heads (its ``head(i)`` one
    head); ``residuals[l]`` the stream entering layer l ((n, d), the last one after every layer, before N_f);
    ``weights`` (layers, query heads, n, n); ``recomputed_from`` the first layer this run computed (the earlier ones
    came from the cache); ``model`` the model that made it; ``cache`` every named activation (TransformerLens'
    names, :class:`ActivationCache`); ``hooked`` the final value of each activation a hook of this run was on.

    A batch of B texts of n tokens each: ``ids`` and ``tokens`` one tuple per text, and every array gains a leading
    batch axis (``logits`` (B, n, V), ``residuals[l]`` (B, n, d), ``weights`` (B, layers, heads, n, n), each trace's
    arrays); ``row(b)`` is text b's run."""

    ids: tuple
    tokens: tuple
    logits: np.ndarray
    traces: tuple[Trace, ...]
    residuals: tuple[np.ndarray, ...]
    interventions: tuple[Intervention, ...] = ()
    recomputed_from: int = 0
    model: Model | None = None  # the model that ran it (the lens and the attribution read its final norm)
    hooked: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def batched(self) -> bool:
        """Whether this run holds a batch of texts (a leading batch axis on every array)."""
        return self.logits.ndim == 3

    @functools.cached_property
    def weights(self) -> np.ndarray:
        """Every query head's attention weights: (layers, heads, n, n), or (B, layers, heads, n, n) for a batch."""
        per_head = 4 if self.batched else 3  # a single-head model's traces hold (..., n, n)
        heads = [t.weights if t.weights.ndim == per_head else t.weights[..., None, :, :] for t in self.traces]
        return np.stack(heads, axis=1 if self.batched else 0)

    @functools.cached_property
    def cache(self) -> ActivationCache:
        """Every named activation of the run (``blocks.{l}.attn.hook_pattern`` ...), made when first read."""
        return ActivationCache(self)

    def head(self, layer: int, head: int) -> Trace:
        """Query head ``head`` of layer ``layer`` as a single-head trace, with the K and V of the key/value head it
        reads (shared by its group)."""
        if not (isinstance(layer, (int, np.integer)) and 0 <= layer < len(self.traces)):
            raise AttentionError(f"there is no layer {layer!r}: the model has {len(self.traces)} layers", field="layer")
        return self.traces[layer].head(head)

    def row(self, b: int) -> Run:
        """Text ``b`` of a batch as a run of its own (views of this run's arrays)."""
        if not (self.batched and is_whole(b) and 0 <= b < len(self.ids)):
            count = len(self.ids) if self.batched else "no"
            raise AttentionError(f"there is no text {b!r} in this run: it holds a batch of {count} texts", field="b")
        traces = tuple(dataclasses.replace(t, tokens=self.tokens[b], **_batch_row(t, b)) for t in self.traces)
        residuals = tuple(x[b] for x in self.residuals)
        hooked = {name: v[b] for name, v in self.hooked.items()}
        return Run(self.ids[b], self.tokens[b], self.logits[b], traces, residuals, self.interventions,
                   self.recomputed_from, self.model, hooked)

    @property
    def predictions(self) -> list:
        """The most likely next token after each position (a list per text for a batch)."""
        return np.argmax(self.logits, axis=-1).tolist()


BATCHED_ARRAYS = ("X", "Q", "K", "V", "scores", "scaled", "weights", "output", "Q_raw", "K_raw", "concat")


def _batch_row(trace: Trace, b: int) -> dict[str, np.ndarray]:
    """Row b of each array of a batched trace that has the batch axis."""
    return {name: getattr(trace, name)[b] for name in BATCHED_ARRAYS if getattr(trace, name) is not None}


class ActivationCache(Mapping):
    """A run's activations by TransformerLens' names (:func:`~.interventions.hook_names`, layouts in
    :mod:`.interventions`). Each is read from the arrays the run holds (the stream, the traces) or made from them
    by the forward pass's own functions, once, when first read; an activation a hook was on is its hooked value."""

    def __init__(self, run: Run):
        self.run = run
        self.names = hook_names(run.model.config) if run.model is not None else []
        self._index, self._made = set(self.names), dict(run.hooked)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._made:
            if name not in self._index:
                raise KeyError(f"this run has no activation {name!r}; it has e.g. {', '.join(self.names[:3])}")
            value = self._make(name)
            value.flags.writeable = False
            self._made[name] = value
        return self._made[name]

    def _make(self, name: str) -> np.ndarray:
        """Activation ``name`` from the run's arrays."""
        run, model = self.run, self.run.model
        c, L = model.config, model.config.n_layers
        if name == FINAL_HOOK:
            return normed(c, model.params, "ln_f", run.residuals[-1])
        layer, what = hook_layer(name, L), name.rsplit(".", 1)[-1]
        if ".attn." in name:
            return _attention_activation(run.traces[layer], what, c)
        return self._stream(layer, what)

    def _stream(self, layer: int, what: str) -> np.ndarray:
        """blocks.{layer}.hook_<what>: the streams and the block's outputs (as :func:`block_out` makes them)."""
        run, model, at = self.run, self.run.model, f"blocks.{layer}."
        c, p, x = model.config, model.params, run.residuals[layer]
        if what == "hook_resid_pre":
            return x
        if what == "hook_attn_out":
            a = run.traces[layer].output
            a = a + p[f"{layer}.b_o"] if c.bias else a
            return normed(c, p, f"{layer}.ln_post_attn", a) if c.post_norms else a
        if what == "hook_resid_mid":
            return x + self[at + "hook_attn_out"]
        if what == "hook_mlp_out":
            return mlp_out(c, p, layer, x if c.parallel_residual else self[at + "hook_resid_mid"])
        nxt = f"blocks.{layer + 1}.hook_resid_pre"
        changed = nxt in run.hooked or any(iv.kind == "stream" and iv.layer == layer + 1 for iv in run.interventions)
        if layer + 1 == c.n_layers or not changed:
            return run.residuals[layer + 1]  # the stream after layer l is the one entering layer l + 1
        if c.attention_only:
            return x + self[at + "hook_attn_out"]
        if c.parallel_residual:
            return x + self[at + "hook_attn_out"] + self[at + "hook_mlp_out"]
        return self[at + "hook_resid_mid"] + self[at + "hook_mlp_out"]


def _attention_activation(trace: Trace, what: str, config: Config) -> np.ndarray:
    """attn.hook_<what> of a layer, from its trace, in TransformerLens' layout (positions before heads for q, k,
    v, z and result; heads before positions for the scores and the pattern)."""
    H, G = config.n_heads, config.kv_heads

    def per_head(a: np.ndarray, h: int) -> np.ndarray:
        return a.reshape(*a.shape[:-1], h, -1)  # (..., n, h·w) -> (..., n, h, w)

    def square(a: np.ndarray) -> np.ndarray:
        return a[..., None, :, :] if H == 1 else a  # (..., H, n, n)

    if what in ("hook_q", "hook_k", "hook_v"):
        m = what[-1]
        return per_head(trace.X @ getattr(trace, f"W_{m}"), H if m == "q" else G)
    made = {
        "hook_rot_q": lambda: per_head(trace.Q, H),
        "hook_rot_k": lambda: per_head(trace.K, G),
        "hook_attn_scores": lambda: square(trace.scaled),
        "hook_pattern": lambda: square(trace.weights),
        "hook_z": lambda: per_head(trace.concat, H),
        "hook_result": lambda: np.einsum(
            "...mhe,hed->...mhd", per_head(trace.concat, H), trace.W_o.reshape(H, config.d_head, -1)
        ),
    }
    return made[what]()


@dataclass(frozen=True, eq=False)
class Generation:
    """Greedy generation: ``tokens`` the prompt then the new tokens; ``logits[s]`` (V,) the logits that chose new
    token s; ``cache[l]`` = (K, V), each (key/value heads, tokens fed, d_head): layer l's keys (after any rotation)
    and values; ``cache_lengths[s]`` how many positions the cache held when new token s was chosen."""

    tokens: list[int]
    prompt_length: int
    logits: np.ndarray
    cache: tuple[tuple[np.ndarray, np.ndarray], ...]
    cache_lengths: tuple[int, ...]


KVCache = tuple[tuple[np.ndarray, np.ndarray], ...]  # per layer (K, V), each (key/value heads, tokens, d_head)


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
    """A transformer: ``config``, ``params`` (read-only arrays of one dtype, float64 or float32, named as in
    :func:`param_shapes`), a vocabulary (``encode``/``decode``/``pieces``) and ``notes``: short sentences about how
    it was opened (a vocabulary smaller than the embedding, the precision chosen) for a page to show."""

    def __init__(
        self,
        config: Config,
        params: Params,
        vocab: WordVocab | BPEVocab,
        name: str = "model",
        dtype: type | np.dtype = np.float64,
        notes: Sequence[str] = (),
    ):
        self.config = config.validate()
        self.vocab = vocab
        self.name = name
        if np.dtype(dtype) not in DTYPES:
            raise AttentionError(f"a model computes in float64 or float32; got {np.dtype(dtype)}", field="dtype")
        self.dtype = np.dtype(dtype)
        self.params = check_params(config, params, dtype=self.dtype)
        self.notes = list(notes)
        if isinstance(vocab, WordVocab) and len(vocab) > config.vocab_size:  # a tokenizer's excess is a note
            raise AttentionError(
                f"the vocabulary has {len(vocab)} tokens but the model's embedding has {config.vocab_size} rows",
                field="vocab_size",
            )
        self._options = tuple(layer_options(config, layer, params=self.params) for layer in range(config.n_layers))
        self._weights: dict[int, Weights] = {}
        self._cache = RunCache(config.n_layers, self.params.values())

    def __repr__(self) -> str:
        c = self.config
        return (
            f"Model({self.name!r}: {c.n_layers} layers, {c.n_heads} heads, d_model {c.d_model}, "
            f"vocabulary {c.vocab_size}, context {c.n_ctx})"
        )

    # ------------------------------------------------------------ text

    def encode(self, text: str) -> list[int]:
        """Token ids of a text (with the BOS token the tokenizer adds, as transformers' AutoTokenizer does)."""
        return self.vocab.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of token ids."""
        return self.vocab.decode(self.check_ids(ids))

    def pieces(self, ids: Sequence[int]) -> list[str]:
        """Each token's own text, for labels."""
        return self.vocab.pieces(self.check_ids(ids))

    def token_id(self, token: object, field: str = "token") -> int:
        """One token's id from its id, or from a text that encodes to exactly one token (" Paris"; without the BOS
        token the tokenizer adds), or else from the token's own spelling in the vocabulary ("ĠParis"); an
        AttentionError naming the tokens when a text is several (``field`` names the argument)."""
        if isinstance(token, str):
            return self._one_token(token, field)
        V = self.config.vocab_size
        if not (is_whole(token) and 0 <= token < V):
            what = "token" if field == "token" else f"{field} token"
            raise AttentionError(
                f"there is no {what} {token!r}: the vocabulary has {V} tokens, ids 0 to {V - 1}", field=field
            )
        return int(token)

    def _one_token(self, text: str, field: str) -> int:
        """The id of the one token ``text`` encodes to (see :meth:`token_id`)."""
        text = text[:200]  # bounded before the tokenizer runs: a token is never this long
        try:
            ids, bos = self.vocab.encode(text), self.vocab.encode("")
        except AttentionError:  # a word vocabulary refuses a word it lacks
            ids, bos = [], []
        if bos and ids[: len(bos)] == bos:
            ids = ids[len(bos) :]  # the BOS the tokenizer adds to every text is not the token asked for
        if len(ids) == 1 and 0 <= ids[0] < self.config.vocab_size:
            return int(ids[0])
        spelled = self._spelled(text)
        if spelled is not None:
            return spelled
        if not ids:
            raise AttentionError(f"{text!r} is no token: give one token's text, e.g. ' Paris', or its id", field=field)
        shown = ", ".join(repr(p) for p in self.vocab.pieces(ids[:8])) + (", …" if len(ids) > 8 else "")
        raise AttentionError(
            f"{text[:40]!r} is {len(ids)} tokens here ({shown}), not one: give a single token's text or its id",
            field=field,
        )

    def _spelled(self, text: str) -> int | None:
        """The id of the vocabulary entry spelled exactly ``text`` ("ĠParis", "▁Paris", a word), or None."""
        if isinstance(self.vocab, WordVocab):
            return self.vocab.index.get(text)
        find = getattr(getattr(self.vocab, "tokenizer", None), "token_to_id", None)
        i = find(text) if find is not None else None
        return int(i) if i is not None and 0 <= i < self.config.vocab_size else None

    def check_ids(self, token_ids: object, longest: int | None = None) -> list[int]:
        """Token ids as a list of ints, each in the vocabulary, 1 to n_ctx of them; else a clear error. An item may
        be a token as a string (see :meth:`token_id`)."""
        longest = self.config.n_ctx if longest is None else longest
        if isinstance(token_ids, (list, tuple)) and any(isinstance(t, str) for t in token_ids[: longest + 1]):
            token_ids = [self.token_id(t, "token_ids") if isinstance(t, str) else t for t in token_ids[: longest + 1]]
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

    def layer_weights(self, layer: int) -> Weights:
        """W_q, W_k, W_v, W_o of a layer as its trace takes them (see :func:`attention_weights`), computed once."""
        if layer not in self._weights:
            ws = attention_weights(self.config, self.params, layer)
            for w in ws:
                w.flags.writeable = False
            self._weights[layer] = ws
            self._cache.ignore(ws)
        return self._weights[layer]

    def run(
        self,
        token_ids: Sequence[int] | Sequence[Sequence[int]] | np.ndarray,
        interventions: Sequence[Intervention] = (),
        hooks: Mapping[str, HookFn | Sequence[HookFn]] | None = None,
    ) -> Run:
        """The forward pass over ``token_ids`` (n,), or a batch of texts of equal length (B, n), with the given
        interventions (see :mod:`.interventions`) and ``hooks``: ``{name: fn}``, each ``fn(value, name)`` reading
        the named activation (``blocks.3.attn.hook_pattern`` ...; :func:`~.interventions.hook_names`) and returning
        None or its replacement. Runs without hooks are cached; with hooks, the layers before the first hooked one
        come from the cache."""
        ids = self._ids(token_ids)  # (n,) or (B, n)
        ivs = tuple(check(self.config, iv) for iv in interventions)
        fns = user_hooks(self.config, hooks)
        merged = as_hooks(ivs)
        for name, f in fns.items():
            merged[name] = [*merged.get(name, []), *f]
        every = Hooks(merged)
        L = self.config.n_layers
        keys = [self._key(ids, ivs, layer) for layer in range(L + 1)]
        last = min((hook_layer(n, L) - n.endswith("hook_resid_pre") for n in fns), default=L)  # cache up to it
        start = next((layer for layer in range(last, -1, -1) if keys[layer] in self._cache), None)
        if start is None:
            x0 = every("blocks.0.hook_resid_pre", embed(self.config, self.params, ids))  # (..., n, d)
            residuals, traces, logits, start = (x0,), (), None, 0
        else:
            residuals, traces, logits = self._cache.get(keys[start])
        rows = ids.tolist() if ids.ndim == 2 else [ids.tolist()]
        tokens = tuple(tuple(self.vocab.pieces(r)) for r in rows)
        tokens = tokens if ids.ndim == 2 else tokens[0]
        x = residuals[-1]
        for layer in range(start, L):
            trace, x = self.block(layer, x, () if ids.ndim == 2 else tokens, [iv for iv in ivs if iv.layer == layer],
                                  every)
            if layer + 1 < L:
                x = every(f"blocks.{layer + 1}.hook_resid_pre", x)  # (..., n, d): the stream entering the next layer
            residuals, traces = (*residuals, x), (*traces, trace)
            if not fns:
                self._cache.put(keys[layer + 1], (residuals, traces, None))
        if logits is None or fns:  # a hook on the final norm runs even when every layer came from the cache
            logits = final_logits(self.config, self.params, x, every)  # (..., n, V)
            if not fns:
                self._cache.put(keys[L], (residuals, traces, logits))
        run_ids = tuple(map(tuple, ids.tolist())) if ids.ndim == 2 else tuple(ids.tolist())
        hooked = {name: v for name, v in every.seen.items() if name in fns}
        return Run(run_ids, tokens, logits, traces, residuals, ivs, start, self, hooked)

    def _ids(self, token_ids: object) -> np.ndarray:
        """Token ids (n,) as :meth:`check_ids` takes them, or a batch (B, n) of texts of equal length."""
        arr = token_ids if isinstance(token_ids, np.ndarray) else None
        rows = isinstance(token_ids, (list, tuple)) and len(token_ids) and isinstance(token_ids[0], (list, tuple))
        if not (rows or (arr is not None and arr.ndim == 2)):
            return np.array(self.check_ids(token_ids), dtype=np.int64)
        batch = [self.check_ids(r) for r in token_ids]  # type: ignore[union-attr]
        for b, r in enumerate(batch):
            if len(r) != len(batch[0]):
                raise AttentionError(
                    f"a batch's texts must have the same number of tokens: text 1 has {len(batch[0])}, text {b + 1} "
                    f"has {len(r)}",
                    field="token_ids",
                )
        return np.array(batch, dtype=np.int64)  # (B, n)

    def block(
        self,
        layer: int,
        x: np.ndarray,
        tokens: Sequence[str] | None = None,
        interventions: Sequence[Intervention] = (),
        hooks: Hooks | None = None,
    ) -> tuple[Trace, np.ndarray]:
        """One block on the stream x (..., n, d) at positions 0 .. n − 1: (its attention trace, the stream after
        it)."""
        attended, x = self.layer(layer, x, interventions=interventions, hooks=hooks)
        gains = [iv for iv in interventions if iv.kind == "replace" and iv.matrix in GAINS]  # the options say them
        if self.config.layer_types or gains:
            params = with_gains(self.config, self.params, layer, gains)
            options = layer_options(self.config, layer, x.shape[-2], params)
        else:
            options = self._options[layer]
        return attend.to_trace(attended, options, tokens), x

    def layer(
        self,
        layer: int,
        x: np.ndarray,
        start: int = 0,
        past: tuple[np.ndarray, np.ndarray] | None = None,
        interventions: Sequence[Intervention] = (),
        hooks: Hooks | None = None,
    ) -> tuple[Attended, np.ndarray]:
        """Layer ``layer`` on the rows x (..., m, d) at positions start .. start + m − 1, after the cached keys and
        values ``past`` of the positions before (none in the full pass): its attention's arrays and the stream after
        it. The one path of the full pass (start 0, no cache), of the cached step (one row) and of a batch (a
        leading axis on x). ``interventions`` are the layer's (a replaced matrix; ablations and head patches run as
        hooks), unless ``hooks`` are given, which then carry them."""
        cfg = self.config
        replaces = [iv for iv in interventions if iv.kind == "replace"]
        W = attend.replaced(cfg, self.layer_weights(layer), [iv for iv in replaces if iv.matrix not in GAINS])
        params = with_gains(cfg, self.params, layer, [iv for iv in replaces if iv.matrix in GAINS])
        hooks = Hooks(as_hooks(iv for iv in interventions if iv.kind != "stream")) if hooks is None else hooks
        X = attention_input(cfg, self.params, layer, x)  # (..., m, d [+1])
        attended = attend.attend(cfg, params, layer, X, W, start, past, hooks)
        x = block_out(cfg, self.params, layer, x, attended.output, hooks)  # (..., m, d)
        with np.errstate(over="ignore", invalid="ignore"):
            finite = np.isfinite(x.sum())  # one pass: a finite sum means every value is finite
        if not finite:
            raise AttentionError(
                f"layer {layer} made values too large for {self.dtype} numbers (the residual stream is not finite); "
                + ("try dtype=np.float64" if self.dtype == np.float32 else "the weights are too large"),
                field="dtype",
            )
        return attended, x

    def _key(self, ids: np.ndarray, ivs: tuple[Intervention, ...], layer: int) -> bytes:
        """The content key of the stream entering ``layer``: the ids (and their shape: a batch or one text), the
        interventions of the layers before, and the patches of this stream itself."""
        h = hashlib.blake2b(np.asarray(ids, dtype=np.int64).tobytes(), digest_size=20)
        h.update(repr(np.shape(ids)).encode())
        h.update(layer.to_bytes(4, "little"))
        for iv in ivs:
            if iv.layer < layer or (iv.layer == layer and iv.kind == "stream"):
                h.update(iv.key())
        return h.digest()

    @property
    def cache_bytes(self) -> int:
        """The bytes of the distinct arrays the run cache holds (each once, however many cached runs share it; not
        the model's own weights)."""
        return self._cache.bytes

    def clear_cache(self) -> None:
        """Forget every cached run."""
        self._cache.clear()

    # ------------------------------------------------------------ generation

    def generate(self, token_ids: Sequence[int], steps: int) -> list[int]:
        """Greedy generation: the prompt followed by ``steps`` new tokens, each the most likely next token."""
        return self.generate_cached(token_ids, steps).tokens

    def generate_cached(self, token_ids: Sequence[int], steps: int) -> Generation:
        """Greedy generation with a key/value cache: the prompt runs once (a full forward), then each new token
        runs alone (:meth:`feed`), its query attending the cached keys and values of every earlier position."""
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
        out, step_logits, lengths = list(ids), [], []
        if steps == 0:
            return Generation(out, len(ids), np.zeros((0, self.config.vocab_size), self.dtype), (), ())
        step, cache = self.prefill(ids)
        for s in range(steps):
            step_logits.append(step.logits)
            lengths.append(len(out))
            out.append(int(np.argmax(step.logits)))
            if s < steps - 1:
                step, cache = self.feed(out[-1], cache)
        return Generation(out, len(ids), np.array(step_logits), cache, tuple(lengths))

    def prefill(self, token_ids: Sequence[int]) -> tuple[Step, KVCache]:
        """The prompt in one full forward: the last prompt token as a :class:`Step` (its query and attention row
        from the run) and the cache of every prompt position's keys and values, per layer (G, n, d_head) each."""
        ids = self.check_ids(token_ids)
        H, G, n = self.config.n_heads, self.config.kv_heads, len(ids)
        run = self.run(ids)
        cache = tuple((split_heads(t.K, G), split_heads(t.V, G)) for t in run.traces)  # (G, n, d_head) each
        queries = tuple(split_heads(t.Q, H)[:, -1] for t in run.traces)  # (H, d_head) each
        weights = tuple(run.weights[layer, :, -1] for layer in range(self.config.n_layers))  # (H, n) each
        return Step(n - 1, ids[-1], queries, weights, run.logits[-1]), cache

    def feed(self, token: int, cache: KVCache) -> tuple[Step, KVCache]:
        """One token at the next position (the cache's length) through every layer (:meth:`layer`, as the full
        pass runs), attending the cached keys and values and its own: its :class:`Step` and the cache one row
        longer per layer (the given one is unchanged)."""
        cfg = self.config
        pos = int(cache[0][0].shape[-2]) if cache else 0
        (token,) = self.check_ids([token], longest=1)
        if len(cache) != cfg.n_layers or pos + 1 > cfg.n_ctx:
            raise AttentionError(
                f"a cache of {len(cache)} layers and {pos} tokens cannot take one more token: the model has "
                f"{cfg.n_layers} layers and a context of {cfg.n_ctx}",
                field="cache",
            )
        x = embed(cfg, self.params, np.array([token]), start=pos)  # (1, d): the token at position pos
        grown, queries, rows = [], [], []
        for layer in range(cfg.n_layers):
            a, x = self.layer(layer, x, pos, cache[layer])
            grown.append((a.K, a.V))  # (G, pos + 1, d_head) each
            queries.append(a.q[:, 0])  # (H, d_head)
            rows.append(a.weights[:, 0])  # (H, pos + 1)
        logits = final_logits(cfg, self.params, x)[0]  # (V,)
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


def check_params(
    config: Config, params: object, where: str = "the parameters", dtype: type | np.dtype = np.float64
) -> Params:
    """The parameters as read-only arrays of ``dtype``, exactly the names and shapes of :func:`param_shapes`,
    finite."""
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
        arr = np.asarray(params[name], dtype=dtype)
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
