"""Each tensor layout a family's checkpoint is stored in, written here in numpy from Hugging Face's modeling code (not
from attention.model.tensornames, whose reading it checks): a model's parameters as the tensors of its checkpoint
(names, shapes, fused blocks), and a folder holding them as model.safetensors written byte by byte.

The engine tier writes a random model in each family's own layout, loads it with attention.model.load and compares
the parameters: a swapped q and k, gate and up, or a fused block cut in the wrong order does not come back.

WRITERS has one writer per layout (a Family's ``tensors``): a family with a new layout needs its writer here, written
from its modeling code; a family with a layout already here needs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from attention.model import Config

Params = dict[str, np.ndarray]
Tensors = dict[str, np.ndarray]


def _gpt2(c: Config, p: Params) -> Tensors:
    """GPT2LMHeadModel: Conv1D weights stored (in, out); c_attn is [W_q | W_k | W_v] side by side."""
    t = {"transformer.wte.weight": p["W_E"], "transformer.wpe.weight": p["W_pos"]}
    for layer in range(c.n_layers):
        h, q = f"transformer.h.{layer}.", f"{layer}."
        t[h + "ln_1.weight"], t[h + "ln_1.bias"] = p[q + "ln1.g"], p[q + "ln1.b"]
        t[h + "attn.c_attn.weight"] = np.concatenate([p[q + "W_q"], p[q + "W_k"], p[q + "W_v"]], axis=1)  # (d, 3d)
        t[h + "attn.c_attn.bias"] = np.concatenate([p[q + "b_q"], p[q + "b_k"], p[q + "b_v"]])  # (3d,)
        t[h + "attn.c_proj.weight"], t[h + "attn.c_proj.bias"] = p[q + "W_o"], p[q + "b_o"]
        t[h + "ln_2.weight"], t[h + "ln_2.bias"] = p[q + "ln2.g"], p[q + "ln2.b"]
        t[h + "mlp.c_fc.weight"], t[h + "mlp.c_fc.bias"] = p[q + "W_fc"], p[q + "b_fc"]
        t[h + "mlp.c_proj.weight"], t[h + "mlp.c_proj.bias"] = p[q + "W_proj"], p[q + "b_proj"]
    t["transformer.ln_f.weight"], t["transformer.ln_f.bias"] = p["ln_f.g"], p["ln_f.b"]
    return _head(t, p, "lm_head.weight")


def _linear(t: Tensors, name: str, p: Params, weight: str, bias: str) -> None:
    """An nn.Linear: its weight (out, in) is our W (in, out) transposed; its bias when the model has ours."""
    t[name + ".weight"] = p[weight].T
    if bias in p:
        t[name + ".bias"] = p[bias]


def _llama(c: Config, p: Params) -> Tensors:
    """LlamaForCausalLM and the families built like it (Mistral, Qwen2/3, Gemma 3, OLMo-2): q/k/v/o_proj,
    gate/up/down_proj. post_attention_layernorm is the MLP's pre-norm, or, with post-norms, the attention output's."""
    t = {"model.embed_tokens.weight": p["W_E"]}
    for layer in range(c.n_layers):
        h, q = f"model.layers.{layer}.", f"{layer}."
        for ours, theirs in (("W_q", "q_proj"), ("W_k", "k_proj"), ("W_v", "v_proj"), ("W_o", "o_proj")):
            _linear(t, h + "self_attn." + theirs, p, q + ours, q + "b" + ours[1:])
        for ours, theirs in (("W_gate", "gate_proj"), ("W_fc", "up_proj"), ("W_proj", "down_proj")):
            _linear(t, h + "mlp." + theirs, p, q + ours, q + "b" + ours[1:])
        post = q + "ln_post_attn.g" in p
        norms = {
            "ln1.g": "input_layernorm",
            "ln2.g": "pre_feedforward_layernorm" if post else "post_attention_layernorm",
            "ln_post_attn.g": "post_attention_layernorm",
            "ln_post_mlp.g": "post_feedforward_layernorm",
            "q_norm.g": "self_attn.q_norm",
            "k_norm.g": "self_attn.k_norm",
        }
        t.update({h + theirs + ".weight": p[q + ours] for ours, theirs in norms.items() if q + ours in p})
    t["model.norm.weight"] = p["ln_f.g"]
    return _head(t, p, "lm_head.weight")


def _gpt_neox(c: Config, p: Params) -> Tensors:
    """GPTNeoXForCausalLM: query_key_value fused per head, its rows (H, 3, d_head): head h's q, k, v rows together."""
    H, dh, d = c.n_heads, c.d_head, c.d_model
    t = {"gpt_neox.embed_in.weight": p["W_E"]}
    for layer in range(c.n_layers):
        h, q = f"gpt_neox.layers.{layer}.", f"{layer}."
        for ln, ours in (("input_layernorm", "ln1"), ("post_attention_layernorm", "ln2")):
            t[h + ln + ".weight"], t[h + ln + ".bias"] = p[q + ours + ".g"], p[q + ours + ".b"]
        rows = np.stack([p[q + w].T.reshape(H, dh, d) for w in ("W_q", "W_k", "W_v")], axis=1)  # (H, 3, dh, d)
        t[h + "attention.query_key_value.weight"] = rows.reshape(3 * H * dh, d)
        bias = np.stack([p[q + b].reshape(H, dh) for b in ("b_q", "b_k", "b_v")], axis=1)  # (H, 3, dh)
        t[h + "attention.query_key_value.bias"] = bias.reshape(3 * H * dh)
        _linear(t, h + "attention.dense", p, q + "W_o", q + "b_o")
        _linear(t, h + "mlp.dense_h_to_4h", p, q + "W_fc", q + "b_fc")
        _linear(t, h + "mlp.dense_4h_to_h", p, q + "W_proj", q + "b_proj")
    t["gpt_neox.final_layer_norm.weight"], t["gpt_neox.final_layer_norm.bias"] = p["ln_f.g"], p["ln_f.b"]
    return _head(t, p, "embed_out.weight")


def _phi3(c: Config, p: Params) -> Tensors:
    """Phi3ForCausalLM: qkv_proj's rows are [q (H·d_head) | k (G·d_head) | v (G·d_head)], gate_up_proj's
    [gate (d_mlp) | up (d_mlp)] (``gate, up = gate_up_proj(x).chunk(2)``); no biases."""
    t = {"model.embed_tokens.weight": p["W_E"]}
    for layer in range(c.n_layers):
        h, q = f"model.layers.{layer}.", f"{layer}."
        t[h + "self_attn.qkv_proj.weight"] = np.concatenate([p[q + w].T for w in ("W_q", "W_k", "W_v")], axis=0)
        t[h + "self_attn.o_proj.weight"] = p[q + "W_o"].T
        t[h + "mlp.gate_up_proj.weight"] = np.concatenate([p[q + "W_gate"].T, p[q + "W_fc"].T], axis=0)
        t[h + "mlp.down_proj.weight"] = p[q + "W_proj"].T
        t[h + "input_layernorm.weight"], t[h + "post_attention_layernorm.weight"] = p[q + "ln1.g"], p[q + "ln2.g"]
    t["model.norm.weight"] = p["ln_f.g"]
    return _head(t, p, "lm_head.weight")


def _head(t: Tensors, p: Params, name: str) -> Tensors:
    """The untied unembedding, stored (V, d) as an nn.Linear's weight."""
    if "W_U" in p:
        t[name] = p["W_U"].T
    return t


WRITERS: dict[str, Callable[[Config, Params], Tensors]] = {
    "gpt2": _gpt2,
    "llama": _llama,
    "gpt_neox": _gpt_neox,
    "phi3": _phi3,
}


def write_safetensors(path: Path, tensors: Tensors) -> None:
    """``tensors`` as a safetensors file of F64 tensors: 8 bytes of header length, the JSON header, the bytes."""
    header, chunks, at = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype="<f8").tobytes()
        header[name] = {"dtype": "F64", "shape": list(array.shape), "data_offsets": [at, at + len(data)]}
        chunks.append(data)
        at += len(data)
    head = json.dumps(header).encode("utf-8")
    path.write_bytes(len(head).to_bytes(8, "little") + head + b"".join(chunks))


def write_checkpoint(folder: Path, config_json: dict, tensors: Tensors, vocab_size: int) -> Path:
    """A checkpoint folder: config.json, model.safetensors and a word-level tokenizer.json of ``vocab_size`` words."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config_json))
    write_safetensors(folder / "model.safetensors", tensors)
    words = ["<pad>", "<s>", "</s>"] + [f"w{i}" for i in range(vocab_size - 3)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(folder / "tokenizer.json"))
    return folder
