"""Attribution patching's backward pass (attention.model.atp) against torch autograd on every family that opens.

Oracle: transformers' own model in float64 (tests.helpers.families, one tiny random checkpoint per family, and the
tiny GPT-2 of tests.helpers.gpt2): D = logit[answer] − logit[wrong] at a position, ``backward()``, and the gradients
torch keeps on the stream entering each layer (``output_hidden_states``) and on the input of each layer's attention
output projection (the heads' outputs side by side, before W_o; a forward pre-hook keeps it). Ours must agree to
float64 rounding: 1e-9 of the largest gradient (float32 rounding anywhere would show as ~1e-6).

The families come from the engine's table (``families.OPENS``): one that opens without a tiny checkpoint here fails
the coverage test, so a new family cannot go untested.
"""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import gradients, load
from attention.model.families import OPENS
from tests.helpers.families import FAMILIES
from tests.helpers.oracle import float64_oracle

PROJECTIONS = ("self_attn.o_proj", "attention.dense", "attn.c_proj")  # each family's attention output projection


def _torch_gradients(hf: object, ids: list[int], t: int, answer: int, wrong: int) -> tuple[list, list]:
    """torch's ∂D/∂(each layer's heads' outputs before W_o) and ∂D/∂(the stream entering each layer), float64."""
    import torch

    projections = [m for name, m in hf.named_modules() if name.endswith(PROJECTIONS)]
    kept: dict[int, torch.Tensor] = {}

    def keeper(layer: int):
        def keep(module: object, args: tuple) -> None:
            args[0].retain_grad()
            kept[layer] = args[0]

        return keep

    hooks = [proj.register_forward_pre_hook(keeper(k)) for k, proj in enumerate(projections)]
    try:
        with float64_oracle():
            out = hf(torch.tensor([ids]), output_hidden_states=True)
            streams = out.hidden_states[:-1]  # the stream entering each layer (the last one is normed)
            for h in streams:
                h.retain_grad()
            (out.logits[0, t, answer] - out.logits[0, t, wrong]).backward()
    finally:
        for hook in hooks:
            hook.remove()
    return [kept[k].grad[0].numpy() for k in range(len(projections))], [h.grad[0].numpy() for h in streams]


def _agree(model, hf, ids: list[int]) -> None:
    run = model.run(ids)
    for t, answer, wrong in ((len(ids) - 1, 5, 9), (4, 17, 3)):
        ours = gradients(run, t, answer, wrong)
        concat, streams = _torch_gradients(hf, ids, t, answer, wrong)
        assert len(concat) == len(streams) == model.config.n_layers
        for layer in range(model.config.n_layers):
            for got, want in ((ours.concat[layer], concat[layer]), (ours.streams[layer], streams[layer])):
                scale = float(np.abs(want).max())
                assert scale > 1e-6  # the gradient is not nothing: the test can see a wrong one
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-9 * scale)
        assert ours.value == pytest.approx(run.logits[t, answer] - run.logits[t, wrong], abs=1e-12)


def test_every_family_that_opens_has_a_tiny_checkpoint_here() -> None:
    missing = set(OPENS) - {"gpt2", "gemma3"} - set(FAMILIES)  # gpt2: its own fixture; gemma3: read as gemma3_text
    assert not missing, f"families with no tiny checkpoint for the backward-pass oracle: {sorted(missing)}"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_backward_pass_is_torch_autograd_on_every_family(family: str, made) -> None:
    m = made(family)
    model = load(m.folders["float32"], dtype=np.float64)
    ids = np.random.RandomState(5).randint(3, model.config.vocab_size, 12).tolist()
    _agree(model, m.torch, ids)


def test_the_backward_pass_is_torch_autograd_on_gpt2(gpt2) -> None:
    folder, hf = gpt2
    model = load(folder, dtype=np.float64)
    hf = hf.double()
    ids = np.random.RandomState(6).randint(0, model.config.vocab_size, 12).tolist()
    _agree(model, hf, ids)
