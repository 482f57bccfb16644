"""The KV cache's eviction engine (attention.model.eviction) on tiny models of several families.

Oracles: the ordinary full forward (Model.run, every head's n × n weights) for the full cache; a masked full
forward for an evicted one (a hook sets the scaled scores of every evicted key to −inf in the scored rows, so the
softmax renormalises over the kept keys, as a masked pass written out by hand); the policies' choices on hand-made
attention, as each paper states them; and Wu et al.'s retrieval score recounted with loops from Model.run's weights.
The evicted cache is gathered (budget keys per head), a different computation from the masked pass: both are float64,
and agree to 1e-10 of the largest logit.
"""

from __future__ import annotations

import numpy as np
import pytest

from attention.errors import AttentionError
from attention.model import Config, Model, ablate, init_params
from attention.model.eviction import (
    POLICIES,
    Prefix,
    Stopped,
    attention_rows,
    copy_accuracy,
    evict,
    evict_curve,
    first_token_shares,
    keep,
    retrieval_scores,
    sink_positions,
    study,
)
from attention.model.layers import log_softmax
from attention.model.vocab import WordVocab

V, N = 40, 30
FAMILIES = {
    "llama (grouped heads)": dict(norm="rmsnorm", mlp="gated", activation="silu", n_kv_heads=2, positions="rotary",
                                  rotary_layout="halves", bias=False, tied=False),
    "qwen2 (biases)": dict(norm="rmsnorm", mlp="gated", activation="silu", bias=False, qkv_bias=True,
                           positions="rotary", n_kv_heads=2),
    "gemma 3 (sliding layers)": dict(norm="rmsnorm", norm_offset=1.0, post_norms=True, qk_norm=True, mlp="gated",
                                     n_kv_heads=1, positions="rotary", bias=False, head_dim=12,
                                     layer_types=("sliding", "full", "sliding"), sliding_window=9),
    "gpt-2 (learned positions)": {},
}


def _model(parts: dict) -> Model:
    cfg = Config(vocab_size=V, n_ctx=64, d_model=32, n_layers=3, n_heads=4, d_mlp=48, **parts).validate()
    params = init_params(cfg, seed=1, std=0.3)
    return Model(cfg, params, WordVocab([f"w{i}" for i in range(V)]))


IDS = np.random.RandomState(3).randint(0, V, N).tolist()


def _losses(logits: np.ndarray, ids: list[int], p: int) -> tuple[np.ndarray, np.ndarray]:
    """The scored rows' next-token losses and top-1 tokens from a full forward's logits (n, V)."""
    logp = log_softmax(logits[p:])  # (m, V)
    return -logp[np.arange(len(ids) - p - 1), ids[p + 1 :]], np.argmax(logp, axis=-1)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_budget_of_the_whole_prefix_is_the_full_cache(name: str) -> None:
    model, m = _model(FAMILIES[name]), 8
    p = N - m
    loss, top1 = _losses(model.run(IDS).logits, IDS, p)  # the ordinary forward: the oracle for the full cache
    out = evict_curve(model, IDS, m, [(policy, b) for policy in POLICIES for b in (p, p + 5)], chunk=5)
    for r in out:
        np.testing.assert_allclose(r.full_loss, loss, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(r.full_top1, top1)
        np.testing.assert_allclose(r.loss, r.full_loss, rtol=0, atol=1e-12)
        assert r.kept.shape == (3, model.config.kv_heads, p) and r.kept.all() and r.agreement == 1.0


def _masked_run(model: Model, kept: np.ndarray, p: int) -> np.ndarray:
    """The full forward with every evicted prefix key masked (−inf) in the scored rows, per query head."""
    H, G = model.config.n_heads, model.config.kv_heads

    def masker(layer: int):
        def fn(scaled: np.ndarray, name: str) -> np.ndarray:
            out = scaled.copy()  # (H, n, n)
            drop = ~np.repeat(kept[layer], H // G, axis=0)  # (H, p): query head i reads group i // (H/G)
            rows = out[:, p:, :p]  # (H, m, p)
            rows[np.broadcast_to(drop[:, None, :], rows.shape)] = -np.inf
            out[:, p:, :p] = rows
            return out

        return fn

    hooks = {f"blocks.{la}.attn.hook_attn_scores": masker(la) for la in range(model.config.n_layers)}
    return model.run(IDS, hooks=hooks).logits


@pytest.mark.parametrize("name", list(FAMILIES))
@pytest.mark.parametrize("policy", POLICIES)
def test_a_kept_keys_contribution_is_a_masked_pass(name: str, policy: str) -> None:
    model, m, budget = _model(FAMILIES[name]), 8, 9
    p = N - m
    r = evict(model, IDS, m, policy, budget, chunk=6)
    assert (r.kept.sum(axis=-1) == budget).all()
    logits = _masked_run(model, r.kept, p)  # (n, V)
    loss, top1 = _losses(logits, IDS, p)
    largest = float(np.abs(logits).max())
    np.testing.assert_allclose(r.loss, loss, rtol=0, atol=1e-10 * largest)
    np.testing.assert_array_equal(r.top1, top1)
    assert not np.allclose(r.loss, r.full_loss)  # the eviction changed something: the check can fail


def _prefix(received: np.ndarray, last: np.ndarray) -> Prefix:
    H, p = received.shape
    return Prefix(np.zeros((1, p, 2)), np.zeros((1, p, 2)), received, last)


def test_window_and_sinks_keep_the_last_keys_and_the_first_four() -> None:
    rs, p = np.random.RandomState(0), 12
    assert keep("window", 4, None, p, 2, rs).tolist() == [[8, 9, 10, 11]] * 2
    assert keep("sinks", 6, None, p, 1, rs).tolist() == [[0, 1, 2, 3, 10, 11]]  # StreamingLLM: 4 sinks
    assert keep("sinks", 3, None, p, 1, rs).tolist() == [[0, 1, 2]]  # a budget under 4 is all sinks


def test_heavy_hitters_keep_a_recent_half_and_the_most_attended_keys() -> None:
    p, received = 12, np.zeros((2, 12))  # two query heads sharing one key/value head
    received[0, 2], received[1, 5], received[0, 7], received[1, 7] = 3.0, 2.0, 1.0, 1.5  # key 7: 2.5 summed
    received[0, 11] = 9.0  # in the recent window anyway
    got = keep("heavy", 6, _prefix(received, np.zeros((2, 1, p))), p, 1, np.random.RandomState(0))
    assert got.tolist() == [[2, 5, 7, 9, 10, 11]]  # 3 heavy hitters (3.0, 2.5 summed over the group, 2.0), 3 recent


def test_snapkv_keeps_the_window_and_the_pooled_votes_of_its_queries() -> None:
    p, last = 12, np.zeros((1, 3, 12))  # the last 3 prefix queries of one head
    last[0, 1:, 0] = 0.5  # a lone key the window's last 2 queries attend
    last[0, 1:, 6:9] = 0.3  # a cluster of three
    last[0, 0, 3] = 5.0  # a query before the observation window (w = budget // 2 = 2): not counted
    got = keep("snapkv", 4, _prefix(np.zeros((1, p)), last), p, 1, np.random.RandomState(0))
    # unpooled, the lone key (0.5 × 2) would beat each of the cluster's (0.3 × 2); pooled over 5 neighbours, the
    # cluster's keys 6, 7, 8 tie at 1.8 / 5 against the lone key's 1.0 / 5 (ties to the earlier)
    assert got.tolist() == [[6, 7, 10, 11]]


def test_random_is_seeded_and_draws_distinct_keys_per_head() -> None:
    a = keep("random", 5, None, 40, 3, np.random.RandomState(7))
    b = keep("random", 5, None, 40, 3, np.random.RandomState(7))
    assert (a == b).all() and all(len(set(row)) == 5 for row in a.tolist()) and len({tuple(r) for r in a}) > 1


def test_random_in_a_curve_keeps_what_random_alone_keeps() -> None:
    """The random floor does not depend on which other runs share the curve: each run draws from its own generator."""
    model = _model(FAMILIES["llama (grouped heads)"])
    alone = evict(model, IDS, 6, "random", 5, seed=3)
    curve = evict_curve(model, IDS, 6, [("random", 9), ("window", 5), ("random", 5)], seed=3)
    np.testing.assert_array_equal(curve[2].kept, alone.kept)
    np.testing.assert_allclose(curve[2].loss, alone.loss, rtol=0, atol=1e-12)


def test_attention_rows_and_ablation_are_the_full_forwards() -> None:
    model = _model(FAMILIES["llama (grouped heads)"])
    rows, heads = [3, 17, 29], [(0, 1), (2, 3)]
    weights, logits = attention_rows(model, IDS, rows, heads, chunk=7)
    run = model.run(IDS, [ablate(la, h) for la, h in heads])
    np.testing.assert_allclose(weights, run.weights[:, :, rows, :], rtol=0, atol=1e-12)
    np.testing.assert_allclose(logits, run.logits[rows], rtol=0, atol=1e-10 * np.abs(run.logits).max())
    share, loss = copy_accuracy(model, IDS, (20, 25), heads)
    logp = log_softmax(run.logits[19:24])
    assert share == np.mean(np.argmax(logp, axis=-1) == IDS[20:25])
    assert loss == pytest.approx(-logp[np.arange(5), IDS[20:25]].mean(), abs=1e-10)


def test_retrieval_score_is_wu_et_als_count() -> None:
    model = _model(FAMILIES["llama (grouped heads)"])
    needle, answer = (4, 10), (22, 28)
    ids = list(IDS)
    ids[22:28] = ids[4:10]  # the needle, copied later
    scores, copied = retrieval_scores(model, ids, needle, answer, chunk=8)
    run = model.run(ids)
    want = np.zeros(scores.shape)
    for la in range(3):
        for h in range(4):
            for t in range(22, 28):  # answer token t, predicted at t − 1
                top = int(np.argmax(run.weights[la, h, t - 1]))
                if (np.argmax(run.logits[t - 1]) == ids[t] and ids[t] in ids[4:10] and 4 <= top < 10
                        and ids[top] == ids[t]):
                    want[la, h] += 1 / 6
    np.testing.assert_allclose(scores, want, atol=1e-12)
    assert copied.tolist() == [bool(np.argmax(run.logits[t - 1]) == ids[t]) for t in range(22, 28)]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [(dict(m=0), "m"), (dict(m=N), "m"), (dict(policy="lru"), "policy"), (dict(budget=0), "budget"),
     (dict(budget=2.5), "budget")],
)
def test_bad_arguments_are_named(kwargs: dict, field: str) -> None:
    args = dict(m=5, policy="window", budget=4) | kwargs
    with pytest.raises(AttentionError) as err:
        evict(_model({}), IDS, **args)
    assert err.value.field == field


def test_first_token_shares_are_the_full_forwards_first_column() -> None:
    model = _model(FAMILIES["gemma 3 (sliding layers)"])
    run = model.run(IDS)
    got = first_token_shares(model, IDS, [5, 29], chunk=4)
    np.testing.assert_allclose(got, run.weights[:, :, [5, 29], 0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["llama (grouped heads)", "gemma 3 (sliding layers)"])
def test_a_study_is_every_policy_at_every_budget_and_the_sinks_of_one_pass(name: str) -> None:
    """The page's one pass: the sink's share at the study's positions (prefix rows and scored rows alike) is the full
    forward's first column, and each policy at each budget is what evict makes alone."""
    model = _model(FAMILIES[name])
    made = study(model, IDS, budgets=(3, 11), chunk=8)
    assert made.m == 7 and made.budgets == (3, 11) and made.positions == (30,)
    run = model.run(IDS)
    np.testing.assert_allclose(made.shares[..., 0], run.weights[:, :, 29, 0], rtol=0, atol=1e-12)
    assert [(r.policy, r.budget) for r in made.results] == [(p, b) for p in POLICIES for b in (3, 11)]
    for policy in ("sinks", "heavy", "snapkv"):
        alone = evict(model, IDS, 7, policy, 11)
        np.testing.assert_array_equal(made.result(policy, 11).kept, alone.kept)
        np.testing.assert_allclose(made.result(policy, 11).loss, alone.loss, rtol=0, atol=1e-12)
    twice = study(model, IDS + IDS[:14], budgets=(5,))  # 44 tokens: position 64 is beyond it, the last token stands
    assert twice.positions == (44,)


def test_the_sink_positions_read_from_the_prefix_are_the_full_forwards(monkeypatch: pytest.MonkeyPatch) -> None:
    from attention.model import eviction

    model = _model(FAMILIES["llama (grouped heads)"])
    ids = np.random.RandomState(5).randint(0, V, 64).tolist()
    monkeypatch.setattr(eviction, "SINK_AT", (10, 50, 64))  # 10 and 50 before the scored 16, 64 the last scored
    made = study(model, ids, budgets=(8,), chunk=16)
    assert made.positions == (10, 50, 64) and made.m == 16
    run = model.run(ids)
    np.testing.assert_allclose(made.shares, run.weights[:, :, [9, 49, 63], 0], rtol=0, atol=1e-12)


def test_sink_positions_are_64_512_2048_within_the_text_or_its_last_token() -> None:
    assert sink_positions(2048) == (64, 512, 2048)
    assert sink_positions(3000) == (64, 512, 2048)
    assert sink_positions(2046) == (64, 512, 2046)
    assert sink_positions(40) == (40,)


def test_a_study_stops_when_its_progress_says_so() -> None:
    seen: list[int] = []

    def on_layer(layer: int) -> bool:
        seen.append(layer)
        return layer < 1

    with pytest.raises(Stopped):
        study(_model({}), IDS, budgets=(4,), on_layer=on_layer)
    assert seen == [0, 1]


def test_a_study_of_too_short_a_text_is_refused_by_name_and_a_short_one_scores_a_loss() -> None:
    """Below STUDY_LEAST tokens there is no prefix and no next-token loss to score: refused, naming the count; at
    STUDY_LEAST every policy scores at least one finite loss (never a mean of nothing)."""
    from attention.model import builtin, eviction

    m = builtin("induction")
    with pytest.raises(AttentionError, match="the text has 5 tokens; a study of the KV cache needs at least 8"):
        eviction.study(m, [1, 2, 3, 4, 5])
    made = eviction.study(m, list(range(1, eviction.STUDY_LEAST + 1)))
    assert made.results and all(len(r.loss) >= 1 and np.isfinite(r.mean_loss) for r in made.results)
