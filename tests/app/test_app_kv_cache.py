"""The KV cache page under AppTest, on the shipped model and its ready-made text (24 tokens: 18 kept, the last 6
scored): it opens alone with its button; measured in the background, every part is drawn with the numbers of
independent oracles (the full forward's weights on token 1 and its losses; the window's kept keys as the policy
defines them); a change of policy or budget on the curve redraws without a new job; a budget off the curve is one
more job; bad budgets are named under their box and change nothing; the choices survive a trip to another page."""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import builtin
from attention.model.layers import log_softmax
from attention.ui.core import jobs, keys
from tests.helpers.apptest import app, drawn_cells, errors, goto, journey, no_exception, session, texts
from tests.helpers.drawn import title_of

ENGINE = builtin("induction")  # a model of its own, not the page's
M = 6  # the tokens scored on a 24-token text (a quarter)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    """Each test measures its own: the KV cache jobs this process remembers are forgotten first."""
    with jobs._LOCK:
        for job in [j for j in jobs._JOBS.values() if j.kind == "kvcache"]:
            jobs._JOBS.pop(job.id)


def _measured(at):
    """Press Measure, wait for the job, draw the page again with what it made."""
    at = at.button(key=keys.KV_RUN).click().run()
    no_exception(at)
    job = jobs.wait(session(at).kvcache.job, 120)
    assert job.state == "done", job.message
    at = at.run()
    no_exception(at)
    return at, job


def _charts(at) -> dict[str, object]:
    return {title_of(c): c for c in at.get("vega_lite_chart")}


def _table(at) -> dict[str, dict]:
    frame = at.dataframe[0].value
    return {row["cache"]: row for row in frame.to_dict("records")}


def _kept_rows(at) -> dict[tuple[str, str], float]:
    """The kept keys' picture: (layer, kv head) -> {token block: share kept}."""
    chart = next(c for c in at.get("vega_lite_chart") if "kv head 1" in c.proto.spec and '"vconcat"' in c.proto.spec)
    cells = next(rows for rows in drawn_cells(chart) if rows and "head" in rows[0])  # not the pictures' table
    return {(r["head"], r["query"], r["key"]): r["value"] for r in cells}


def test_the_page_opens_alone_with_its_button_and_the_papers() -> None:
    at = app("kv_cache")
    no_exception(at)
    assert [b.label for b in at.button if b.key == keys.KV_RUN] == ["Measure this text"]
    said = " ".join(texts(at.caption))
    for paper in ("StreamingLLM", "H2O", "SnapKV", "Retrieval heads", "kvpress"):
        assert paper in said
    assert at.radio(key=keys.KV_TEXT).options == ["The text the other model pages read"]  # a word-list model


def test_every_part_is_drawn_with_the_oracles_numbers() -> None:
    at, job = _measured(journey("kv_cache"))
    ids = session(at).inside.ids
    assert job.key == jobs.kv_key("induction", ids) and len(ids) == 24
    run = ENGINE.run(list(ids))
    charts = _charts(at)
    sink = drawn_cells(charts["From position 24"])[0]
    got = {(c["query"], c["key"]): c["value"] for c in sink}
    for la in range(2):
        for h in range(2):
            assert abs(got[(f"layer {la + 1}", f"head {h + 1}")] - run.weights[la, h, 23, 0]) < 1e-9
    logp = log_softmax(run.logits[24 - M : 23])  # (5, V): the scored positions with a next token
    full = -logp[np.arange(M - 1), list(ids[25 - M :])].mean()
    table = _table(at)
    assert abs(table["full (every key)"]["mean loss (nats)"] - full) < 6e-4  # the table rounds to 3 decimals
    assert set(table) == {"full (every key)", "▶ sinks + window (StreamingLLM)", "window (the last keys)",
                          "heavy hitters (H2O)", "SnapKV", "random (a floor)"}
    assert "At 4 keys per head" in " ".join(texts(at.markdown))
    assert "Retrieval heads are measured on a needle sentence" in " ".join(texts(at.info))
    assert "Loss against budget, every policy" in " ".join(c.proto.spec for c in at.get("vega_lite_chart"))


def test_a_policy_or_a_budget_on_the_curve_redraws_without_a_new_job() -> None:
    at, job = _measured(journey("kv_cache"))
    before = len(jobs._JOBS)  # every job this process remembers, running or done
    at = at.selectbox(key=keys.KV_POLICY).select("window").run()
    at = at.text_input(key=keys.KV_BUDGET).input("9").run()
    no_exception(at)
    assert len(jobs._JOBS) == before and session(at).kvcache.job == job.id
    assert "▶ window (the last keys)" in _table(at) and "At 9 keys per head" in " ".join(texts(at.markdown))
    kept = _kept_rows(at)  # the window keeps the last 9 of the 18 keys, in every layer and head: blocks of 1 token
    for la in (1, 2):
        for k in range(1, 19):
            assert kept[(f"layer {la}", "kv head 1", f"{k}")] == (1.0 if k > 9 else 0.0)


def test_a_bad_budget_is_named_and_nothing_changes() -> None:
    at, _ = _measured(journey("kv_cache"))
    for typed, said in (("abc", "'abc' is not a whole number of keys from 1 to 18"),
                        ("19", "'19' is not a whole number of keys from 1 to 18"),
                        ("9" * 60, "the budget is 60 characters long")):
        at = at.text_input(key=keys.KV_BUDGET).input(typed).run()
        no_exception(at)
        assert any(said in e and "unchanged" in e for e in errors(at)), errors(at)
        assert "At 4 keys per head" in " ".join(texts(at.markdown))
        assert at.text_input(key=keys.KV_BUDGET).value == typed  # kept as typed, to be corrected
    at = at.radio(key=keys.KV_UNIT).set_value("share").run()
    at = at.text_input(key=keys.KV_BUDGET).input("1.5").run()
    assert any("'1.5' is not a number above 0 and at most 1" in e for e in errors(at))
    at = at.text_input(key=keys.KV_BUDGET).input("50%").run()
    no_exception(at)
    assert not errors(at) and "At 9 keys per head" in " ".join(texts(at.markdown))


def test_a_budget_off_the_curve_is_one_more_job_and_the_choices_survive_a_page_switch() -> None:
    at, _ = _measured(journey("kv_cache"))
    at = at.selectbox(key=keys.KV_POLICY).select("heavy").run()
    at = at.text_input(key=keys.KV_BUDGET).input("3").run()
    assert "3 keys is not one of the curve's budgets" in " ".join(texts(at.info))
    at = at.button(key=keys.KV_EXTRA).click().run()
    job = jobs.wait(session(at).kvcache.extra, 120)
    assert job.state == "done" and job.key == jobs.kv_key("induction", session(at).inside.ids, 3)
    at = at.run()
    no_exception(at)
    assert "At 3 keys per head" in " ".join(texts(at.markdown)) and "▶ heavy hitters (H2O)" in _table(at)
    at = goto(goto(at, "every_head"), "kv_cache")
    no_exception(at)
    assert at.selectbox(key=keys.KV_POLICY).value == "heavy" and at.text_input(key=keys.KV_BUDGET).value == "3"
    assert "At 3 keys per head" in " ".join(texts(at.markdown))


def test_a_study_counts_its_layers_as_the_other_jobs_do_so_its_time_left_is_never_negative() -> None:
    """Each layer of a KV cache study is counted through Job.step_to (the pace measured up to the last step made):
    after a step the time left is a number ≥ 0, and about the pace times the steps left (on a clock of its own)."""
    job = jobs.Job("kv-test", "kvcache", total=4)
    on_layer = jobs._layer_counter(job, ENGINE)
    assert on_layer(0) and job.done == 1 and job.at >= job.started
    left = job.left_at(job.at)  # read at the moment of the step: three more steps at the pace of the first
    assert left is not None and left >= 0
    np.testing.assert_allclose(left, 3 * (job.at - job.started), rtol=1e-9, atol=1e-9)
    job.cancel.set()
    assert not on_layer(1) and job.done == 2  # cancelled: the study stops at its next layer


def test_a_budget_typed_for_a_longer_text_gives_way_on_a_shorter_one_and_says_so() -> None:
    """18 keys typed on the 24-token text (its prefix holds 18), then a 12-word text typed on Every head (a shorter
    prefix): the KV cache page opens with no exception, shows the curve's middle budget, and says why."""
    at, _ = _measured(journey("kv_cache"))
    at = at.text_input(key=keys.KV_BUDGET).input("18").run()
    assert session(at).kvcache.budget == "18" and not errors(at), errors(at)
    at = goto(at, "every_head")
    words = ENGINE.decode(list(session(at).inside.ids)).split()[:12]
    at = at.text_input(key=keys.INSIDE_TYPED).set_value(" ".join(words)).run()
    no_exception(at)
    at, _ = _measured(goto(at, "kv_cache"))
    no_exception(at)
    said = " ".join(errors(at))
    assert "'18' is not a whole number of keys" in said and "the curve's middle budget" in said, said
    assert at.text_input(key=keys.KV_BUDGET).value != "18"
