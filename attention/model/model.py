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

import functools
import hashlib
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import positions
from ..errors import AttentionError
from ..heads import merge_heads
from ..names import is_whole
from ..options import Options
from ..trace import Trace
from . import attend
from .attend import Attended, Weights, layer_options
from .config import Config
from .interventions import (
    FINAL_HOOK,
    FINAL_SCALE,
    GAINS,
    MLP_HOOKS,
    NO_HOOKS,
    STREAM_IN,
    HookFn,
    Hooks,
    Intervention,
    as_hooks,
    check,
    hook_layer,
    hook_names,
    selected,
    user_hooks,
    with_gains,
)
from .layers import ACTIVATION, layer_norm, mlp, rms_norm, with_ones
from .layertraces import Memo, Traces
from .runcache import RunCache
from .vocab import BPEVocab, WordVocab

Params = dict[str, np.ndarray]
DTYPES = (np.float64, np.float32)
HOOKED_RUNS = itertools.count()  # each hooked run's traces are keyed apart from every other run's


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


def embed(config: Config, params: Params, ids: np.ndarray, start: int = 0, hooks: Hooks = NO_HOOKS) -> np.ndarray:
    """x₀ = W_E[ids] · embed_scale plus the learned or sinusoidal positions start .. start + n − 1:
    (..., n) -> (..., n, d). ``hooks`` may read or replace ``hook_embed`` (the tokens' rows, scaled) and
    ``hook_pos_embed`` (the learned positions' rows, (..., n, d): a batch's rows share them)."""
    n, W_E = ids.shape[-1], params["W_E"]
    x = W_E[ids] if config.embed_scale == 1 else W_E[ids] * config.embed_scale  # (..., n, d)
    x = hooks("hook_embed", x) if "hook_embed" in hooks else x
    if config.positions == "learned":
        x = x + hooks("hook_pos_embed", np.broadcast_to(params["W_pos"][start : start + n], x.shape))  # (..., n, d)
    elif config.positions == "sinusoidal":
        x = x + positions.sinusoidal(start + n, config.d_model)[start:].astype(W_E.dtype)  # (..., n, d)
    return x


def unembedding(config: Config, params: Params) -> np.ndarray:
    """W_U (d, V): W_Eᵀ when tied."""
    return params["W_E"].T if config.tied else params["W_U"]


def normed(config: Config, params: Params, name: str, x: np.ndarray, hooks: Hooks = NO_HOOKS,
           hook: str = "") -> np.ndarray:
    """The norm called ``name`` ("0.ln1", "ln_f" ...) on x: LayerNorm or RMSNorm, (..., n, d) -> (..., n, d).
    ``hooks`` may read or replace its scale, the activation ``hook`` ("blocks.0.ln1.hook_scale" ...): the
    divisor √(var + ε) (..., n, 1) (√(mean(x²) + ε) for RMSNorm), the same steps as :func:`.layers.layer_norm`."""
    c = config
    if hook not in hooks:
        if c.norm == "layernorm":
            return layer_norm(x, params[name + ".g"], params[name + ".b"], c.ln_eps)
        return rms_norm(x, params[name + ".g"], c.ln_eps, c.norm_offset)
    centred = x - x.mean(axis=-1, keepdims=True) if c.norm == "layernorm" else x  # (..., n, d)
    scale = hooks(hook, np.sqrt(np.mean(centred * centred, axis=-1, keepdims=True) + c.ln_eps))  # (..., n, 1)
    if c.norm == "layernorm":
        return centred / scale * params[name + ".g"] + params[name + ".b"]  # (..., n, d)
    return centred / scale * (c.norm_offset + params[name + ".g"])  # (..., n, d)


def attention_input(config: Config, params: Params, layer: int, x: np.ndarray, hooks: Hooks = NO_HOOKS
                    ) -> np.ndarray:
    """What layer l's attention reads: N₁(x) (x when attention-only or without pre-norms), with a column of ones when
    W_q, W_k, W_v have biases. ``hooks`` may read or replace N₁'s scale, ``blocks.{l}.ln1.hook_scale``."""
    pre = config.pre_norms and not config.attention_only
    h = normed(config, params, f"{layer}.ln1", x, hooks, f"blocks.{layer}.ln1.hook_scale") if pre else x
    return with_ones(h) if config.has_qkv_bias else h  # (..., n, d [+1])


def final_logits(config: Config, params: Params, x: np.ndarray, hooks: Hooks = NO_HOOKS) -> np.ndarray:
    """logits = N_f(x) W_U (x W_U when attention-only): (..., n, d) -> (..., n, V). ``hooks`` may read or replace
    N_f(x), ``ln_final.hook_normalized``."""
    h = x if config.attention_only else hooks(FINAL_HOOK, normed(config, params, "ln_f", x, hooks, FINAL_SCALE))
    return attend.linear(h, unembedding(config, params))  # (..., n, V)


def mlp_out(config: Config, params: Params, layer: int, x: np.ndarray, hooks: Hooks = NO_HOOKS) -> np.ndarray:
    """MLP(N₂(x)) of layer l (MLP(x) without pre-norms), plain or gated, then its post-norm if any:
    (..., n, d) -> (..., n, d). ``hooks`` may read or replace ``blocks.{l}.ln2.hook_scale`` and the neurons
    ``mlp.hook_pre`` (before the activation: x W_fc + b_fc, or the gate x W_gate + b_gate), ``mlp.hook_pre_linear``
    (a gated MLP's x W_fc + b_fc) and ``mlp.hook_post`` (after it: act(pre), or act(gate) ⊙ pre_linear), each
    (..., n, d_mlp)."""
    c, p, at = config, f"{layer}.", f"blocks.{layer}."
    h = normed(c, params, p + "ln2", x, hooks, at + "ln2.hook_scale") if c.pre_norms else x  # (..., n, d)
    b = (lambda name: params[p + name]) if c.bias else (lambda name: None)
    gate = (params[p + "W_gate"], b("b_gate")) if c.mlp == "gated" else (None, None)
    rows = h.reshape(-1, h.shape[-1])  # (rows, d): a batch's rows in one matrix product each (see attend.linear)
    if any(at + "mlp." + name in hooks for name in MLP_HOOKS):
        out = _hooked_mlp(c, params, layer, rows, hooks, h.shape[:-1])
    else:
        out = mlp(rows, params[p + "W_fc"], b("b_fc"), params[p + "W_proj"], b("b_proj"), c.activation, *gate)
    out = out.reshape(h.shape)  # (..., n, d)
    return normed(c, params, p + "ln_post_mlp", out) if c.post_norms else out  # (..., n, d)


def _hooked_mlp(config: Config, params: Params, layer: int, rows: np.ndarray, hooks: Hooks, lead: tuple
                ) -> np.ndarray:
    """:func:`.layers.mlp`'s steps on rows (r, d), with the neurons (..., n, d_mlp) through their hooks."""
    c, p, at = config, f"{layer}.", f"blocks.{layer}.mlp."

    def hooked(name: str, a: np.ndarray) -> np.ndarray:
        return hooks(at + name, a.reshape(*lead, -1)).reshape(a.shape)  # (r, d_mlp) seen as (..., n, d_mlp)

    def linear(w: str, bias: str) -> np.ndarray:
        y = rows @ params[p + w]  # (r, d_mlp)
        if c.bias:
            y += params[p + bias]
        return y

    act = ACTIVATION[c.activation]
    if c.mlp == "gated":
        pre_linear = hooked("hook_pre_linear", linear("W_fc", "b_fc"))  # (r, d_mlp)
        post = hooked("hook_post", pre_linear * act(hooked("hook_pre", linear("W_gate", "b_gate"))))
    else:
        post = hooked("hook_post", act(hooked("hook_pre", linear("W_fc", "b_fc"))))  # (r, d_mlp)
    out = post @ params[p + "W_proj"]  # (r, d)
    return out + params[p + "b_proj"] if c.bias else out


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
        return hooks(at + "hook_resid_post", x + a + hooks(at + "hook_mlp_out", mlp_out(c, params, layer, x, hooks)))
    x = hooks(at + "hook_resid_mid", x + a)  # (..., n, d)
    return hooks(at + "hook_resid_post", x + hooks(at + "hook_mlp_out", mlp_out(c, params, layer, x, hooks)))


@dataclass(frozen=True, eq=False)
class Run:
    """One forward pass. ``logits`` (n, V); ``traces[l]`` layer l's attention over all heads (its ``head(i)`` one
    head), made when read from the layer's input (:mod:`.layertraces`); ``residuals[l]`` the stream entering layer l
    ((n, d), the last one after every layer, before N_f); ``weights`` (layers, query heads, n, n);
    ``recomputed_from`` the first layer this run computed (the earlier ones came from the cache); ``model`` the
    model that made it; ``cache`` the named activations (TransformerLens' names, :class:`ActivationCache`; those
    ``names`` says when the run was given a names_filter); ``hooked`` the final value of each activation a hook of
    this run was on.

    A batch of B texts of n tokens each: ``ids`` and ``tokens`` one tuple per text, and every array gains a leading
    batch axis (``logits`` (B, n, V), ``residuals[l]`` (B, n, d), ``weights`` (B, layers, heads, n, n), each trace's
    arrays); ``row(b)`` is text b's run. Texts of different lengths are padded on the right to the longest (n), with
    ``lengths`` their own: ``row(b)`` is then text b's run at its own positions, the single run's numbers."""

    ids: tuple
    tokens: tuple
    logits: np.ndarray
    traces: Traces
    residuals: tuple[np.ndarray, ...]
    interventions: tuple[Intervention, ...] = ()
    recomputed_from: int = 0
    model: Model | None = None  # the model that ran it (the lens and the attribution read its final norm)
    hooked: Mapping[str, np.ndarray] = field(default_factory=dict)
    names: tuple[str, ...] | None = None  # the activations the cache holds (None: every one)
    lengths: tuple[int, ...] | None = None  # a batch's texts' own lengths (the rest of each row is padding)

    @property
    def batched(self) -> bool:
        """Whether this run holds a batch of texts (a leading batch axis on every array)."""
        return self.logits.ndim == 3

    @functools.cached_property
    def weights(self) -> np.ndarray:
        """Every query head's attention weights: (layers, heads, n, n), or (B, layers, heads, n, n) for a batch
        (L·H·n² numbers: at long texts read one head, :meth:`head`, or rows, ``traces.rows``)."""
        n = self.logits.shape[-2]
        out = np.empty((*self.logits.shape[:-2], len(self.traces), self.model.config.n_heads, n, n), self.logits.dtype)
        for layer in range(len(self.traces)):
            out[..., layer, :, :, :] = self.traces.rows(layer, slice(None))  # (..., H, n, n)
        return out

    @functools.cached_property
    def cache(self) -> ActivationCache:
        """The named activations of the run (``blocks.{l}.attn.hook_pattern`` ...), each made when first read."""
        return ActivationCache(self, self.names)

    def head(self, layer: int, head: int) -> Trace:
        """Query head ``head`` of layer ``layer`` as a single-head trace, with the K and V of the key/value head it
        reads (shared by its group); only its own (n, n) arrays are made."""
        return self.traces.head(layer, head)

    def row(self, b: int) -> Run:
        """Text ``b`` of a batch as a run of its own (views of this run's arrays)."""
        if not (self.batched and is_whole(b) and 0 <= b < len(self.ids)):
            count = len(self.ids) if self.batched else "no"
            raise AttentionError(f"there is no text {b!r} in this run: it holds a batch of {count} texts", field="b")
        n = self.lengths[b] if self.lengths else len(self.ids[b])  # a padded text: its own positions only
        residuals = tuple(x[b, :n] for x in self.residuals)
        hooked = {name: _real(name, v[b], n) for name, v in self.hooked.items()}
        ids, tokens = self.ids[b][:n], self.tokens[b][:n]
        return Run(ids, tokens, self.logits[b, :n], self.traces.row(b, tokens, n), residuals, self.interventions,
                   self.recomputed_from, self.model, hooked, self.names)

    @property
    def predictions(self) -> list:
        """The most likely next token after each position (a list per text for a batch)."""
        return np.argmax(self.logits, axis=-1).tolist()


def _real(name: str, value: np.ndarray, n: int) -> np.ndarray:
    """One text's activation ``name`` without its padding: its positions cut to the text's first n (queries and keys
    of the scores and the pattern (H, n, n); the first axis of the others, (n, ...))."""
    return value[..., :n, :n] if name.endswith(("hook_attn_scores", "hook_pattern")) else value[:n]


PAD_ID = 0  # the token a shorter text of a batch is padded with, after its own (no real position ever reads it)


class ActivationCache(Mapping):
    """A run's activations by TransformerLens' names (:func:`~.interventions.hook_names`, layouts in
    :mod:`.interventions`). Each is read from the arrays the run holds (the stream, the traces) or made from them
    by the forward pass's own functions, once, when first read; an activation a hook was on is its hooked value."""

    def __init__(self, run: Run, names: Sequence[str] | None = None):
        self.run = run
        every = hook_names(run.model.config) if run.model is not None else []
        self.names = every if names is None else [name for name in every if name in set(names)]
        self._index, self._made = set(self.names), dict(run.hooked)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._index:
            raise KeyError(f"this run has no activation {name!r}; it has e.g. {', '.join(self.names[:3])}")
        return self._value(name)

    def _value(self, name: str) -> np.ndarray:
        """Activation ``name``, made once; one outside a names_filter (a step towards one inside) is not kept."""
        if name in self._made:
            return self._made[name]
        value = self._make(name)
        value.flags.writeable = False
        if name in self._index:
            self._made[name] = value
        return value

    def _make(self, name: str) -> np.ndarray:
        """Activation ``name`` from the run's arrays."""
        run, model = self.run, self.run.model
        c, L = model.config, model.config.n_layers
        if name == FINAL_HOOK:
            return normed(c, model.params, "ln_f", run.residuals[-1], self._replayed(), FINAL_SCALE)
        if name in (FINAL_SCALE, "hook_embed", "hook_pos_embed") or ".ln" in name or ".mlp." in name:
            return self._recorded(name)
        layer, what = hook_layer(name, L), name.rsplit(".", 1)[-1]
        if what in ("hook_attn_scores", "hook_pattern"):
            square = run.traces[layer].scaled if what == "hook_attn_scores" else run.traces[layer].weights
            return square[..., None, :, :] if c.n_heads == 1 else square  # (..., H, n, n)
        if ".attn." in name:
            return _attention_activation(_light(run, layer), what, c)
        return self._stream(layer, what)

    def _recorded(self, name: str) -> np.ndarray:
        """An activation inside the embedding, a norm or an MLP, recorded by running that step of the pass again on
        its input with a hook that reads it."""
        run, model = self.run, self.run.model
        c, p, L = model.config, model.params, model.config.n_layers
        record = self._replayed(name)
        layer = hook_layer(name, L)
        if name in ("hook_embed", "hook_pos_embed"):
            embed(c, p, np.asarray(run.ids, dtype=np.int64), hooks=record)
        elif name == FINAL_SCALE:
            normed(c, p, "ln_f", run.residuals[-1], record, name)
        elif ".ln1." in name:
            attention_input(c, p, layer, run.residuals[layer], record)
        else:
            x = run.residuals[layer] if c.parallel_residual else self._value(f"blocks.{layer}.hook_resid_mid")
            mlp_out(c, p, layer, x, record)
        return record.seen[name]

    def _replayed(self, record: str = "") -> Hooks:
        """Hooks that put back each hooked activation's final value, so a step made again is the hooked pass's
        step, and that read ``record``."""
        fns = {name: [lambda value, _, kept=kept: kept] for name, kept in self.run.hooked.items()}
        if record:
            fns.setdefault(record, []).append(lambda value, _: None)
        return Hooks(fns)

    def _stream(self, layer: int, what: str) -> np.ndarray:
        """blocks.{layer}.hook_<what>: the streams and the block's outputs (as :func:`block_out` makes them)."""
        run, model, at = self.run, self.run.model, f"blocks.{layer}."
        c, p, x = model.config, model.params, run.residuals[layer]
        if what == "hook_resid_pre":
            return x
        if what == "hook_attn_out":
            a = run.traces.output(layer)  # (..., n, d)
            a = a + p[f"{layer}.b_o"] if c.bias else a
            return normed(c, p, f"{layer}.ln_post_attn", a) if c.post_norms else a
        if what == "hook_resid_mid":
            return x + self._value(at + "hook_attn_out")
        if what == "hook_mlp_out":
            read = x if c.parallel_residual else self._value(at + "hook_resid_mid")  # (..., n, d): what the MLP reads
            return mlp_out(c, p, layer, read, self._replayed())
        nxt = f"blocks.{layer + 1}.hook_resid_pre"
        changed = nxt in run.hooked or any(iv.kind == "stream" and iv.layer == layer + 1 for iv in run.interventions)
        if layer + 1 == c.n_layers or not changed:
            return run.residuals[layer + 1]  # the stream after layer l is the one entering layer l + 1
        if c.attention_only:
            return x + self._value(at + "hook_attn_out")
        if c.parallel_residual:
            return x + self._value(at + "hook_attn_out") + self._value(at + "hook_mlp_out")
        return self._value(at + "hook_resid_mid") + self._value(at + "hook_mlp_out")


def _light(run: Run, layer: int) -> Attended | Trace:
    """Layer ``layer``'s attention arrays without making its n × n ones (a run with hooks: its trace)."""
    return run.traces[layer] if run.traces.eager is not None else run.traces.light(layer)


def _attention_activation(a: Attended | Trace, what: str, config: Config) -> np.ndarray:
    """attn.hook_<what> of a layer (not the scores or the pattern), from its attention's arrays (a trace's or
    :meth:`.layertraces.Traces.light`'s), in TransformerLens' layout (positions before heads)."""
    H, G = config.n_heads, config.kv_heads

    def per_head(x: np.ndarray, h: int) -> np.ndarray:
        return x.reshape(*x.shape[:-1], h, -1)  # (..., n, h·w) -> (..., n, h, w)

    def rows(x: np.ndarray) -> np.ndarray:
        return x if isinstance(a, Trace) else merge_heads(x)  # (..., n, h·w): a trace's are merged already

    W = (a.W_q, a.W_k, a.W_v, a.W_o) if isinstance(a, Trace) else a.W
    made = {
        "hook_q": lambda: per_head(a.X @ W[0], H),
        "hook_k": lambda: per_head(a.X @ W[1], G),
        "hook_v": lambda: per_head(a.X @ W[2], G),
        "hook_rot_q": lambda: per_head(rows(a.Q if isinstance(a, Trace) else a.q), H),
        "hook_rot_k": lambda: per_head(rows(a.K), G),
        "hook_z": lambda: per_head(a.concat, H),
        "hook_result": lambda: np.einsum(
            "...mhe,hed->...mhd", per_head(a.concat, H), W[3].reshape(H, config.d_head, -1)
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
        self._memo = Memo()  # the traces runs made on demand (see .layertraces)

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
        hooks: Mapping[str, HookFn | Sequence[HookFn]] | Sequence[tuple[str, HookFn]] | None = None,
        names_filter: str | Sequence[str] | Callable[[str], bool] | None = None,
    ) -> Run:
        """The forward pass over ``token_ids`` (n,), or a batch of texts of equal length (B, n), with the given
        interventions (see :mod:`.interventions`) and ``hooks``: ``{name: fn}`` or a list of ``(name, fn)`` pairs,
        each ``fn(value, name)`` reading the named activation (``blocks.3.attn.hook_pattern`` ...;
        :func:`~.interventions.hook_names`) and returning None or its replacement. ``names_filter`` (a name, a list
        of names or a predicate, as TransformerLens takes it) makes the run's cache hold exactly those activations,
        made at once. Runs without hooks are cached; with hooks, the layers before the first hooked one come from
        the cache. A run keeps each layer's input and heads' outputs; its traces are made when read
        (:mod:`.layertraces`); a run with hooks within a layer keeps its traces as the pass made them (hooks on the
        streams entering the layers only change what the traces are made from)."""
        ids, lengths = self._ids(token_ids)  # (n,) or (B, n), and a batch's texts' lengths
        ivs = tuple(check(self.config, iv) for iv in interventions)
        names = selected(self.config, names_filter)
        fns = user_hooks(self.config, hooks)
        merged = as_hooks(ivs)
        for name, f in fns.items():
            merged[name] = [*merged.get(name, []), *f]
        every = Hooks(merged)
        L = self.config.n_layers
        keys = [self._key(ids, ivs, layer) for layer in range(L + 1)]
        last = min((hook_layer(n, L) - n.endswith(STREAM_IN) for n in fns), default=L)  # cache up to it
        start = next((layer for layer in range(last, -1, -1) if keys[layer] in self._cache), None)
        if start is None:
            x0 = every("blocks.0.hook_resid_pre", embed(self.config, self.params, ids, hooks=every))  # (..., n, d)
            residuals, kept, logits, start = (x0,), (), None, 0
        else:
            residuals, kept, logits = self._cache.get(keys[start])
        rows = ids.tolist() if ids.ndim == 2 else [ids.tolist()]
        tokens = tuple(tuple(self.vocab.pieces(r)) for r in rows)
        tokens = tokens if ids.ndim == 2 else tokens[0]
        traced = () if ids.ndim == 2 else tokens
        inside = any(n.startswith("blocks.") and not n.endswith(STREAM_IN) for n in fns)  # a hook within a layer
        eager = list(Traces(self, residuals, kept, ivs, traced, keys[start])) if inside else None  # cached layers
        x = residuals[-1]
        for layer in range(start, L):
            a, x = self.layer(layer, x, interventions=[iv for iv in ivs if iv.layer == layer], hooks=every,
                              keep=inside)
            if layer + 1 < L:
                x = every(f"blocks.{layer + 1}.hook_resid_pre", x)  # (..., n, d): the stream entering the next layer
            residuals, kept = (*residuals, x), (*kept, a.concat)
            if inside:
                eager.append(self.layer_trace(layer, a, traced, ivs))
            elif not fns:
                self._cache.put(keys[layer + 1], (residuals, kept, None))
        if logits is None or fns:  # a hook on the final norm runs even when every layer came from the cache
            logits = final_logits(self.config, self.params, x, every)  # (..., n, V)
            if not fns:
                self._cache.put(keys[L], (residuals, kept, logits))
        run_ids = tuple(map(tuple, ids.tolist())) if ids.ndim == 2 else tuple(ids.tolist())
        hooked = {name: v for name, v in every.seen.items() if name in fns}
        key = keys[L] + (next(HOOKED_RUNS).to_bytes(8, "little") if fns else b"")  # a hooked run's traces: its own
        traces = Traces(self, residuals, kept, ivs, traced, key, None if eager is None else tuple(eager))
        run = Run(run_ids, tokens, logits, traces, residuals, ivs, start, self, hooked, names, lengths)
        for name in names or ():
            run.cache[name]  # made now: the filter's activations are what the run holds
        return run

    def layer_trace(self, layer: int, a: Attended, tokens: Sequence[str], interventions: Sequence[Intervention]
                    ) -> Trace:
        """Layer ``layer``'s trace from the pass's arrays (all of them: a run with hooks keeps them)."""
        return attend.to_trace(a, self.layer_options_for(layer, a.q.shape[-2], interventions), tokens)

    def layer_options_for(self, layer: int, n: int, interventions: Sequence[Intervention]) -> Options:
        """The options layer ``layer``'s trace records for n tokens under the run's ``interventions`` (replaced
        QK-norm gains are options)."""
        gains = [iv for iv in interventions if iv.layer == layer and iv.kind == "replace" and iv.matrix in GAINS]
        if self.config.layer_types or gains:
            return layer_options(self.config, layer, n, with_gains(self.config, self.params, layer, gains))
        return self._options[layer]

    def _ids(self, token_ids: object) -> tuple[np.ndarray, tuple[int, ...] | None]:
        """Token ids (n,) as :meth:`check_ids` takes them, or a batch (B, n) with each text's length: texts of
        different lengths are padded on the right (see :data:`PAD_ID`), so a causal pass never lets a real position
        see a pad."""
        arr = token_ids if isinstance(token_ids, np.ndarray) else None
        rows = isinstance(token_ids, (list, tuple)) and len(token_ids) and isinstance(token_ids[0], (list, tuple))
        if not (rows or (arr is not None and arr.ndim == 2)):
            return np.array(self.check_ids(token_ids), dtype=np.int64), None
        batch = [self.check_ids(r) for r in token_ids]  # type: ignore[union-attr]
        lengths = tuple(len(r) for r in batch)
        n = max(lengths)
        return np.array([r + [PAD_ID] * (n - len(r)) for r in batch], dtype=np.int64), lengths  # (B, n)

    def layer(
        self,
        layer: int,
        x: np.ndarray,
        start: int = 0,
        past: tuple[np.ndarray, np.ndarray] | None = None,
        interventions: Sequence[Intervention] = (),
        hooks: Hooks | None = None,
        keep: bool = True,
    ) -> tuple[Attended, np.ndarray]:
        """Layer ``layer`` on the rows x (..., m, d) at positions start .. start + m − 1, after the cached keys and
        values ``past`` of the positions before (none in the full pass): its attention's arrays and the stream after
        it. The one path of the full pass (start 0, no cache), of the cached step (one row) and of a batch (a
        leading axis on x). ``interventions`` are the layer's (a replaced matrix; ablations and head patches run as
        hooks), unless ``hooks`` are given, which then carry them. Without ``keep`` the n × n arrays are not kept
        (:func:`.attend.weigh`)."""
        params, X, W, hooks = self.attention_inputs(layer, x, interventions, hooks)
        attended = attend.attend(self.config, params, layer, X, W, start, past, hooks, keep)
        x = block_out(self.config, self.params, layer, x, attended.output, hooks)  # (..., m, d)
        with np.errstate(over="ignore", invalid="ignore"):
            finite = np.isfinite(x.sum())  # one pass: a finite sum means every value is finite
        if not finite:
            raise not_finite(self.dtype, layer, hooks)
        return attended, x

    def attention_inputs(self, layer: int, x: np.ndarray, interventions: Sequence[Intervention] = (),
                         hooks: Hooks | None = None) -> tuple:
        """What layer ``layer``'s attention runs with on the stream x: (the parameters with any replaced QK-norm
        gains, X = its input (..., m, d [+1]), the weights with any replaced blocks, the hooks: ``hooks``, or else
        the interventions')."""
        cfg = self.config
        replaces = [iv for iv in interventions if iv.kind == "replace"]
        W = attend.replaced(cfg, self.layer_weights(layer), [iv for iv in replaces if iv.matrix not in GAINS])
        params = with_gains(cfg, self.params, layer, [iv for iv in replaces if iv.matrix in GAINS])
        hooks = Hooks(as_hooks(iv for iv in interventions if iv.kind != "stream")) if hooks is None else hooks
        return params, attention_input(cfg, self.params, layer, x, hooks), W, hooks

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
        self._memo.clear()

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
        n = len(ids)
        run = self.run(ids)
        light = [run.traces.light(layer) for layer in range(self.config.n_layers)]
        cache = tuple((a.K, a.V) for a in light)  # (G, n, d_head) each
        queries = tuple(a.q[:, -1] for a in light)  # (H, d_head) each
        weights = tuple(run.traces.rows(layer, [n - 1])[:, 0] for layer in range(self.config.n_layers))  # (H, n)
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


def not_finite(dtype: np.dtype, layer: int, hooks: Hooks) -> AttentionError:
    """The error for a stream that stopped being finite in layer ``layer`` (a hook's own NaN is named where it is
    returned: :class:`~.interventions.Hooks`)."""
    return AttentionError(
        f"layer {layer} made values too large for {dtype} numbers (the residual stream is not finite); "
        + ("try dtype=np.float64" if dtype == np.float32 else "the weights are too large"),
        field="dtype",
    )


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
