"""Named activations against transformers: a batch of two texts run once with hooks that read every layer's
``attn.hook_pattern`` and ``hook_resid_pre``, on every family's tiny model, against transformers' own
``output_attentions`` and ``output_hidden_states`` on the same batch; and a replacing hook on ``attn.hook_z``
against a forward pre-hook on transformers' output projection that zeroes the same head's columns.

Bound: both compute in float64 (the oracle made float64 throughout, tests/helpers/oracle.py), so they agree to
~1e-15 relative; 1e-9 of the largest value is a million times that, and far below any real difference (another
layer's pattern, or the other text's, differs by more than 1e-2 here, as the test checks)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attention.model import load
from tests.helpers.families import FAMILIES, VOCAB
from tests.helpers.oracle import float64_oracle

REL = 1e-9


def _close(ours: np.ndarray, theirs: np.ndarray) -> None:
    np.testing.assert_allclose(ours, theirs, rtol=REL, atol=REL * float(np.abs(theirs).max()))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_hook_pattern_and_resid_pre_are_transformers_attentions_and_hidden_states(made, family: str) -> None:
    m = load(made(family).folders["float32"], dtype=np.float64)
    ids = np.random.RandomState(1).randint(3, VOCAB, (2, 11))
    seen: dict[str, np.ndarray] = {}

    def keep(value: np.ndarray, name: str) -> None:
        seen[name] = value.copy()

    L = m.config.n_layers
    names = [f"blocks.{la}.attn.hook_pattern" for la in range(L)] + [f"blocks.{la}.hook_resid_pre" for la in range(L)]
    run = m.run(ids, hooks={name: keep for name in names})
    with torch.no_grad(), float64_oracle():
        out = made(family).torch(torch.tensor(ids), output_attentions=True, output_hidden_states=True)
    _close(run.logits, out.logits.numpy())
    for la in range(L):
        theirs = out.attentions[la].numpy()  # (2, H, n, n)
        _close(seen[f"blocks.{la}.attn.hook_pattern"], theirs)
        _close(run.cache[f"blocks.{la}.attn.hook_pattern"], theirs)
        _close(seen[f"blocks.{la}.hook_resid_pre"], out.hidden_states[la].numpy())
    assert np.abs(theirs[0] - theirs[1]).max() > 1e-2  # the two texts' patterns differ: the batch axis is checked


@pytest.mark.parametrize("family", ["llama", "gpt_neox"])
def test_a_hook_zeroing_a_heads_z_is_transformers_with_that_heads_columns_zeroed(made, family: str) -> None:
    m = load(made(family).folders["float32"], dtype=np.float64)
    ids = np.random.RandomState(2).randint(3, VOCAB, (2, 9))
    head, dh = 2, m.config.d_head

    def zero_head(z: np.ndarray, name: str) -> np.ndarray:
        z = z.copy()
        z[:, :, head] = 0.0  # (batch, pos, head, d_head)
        return z

    ours = m.run(ids, hooks={"blocks.1.attn.hook_z": zero_head}).logits
    hf = made(family).torch
    block = hf.model.layers[1].self_attn.o_proj if family == "llama" else hf.gpt_neox.layers[1].attention.dense

    def pre(module, args):
        x = args[0].clone()
        x[..., head * dh : (head + 1) * dh] = 0.0
        return (x,)

    handle = block.register_forward_pre_hook(pre)
    try:
        with torch.no_grad(), float64_oracle():
            theirs = hf(torch.tensor(ids)).logits.numpy()
    finally:
        handle.remove()
    _close(ours, theirs)
    assert np.abs(ours - m.run(ids).logits).max() > 1e-3  # the hook changed the logits
