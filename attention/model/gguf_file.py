"""Open a GGUF file (llama.cpp's format, what Ollama, LM Studio and llama.cpp keep on disk) as a Model.

Read with the ``gguf`` package, llama.cpp's own reader: ``GGUFReader`` memory-maps the file (nothing is read whole)
and ``gguf.quants.dequantize`` turns each block-quantized tensor into numbers, in numpy. The steps:

1. the file: at most :data:`~.checkpoint.MAX_FOLDER_BYTES`, its first four bytes "GGUF", its header and tensor
   table parsed (a truncated or malformed file is refused here, naming the problem);
2. the architecture (``general.architecture``): llama (also Mistral's and SmolLM2's files), qwen2, qwen3 and
   gemma3 open; the metadata becomes a config.json-like dict read by :mod:`.families`, so a GGUF file and a
   checkpoint folder of the same model give the same Config;
3. every tensor's type (:data:`TYPES`) and shape is checked against the config, and the weights' size as computed
   against :data:`~.checkpoint.MAX_WEIGHT_BYTES`, all from the header, before any tensor's bytes are read;
4. each tensor is dequantized to float32, then computed in the precision rule's dtype (:func:`.checkpoint.precision`);
5. the tokenizer is built from the ``tokenizer.ggml.*`` metadata (:mod:`.gguf_tokenizer`).

Layout: llama.cpp's converter permutes the rows of llama's W_q and W_k within each head, from Hugging Face's
"halves" rotation (pairs (i, i + d/2)) to its own interleaved pairs (2i, 2i + 1). The permutation is undone here,
as transformers' GGUF loader does, so a head's columns are those of the Hugging Face checkpoint and of every other
family on the step pages (a column i and i + d/2 are one rotating pair). Qwen2, Qwen3 and Gemma 3 files are stored
unpermuted. Gemma 3's files store each RMSNorm's gain as 1 + w; w is what Config's norm_offset of 1 reads, so 1 is
subtracted, as transformers does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import AttentionError
from . import tensornames
from .config import Config
from .families import read_config as read_family_config
from .gguf_tokenizer import build as build_tokenizer
from .model import Params
from .vocab import BPEVocab

ARCHITECTURES = ("llama", "qwen2", "qwen3", "gemma3")
TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K")
FLOAT_TYPES = ("F32", "F16", "BF16")
MAGIC = b"GGUF"
MAX_TOKENS = 1_000_000  # entries of tokenizer.ggml.tokens read at most (Gemma 3 has 262,144)
LAYER_NAMES = {  # Hugging Face's name in a layer (without the .weight/.bias) -> llama.cpp's
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "post_attention_layernorm": "ffn_norm",  # Gemma 3: post_attention_norm (see _gguf_name)
    "pre_feedforward_layernorm": "ffn_norm",
    "post_feedforward_layernorm": "post_ffw_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
TOP_NAMES = {"embed_tokens": "token_embd", "norm": "output_norm", "lm_head": "output"}


class GGUFFile:
    """A GGUF file opened and checked from its header (size, magic, architecture, types, every tensor's shape): its
    ``family`` and ``config``; :meth:`tokenizer` and :meth:`params` read the rest. :func:`.checkpoint.load` opens it
    between the two with its bounds and precision rule (this module does not import that one)."""

    def __init__(self, path: Path, max_bytes: int):
        self.path = path
        self.reader = open_reader(path, max_bytes)
        self.meta = Metadata(self.reader)
        self.arch = self.meta.architecture()
        self.tensors = {t.name: t for t in self.reader.tensors}
        _check_types(path, self.tensors)
        self.family, self.config = read_family_config(config_dict(self.meta, self.arch, self.tensors))
        self.want = _sources(self.family, self.config, self.arch)
        _check_tensors(path, self.tensors, self.want, self.config)

    def tokenizer(self) -> BPEVocab:
        """The tokenizer its metadata describes (:mod:`.gguf_tokenizer`)."""
        return build_tokenizer(self.meta.tokenizer(), self.arch)

    def params(self, dtype: np.dtype) -> Params:
        """The parameters as ``dtype``: each tensor dequantized (see :func:`_read`)."""
        return _read(self.tensors, self.want, self.config, self.arch, dtype)

    def quantization(self) -> str:
        """How the weights were stored, for Model.notes (see :func:`quantization`)."""
        return quantization(self.tensors)


def open_reader(path: Path, max_bytes: int) -> Any:
    """The file's GGUFReader, after its size and magic are checked; every parse failure named."""
    size = path.stat().st_size
    if size > max_bytes:
        raise AttentionError(
            f"{path.name} is {size:,} bytes, more than the {max_bytes / 1024**3:g} GiB that can be opened",
            field="file",
        )
    with path.open("rb") as f:
        head = f.read(4)
    if head != MAGIC:
        raise AttentionError(
            f"{path.name} is not a GGUF file: it starts with {head!r}, not the magic {MAGIC!r}", field="file"
        )
    try:
        reader = _reader_class()(path, "r")
    except _Truncated as cut:
        raise AttentionError(
            f"{path.name} is truncated: tensor {cut.name!r} should be {cut.expected:,} bytes, but the file ends "
            f"{cut.actual:,} bytes into it (the file has {size:,} bytes)",
            field="file",
        ) from None
    except Exception as exc:  # the reader raises ValueError, IndexError ... on a truncated or malformed file
        raise AttentionError(
            f"{path.name} could not be read as a GGUF file (truncated or malformed): {str(exc)[:200]}", field="file"
        ) from None
    for t in reader.tensors:
        if t.data_offset + int(t.n_bytes) > size or t.data.nbytes != int(t.n_bytes):
            raise AttentionError(
                f"{path.name} is truncated: tensor {t.name!r} needs bytes up to {t.data_offset + int(t.n_bytes):,} "
                f"but the file has {size:,}",
                field="file",
            )
    return reader


class _Truncated(Exception):
    """A tensor that runs past the file's end: its name, its size in bytes, and how many of them the file holds."""

    def __init__(self, name: str, expected: int, actual: int):
        super().__init__(name)
        self.name, self.expected, self.actual = name, expected, actual


@functools.cache
def _reader_class() -> type:
    """gguf's GGUFReader, checking every tensor's extent against the file's size before it maps the tensors (where
    a truncated file fails with numpy's "cannot reshape array of size …", which names nothing)."""
    import gguf

    class Checked(gguf.GGUFReader):
        def _build_tensors(self, start_offs: int, fields: list) -> None:
            for field in fields:
                _, name, _, dims, raw_type, offset = field.parts
                block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(int(raw_type[0]))]
                expected = int(np.prod(dims, dtype=np.int64)) * size // block  # bytes
                begin = int(start_offs + offset[0])
                if begin + expected > len(self.data):
                    actual = max(0, len(self.data) - begin)
                    raise _Truncated(bytes(name).decode("utf-8", "replace")[:100], expected, actual)
            super()._build_tensors(start_offs, fields)

    return Checked


class Metadata:
    """The file's key-value metadata, each value read when it is asked for."""

    def __init__(self, reader: Any):
        self.fields = reader.fields

    def get(self, key: str, default: object = None) -> Any:
        field = self.fields.get(key)
        if field is None:
            return default
        if key == "tokenizer.ggml.tokens" and len(field.data) > MAX_TOKENS:
            raise AttentionError(
                f"tokenizer.ggml.tokens has {len(field.data):,} entries; at most {MAX_TOKENS:,} are read", field=key
            )
        try:
            value = field.contents()
        except (UnicodeDecodeError, ValueError) as exc:
            raise AttentionError(f"the metadata {key} could not be read: {exc}", field=key) from None
        return value.tolist() if isinstance(value, np.ndarray) else value

    def architecture(self) -> str:
        arch = self.get("general.architecture")
        if arch not in ARCHITECTURES:
            raise AttentionError(
                f"general.architecture is {arch!r}; the GGUF architectures that open are {', '.join(ARCHITECTURES)}",
                field="general.architecture",
            )
        return arch

    def tokenizer(self) -> dict[str, Any]:
        return {k: self.get(k) for k in self.fields if k.startswith("tokenizer.ggml.")}


def _check_types(path: Path, tensors: dict[str, Any]) -> None:
    for name, t in tensors.items():
        if t.tensor_type.name not in TYPES:
            raise AttentionError(
                f"{path.name}: tensor {name!r} is stored as {t.tensor_type.name}; the types read are "
                f"{', '.join(TYPES)}",
                field=name,
            )


def config_dict(meta: Metadata, arch: str, tensors: dict[str, Any]) -> dict[str, Any]:
    """The metadata as the config.json of the same model (the keys :func:`.families.read_config` reads)."""
    key = lambda name, default=None: meta.get(f"{arch}.{name}", default)  # noqa: E731
    heads = key("attention.head_count")
    tokens = meta.fields.get("tokenizer.ggml.tokens")
    raw: dict[str, Any] = {
        "model_type": "gemma3_text" if arch == "gemma3" else arch,
        "hidden_size": key("embedding_length"),
        "num_hidden_layers": key("block_count"),
        "intermediate_size": key("feed_forward_length"),
        "num_attention_heads": heads,
        "num_key_value_heads": key("attention.head_count_kv", heads),
        "max_position_embeddings": key("context_length"),
        "rms_norm_eps": key("attention.layer_norm_rms_epsilon", 1e-6),
        "vocab_size": key("vocab_size", len(tokens.data) if tokens is not None else None),
        "tie_word_embeddings": "output.weight" not in tensors,
    }
    if key("rope.freq_base") is not None:
        raw["rope_theta"] = key("rope.freq_base")
    if key("attention.key_length") is not None:
        raw["head_dim"] = key("attention.key_length")
    elif arch == "llama" and key("rope.dimension_count") is not None:
        raw["head_dim"] = key("rope.dimension_count")
    scaling = key("rope.scaling.type")
    if scaling not in (None, "none"):
        raw["rope_scaling"] = {"rope_type": scaling, "factor": key("rope.scaling.factor")}
    if arch == "gemma3":
        _gemma3(raw, key)
    _check_rope(raw, key, arch, tensors)
    return {k: v for k, v in raw.items() if v is not None}


def _gemma3(raw: dict[str, Any], key: Callable[..., Any]) -> None:
    """Gemma 3: the window, and the query scale llama.cpp uses (1/√head_dim; 1/√(d_model / heads) for the 27B)."""
    raw["sliding_window"] = key("attention.sliding_window")
    head_dim = raw.get("head_dim") or raw["hidden_size"] // raw["num_attention_heads"]
    wide = raw["num_hidden_layers"] == 62  # the 27B: llama.cpp's LLM_TYPE_27B
    raw["query_pre_attn_scalar"] = raw["hidden_size"] // raw["num_attention_heads"] if wide else head_dim


def _check_rope(raw: dict[str, Any], key: Callable[..., Any], arch: str, tensors: dict[str, Any]) -> None:
    """Refuse what the file's rotation needs and the engine does not do: part of a head turned, a scaling other than
    linear or Llama 3's (read from rope_freqs.weight)."""
    dims, head_dim = key("rope.dimension_count"), raw.get("head_dim")
    if dims is not None and head_dim is not None and dims != head_dim:
        raise AttentionError(
            f"{arch}.rope.dimension_count is {dims} but each head has {head_dim} columns; a rotation of part of a "
            "head does not open from a GGUF file",
            field=f"{arch}.rope.dimension_count",
        )
    if "rope_freqs.weight" in tensors:
        _llama3(raw, tensors["rope_freqs.weight"])
    scaling = raw.get("rope_scaling")
    if scaling and scaling["rope_type"] not in ("linear", "llama3"):
        raise AttentionError(
            f"{arch}.rope.scaling.type is {scaling['rope_type']!r}; only linear scaling opens from a GGUF file",
            field=f"{arch}.rope.scaling.type",
        )


LLAMA3 = {"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}


def llama3_factors(theta: float, dim: int, factor: float, low: float, high: float, original: float) -> np.ndarray:
    """The per-frequency divisors llama.cpp's converter writes as rope_freqs.weight for Llama 3's rope scaling: 1 for
    wavelengths under original / high, ``factor`` over original / low, and a smooth blend between. (dim / 2,)"""
    freqs = 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)  # (dim / 2,)
    wavelen = 2 * np.pi / freqs
    smooth = (original / wavelen - low) / (high - low)
    blend = 1 / ((1 - smooth) / factor + smooth)
    return np.where(wavelen < original / high, 1.0, np.where(wavelen > original / low, factor, blend))


def _llama3(raw: dict[str, Any], tensor: Any) -> None:
    """Llama 3.1 and later store their RoPE scaling as per-frequency factors (rope_freqs.weight), not as keys. Those
    of Llama 3's scaling (low 1, high 4, original context 8192, every published Llama 3 model's) with the factor their
    largest is read as rope_scaling "llama3"; any others are refused, naming the tensor."""
    stored = np.asarray(tensor.data, dtype=np.float64).ravel() if tensor.tensor_type.name == "F32" else None
    head_dim = raw.get("head_dim") or raw["hidden_size"] // raw["num_attention_heads"]
    factor = float(stored.max()) if stored is not None and stored.size else 0.0
    if stored is not None and factor > 0:
        expected = llama3_factors(raw.get("rope_theta", 10000.0), head_dim, factor, *LLAMA3.values())
        if stored.shape == expected.shape and np.allclose(stored, expected, rtol=1e-5, atol=0):
            if factor != 1.0:
                raw["rope_scaling"] = {"rope_type": "llama3", "factor": factor, **LLAMA3}
            return
    raise AttentionError(
        "rope_freqs.weight holds per-frequency RoPE factors that are not Llama 3's scaling (low 1, high 4, original "
        "context 8192); those do not open from a GGUF file",
        field="rope_freqs.weight",
    )


def _gguf_name(hf: str, arch: str) -> str:
    """llama.cpp's name for a Hugging Face tensor name (without "model.")."""
    stem, _, suffix = hf.rpartition(".")
    if stem.startswith("layers."):
        _, layer, part = stem.split(".", 2)
        ours = "post_attention_norm" if arch == "gemma3" and part == "post_attention_layernorm" else LAYER_NAMES[part]
        return f"blk.{layer}.{ours}.{suffix}"
    return f"{TOP_NAMES[stem]}.{suffix}"


def _sources(family: str, config: Config, arch: str) -> dict[str, tensornames.Source]:
    """Every parameter's source, named as in the GGUF file (shapes in numpy's order: the file's reversed)."""
    return {ours: s._replace(name=_gguf_name(s.name, arch)) for ours, s in tensornames.sources(family, config).items()}


def _check_tensors(path: Path, tensors: dict[str, Any], want: dict[str, tensornames.Source], c: Config) -> None:
    """Every tensor the config needs is there with its shape, and none is left over; from the header alone."""
    used = {s.name for s in want.values()}
    known = ("rope_freqs.weight",) + (("output.weight",) if c.tied else ())  # read as the config's RoPE scaling
    extra = sorted(n for n in tensors if n not in used and n not in known)
    if extra:
        raise AttentionError(
            f"{path.name} has a tensor {extra[0]!r} that a model of its metadata's size does not have "
            f"(block_count = {c.n_layers})",
            field=extra[0],
        )
    for s in want.values():
        if s.name not in tensors:
            raise AttentionError(
                f"{path.name} has no tensor {s.name!r}, which its metadata's model needs", field=s.name
            )
        shape = tuple(int(k) for k in reversed(tensors[s.name].shape))  # GGUF lists the fastest axis first
        if shape != s.shape:
            raise AttentionError(
                f"{path.name}: {s.name} has shape {list(shape)} but the metadata needs {list(s.shape)} "
                f"(embedding_length = {c.d_model}, head_count = {c.n_heads}, head_count_kv = {c.kv_heads}, "
                f"head dim = {c.d_head}, feed_forward_length = {c.d_mlp}, vocab_size = {c.vocab_size})",
                field=s.name,
            )


def _read(
    tensors: dict[str, Any], want: dict[str, tensornames.Source], config: Config, arch: str, dtype: np.dtype
) -> Params:
    """The parameters: each tensor dequantized to float32, unpermuted (llama's q and k), gains shifted (Gemma 3),
    cast to ``dtype``, finite, read-only."""
    params: Params = {}
    for ours, s in want.items():
        arr = dequantized(tensors[s.name]).reshape(s.shape)
        if arch == "llama" and s.name.endswith(("attn_q.weight", "attn_k.weight")):
            heads = config.n_heads if "attn_q" in s.name else config.kv_heads
            arr = unpermute(arr, heads)
        if arch == "gemma3" and s.name.endswith("norm.weight"):
            arr = arr - np.float32(1)
        arr = arr.astype(dtype, copy=False)
        if not np.isfinite(arr.sum()) and not np.isfinite(arr).all():
            idx = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
            raise AttentionError(f"{s.name} at {list(idx)} is {arr[idx]}; every weight must be finite", field=s.name)
        arr.flags.writeable = False
        params[ours] = s.take(arr)
    return params


def dequantized(tensor: Any) -> np.ndarray:
    """One tensor as float32, from its memory-mapped bytes (a new array: nothing keeps the file open)."""
    import gguf

    kind = tensor.tensor_type.name
    if kind == "BF16":
        from .weightfiles import widen_bfloat16

        return widen_bfloat16(np.asarray(tensor.data).view(np.uint16))
    if kind in ("F32", "F16"):
        return np.array(tensor.data, dtype=np.float32)
    return gguf.quants.dequantize(np.asarray(tensor.data), tensor.tensor_type).astype(np.float32, copy=False)


def unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's q/k row order back to Hugging Face's: within each head, rows (pair, 2) -> (2, pair).

    w is (heads · dₕ, d) as stored; llama.cpp wrote row 2i + j of a head from Hugging Face's row i + j·dₕ/2."""
    rows, cols = w.shape
    return w.reshape(heads, rows // heads // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def quantization(tensors: dict[str, Any]) -> str:
    """How the weights were stored: "quantized Q4_1 (token_embd Q8_0, 61 tensors F32), dequantized to float32"."""
    counts: dict[str, int] = {}
    for t in tensors.values():
        if len(t.shape) > 1:  # the matrices: a file keeps its norms' gains in F32 whatever its type
            counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
    ranked = sorted(counts, key=lambda k: -counts[k])
    if not ranked:
        return "Stored unquantized."
    main = ranked[0]
    others = ", ".join(f"{counts[k]} {'matrix' if counts[k] == 1 else 'matrices'} {k}" for k in ranked[1:])
    lead = f"stored as {main}" if main in FLOAT_TYPES else f"quantized {main}"
    return f"GGUF file, {lead}" + (f" ({others})" if others else "") + ", dequantized to float32."
