"""Solutions found by training: every built-in is met, checked by a naive reading of its goal (loops over the trace's
arrays, not ``evaluate``), and only the editable matrices move."""

from __future__ import annotations

import numpy as np
import pytest

import attention
from attention.labs import challenges as ch
from attention.labs import solutions
from tests.helpers.challenges import naive_met


@pytest.mark.parametrize("cid", ch.list_challenges())
def test_every_built_in_is_solved_by_training_only_its_editable_matrices(cid: str) -> None:
    c = ch.load_challenge(cid)
    preset = ch.challenge_preset(c)
    assert solutions.solvable(c)
    found = solutions.solve(c)
    assert found is not None and set(found.matrices) == set(c.editable)
    m = {k: np.asarray(v) for k, v in preset.matrices().items()}
    unsolved = attention.self_attention(
        m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=preset.tokens, options=preset.options
    )
    assert not naive_met(c, unsolved)
    for name, value in found.matrices.items():
        m[name] = value.reshape(m[name].shape)
    trace = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=preset.tokens, options=preset.options)
    assert naive_met(c, trace)
    assert ch.evaluate(c, trace).met  # and the engine's own reading agrees, so the page shows the tick


def test_goals_on_other_arrays_are_not_attempted() -> None:
    c = ch.load_challenge("sat_looks_back")
    other = ch.Challenge(**{**c.__dict__, "condition": ch.Condition("cell", 0, 0, "scores", ">=", 1e9)})
    assert not solutions.solvable(other) and solutions.solve(other) is None


def test_a_goal_on_one_head_is_solved_with_the_other_heads_keeping_their_top_key() -> None:
    """mqa_two_views: 2 query heads share 1 key/value head; the solution turns head 2 of 'sat' to 'The' and leaves
    head 1 of 'sat' on 'cat', so the two heads attend to different tokens."""
    c = ch.load_challenge("mqa_two_views")
    preset = ch.challenge_preset(c)
    m = {k: np.asarray(v) for k, v in preset.matrices().items()}
    found = solutions.solve(c)
    assert found is not None and set(found.matrices) == {"W_q"}
    m["W_q"] = found.matrices["W_q"]
    w = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], options=preset.options).weights  # (2, 3, 3)
    tops = [max(range(3), key=lambda j, h=h: w[h, 2, j]) for h in (0, 1)]
    assert tops == [1, 0]  # head 1 of 'sat' on 'cat', head 2 on 'The'


# ------------------------------------------------------------------------------------------------ audit


def test_every_built_in_passes_the_audit_a_teacher_sees() -> None:
    from attention.labs.solutions import audit

    for path in sorted(ch.CHALLENGE_DIR.glob("*.json")):
        assert audit(ch.load_challenge(path.stem)).verdict == "ok", path.stem


def test_the_audit_names_what_is_wrong_from_the_goals_own_bounds() -> None:
    """Bounds from the maths, not from the solver: a weight lies in [0, 1]; a row that may see k keys has an entropy
    between 0 and log2 k (under a causal mask the first row sees one key: 0 bits at most)."""
    import dataclasses

    from attention.labs.solutions import audit

    sat = ch.load_challenge("sat_looks_back")
    cases = [
        (dataclasses.replace(sat.condition, value=1.0, op=">"), sat.editable, "impossible", "at most 1"),
        (dataclasses.replace(sat.condition, value=0.0, op="<"), sat.editable, "impossible", "at least 0"),
        (sat.condition, ("W_v",), "unsolvable", "depends only on X, W_q, W_k"),
        (dataclasses.replace(sat.condition, value=0.0), sat.editable, "met", "already meets"),
        (ch.Condition("entropy", "all", op=">=", value=0.5), ("W_q",), "impossible", "the most is 0 bits"),
        (ch.Condition("entropy", "cat", op="<", value=0.0), ("W_q",), "impossible", "never below 0"),
    ]
    for cond, editable, verdict, words in cases:
        options = {"mask": "causal"} if cond.row == "all" else {}
        c = dataclasses.replace(sat, condition=cond, editable=editable, options=options)
        got = audit(c)
        assert got.verdict == verdict and words in got.reason, (cond, got)
