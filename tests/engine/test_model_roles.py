"""A head's scores and role on any text, checked against naive loops and the induction task's own scores."""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import builtin, induction, roles


def _naive(weights: np.ndarray, ids: list[int]) -> dict[str, np.ndarray]:
    L, H, n, _ = weights.shape
    out = {r: np.zeros((L, H)) for r in roles.ROLES}
    for layer in range(L):
        for head in range(H):
            A = weights[layer, head]
            out["previous-token"][layer, head] = sum(A[t, t - 1] for t in range(1, n)) / (n - 1)
            out["first-token sink"][layer, head] = sum(A[t, 0] for t in range(1, n)) / (n - 1)
            picked = [sum(A[t, j + 1] for j in range(t) if ids[j] == ids[t]) for t in range(n) if ids[t] in ids[:t]]
            out["induction"][layer, head] = sum(picked) / len(picked) if picked else np.nan
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scores_match_naive_loops_on_any_text(seed: int) -> None:
    rs = np.random.RandomState(seed)
    ids = [int(i) for i in rs.randint(0, 5, size=11)]  # small vocabulary: many repeats, some several times
    w = rs.random_sample((2, 3, 11, 11))
    w = np.tril(w) / np.tril(w).sum(-1, keepdims=True)
    got, want = roles.head_scores(w, ids), _naive(w, ids)
    for r in roles.ROLES:
        np.testing.assert_allclose(got[r], want[r], rtol=1e-12)


@pytest.mark.parametrize("block", [1, 3, 4, 13])
def test_scores_summed_a_block_of_rows_at_a_time_are_the_naive_loops(block: int) -> None:
    """A long text's heads are scored a block of query rows at a time (never a layer's n × n at once): the blocks'
    sums, made means, are the naive loop's scores, whatever the block (one row, uneven, the whole text)."""
    rs = np.random.RandomState(block)
    n = 13
    ids = [int(i) for i in rs.randint(0, 4, size=n)]
    w = rs.random_sample((2, 3, n, n))
    w = np.tril(w) / np.tril(w).sum(-1, keepdims=True)
    sums = sum(roles.score_sums(w[..., r : r + block, :], r, ids) for r in range(0, n, block))  # (3, 2, 3)
    got, want = roles.scores_from_sums(sums, ids), _naive(w, ids)
    for r in roles.ROLES:
        np.testing.assert_allclose(got[r], want[r], rtol=1e-12)
    distinct = list(range(n))  # no token twice: no induction score, and no division by zero
    assert np.isnan(roles.scores_from_sums(roles.score_sums(w, 0, distinct), distinct)["induction"]).all()


def test_on_a_repeated_sequence_they_are_the_induction_tasks_scores() -> None:
    m = builtin("induction")
    ids = induction.sequences(np.random.RandomState(3), 1, 32, 12)[0]
    run = m.run(ids)
    prev, ind = induction.head_scores(run.weights[None], 12)
    got = roles.head_scores(run.weights, list(ids))
    np.testing.assert_allclose(got["previous-token"], prev, rtol=1e-12)
    np.testing.assert_allclose(got["induction"], ind, rtol=1e-12)
    losses = roles.position_losses(run.logits, list(ids))
    assert roles.half_split(list(ids)) == (12, True)
    np.testing.assert_allclose(
        roles.half_losses(losses, 12), induction.half_losses(run.logits[None], ids[None], 12), rtol=1e-12
    )
    names = roles.roles(got)
    assert names[1, 0] == "induction" and names[0, 1] == "previous-token"


def test_roles_need_a_score_of_at_least_the_floor_and_no_repeat_means_no_induction_score() -> None:
    scores = {
        "previous-token": np.array([[0.9, 0.1]]),
        "induction": np.array([[0.2, np.nan]]),
        "first-token sink": np.array([[0.0, 0.24]]),
    }
    assert roles.roles(scores).tolist() == [["previous-token", "none"]]
    assert np.isnan(roles.head_scores(np.ones((1, 1, 3, 3)) / 3, [0, 1, 2])["induction"]).all()
    chance = roles.uniform_scores(list(range(24)))
    assert chance["previous-token"] == pytest.approx(sum(1 / (t + 1) for t in range(1, 24)) / 23)


def test_top_next_and_position_losses_against_softmax_by_hand() -> None:
    rs = np.random.RandomState(0)
    logits = rs.normal(size=(4, 7))
    best, p = roles.top_next(logits[2], k=5)
    soft = np.exp(logits[2]) / np.exp(logits[2]).sum()
    assert list(best) == list(np.argsort(-soft)[:5])
    np.testing.assert_allclose(p, soft[best], rtol=1e-12)
    ids = [3, 1, 6, 0]
    want = [-np.log(np.exp(logits[t, ids[t + 1]]) / np.exp(logits[t]).sum()) for t in range(3)]
    np.testing.assert_allclose(roles.position_losses(logits, ids), want, rtol=1e-12)


def test_position_losses_made_a_block_of_positions_at_a_time_are_the_hand_loop(monkeypatch) -> None:
    """A long text's losses are made LOSS_ROWS positions at a time (never the whole n × V log-softmax): uneven
    blocks give the hand-written loss at every position."""
    rs = np.random.RandomState(1)
    logits = rs.normal(size=(8, 5))
    ids = [int(i) for i in rs.randint(0, 5, size=8)]
    want = [-np.log(np.exp(logits[t, ids[t + 1]]) / np.exp(logits[t]).sum()) for t in range(7)]
    for rows in (1, 3, 7, 100):
        monkeypatch.setattr(roles, "LOSS_ROWS", rows)
        np.testing.assert_allclose(roles.position_losses(logits, ids), want, rtol=1e-12)
