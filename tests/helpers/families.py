"""Tiny models of each family that opens, made with transformers for the oracle tests (never fetched): every example
of every family's record (attention.model.families.FAMILIES, so a family added there is made here with no edit),
each saved as float32 and bfloat16 beside a word-level tokenizer, the float64 torch oracle, and a tiny Llama with a
Llama-style tokenizer."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from tests.helpers.examples import N_CTX, SIZES, TYPES, VOCAB, config_json, tiny_config  # noqa: F401 - shared
from tests.helpers.oracle import float64_oracle, refresh_rotary

CORPUS = [
    "the cat sat on the mat and the dog sat on the log",
    "héllo wörld, naïve café; attention is all you need",
    "two\nlines\tand a tab",
    "数字 and emoji 🙂 too",
] * 10


FAMILIES: dict[str, Callable[[], object]] = {  # every example of every family that opens, as transformers' config
    name: (lambda name=name: _hf_config(name)) for name in TYPES
}


def _hf_config(name: str) -> object:
    from transformers import AutoConfig

    raw = config_json(name)
    return AutoConfig.for_model(raw.pop("model_type"), **raw)


class Made:
    """One family's tiny model: its folders (float32 and bfloat16 files) and the float64 torch oracle."""

    def __init__(self, family: str, root: Path):
        from transformers import AutoModelForCausalLM

        torch.manual_seed(zlib.crc32(family.encode()))  # each example its own seed, whatever the others are
        model = AutoModelForCausalLM.from_config(FAMILIES[family]()).eval()
        with torch.no_grad():  # norm gains and biases away from 1 and 0, so a mistake in them would show
            for name, p in model.named_parameters():
                if "norm" in name or name.endswith("bias"):
                    p.add_(torch.randn_like(p) * 0.3)
        self.folders = {}
        for dtype in ("float32", "bfloat16"):
            folder = root / f"{family}_{dtype}"
            model.to(getattr(torch, dtype)).save_pretrained(str(folder), safe_serialization=True)
            _tokenizer(folder)
            self.folders[dtype] = folder
        self.torch = AutoModelForCausalLM.from_pretrained(
            str(self.folders["float32"]), attn_implementation="eager", dtype=torch.float64
        ).eval()
        refresh_rotary(self.torch)

    def oracle(self, ids: list[int]) -> tuple[np.ndarray, list[np.ndarray]]:
        """transformers' logits (n, V) and each layer's attention weights (H, n, n), in float64 throughout."""
        with torch.no_grad(), float64_oracle():
            out = self.torch(torch.tensor([ids]), output_attentions=True)
        return out.logits[0].numpy(), [a[0].numpy() for a in out.attentions]


def _tokenizer(folder: Path) -> None:
    """A tiny word-level tokenizer.json (the model tests feed ids; load() needs a tokenizer beside the weights)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["<pad>", "<s>", "</s>"] + [f"w{i}" for i in range(VOCAB - 3)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(folder / "tokenizer.json"))


def train_tokenizer(tok: object, specials: list[str], size: int = 400) -> None:
    from tokenizers import trainers

    byte_tokens = [f"<0x{i:02X}>" for i in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=specials + byte_tokens, show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)  # type: ignore[attr-defined]


def llama_tokenizer(folder: Path, template: bool = True) -> None:
    """SentencePiece-style BPE as Llama 2's tokenizer.json: ▁ for spaces, byte fallback, "<s> $A"."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    train_tokenizer(tok, ["<unk>", "<s>", "</s>"])
    if template:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    tok.save(str(folder / "tokenizer.json"))
    config = {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "add_bos_token": True}))


def tiny_llama(folder: Path) -> Path:
    """A tiny Llama folder (vocabulary 512, grouped heads) with a Llama-style tokenizer; the tests copy it."""
    return _llama_folder(
        folder,
        0,
        vocab_size=512,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )


def smol_shaped(folder: Path) -> Path:
    """SmolLM2-135M's shape where the pages feel it (30 layers, 9 query heads sharing 3 key/value heads, RoPE), at
    a narrow width (d = 72, heads of 8) so it loads in a second; a Llama-style tokenizer of 400 tokens."""
    return _llama_folder(
        folder,
        3,
        vocab_size=400,
        hidden_size=72,
        intermediate_size=96,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=512,
    )


def _llama_folder(folder: Path, seed: int, **shape: int) -> Path:
    """A random Llama of ``shape`` (weights drawn from ``seed``, std 0.2) saved as safetensors in ``folder``, with a
    Llama-style tokenizer."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(**shape, initializer_range=0.2, bos_token_id=1, eos_token_id=2)
    LlamaForCausalLM(cfg).save_pretrained(str(folder), safe_serialization=True)
    llama_tokenizer(folder)
    return folder
