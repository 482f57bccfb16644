"""The families that open, one record each (:data:`FAMILIES`), and how each config.json becomes a Config.

Read by ``model_type`` (every other type is refused, naming it and the families that open):

============  ==========================================================================================
gpt2          LayerNorm, learned positions, plain GELU MLP, biases everywhere (the Config defaults)
llama         RMSNorm, RoPE (halves layout, rope_theta, rope_scaling linear or llama3), gated SiLU MLP,
              grouped key/value heads, no biases (attention_bias and mlp_bias both true: biases)
mistral       llama's fields, and a sliding window on every layer when sliding_window is set
qwen2         llama's fields, with biases on q, k and v only; sliding layers from max_window_layers
qwen3         llama's fields with QK-norm and head_dim; sliding layers as qwen2
gemma3_text   RMSNorm scaling by (1 + w), post-attention and post-MLP norms, QK-norm, gated GELU-tanh MLP,
              √d_model embedding scale, query_pre_attn_scalar, local ("sliding_attention") layers with
              their own RoPE base (rope_local_base_freq) and global layers with rope_theta and its scaling
gemma3        its text_config, read as gemma3_text
gpt_neox      LayerNorm, parallel residual, partial RoPE (rotary_pct of each head, halves layout), plain
              GELU MLP, biases, untied embed_out
olmo2         llama's sizes and RoPE with no pre-norms: an RMSNorm on the attention's output and on the MLP's
              output before each is added, and QK-norm across all heads (q over H·d_head columns, k over
              G·d_head) before the split into heads; no biases
phi3          llama's parts with q, k, v fused in one qkv_proj and gate, up in one gate_up_proj; RoPE on
              partial_rotary_factor of each head (halves layout), a sliding window on every layer when
              sliding_window is set; no biases; only the default rope type (longrope is refused)
============  ==========================================================================================

transformers 5 writes rope_theta, rope_scaling and rotary_pct into ``rope_parameters`` (for Gemma 3 one dict per
layer type); older files have them at the top. Both are read. Every problem is an AttentionError naming the field.

A family's record (:class:`Family`) is the one place a family is named: its reader, its title, its tensor layout and
prefixes (:mod:`.tensornames` reads them) and ``examples``, tiny config.json's that show each of its features. The
tests build a random model of every example with transformers and hold it against ours, so a family added here is
tested everywhere with no test edited.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import AttentionError
from ..names import is_number, is_whole
from .config import Config

ACTIVATIONS = {  # Hugging Face's activation names -> ours; None: known and refused
    "gelu_new": "gelu_new",
    "gelu_pytorch_tanh": "gelu_new",
    "gelu_fast": None,
    "gelu": "gelu",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
}
SCALINGS = ("default", "linear", "llama3")  # rope types that open: "default" is none
HEADS = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration", "Model")  # architectures that end so open


class Fields:
    """Typed reads of config.json's fields, each error naming the file and the field."""

    def __init__(self, raw: dict[str, Any], where: str = "config.json"):
        self.raw, self.where = raw, where

    def fail(self, field: str, message: str) -> AttentionError:
        return AttentionError(f"{self.where}: {field} {message}", field=field)

    def whole(self, name: str, default: object = None) -> int:
        value = self.raw.get(name, default)
        if value is None and default is None:
            raise self.fail(name, "is missing; it must be a whole number > 0")
        if not (is_whole(value) and value > 0):
            raise self.fail(name, f"must be a whole number > 0; got {value!r}")
        return int(value)

    def maybe_whole(self, name: str) -> int | None:
        return None if self.raw.get(name) is None else self.whole(name)

    def number(self, name: str, default: object = None, low: float = 0.0, high: float = math.inf) -> float:
        value = self.raw.get(name, default)
        if not (is_number(value) and low < value < high):
            span = f"between {low:g} and {high:g}" if high < math.inf else f"> {low:g}"
            raise self.fail(name, f"must be a number {span}; got {value!r}")
        return float(value)

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise self.fail(name, f"must be true or false; got {value!r}")
        return value

    def activation(self, name: str, default: str) -> str:
        value = self.raw.get(name, default)
        if ACTIVATIONS.get(value) is None:
            known = ", ".join(k for k, v in ACTIVATIONS.items() if v)
            raise self.fail(name, f"{value!r} is not supported (use one of {known})")
        return ACTIVATIONS[value]  # type: ignore[return-value]

    def must_be(self, name: str, wanted: object, why: str) -> None:
        value = self.raw.get(name)
        if value is not None and value != wanted:
            raise self.fail(name, f"is {value!r}; {why}")


def read_config(raw: object) -> tuple[str, Config]:
    """The family (model_type) and Config of a parsed config.json."""
    if not isinstance(raw, dict):
        raise AttentionError("config.json must hold a JSON object", field="config.json")
    kind = raw.get("model_type")
    if kind not in FAMILIES:
        archs = raw.get("architectures")
        raise AttentionError(
            f"config.json: model_type is {kind!r}"
            + (f" (architectures {archs!r})" if archs else "")
            + f"; the families that open are {OPENS_TEXT}",
            field="model_type",
        )
    family = FAMILIES[kind]
    _check_architectures(raw, family)
    if family.text_of is not None:  # a multimodal checkpoint: its text part is read as that family
        text = raw.get("text_config")
        if not isinstance(text, dict):
            raise AttentionError(
                f"config.json: a {kind} config needs its text_config object", field="text_config"
            )
        where = "config.json: text_config"
        return kind, _config(FAMILIES[family.text_of].read(Fields(text, where)), where)
    return kind, _config(family.read(Fields(raw)), "config.json")


def _check_architectures(raw: dict, family: Family) -> None:
    archs = raw.get("architectures")
    if archs is None:
        return
    ok = isinstance(archs, list) and all(isinstance(a, str) and a.endswith(HEADS) for a in archs)
    if family.architectures:
        ok = ok and all(a in family.architectures for a in archs)
    if not ok:
        head = " or ".join(family.architectures) or "a causal language model (…ForCausalLM)"
        raise AttentionError(
            f"config.json: architectures is {archs!r}"[:200] + f"; only {head} can be opened", field="architectures"
        )


NAMES = {  # our field -> the config.json key a message names
    "vocab_size": "vocab_size",
    "d_model": "hidden_size",
    "n_layers": "num_hidden_layers",
    "n_heads": "num_attention_heads",
    "n_kv_heads": "num_key_value_heads",
    "head_dim": "head_dim",
    "d_mlp": "intermediate_size",
    "n_ctx": "max_position_embeddings",
    "sliding_window": "sliding_window",
}
GPT2_NAMES = {
    "n_ctx": "n_positions",
    "d_model": "n_embd",
    "n_layers": "n_layer",
    "n_heads": "n_head",
    "d_mlp": "n_inner",
}


def _config(fields: dict[str, Any], where: str) -> Config:
    """The Config, validated, its message naming config.json's key for our field."""
    names = GPT2_NAMES if fields.get("positions") == "learned" else NAMES
    try:
        return Config(**fields).validate(where)
    except AttentionError as exc:
        field = names.get(exc.field or "", exc.field)
        message = exc.message.replace(f"{where}.", f"{where}: ")
        for ours, theirs in names.items():
            message = message.replace(f"{where}: {ours} ", f"{where}: {theirs} ")
        raise AttentionError(message, field=field) from None


def _gpt2(f: Fields) -> dict[str, Any]:
    """GPT-2: n_embd, n_layer, n_head, n_positions, n_inner, activation_function, layer_norm_epsilon ..."""
    if f.raw.get("add_cross_attention"):
        raise f.fail("add_cross_attention", "is true; only decoder-only GPT-2 is supported")
    d = f.whole("n_embd")
    if d % f.whole("n_head"):
        raise f.fail("n_head", f"does not fit: n_embd = {d} does not divide into n_head = {f.raw['n_head']} heads")
    inner = f.raw.get("n_inner")
    return dict(
        vocab_size=f.whole("vocab_size"),
        n_ctx=f.whole("n_positions"),
        d_model=d,
        n_layers=f.whole("n_layer"),
        n_heads=f.whole("n_head"),
        d_mlp=4 * d if inner is None else f.whole("n_inner"),
        positions="learned",
        tied=f.flag("tie_word_embeddings", True),
        ln_eps=f.number("layer_norm_epsilon", 1e-5, 0, 1),
        activation=f.activation("activation_function", "gelu_new"),
        scale_by_layer=f.flag("scale_attn_by_inverse_layer_idx", False),
        scale_attn=f.flag("scale_attn_weights", True),
    )


def _sizes(f: Fields, head_dim_default: int | None = None) -> dict[str, Any]:
    """The sizes every rotary family names alike: vocabulary, width, layers, heads, key/value heads, head width."""
    d, H = f.whole("hidden_size"), f.whole("num_attention_heads")
    head_dim = f.maybe_whole("head_dim") if "head_dim" in f.raw else head_dim_default
    if head_dim is not None and head_dim * H == d:  # the usual width, as transformers 5 writes it out: not a choice
        head_dim = None
    return dict(
        vocab_size=f.whole("vocab_size"),
        d_model=d,
        n_layers=f.whole("num_hidden_layers"),
        n_heads=H,
        n_kv_heads=f.whole("num_key_value_heads", H),
        head_dim=head_dim,
        d_mlp=f.whole("intermediate_size"),
        positions="rotary",
        rotary_layout="halves",
    )


def _llama_like(f: Fields) -> dict[str, Any]:
    """llama, mistral, qwen2, qwen3: RMSNorm, RoPE, gated MLP, grouped heads; their biases and windows differ."""
    kind = f.raw["model_type"]
    out = _llama_parts(f, {"llama": 2048, "mistral": 4096 * 32}.get(kind, 32768), 1e-6)
    out.update(
        qk_norm=kind == "qwen3",
        **_biases(f, kind),
        **_rope(f, f.raw),
        **_windows(f, kind, out["n_layers"]),
    )
    return out


def _llama_parts(f: Fields, n_ctx: int, eps: float) -> dict[str, Any]:
    """What llama and the families built on its parts (OLMo-2, Phi-3) read alike: the sizes, the context, RMSNorm's ε,
    the gated MLP's activation and tied embeddings; ``n_ctx`` and ``eps`` are the family's defaults."""
    out = _sizes(f)
    out.update(
        n_ctx=f.whole("max_position_embeddings", n_ctx),
        norm="rmsnorm",
        ln_eps=f.number("rms_norm_eps", eps, 0, 1),
        mlp="gated",
        activation=f.activation("hidden_act", "silu"),
        tied=f.flag("tie_word_embeddings", False),
    )
    return out


def _biases(f: Fields, kind: str) -> dict[str, Any]:
    """bias (W_o and the MLP) and qkv_bias: none (mistral), q/k/v only (qwen2), or attention_bias (llama, qwen3)."""
    if kind == "mistral":
        return dict(bias=False)
    if kind == "qwen2":
        return dict(bias=False, qkv_bias=True)
    attention = f.flag("attention_bias", False)
    mlp = f.flag("mlp_bias", False) if kind == "llama" else False
    if attention != mlp:
        raise f.fail(
            "attention_bias",
            f"is {str(attention).lower()} but the MLP's bias is {str(mlp).lower()}: only both or neither open here",
        )
    return dict(bias=attention)


def _windows(f: Fields, kind: str, layers: int) -> dict[str, Any]:
    """layer_types and sliding_window: mistral slides every layer when sliding_window is set; qwen2 and qwen3
    slide layers max_window_layers .. when use_sliding_window; layer_types, when written, says it per layer."""
    if kind == "llama":
        return {}
    window = f.raw.get("sliding_window", 4096)  # transformers' default when the key is absent
    if kind == "mistral":
        types = ["sliding_attention"] * layers if window is not None else None
    elif "layer_types" in f.raw and f.raw["layer_types"] is not None:
        types = f.raw["layer_types"]
    elif f.flag("use_sliding_window", False) and window is not None:
        first = f.whole("max_window_layers", 28)
        types = ["sliding_attention" if i >= first else "full_attention" for i in range(layers)]
    else:
        types = None
    return _layer_types(f, types, layers)


def _layer_types(f: Fields, types: object, layers: int) -> dict[str, Any]:
    """Hugging Face's layer_types ("full_attention" / "sliding_attention" per layer) as ours."""
    if types is None or "sliding_attention" not in types:  # type: ignore[operator]
        return {}
    ours = {"full_attention": "full", "sliding_attention": "sliding"}
    if not (isinstance(types, list) and len(types) == layers and all(t in ours for t in types)):
        raise f.fail("layer_types", f"must list {layers} of 'full_attention' or 'sliding_attention'")
    return dict(layer_types=tuple(ours[t] for t in types), sliding_window=f.whole("sliding_window", 4096))


def _rope(f: Fields, section: dict[str, Any], theta_key: str = "rope_theta", theta: float = 10000.0) -> dict:
    """rope_theta and the scaling: from rope_parameters (transformers 5) or rope_theta and rope_scaling (older)."""
    params = section.get("rope_parameters")
    if isinstance(params, dict) and not any(k.endswith("_attention") for k in params):
        source, where = params, "rope_parameters"
    else:
        source, where = dict(section.get("rope_scaling") or {}), "rope_scaling"
        source.setdefault("rope_theta", section.get("rope_theta", section.get(theta_key, theta)))  # either name
    return _rope_fields(Fields(source, f"{f.where}: {where}" if where else f.where), theta)


def _rope_fields(f: Fields, theta: float) -> dict[str, Any]:
    """One RoPE dict ({rope_type, rope_theta, factor, ...}) as Config fields; rope types other than default, linear
    and llama3 are refused by name."""
    kind = f.raw.get("rope_type", f.raw.get("type", "default"))
    if kind not in SCALINGS:
        raise f.fail("rope_type", f"{kind!r} is not supported; the rope types that open are {', '.join(SCALINGS)}")
    out: dict[str, Any] = dict(rope_theta=f.number("rope_theta", theta))
    if kind == "linear":
        out.update(rope_scaling="linear", rope_factor=f.number("factor"))
    elif kind == "llama3":
        out.update(
            rope_scaling="llama3",
            rope_factor=f.number("factor"),
            rope_low_freq_factor=f.number("low_freq_factor"),
            rope_high_freq_factor=f.number("high_freq_factor"),
            rope_original_context=f.whole("original_max_position_embeddings"),
        )
    return out


def _gemma3(f: Fields) -> dict[str, Any]:
    """Gemma 3's text model: (1 + w) RMSNorms before and after attention and MLP, QK-norm, local and global layers."""
    f.must_be("final_logit_softcapping", None, "soft-capped logits are not supported")
    f.must_be("attn_logit_softcapping", None, "soft-capped scores are not supported")
    f.must_be("use_bidirectional_attention", False, "only causal attention is supported")
    out = _sizes(f, head_dim_default=256)
    layers = out["n_layers"]
    types = f.raw.get("layer_types")
    if types is None:
        every = f.whole("sliding_window_pattern", 6)
        types = ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(layers)]
    out.update(
        n_ctx=f.whole("max_position_embeddings", 131072),
        norm="rmsnorm",
        norm_offset=1.0,
        post_norms=True,
        qk_norm=True,
        ln_eps=f.number("rms_norm_eps", 1e-6, 0, 1),
        mlp="gated",
        activation=f.activation("hidden_activation", f.raw.get("hidden_act", "gelu_pytorch_tanh")),
        tied=f.flag("tie_word_embeddings", True),
        bias=f.flag("attention_bias", False),
        embed_scale=math.sqrt(out["d_model"]),
        query_pre_attn_scalar=f.number("query_pre_attn_scalar", 256),
        **_layer_types(f, types, layers),
        **_gemma3_rope(f),
    )
    if out["bias"]:
        raise f.fail("attention_bias", "is true; Gemma 3 opens without biases")
    return out


def _gemma3_rope(f: Fields) -> dict[str, Any]:
    """The global layers' RoPE (rope_theta, its scaling) and the local layers' base (rope_local_base_freq)."""
    params = f.raw.get("rope_parameters")
    if isinstance(params, dict) and "full_attention" in params:
        full = _rope_fields(Fields(params["full_attention"] or {}, f"{f.where}: rope_parameters.full_attention"), 1e6)
        local = Fields(params.get("sliding_attention") or {}, f"{f.where}: rope_parameters.sliding_attention")
        if local.raw.get("rope_type", "default") != "default":
            raise local.fail("rope_type", "is not 'default'; Gemma 3's local layers open with plain RoPE only")
        return dict(full, rope_local_theta=local.number("rope_theta", 10000.0))
    return dict(_rope(f, f.raw, theta=1e6), rope_local_theta=f.number("rope_local_base_freq", 10000.0))


def _partial(f: Fields, key: str, default: float, d_head: int) -> int:
    """How many of each head's columns turn: partial_rotary_factor (in rope_parameters, transformers 5) or ``key``
    (older files) times d_head, an even number of at least 2."""
    params = f.raw.get("rope_parameters") if isinstance(f.raw.get("rope_parameters"), dict) else {}
    pct = params.get("partial_rotary_factor", f.raw.get(key, default))
    if not (is_number(pct) and 0 < pct <= 1):
        raise f.fail(key, f"must be a number in (0, 1]; got {pct!r}")
    dims = int(d_head * pct)
    if dims < 2 or dims % 2:
        raise f.fail(key, f"turns {dims} columns of each head; an even number of at least 2 opens here")
    return dims


def _gpt_neox(f: Fields) -> dict[str, Any]:
    """GPT-NeoX (Pythia): LayerNorms, parallel residual, RoPE on rotary_pct of each head, biases, untied."""
    out = _sizes(f)
    out.pop("n_kv_heads")
    dims = _partial(f, "rotary_pct", 0.25, out["d_model"] // out["n_heads"])
    if not f.flag("attention_bias", True):
        raise f.fail("attention_bias", "is false; GPT-NeoX opens with biases (its MLP always has them)")
    out.update(
        n_ctx=f.whole("max_position_embeddings", 2048),
        ln_eps=f.number("layer_norm_eps", 1e-5, 0, 1),
        activation=f.activation("hidden_act", "gelu"),
        tied=f.flag("tie_word_embeddings", False),
        parallel_residual=f.flag("use_parallel_residual", True),
        rotary_dims=dims,
        **_rope(f, f.raw, theta_key="rotary_emb_base"),
    )
    return out


def _olmo2(f: Fields) -> dict[str, Any]:
    """OLMo-2: llama's sizes, RoPE and gated MLP; no pre-norms, an RMSNorm after the attention and after the MLP,
    QK-norm across all heads; no biases (its MLP never has one, so attention_bias true is refused)."""
    if f.flag("attention_bias", False):
        raise f.fail("attention_bias", "is true; OLMo-2 opens without biases (its MLP has none)")
    out = _llama_parts(f, 2048, 1e-5)
    out.update(
        bias=False,
        pre_norms=False,
        post_norms=True,
        qk_norm=True,
        qk_norm_scope="all",
        **_rope(f, f.raw),
    )
    return out


def _phi3(f: Fields) -> dict[str, Any]:
    """Phi-3: llama's parts (its q/k/v and gate/up fused in the file), RoPE on partial_rotary_factor of each head,
    a sliding window on every layer when sliding_window is set (it is None unless written), no biases."""
    out = _llama_parts(f, 4096, 1e-5)
    rope = _rope(f, f.raw)
    if rope.get("rope_scaling"):
        raise f.fail("rope_type", f"is {rope['rope_scaling']!r}; Phi-3 opens with the default rope type only")
    dims = _partial(f, "partial_rotary_factor", 1.0, out["head_dim"] or out["d_model"] // out["n_heads"])
    window = f.raw.get("sliding_window")
    out.update(
        bias=False,
        rotary_dims=dims,
        **rope,
        **_layer_types(f, None if window is None else ["sliding_attention"] * out["n_layers"], out["n_layers"]),
    )
    return out


@dataclass(frozen=True)
class Family:
    """One model_type that opens.

    read: its config.json (typed reads) -> Config's fields; title: how pages and messages name it; tensors: its
    tensor layout in :mod:`.tensornames` ("llama": q/k/v/o_proj and gate/up/down_proj, "gpt2": Conv1D c_attn,
    "gpt_neox": query_key_value fused per head, "phi3": qkv_proj and gate_up_proj fused); prefixes: what its
    tensor names start with, dropped; layers_key: config.json's key of the layer count, for messages;
    architectures: the only architectures that open (empty: any causal LM head); text_of: a multimodal type whose
    text_config is read as that family; examples: name -> a tiny config.json's own keys (beside the sizes every
    example shares: vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
    max_position_embeddings), each showing the family's features, for the tests to build with transformers and hold
    against ours (none: tested elsewhere).
    """

    model_type: str
    title: str
    read: Callable[[Fields], dict[str, Any]]
    tensors: str = "llama"
    prefixes: tuple[str, ...] = ("model.",)
    layers_key: str = "num_hidden_layers"
    architectures: tuple[str, ...] = ()
    text_of: str | None = None
    examples: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


_LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
_GEMMA3_ROPE = {
    "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0},
    "sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
}
_FAMILIES = (
    Family(
        "gpt2", "GPT-2", _gpt2, tensors="gpt2", prefixes=("transformer.",), layers_key="n_layer",
        architectures=("GPT2LMHeadModel", "GPT2Model"),
    ),
    Family("llama", "Llama", _llama_like, examples={"llama": dict(
        num_key_value_heads=2, tie_word_embeddings=False,
        rope_parameters={"rope_theta": 500.0, **_LLAMA3, "original_max_position_embeddings": 32},
    )}),
    Family("mistral", "Mistral", _llama_like, examples={"mistral": dict(
        num_key_value_heads=2, sliding_window=5, rope_theta=1000.0, tie_word_embeddings=True,
    )}),
    Family("qwen2", "Qwen2", _llama_like, examples={"qwen2": dict(  # layer 0 sees everything, layer 1 a window of 6
        num_key_value_heads=2, use_sliding_window=True, sliding_window=6, max_window_layers=1,
        rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 2000.0}, tie_word_embeddings=True,
    )}),
    Family("qwen3", "Qwen3", _llama_like, examples={"qwen3": dict(
        num_key_value_heads=1, head_dim=24, rope_theta=300.0, tie_word_embeddings=False,
    )}),
    Family("gemma3_text", "Gemma 3", _gemma3, examples={"gemma3_text": dict(
        num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=48, sliding_window=4,
        layer_types=["sliding_attention", "full_attention"], rope_parameters=_GEMMA3_ROPE,
    )}),
    Family(
        "gemma3", "Gemma 3", _gemma3, text_of="gemma3_text",
        prefixes=("language_model.model.", "model.language_model.", "language_model."),
    ),
    Family("gpt_neox", "GPT-NeoX", _gpt_neox, tensors="gpt_neox", prefixes=("gpt_neox.",), examples={
        "gpt_neox": dict(rotary_pct=0.5, rotary_emb_base=1000, use_parallel_residual=True),
        "gpt_neox_sequential": dict(rotary_pct=0.5, rotary_emb_base=1000, use_parallel_residual=False),
    }),
    Family("olmo2", "OLMo-2", _olmo2, examples={"olmo2": dict(
        num_key_value_heads=2, rope_theta=700.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
    )}),
    Family("phi3", "Phi-3", _phi3, tensors="phi3", examples={"phi3": dict(
        num_key_value_heads=2, partial_rotary_factor=0.5, rope_theta=800.0, sliding_window=6,
    )}),
)  # fmt: skip
FAMILIES: dict[str, Family] = {f.model_type: f for f in _FAMILIES}
OPENS = tuple(FAMILIES)
OPENS_TEXT = ", ".join(
    f"{f.model_type} (its text part, read as {f.text_of})" if f.text_of else f.model_type for f in _FAMILIES
)
