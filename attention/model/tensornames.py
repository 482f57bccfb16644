"""Each family's tensor names in model.safetensors, and how each tensor becomes this package's parameters.

Hugging Face stores a linear layer's weight as (out, in) and computes x Wᵀ; the parameters here are x W, so those
weights are transposed (GPT-2's Conv1D weights are already (in, out)). Fused tensors are cut: GPT-2's c_attn into
W_q, W_k, W_v column blocks, GPT-NeoX's query_key_value per head ((H, 3, dₕ, d): q, k, v of head h side by side),
Phi-3's qkv_proj into q, k, v row blocks and its gate_up_proj into gate and up.
Names are matched without the family's prefix ("transformer.", "model.", "gpt_neox." ...), as messages show them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .config import Config
from .families import FAMILIES

PREFIXES = {kind: f.prefixes for kind, f in FAMILIES.items()}  # each family's, from its record
DEFAULT_PREFIXES = ("model.",)
BUFFERS = (".attn.bias", ".attn.masked_bias", ".attention.bias", ".attention.masked_bias", "rotary_emb.inv_freq")
ELSEWHERE = ("vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector.")
TITLES = {kind: f.title for kind, f in FAMILIES.items()}
LAYERS_KEY = {kind: f.layers_key for kind, f in FAMILIES.items()}  # the config.json key of the layer count


def same(a: np.ndarray) -> np.ndarray:
    return a


def transposed(a: np.ndarray) -> np.ndarray:
    return a.T


class Source(NamedTuple):
    """Where a parameter comes from: the tensor's name (without the prefix), its shape in the file, and what turns
    the file's array into the parameter."""

    name: str
    shape: tuple[int, ...]
    take: Callable[[np.ndarray], np.ndarray] = same


def canonical(family: str, name: str) -> str:
    """A tensor's name without the family's prefix."""
    for prefix in PREFIXES.get(family, DEFAULT_PREFIXES):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def ignorable(family: str, name: str, config: Config) -> bool:
    """A tensor the file may hold that is not a weight here: a causal-mask or rotary buffer, the vision half of a
    Gemma 3 checkpoint, or the LM head of a tied model (some files keep a copy)."""
    multimodal = family in FAMILIES and FAMILIES[family].text_of is not None
    if name.endswith(BUFFERS) or (multimodal and name.startswith(ELSEWHERE)):
        return True
    return config.tied and name in ("lm_head.weight", "embed_out.weight")


def sources(family: str, config: Config) -> dict[str, Source]:
    """Every parameter's source, in the order of :func:`attention.model.model.param_shapes`."""
    layout = FAMILIES[family].tensors if family in FAMILIES else "llama"
    return LAYOUTS[layout](config)


def _gpt2(c: Config) -> dict[str, Source]:
    d, V, m = c.d_model, c.vocab_size, c.d_mlp
    s = {"W_E": Source("wte.weight", (V, d)), "W_pos": Source("wpe.weight", (c.n_ctx, d))}
    for layer in range(c.n_layers):
        h, p = f"h.{layer}.", f"{layer}."
        s[p + "ln1.g"], s[p + "ln1.b"] = Source(h + "ln_1.weight", (d,)), Source(h + "ln_1.bias", (d,))
        for k, part in enumerate("qkv"):
            s[p + f"W_{part}"] = Source(h + "attn.c_attn.weight", (d, 3 * d), lambda a, k=k: a[:, k * d : (k + 1) * d])
        s[p + "W_o"] = Source(h + "attn.c_proj.weight", (d, d))
        for k, part in enumerate("qkv"):
            s[p + f"b_{part}"] = Source(h + "attn.c_attn.bias", (3 * d,), lambda a, k=k: a[k * d : (k + 1) * d])
        s[p + "b_o"] = Source(h + "attn.c_proj.bias", (d,))
        s[p + "ln2.g"], s[p + "ln2.b"] = Source(h + "ln_2.weight", (d,)), Source(h + "ln_2.bias", (d,))
        s[p + "W_fc"], s[p + "W_proj"] = Source(h + "mlp.c_fc.weight", (d, m)), Source(h + "mlp.c_proj.weight", (m, d))
        s[p + "b_fc"], s[p + "b_proj"] = Source(h + "mlp.c_fc.bias", (m,)), Source(h + "mlp.c_proj.bias", (d,))
    s["ln_f.g"], s["ln_f.b"] = Source("ln_f.weight", (d,)), Source("ln_f.bias", (d,))
    if not c.tied:
        s["W_U"] = Source("lm_head.weight", (V, d), transposed)
    return s


def _linear(s: dict[str, Source], ours: str, theirs: str, out: int, into: int, bias: str | None = None) -> None:
    """A Hugging Face nn.Linear (weight (out, in)) as W (in, out), and its bias when ``bias`` names ours."""
    s[ours] = Source(theirs + ".weight", (out, into), transposed)
    if bias:
        s[bias] = Source(theirs + ".bias", (out,))


def _llama_like(c: Config) -> dict[str, Source]:
    """llama, mistral, qwen2, qwen3, Gemma 3 and OLMo-2: q/k/v/o_proj, gate/up/down_proj, their norms."""
    d, V, m, H, G, dh = c.d_model, c.vocab_size, c.d_mlp, c.n_heads, c.kv_heads, c.d_head
    s = {"W_E": Source("embed_tokens.weight", (V, d))}
    qkv, o = (lambda b: b if c.has_qkv_bias else None), (lambda b: b if c.bias else None)
    for layer in range(c.n_layers):
        h, p = f"layers.{layer}.", f"{layer}."
        if c.pre_norms:
            s[p + "ln1.g"] = Source(h + "input_layernorm.weight", (d,))
        _linear(s, p + "W_q", h + "self_attn.q_proj", H * dh, d, qkv(p + "b_q"))
        _linear(s, p + "W_k", h + "self_attn.k_proj", G * dh, d, qkv(p + "b_k"))
        _linear(s, p + "W_v", h + "self_attn.v_proj", G * dh, d, qkv(p + "b_v"))
        _linear(s, p + "W_o", h + "self_attn.o_proj", d, H * dh, o(p + "b_o"))
        if c.qk_norm:  # d_head wide, or across every head (OLMo-2)
            wide = c.qk_norm_scope == "all"
            s[p + "q_norm.g"] = Source(h + "self_attn.q_norm.weight", (H * dh,) if wide else (dh,))
            s[p + "k_norm.g"] = Source(h + "self_attn.k_norm.weight", (G * dh,) if wide else (dh,))
        if c.post_norms:  # Gemma 3, OLMo-2: post_attention_layernorm is the attention output's norm
            s[p + "ln_post_attn.g"] = Source(h + "post_attention_layernorm.weight", (d,))
            s[p + "ln_post_mlp.g"] = Source(h + "post_feedforward_layernorm.weight", (d,))
        if c.pre_norms:
            ln2 = "pre_feedforward_layernorm" if c.post_norms else "post_attention_layernorm"
            s[p + "ln2.g"] = Source(h + ln2 + ".weight", (d,))
        _linear(s, p + "W_gate", h + "mlp.gate_proj", m, d, o(p + "b_gate"))
        _linear(s, p + "W_fc", h + "mlp.up_proj", m, d, o(p + "b_fc"))
        _linear(s, p + "W_proj", h + "mlp.down_proj", d, m, o(p + "b_proj"))
    s["ln_f.g"] = Source("norm.weight", (d,))
    if not c.tied:
        s["W_U"] = Source("lm_head.weight", (V, d), transposed)
    return s


def _gpt_neox(c: Config) -> dict[str, Source]:
    """GPT-NeoX: query_key_value fused per head, dense, dense_h_to_4h, dense_4h_to_h, two LayerNorms a layer."""
    d, V, m = c.d_model, c.vocab_size, c.d_mlp
    s = {"W_E": Source("embed_in.weight", (V, d))}
    for layer in range(c.n_layers):
        h, p = f"layers.{layer}.", f"{layer}."
        _layer_norm(s, p + "ln1", h + "input_layernorm", d)
        _layer_norm(s, p + "ln2", h + "post_attention_layernorm", d)
        for k, part in enumerate("qkv"):
            s[p + f"W_{part}"] = Source(h + "attention.query_key_value.weight", (3 * d, d), _neox_weight(c, k))
            s[p + f"b_{part}"] = Source(h + "attention.query_key_value.bias", (3 * d,), _neox_bias(c, k))
        _linear(s, p + "W_o", h + "attention.dense", d, d, p + "b_o")
        _linear(s, p + "W_fc", h + "mlp.dense_h_to_4h", m, d, p + "b_fc")
        _linear(s, p + "W_proj", h + "mlp.dense_4h_to_h", d, m, p + "b_proj")
    _layer_norm(s, "ln_f", "final_layer_norm", d)
    if not c.tied:
        s["W_U"] = Source("embed_out.weight", (V, d), transposed)
    return s


def _layer_norm(s: dict[str, Source], ours: str, theirs: str, d: int) -> None:
    """A LayerNorm's weight and bias as our gain .g and shift .b."""
    s[ours + ".g"], s[ours + ".b"] = Source(theirs + ".weight", (d,)), Source(theirs + ".bias", (d,))


def _neox_weight(c: Config, k: int) -> Callable[[np.ndarray], np.ndarray]:
    """Part k (0 q, 1 k, 2 v) of query_key_value's weight (3d, d), whose rows are (H, 3, dₕ): (d, H·dₕ)."""
    H, dh, d = c.n_heads, c.d_head, c.d_model
    return lambda a: a.reshape(H, 3, dh, d)[:, k].reshape(H * dh, d).T


def _neox_bias(c: Config, k: int) -> Callable[[np.ndarray], np.ndarray]:
    """Part k of query_key_value's bias (3d,), laid out (H, 3, dₕ): (H·dₕ,)."""
    H, dh = c.n_heads, c.d_head
    return lambda a: a.reshape(H, 3, dh)[:, k].reshape(H * dh)


def _phi3(c: Config) -> dict[str, Source]:
    """Phi-3: llama's names, with q, k, v fused in qkv_proj (rows [q H·dₕ | k G·dₕ | v G·dₕ]) and gate, up in
    gate_up_proj (rows [gate d_mlp | up d_mlp]); no biases."""
    d, V, m, H, G, dh = c.d_model, c.vocab_size, c.d_mlp, c.n_heads, c.kv_heads, c.d_head
    s = {"W_E": Source("embed_tokens.weight", (V, d))}
    qkv = (H * dh + 2 * G * dh, d)
    cuts = {"W_q": (0, H * dh), "W_k": (H * dh, (H + G) * dh), "W_v": ((H + G) * dh, (H + 2 * G) * dh)}
    for layer in range(c.n_layers):
        h, p = f"layers.{layer}.", f"{layer}."
        s[p + "ln1.g"] = Source(h + "input_layernorm.weight", (d,))
        for ours, (a, b) in cuts.items():
            s[p + ours] = Source(h + "self_attn.qkv_proj.weight", qkv, lambda w, a=a, b=b: w[a:b].T)
        _linear(s, p + "W_o", h + "self_attn.o_proj", d, H * dh)
        s[p + "ln2.g"] = Source(h + "post_attention_layernorm.weight", (d,))
        s[p + "W_gate"] = Source(h + "mlp.gate_up_proj.weight", (2 * m, d), lambda w: w[:m].T)
        s[p + "W_fc"] = Source(h + "mlp.gate_up_proj.weight", (2 * m, d), lambda w: w[m:].T)
        _linear(s, p + "W_proj", h + "mlp.down_proj", d, m)
    s["ln_f.g"] = Source("norm.weight", (d,))
    if not c.tied:
        s["W_U"] = Source("lm_head.weight", (V, d), transposed)
    return s


LAYOUTS: dict[str, Callable[[Config], dict[str, Source]]] = {
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "llama": _llama_like,
    "phi3": _phi3,
}


def why_shape(family: str, name: str, config: Config) -> str:
    """Which config.json sizes decide a tensor's shape, for the message."""
    c = config
    if family not in FAMILIES or FAMILIES[family].tensors != "gpt2":
        return (
            f"hidden_size = {c.d_model}, num_attention_heads = {c.n_heads}, num_key_value_heads = {c.kv_heads}, "
            f"head_dim = {c.d_head}, intermediate_size = {c.d_mlp}, vocab_size = {c.vocab_size}"
        )
    if name.startswith("wte"):
        return f"vocab_size = {c.vocab_size}, n_embd = {c.d_model}"
    if name.startswith("wpe"):
        return f"n_positions = {c.n_ctx}, n_embd = {c.d_model}"
    if "mlp" in name:
        return f"n_embd = {c.d_model}, n_inner = {c.d_mlp}"
    return f"n_embd = {c.d_model}"
