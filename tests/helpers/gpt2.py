"""Small random GPT-2 checkpoints made here with transformers (test oracles only): a folder as model hubs publish it
(save_pretrained with safetensors) beside a small BPE tokenizer trained here, and the torch model itself."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

N_CTX = 40  # the tiny model's context
CORPUS = [
    "the cat sat on the mat and the dog sat on the log",
    "attention is all you need said the paper",
    "heads read keys and values, queries ask; the softmax weighs them",
    "a small model of words, trained here, never fetched",
] * 20


def tiny_gpt2(folder: Path) -> tuple[Path, object]:
    """A tiny random GPT-2 folder (config.json, model.safetensors, tokenizer.json) and the torch model itself."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is made here: the hub is never asked
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(CORPUS, vocab_size=300, min_frequency=1, show_progress=False)
    tok.save(str(folder / "tokenizer.json"))
    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=tok.get_vocab_size(),
        n_positions=N_CTX,
        n_embd=64,
        n_layer=2,
        n_head=4,
        initializer_range=0.2,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = GPT2LMHeadModel(cfg).double().eval()
    with torch.no_grad():  # LayerNorm gains and biases away from 1 and 0, so a mistake in them would show
        for name, p in model.named_parameters():
            if "ln" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.3)
    model.save_pretrained(str(folder), safe_serialization=True)
    model = GPT2LMHeadModel.from_pretrained(str(folder), attn_implementation="eager", dtype=torch.float64).eval()
    return folder, model


def wide_gpt2(tiny: tuple[Path, object], folder: Path) -> tuple[Path, object]:
    """A random GPT-2 of 3 layers × 6 heads (18: more than every-head-drawn allows), the tiny one's tokenizer."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    shutil.copy(tiny[0] / "tokenizer.json", folder / "tokenizer.json")
    torch.manual_seed(1)
    cfg = GPT2Config(vocab_size=tiny[1].config.vocab_size, n_positions=64, n_embd=48, n_layer=3, n_head=6)
    GPT2LMHeadModel(cfg).double().eval().save_pretrained(str(folder), safe_serialization=True)
    model = GPT2LMHeadModel.from_pretrained(str(folder), attn_implementation="eager", dtype=torch.float64).eval()
    return folder, model
