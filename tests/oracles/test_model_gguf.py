"""GGUF files against transformers' own GGUF loader: tiny random models of each architecture written here with
gguf.GGUFWriter (tests/helpers/gguf_files.py), opened by attention.model.load and by
``AutoModelForCausalLM.from_pretrained(folder, gguf_file=...)`` / ``AutoTokenizer.from_pretrained(folder,
gguf_file=...)`` on the same file; both dequantize with the gguf package.

Each architecture is stored as F32, a legacy quantized type and a k-quant; llama as every type that opens. The
token ids must be equal (BOS included); every weight matrix equal to transformers' (a copy, not a product: exact);
the logits and every attention weight equal to float32 rounding. transformers computes a GGUF model in float32 (its
kernels do, whatever dtype is asked), ours in float64 here, so the difference is float32's: a relative rounding of
u = 6e-8 per step, grown through 2 to 6 layers of sums of 256 terms to at most about 1e-6 as measured; the bound is
2e-5 (of the largest logit; absolute for the weights, which are at most 1). It still catches a real change: the same
file read without undoing llama.cpp's q/k permutation moves the weights by more than 1e-2.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch  # a test oracle (requirements-dev.txt): if missing, these tests fail rather than skip

from attention.model import gguf_file, load
from tests.helpers import gguf_files

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is made here: the hub is never asked

BOUND = 2e-5
KINDS = {  # each architecture: F32, a legacy type and a k-quant; llama every type that opens
    "llama": gguf_file.TYPES,
    "qwen2": ("F32", "Q8_0", "Q5_K"),
    "qwen3": ("F32", "Q4_1", "Q6_K"),
    "gemma3": ("F32", "Q8_0", "Q4_K"),
}
CASES = [(arch, kind) for arch, kinds in KINDS.items() for kind in kinds]
TEXT = "the cat sat on the mat. The Cat  sat\n on  thé mat 🙂 the cat"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gguf")


def _file(folder: Path, arch: str, kind: str) -> Path:
    path = folder / f"{arch}-{kind}.gguf"
    if not path.exists():  # untied for qwen2 and llama's F32 (an output.weight), tied for the rest
        gguf_files.write(
            path, arch, kind, seed=len(kind), tied=not (arch == "qwen2" or (arch, kind) == ("llama", "F32"))
        )
    return path


def _theirs(path: Path) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    )
    return model.eval()


def _oracle(model: torch.nn.Module, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)
    return out.logits[0].double().numpy(), np.stack([a[0].double().numpy() for a in out.attentions])


@pytest.mark.parametrize(("arch", "kind"), CASES)
def test_logits_and_every_attention_weight_match_transformers_gguf_loader(folder: Path, arch: str, kind: str) -> None:
    path = _file(folder, arch, kind)
    m, theirs = load(path, dtype=np.float64), _theirs(path)
    ids = m.encode(TEXT)
    logits, weights = _oracle(theirs, ids)
    run = m.run(ids)
    assert run.logits.shape == logits.shape and run.weights.shape == weights.shape
    assert np.abs(run.logits - logits).max() <= BOUND * np.abs(logits).max()
    assert np.abs(run.weights - weights).max() <= BOUND
    assert np.std(run.weights) > 0.05  # the heads are far from uniform: the comparison means something
    said = "stored as" if kind in gguf_file.FLOAT_TYPES else "quantized"
    assert m.notes[0] == f"GGUF file, {said} {kind}, dequantized to float32."


@pytest.mark.parametrize("arch", gguf_files.ARCHS)
def test_every_weight_matrix_is_transformers_own(folder: Path, arch: str) -> None:
    """The head's columns on the step pages are those the model uses: W_q, W_k, W_v, W_o of every layer equal the
    transpose of transformers' q/k/v/o_proj (llama's q and k rows unpermuted as transformers does)."""
    kind = KINDS[arch][1]
    m, theirs = load(_file(folder, arch, kind), dtype=np.float32), _theirs(_file(folder, arch, kind))
    for layer, block in enumerate(theirs.model.layers):
        for ours, proj in (("W_q", "q_proj"), ("W_k", "k_proj"), ("W_v", "v_proj"), ("W_o", "o_proj")):
            expected = getattr(block.self_attn, proj).weight.detach().numpy().T
            assert np.array_equal(m.params[f"{layer}.{ours}"], expected), (layer, ours)
        if arch == "gemma3":  # the file's 1 + w, read back as w, as transformers does
            assert np.array_equal(m.params[f"{layer}.ln1.g"], block.input_layernorm.weight.detach().numpy())


@pytest.mark.parametrize("arch", gguf_files.ARCHS)
def test_token_ids_equal_transformers_gguf_tokenizer(folder: Path, arch: str) -> None:
    from transformers import AutoTokenizer

    path = _file(folder, arch, "Q8_0" if arch != "qwen3" else "Q4_1")
    m = load(path)
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    for text in (*gguf_files.TEXTS, TEXT, "", " ", "a\n\nb", "<unk><s></s><pad>"):
        assert m.encode(text) == tok(text)["input_ids"], (arch, text)
    bos = {"llama": 1, "gemma3": 2}.get(arch)
    assert (m.encode("the cat")[0] == bos) if bos is not None else m.encode("the")[0] != 0


def test_the_bound_catches_a_head_read_in_the_wrong_row_order(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _file(folder, "llama", "Q4_1")
    theirs = _theirs(path)
    monkeypatch.setattr(gguf_file, "unpermute", lambda w, heads: w)  # llama.cpp's order kept: the wrong columns
    m = load(path, dtype=np.float64)
    ids = m.encode(TEXT)
    _, weights = _oracle(theirs, ids)
    assert np.abs(m.run(ids).weights - weights).max() > 1e-2 > BOUND
