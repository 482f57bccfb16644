"""Tiny GGUF files written here with gguf.GGUFWriter, for the GGUF tests: one random model per architecture that
opens (llama, qwen2, qwen3, gemma3), its matrices stored as one type, and a tokenizer in its metadata.

The matrices are drawn in the file's own layout (llama's q and k rows as llama.cpp stores them), then stored as
the type asked: F32, F16 and BF16 as they are, the legacy types through gguf.quants.quantize, and the k-quants
(Q4_K, Q5_K, Q6_K), which gguf-py cannot quantize, as random blocks whose float16 scales are set small and finite:
any such block is a valid k-quant block, and both loaders dequantize it with the same gguf code. Norm gains and
biases stay F32, as llama.cpp writes them. Sizes are chosen so every matrix's rows are a whole number of 256-value
blocks (what a k-quant needs), and as transformers' GGUF loader reads them: Qwen3's head width 128 (it does not read
attention.key_length), Gemma 3's 256 (its query_pre_attn_scalar default).

Tokenizers: llama has a SentencePiece-style one (tokenizer.ggml.model "llama", merges, byte tokens, BOS added by
default), qwen2 and qwen3 a byte-level BPE (model "gpt2", pre "qwen2"), gemma3 Gemma's SentencePiece (no merges).
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q

from attention.model.gguf_tokenizer import byte_alphabet

ARCHS = ("llama", "qwen2", "qwen3", "gemma3")
KQUANT_BLOCK = {"Q4_K": (144, (0, 2)), "Q5_K": (176, (0, 2)), "Q6_K": (210, (208,))}  # bytes; offsets of the f16s
KQUANT_SCALE = {"Q4_K": 8e-5, "Q5_K": 4e-5, "Q6_K": 3e-5}  # weights of at most about 0.08, like the others
SIZES = {  # layers, d_model, heads, kv heads, head width, d_mlp
    "llama": (2, 256, 4, 2, 64, 256),
    "qwen2": (2, 256, 4, 2, 64, 512),
    "qwen3": (2, 256, 2, 1, 128, 256),
    "gemma3": (6, 256, 2, 1, 256, 256),  # six layers: the sixth is Gemma 3's global one
}
WORDS = ("the", "cat", "sat", "on", "mat", "he", "at")
TEXTS = (
    "the cat sat on the mat",
    "The Cat  sat\n on  thé mat 🙂",
    "  leading spaces and trailing  ",
    "<s> hi </s> <|im_end|> <bos>",
)


def _pieces(space: str) -> tuple[list[str], list[str]]:
    """Tokens built from WORDS with ``space`` standing for a space, and the merges that make them."""
    tokens, merges = [], []
    for word in WORDS:
        for start in (space, ""):
            text = start + word
            for k in range(2, len(text) + 1):
                if text[:k] not in tokens:
                    tokens.append(text[:k])
                    merges.append(f"{text[: k - 1]} {text[k - 1]}")
    return tokens, merges


def _tokenizer(w: gguf.GGUFWriter, arch: str) -> int:
    """Write a tokenizer for ``arch`` into the metadata; its number of tokens."""
    if arch in ("qwen2", "qwen3"):
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        letters = list(byte_alphabet().values())
        pieces, merges = _pieces("Ġ")
        tokens = specials + letters + [p for p in pieces if p not in letters]
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("qwen2")
        w.add_token_merges(merges)
        w.add_token_types([3, 3, 3] + [1] * (len(tokens) - 3))
        w.add_bos_token_id(0)
        w.add_eos_token_id(2)
        w.add_add_bos_token(False)
    else:
        gemma = arch == "gemma3"
        specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"] if gemma else ["<unk>", "<s>", "</s>"]
        bytes_ = [f"<0x{b:02X}>" for b in range(256)]
        pieces, merges = _pieces("▁")
        letters = sorted({c for p in pieces for c in p} | set("TCé"))
        tokens = specials + bytes_ + letters + [p for p in pieces if p not in letters] + (["  "] if gemma else [])
        w.add_tokenizer_model("llama")
        if not gemma:
            w.add_token_merges(merges)
        kinds = {"<unk>": 2, **dict.fromkeys(bytes_, 6), **dict.fromkeys(specials[:3] if gemma else specials[1:], 3)}
        w.add_token_types([kinds.get(t, 1) for t in tokens])
        w.add_token_scores([-float(i) for i in range(len(tokens))])
        ids = {"bos": 2, "eos": 1, "unk": 3, "pad": 0} if gemma else {"bos": 1, "eos": 2, "unk": 0}
        w.add_bos_token_id(ids["bos"])
        w.add_eos_token_id(ids["eos"])
        w.add_unk_token_id(ids["unk"])
        if gemma:
            w.add_pad_token_id(ids["pad"])
            w.add_add_bos_token(True)
    w.add_token_list(tokens)
    return len(tokens)


def _stored(a: np.ndarray, kind: str, rng: np.random.RandomState) -> tuple[np.ndarray, Q]:
    """A float32 matrix as ``kind``'s bytes (a k-quant: random blocks of its shape, scales set small)."""
    if kind in KQUANT_BLOCK:
        size, scales = KQUANT_BLOCK[kind]
        raw = rng.randint(0, 256, (a.shape[0], a.shape[1] // 256, size)).astype(np.uint8)
        for at in scales:
            raw[..., at : at + 2] = np.full(raw.shape[:2] + (1,), KQUANT_SCALE[kind], np.float16).view(np.uint8)
        return raw.reshape(a.shape[0], -1), Q[kind]
    if kind == "F32":
        return a, Q.F32
    return gguf.quants.quantize(a, Q[kind]), Q[kind]


def write(path: Path, arch: str, kind: str = "F32", seed: int = 0, tied: bool = True, embed: str | None = None) -> Path:
    """A tiny random ``arch`` model as a GGUF file at ``path``, its matrices stored as ``kind`` (the embedding as
    ``embed``, else ``kind``); untied (an output.weight) unless ``tied``."""
    rng = np.random.RandomState(seed)
    layers, d, H, G, dh, m = SIZES[arch]
    w = gguf.GGUFWriter(path, arch)
    vocab = _tokenizer(w, arch)
    for name, value in (("block_count", layers), ("embedding_length", d), ("feed_forward_length", m),
                        ("attention.head_count", H), ("attention.head_count_kv", G), ("context_length", 64),
                        ("vocab_size", vocab)):  # fmt: skip
        w.add_uint32(f"{arch}.{name}", value)
    w.add_float32(f"{arch}.rope.freq_base", {"gemma3": 100000.0}.get(arch, 500.0))
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    if arch == "llama":
        w.add_uint32("llama.rope.dimension_count", dh)
    if arch in ("qwen3", "gemma3"):
        w.add_uint32(f"{arch}.attention.key_length", dh)
        w.add_uint32(f"{arch}.attention.value_length", dh)
    if arch == "gemma3":
        w.add_uint32("gemma3.attention.sliding_window", 4)

    def matrix(name: str, rows: int, cols: int, as_kind: str | None = None) -> None:
        data, qtype = _stored((rng.randn(rows, cols) * 0.08).astype(np.float32), as_kind or kind, rng)
        w.add_tensor(name, data, raw_dtype=qtype)

    def gain(name: str, size: int) -> None:  # Gemma's files store 1 + w: near 1 for every family
        w.add_tensor(name, (1 + 0.1 * rng.randn(size)).astype(np.float32))

    matrix("token_embd.weight", vocab, d, embed)
    for layer in range(layers):
        b = f"blk.{layer}."
        gain(b + "attn_norm.weight", d)
        matrix(b + "attn_q.weight", H * dh, d)
        matrix(b + "attn_k.weight", G * dh, d)
        matrix(b + "attn_v.weight", G * dh, d)
        matrix(b + "attn_output.weight", d, H * dh)
        if arch == "qwen2":
            for part, rows in (("q", H * dh), ("k", G * dh), ("v", G * dh)):
                w.add_tensor(b + f"attn_{part}.bias", (0.1 * rng.randn(rows)).astype(np.float32))
        if arch in ("qwen3", "gemma3"):
            gain(b + "attn_q_norm.weight", dh)
            gain(b + "attn_k_norm.weight", dh)
        if arch == "gemma3":
            gain(b + "post_attention_norm.weight", d)
            gain(b + "post_ffw_norm.weight", d)
        gain(b + "ffn_norm.weight", d)
        matrix(b + "ffn_gate.weight", m, d)
        matrix(b + "ffn_up.weight", m, d)
        matrix(b + "ffn_down.weight", d, m)
    gain("output_norm.weight", d)
    if not tied:
        matrix("output.weight", vocab, d)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
