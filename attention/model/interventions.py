"""Interventions as data a run applies, and the hooks that run them on the forward pass's named activations.

An intervention ablates one head (zero or mean), replaces one of its matrices or patches its output or a stream row.

A head i of layer l contributes concat_i W_o^i to the residual stream, where concat_i = A_i V_i is its output
(n, d_head) and W_o^i its d_head rows of W_o. Ablating it replaces concat_i by 0 ("zero") or by its causal mean
("mean"): row t becomes the mean of the head's own outputs at positions 0 .. t of the same run (a cumulative sum
÷ (t + 1)), so, as in the unablated model, no position sees a later token. Replacing sets its block of W_q, W_k
or W_v (the columns that make its queries, keys or values, as :meth:`attention.Trace.head` shows them: with a bias
the last row is the bias) or its rows of W_o; or a layer's QK-norm gains (:func:`replace_gains`).

With grouped key/value heads (G < H) a query head's block of W_k and W_v is the block of the key/value head it
reads, shared by the H/G heads of its group: replacing it changes every head of the group, while ablating a head
changes only that head's own output.

**Hooks.** The forward pass names its activations as TransformerLens does (:func:`hook_names`), with the same
layouts (a leading batch axis when the run has one; no batch axis for a run of one text):

    blocks.{l}.hook_resid_pre                 (n, d)        the stream entering layer l
    blocks.{l}.attn.hook_q / hook_k / hook_v  (n, H, dₕ) / (n, G, dₕ) × 2   X W_q, X W_k, X W_v (bias included)
    blocks.{l}.attn.hook_rot_q / hook_rot_k   as above      q, k after QK-norm and the rotation (rotary models)
    blocks.{l}.attn.hook_attn_scores          (H, n, n)     q kᵀ · scale, −inf where masked
    blocks.{l}.attn.hook_pattern              (H, n, n)     the attention weights A
    blocks.{l}.attn.hook_z                    (n, H, dₕ)    each head's output A v (the concatenation, per head)
    blocks.{l}.attn.hook_result               (n, H, d)     each head's output through its rows of W_o
    blocks.{l}.hook_attn_out                  (n, d)        Σ heads + b_o (then the post-attention norm, Gemma 3)
    blocks.{l}.hook_resid_mid                 (n, d)        resid_pre + attn_out (sequential blocks with an MLP)
    blocks.{l}.hook_mlp_out                   (n, d)        the MLP's output (models with an MLP)
    blocks.{l}.hook_resid_post                (n, d)        the stream after layer l
    ln_final.hook_normalized                  (n, d)        N_f(x), what W_U reads (models with a final norm)

Also: ``hook_embed`` (n, d) the tokens' rows of W_E (scaled), ``hook_pos_embed`` (n, d) the learned positions' rows;
``blocks.{l}.ln1.hook_scale``, ``ln2.hook_scale``, ``ln_final.hook_scale`` (n, 1) a pre-norm's divisor √(var + ε)
(√(mean(x²) + ε) for RMSNorm); ``blocks.{l}.mlp.hook_pre`` (n, d_mlp) the neurons before the activation (a gated
MLP's gate x W_gate), ``mlp.hook_pre_linear`` (gated: x W_fc) and ``mlp.hook_post`` after it (times the linear part
when gated).

A hook is a function ``fn(value, name)``: it reads the value (read-only) and returns None, or returns an array of
the same shape that the pass uses instead. Ablations and head patches are hooks on ``hook_z``; stream patches are
hooks on ``hook_resid_pre`` (:func:`as_hooks`). A replaced matrix is not an activation: it changes the weights the
layer uses, and its trace records them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import AttentionError, as_matrix
from ..names import is_whole
from .config import Config

KINDS = ("zero", "mean", "replace", "patch", "stream")
CONCAT_KINDS = ("zero", "mean", "patch")  # what sets a head's columns of the concatenation
MATRICES = ("W_q", "W_k", "W_v", "W_o")
GAINS = ("q_norm", "k_norm")  # a layer's QK-norm gains: shared by its heads, or spanning them (qk_norm_scope "all")


@dataclass(frozen=True, eq=False)
class Intervention:
    """One change to one head: ``kind`` "zero" or "mean" (ablation), "replace" with ``matrix`` and ``value``, or
    "patch" with ``value`` the head's output to use (n, d_head); or to the stream entering ``layer``: "stream" with
    ``position`` and ``value`` (d_model,) its new row there (``head`` is 0 and unused)."""

    layer: int
    head: int
    kind: str
    matrix: str | None = None
    value: np.ndarray | None = None
    position: int | None = None

    def key(self) -> bytes:
        """A content key: equal interventions have equal keys (the value's bytes included)."""
        what = f"{self.layer}/{self.head}/{self.kind}/{self.matrix}/{self.position}"
        h = hashlib.blake2b(what.encode(), digest_size=16)
        if self.value is not None:
            h.update(np.ascontiguousarray(self.value).tobytes())
        return h.digest()

    def describe(self) -> str:
        """One line for a person: "layer 1, head 0: zero-ablated"."""
        if self.kind == "stream":
            return f"layer {self.layer}: the stream at position {self.position} patched"
        if self.matrix in GAINS:
            return f"layer {self.layer}: its {self.matrix} gains replaced"
        what = {"zero": "zero-ablated", "mean": "mean-ablated", "patch": "patched"}.get(self.kind, "")
        return f"layer {self.layer}, head {self.head}: {what or f'{self.matrix} replaced'}"


def ablate(layer: int, head: int, how: str = "zero") -> Intervention:
    """Ablate head ``head`` of layer ``layer``: its output replaced by 0 ("zero") or, at each position t, by the
    mean of its outputs at positions 0 .. t ("mean": causal, later tokens never reach earlier positions)."""
    if how not in ("zero", "mean"):
        raise AttentionError(f"an ablation is 'zero' or 'mean'; got {how!r}", field="ablation")
    return Intervention(layer, head, how)


def replace_matrix(layer: int, head: int, matrix: str, value: object) -> Intervention:
    """Replace head ``head``'s block of ``matrix`` ("W_q", "W_k", "W_v": its columns; "W_o": its rows)."""
    if matrix not in MATRICES:
        raise AttentionError(
            f"the matrix to replace must be one of {', '.join(MATRICES)}; got {matrix!r}", field="matrix"
        )
    return Intervention(layer, head, "replace", matrix, as_matrix(matrix, value))


def replace_gains(layer: int, norm: str, value: object) -> Intervention:
    """Replace layer ``layer``'s QK-norm gains ``norm`` ("q_norm" or "k_norm") by ``value``, as the norm applies
    them (offset + γ): one per column of a head, shared by every head of the layer (an edit changes them all), or
    one per column of every head's (qk_norm_scope "all")."""
    if norm not in GAINS:
        raise AttentionError(f"the gains to replace are {' or '.join(GAINS)}; got {norm!r}", field="matrix")
    try:
        gains = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        gains = np.array([np.nan])
    if gains.ndim != 1 or gains.size == 0 or not np.isfinite(gains).all():
        raise AttentionError(f"{norm}'s gains must be one list of finite numbers", matrix=norm)
    return Intervention(layer, 0, "replace", norm, gains)


def gains_width(config: Config, norm: str) -> int:
    """How many gains a layer's QK-norm ``norm`` has: d_head, or every head's columns with qk_norm_scope "all"."""
    if config.qk_norm_scope == "head":
        return config.d_head
    return (config.n_heads if norm == "q_norm" else config.kv_heads) * config.d_head


def with_gains(config: Config, params: dict[str, np.ndarray], layer: int, interventions: list) -> dict:
    """The parameters with layer ``layer``'s QK-norm gains replaced as ``interventions`` say (stored as γ = gains −
    offset, in the parameters' dtype); the same dict when there are none."""
    if not interventions:
        return params
    out = dict(params)
    for iv in interventions:
        name = f"{layer}.{iv.matrix}.g"
        out[name] = (iv.value - config.norm_offset).astype(params[name].dtype)  # (width,)
    return out


def patch_head(layer: int, head: int, value: object) -> Intervention:
    """Head ``head`` of layer ``layer`` writes ``value`` (n, d_head) as its output, e.g. its output in another run."""
    return Intervention(layer, head, "patch", None, as_matrix("the patched output", value))


def patch_stream(layer: int, position: int, value: object) -> Intervention:
    """The residual stream entering layer ``layer`` holds ``value`` (d_model,) at ``position``."""
    row = np.asarray(value, dtype=np.float64)
    if row.ndim != 1 or not np.isfinite(row).all():
        raise AttentionError("a patched stream row must be one finite vector of d_model numbers", field="value")
    return Intervention(layer, 0, "stream", None, row, int(position) if is_whole(position) else position)


def block_shape(config: Config, matrix: str) -> tuple[int, int]:
    """The shape of one head's block of a matrix as a trace holds it (a bias adds a row to W_q, W_k, W_v)."""
    if matrix == "W_o":
        return (config.d_head, config.d_model)
    return (config.d_model + int(config.has_qkv_bias), config.d_head)


def check(config: Config, iv: object) -> Intervention:
    """The intervention, checked against the model: layer and head exist, a replacement has the block's shape."""
    if not isinstance(iv, Intervention):
        raise AttentionError(
            f"an intervention must be made by ablate() or replace_matrix(); got {type(iv).__name__}",
            field="intervention",
        )
    for name, value, count in (("layer", iv.layer, config.n_layers), ("head", iv.head, config.n_heads)):
        if name == "head" and iv.kind == "stream":
            continue
        if not (is_whole(value) and 0 <= value < count):
            raise AttentionError(
                f"there is no {name} {value!r}: the model has {count} {name}s, numbered 0 to {count - 1}", field=name
            )
    if iv.kind not in KINDS:
        raise AttentionError(f"an intervention's kind is one of {', '.join(KINDS)}; got {iv.kind!r}", field="kind")
    if iv.kind == "replace" and iv.matrix in GAINS:
        _check_gains(config, iv)
    elif iv.kind == "replace":
        want = block_shape(config, str(iv.matrix))
        if iv.value is None or iv.value.shape != want:
            got = None if iv.value is None else iv.value.shape
            raise AttentionError(
                f"head {iv.head}'s block of {iv.matrix} in layer {iv.layer} is {want}; the replacement is {got}",
                matrix=iv.matrix,
            )
    if iv.kind in ("patch", "stream"):
        _check_patch(config, iv)
    return iv


def _check_patch(config: Config, iv: Intervention) -> None:
    """A patch's value has the width of what it replaces; a stream patch names a position ≥ 0."""
    width = config.d_head if iv.kind == "patch" else config.d_model
    got = None if iv.value is None else iv.value.shape
    if got is None or got[-1] != width or (iv.kind == "stream" and not (is_whole(iv.position) and iv.position >= 0)):
        raise AttentionError(
            f"a {iv.kind} patch of layer {iv.layer} needs {'rows' if iv.kind == 'patch' else 'a row'} of {width} "
            f"numbers{'' if iv.kind == 'patch' else ' and a position'}; got {got} at {iv.position!r}",
            field="value",
        )


def _check_gains(config: Config, iv: Intervention) -> None:
    """Replaced QK-norm gains: the model has QK-norm, and the gains its width."""
    if not config.qk_norm:
        raise AttentionError(f"this model has no QK-norm, so no {iv.matrix} gains to replace", field="matrix")
    want = (gains_width(config, str(iv.matrix)),)
    got = None if iv.value is None else iv.value.shape
    if got != want:
        raise AttentionError(
            f"layer {iv.layer}'s {iv.matrix} has {want[0]} gains; the replacement is {got}", matrix=iv.matrix
        )


HookFn = Callable[[np.ndarray, str], "np.ndarray | None"]
ATTN_HOOKS = ("hook_q", "hook_k", "hook_v", "hook_rot_q", "hook_rot_k", "hook_attn_scores", "hook_pattern", "hook_z",
              "hook_result")  # blocks.{l}.attn.<name>
BLOCK_HOOKS = ("hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post")  # blocks.{l}.
FINAL_HOOK = "ln_final.hook_normalized"
FINAL_SCALE = "ln_final.hook_scale"
MLP_HOOKS = ("hook_pre", "hook_pre_linear", "hook_post")  # blocks.{l}.mlp.<name>; hook_pre_linear: gated MLPs only
STREAM_IN = ("hook_resid_pre", "hook_embed", "hook_pos_embed")  # activations of a stream entering a layer


def hook_names(config: Config) -> list[str]:
    """Every activation a run of this model names, in the order the forward pass makes them."""
    c, pre_norms = config, config.pre_norms and not config.attention_only
    out = ["hook_embed"] + (["hook_pos_embed"] if c.positions == "learned" else [])
    for layer in range(c.n_layers):
        at = f"blocks.{layer}."
        attn = [f"{at}attn.{h}" for h in ATTN_HOOKS if c.positions == "rotary" or "_rot_" not in h]
        absent = {"hook_resid_mid"} if c.attention_only or c.parallel_residual else set()
        absent |= {"hook_mlp_out"} if c.attention_only else set()
        pre, attn_out, *block = [f"{at}{h}" for h in BLOCK_HOOKS if h not in absent]
        mlp = [] if c.attention_only else [f"{at}mlp.{h}" for h in MLP_HOOKS if c.mlp == "gated" or "linear" not in h]
        norm1, norm2 = ([f"{at}ln1.hook_scale"], [f"{at}ln2.hook_scale"]) if pre_norms else ([], [])
        if mlp:  # the MLP's norm and neurons come before its output (block[-2]) and the stream after (block[-1])
            block = [*block[:-2], *norm2, *mlp, *block[-2:]]
        out += [pre, *norm1, *attn, attn_out, *block]
    return out + ([] if c.attention_only else [FINAL_SCALE, FINAL_HOOK])


def hook_layer(name: str, layers: int) -> int:
    """The layer whose pass makes the activation ``name`` (the embedding's: 0; the final norm's: ``layers``)."""
    if name in (FINAL_HOOK, FINAL_SCALE):
        return layers
    return 0 if name in ("hook_embed", "hook_pos_embed") else int(name.split(".")[1])


class Hooks:
    """Hook functions by activation name, each run in order where the forward pass makes that activation (see the
    module's docstring); ``seen`` keeps each hooked activation's final value."""

    def __init__(self, fns: Mapping[str, Sequence[HookFn]] | None = None):
        self.fns = {name: list(f) for name, f in (fns or {}).items() if f}
        self.seen: dict[str, np.ndarray] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.fns

    def __bool__(self) -> bool:
        return bool(self.fns)

    def __call__(self, name: str, value: np.ndarray) -> np.ndarray:
        """The activation ``name`` after its hooks: each reads it (read-only) and may return a replacement."""
        for fn in self.fns.get(name, ()):
            shown = value.view()
            shown.flags.writeable = False
            out = fn(shown, name)
            if out is not None:
                got = np.asarray(out, dtype=value.dtype)
                if got.shape != value.shape:
                    raise AttentionError(
                        f"the hook on {name} returned shape {got.shape}; it must return {value.shape} or None",
                        field="hooks",
                    )
                with np.errstate(over="ignore", invalid="ignore"):
                    finite = got.dtype.kind != "f" or np.isfinite(got.sum()) or not _refused(name, got).any()
                if not finite:
                    raise AttentionError(f"the hook on {name} returned {_not_finite(name, got)}; a hook must return "
                                         "finite numbers (or None to leave the activation as it is; the scores may "
                                         "hold −inf where a key is masked, but not on a whole row)", field="hooks")
                value = got
        if name in self.fns:
            self.seen[name] = value
        return value


NO_HOOKS = Hooks()


MASKED = "hook_attn_scores"  # the scaled, masked scores: −inf at a masked key, as the pass itself makes them


def _refused(name: str, a: np.ndarray) -> np.ndarray:
    """Which values of a hook's return are refused: NaN and ±inf, but −inf is a masked key in the scores (unless a
    whole row is −inf: a query that may attend nothing has no softmax)."""
    if not name.endswith(MASKED):
        return ~np.isfinite(a)
    masked = np.isneginf(a)
    return np.isnan(a) | np.isposinf(a) | (masked & masked.all(axis=-1, keepdims=True))


def _not_finite(name: str, a: np.ndarray) -> str:
    """What is refused in ``a``: "NaN at (3, 1) (2 NaN, 1 infinite of 24 values)"."""
    bad = _refused(name, a)
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    nan, inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
    return f"{a[first]} at {first} ({nan} NaN, {inf} infinite of {a.size} values)"


def user_hooks(config: Config, hooks: object) -> dict[str, list[HookFn]]:
    """Hooks as a ``{name: fn or [fn, ...]}`` dict or a list of ``(name, fn)`` pairs (TransformerLens' fwd_hooks),
    checked: every name one the model makes, every fn callable. Pairs on one name run in their order."""
    if not hooks:
        return {}
    pairs = hooks.items() if isinstance(hooks, Mapping) else hooks
    if isinstance(hooks, (str, bytes)) or not isinstance(pairs, Iterable):
        raise AttentionError("hooks must be a dict {activation name: function} or a list of (name, function) pairs",
                             field="hooks")
    pairs = list(pairs)[:100_000]
    if not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
        raise AttentionError("hooks as a list must hold (name, function) pairs", field="hooks")
    known, out = set(hook_names(config)), {}
    for name, fn in pairs:
        if name not in known:
            near = [k for k in hook_names(config) if str(name).rsplit(".", 1)[-1] in k][:3] or hook_names(config)[:3]
            raise AttentionError(
                f"this model makes no activation {str(name)[:80]!r}: e.g. {', '.join(near)} (see hook_names)",
                field="hooks",
            )
        fns = list(fn) if isinstance(fn, (list, tuple)) else [fn]
        if not all(callable(f) for f in fns):
            raise AttentionError(f"the hook on {name} must be a function fn(value, name)", field="hooks")
        out[name] = [*out.get(name, []), *fns]
    return out


def selected(config: Config, names_filter: object) -> tuple[str, ...] | None:
    """The activations a ``names_filter`` keeps, as TransformerLens takes it: a name, a list of names, or a
    predicate on a name (None: every one, unfiltered). A name the model does not make is refused."""
    if names_filter is None:
        return None
    every = hook_names(config)
    if callable(names_filter):
        return tuple(name for name in every if names_filter(name))
    wanted = [names_filter] if isinstance(names_filter, str) else names_filter
    if not isinstance(wanted, Iterable) or not all(isinstance(w, str) for w in wanted):
        raise AttentionError("names_filter must be a name, a list of names or a function of a name",
                             field="names_filter")
    wanted = set(wanted)
    missing = sorted(wanted - set(every))
    if missing:
        raise AttentionError(f"this model makes no activation {missing[0][:80]!r} (see hook_names)",
                             field="names_filter")
    return tuple(name for name in every if name in wanted)


def as_hooks(interventions: Iterable[Intervention]) -> dict[str, list[HookFn]]:
    """The interventions as hooks, in order: a head's ablation or patch on its layer's ``attn.hook_z``, a stream
    patch on its layer's ``hook_resid_pre`` ("replace" changes weights, not an activation: none)."""
    out: dict[str, list[HookFn]] = {}
    for iv in interventions:
        if iv.kind in CONCAT_KINDS:
            out.setdefault(f"blocks.{iv.layer}.attn.hook_z", []).append(_set_head(iv))
        elif iv.kind == "stream":
            out.setdefault(f"blocks.{iv.layer}.hook_resid_pre", []).append(_set_row(iv))
    return out


def _set_head(iv: Intervention) -> HookFn:
    """Head ``iv.head``'s output in ``hook_z`` (..., n, H, dₕ) set to 0, to its causal mean, or to the patch."""

    def hook(z: np.ndarray, name: str) -> np.ndarray:
        want = z[..., iv.head, :].shape  # (..., n, dₕ)
        if iv.kind == "patch" and (iv.value is None or iv.value.shape != want[-iv.value.ndim :]):
            got = None if iv.value is None else iv.value.shape
            raise AttentionError(f"head {iv.head}'s patched output is {got}; the text needs {want[-2:]}",
                                 field="value")
        z = z.copy()
        if iv.kind == "patch":
            z[..., iv.head, :] = iv.value  # (n, dₕ): the head's output from another run
        elif iv.kind == "zero":
            z[..., iv.head, :] = 0.0
        else:
            count = np.arange(1, want[-2] + 1)[:, None]  # (n, 1): t + 1 positions up to t
            z[..., iv.head, :] = np.cumsum(z[..., iv.head, :], axis=-2) / count  # row t: the mean over 0 .. t
        return z

    return hook


def _set_row(iv: Intervention) -> HookFn:
    """Row ``iv.position`` of the stream in ``hook_resid_pre`` (..., n, d) set to the patch."""

    def hook(x: np.ndarray, name: str) -> np.ndarray:
        if iv.position >= x.shape[-2]:
            raise AttentionError(
                f"there is no position {iv.position} to patch: the text has {x.shape[-2]} tokens", field="position"
            )
        x = x.copy()
        x[..., iv.position, :] = iv.value  # (d,)
        return x

    return hook
