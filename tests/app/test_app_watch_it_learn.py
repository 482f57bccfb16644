"""The "Watch it learn" page under AppTest: the snapshots' numbers are the training record's, the phase change is
where the record says, bad slider values change nothing, and a model trained live is the engine's own run of the
recipe and opens on Every head."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

from attention.model import Model, induction, train
from attention.model.vocab import WordVocab
from attention.ui.core import jobs, keys, models
from attention.ui.core import session as session_mod
from attention.ui.headpages import watch_it_learn
from attention.ui.state import inside
from tests.helpers.apptest import app, drawn_cells, errors, journey, no_exception, session, texts

H = induction.history("induction")  # read here, apart from the page's own copy
COUNT = len(H["step"])


def _plain(at) -> list[str]:
    return [t.replace("**", "") for t in texts(at.markdown)]


def _score_lines(at) -> list[str]:
    return [t for t in _plain(at) if re.match(r"layer \d · head \d: previous", t)]


def _want_lines(k: int) -> list[str]:
    i = k - 1
    return [
        f"layer {layer + 1} · head {head + 1}: previous-token {H['previous'][i, layer, head]:.2f} · "
        f"induction {H['induction'][i, layer, head]:.2f}"
        for layer in range(2)
        for head in range(2)
    ]


def _phase_by_loop() -> int:
    """The first snapshot where any head's induction score is at least 0.5: a plain loop over the record."""
    for s in range(COUNT):
        for layer in range(H["induction"].shape[1]):
            for head in range(H["induction"].shape[2]):
                if H["induction"][s, layer, head] >= 0.5:
                    return s
    raise AssertionError("no phase change in the record")


def _specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def test_the_page_draws_the_losses_and_every_head_at_the_first_snapshot() -> None:
    at = app("watch_it_learn")
    no_exception(at)
    specs = _specs(at)
    assert len(specs) == 1 + 4  # the loss curves, then one chart per head (never a concat)
    assert all("concat" not in json.dumps(s) for s in specs)
    assert _score_lines(at) == _want_lines(1)
    assert any(t.startswith(f"Snapshot 1 of {COUNT}: after 0 training steps.") for t in _plain(at))
    assert at.slider(key=keys.WATCH_SNAPSHOT).value == 1


@pytest.mark.parametrize("k", [2, 17, COUNT])
def test_the_slider_shows_the_records_numbers(k: int) -> None:
    at = app("watch_it_learn")
    at = at.slider(key=keys.WATCH_SNAPSHOT).set_value(k).run()
    no_exception(at)
    assert session(at).inside.snapshot == k
    assert _score_lines(at) == _want_lines(k)
    head = [t for t in _plain(at) if t.startswith(f"Snapshot {k} of {COUNT}")][0]
    assert f"after {H['step'][k - 1]} training steps" in head
    assert f"first half {H['loss_first'][k - 1]:.2f} nats, on the repeated half {H['loss_repeated'][k - 1]:.2f}" in head
    # each head chart draws that snapshot's weights on the example sequence, cell by cell
    for chart, (layer, head) in zip(at.get("vega_lite_chart")[1:], np.ndindex(2, 2), strict=True):
        cells = [c for c in _rows(chart) if "masked" in c and not c["masked"]]
        assert len(cells) == 24 * 25 // 2
        got = np.zeros((24, 24))
        for c in cells:
            got[c["row"] - 1, c["col"] - 1] = c["value"]
        np.testing.assert_allclose(got, np.tril(H["weights"][k - 1, layer, head]), rtol=1e-6, atol=1e-7)


def test_the_phase_change_is_marked_where_the_record_says() -> None:
    at = app("watch_it_learn")
    s = _phase_by_loop()
    step = int(H["step"][s])
    rules = [d for d in _rows(at.get("vega_lite_chart")[0]) if "dash" in d]
    assert {"step": step, "dash": "phase"} in [{"step": d["step"], "dash": d["dash"]} for d in rules]
    assert {"step": 0, "dash": "shown"} in [{"step": d["step"], "dash": d["dash"]} for d in rules]
    prose = [t for t in _plain(at) if t.startswith("The phase change")][0]
    assert f"The dashed line marks step {step}:" in prose
    # the point the page makes holds in the record: the repeated half's loss drops as the induction head appears
    # (from above 1.5 on the plateau to below 0.5 within 100 steps), while the first half's never falls below ln 32
    assert H["loss_repeated"][s] < H["loss_repeated"][s - 1]
    assert H["loss_repeated"][:s].min() > 1.5 and H["loss_repeated"][-1] < 0.05
    low = next(j for j in range(s, COUNT) if H["loss_repeated"][j] < 0.5)  # a plain search of the record
    assert H["step"][low] - step <= 100
    assert H["induction"][:4].max() < 0.1  # no induction head on the plateau (to step 98)
    assert H["loss_first"].min() >= np.log(32)
    before = f"from {H['loss_repeated'][s - 1]:.2f} to {H['loss_repeated'][s]:.2f} nats"
    assert before in prose
    assert f"by step {H['step'][low]} it was {H['loss_repeated'][low]:.2f}," in prose
    assert f"{H['loss_first'][s]:.2f} at the marked step, {H['loss_first'][-1]:.2f} at the end" in prose
    # the caption says what the dashed line marks
    caption = [t for t in texts(at.caption) if "dashed line" in t][0]
    assert caption.startswith(f"The dashed line marks step {step}: the first snapshot at which a")
    assert "induction score reached 0.5." in caption
    # the slider's rule follows the slider
    at = at.slider(key=keys.WATCH_SNAPSHOT).set_value(s + 1).run()
    rules = [d for d in _rows(at.get("vega_lite_chart")[0]) if d.get("dash") == "shown"]
    assert [d["step"] for d in rules] == [step]


def _rows(chart) -> list[dict]:
    return [row for rows in drawn_cells(chart) for row in rows]


@pytest.mark.parametrize("bad", [0, COUNT + 1, -3, 10_000])
def test_a_bad_slider_value_changes_nothing(bad: int) -> None:
    at = app("watch_it_learn")
    at = at.slider(key=keys.WATCH_SNAPSHOT).set_value(5).run()
    at = at.slider(key=keys.WATCH_SNAPSHOT).set_value(bad).run()
    no_exception(at)
    # Streamlit puts the value= given (the snapshot shown) in place of a value outside the slider's range
    assert session(at).inside.snapshot == 5
    assert at.slider(key=keys.WATCH_SNAPSHOT).value == 5
    assert _score_lines(at) == _want_lines(5)


@pytest.mark.parametrize("bad", [0, COUNT + 1, "3", 2.5, None, True])
def test_the_snapshot_callback_refuses_a_bad_value_with_a_message(monkeypatch, bad) -> None:
    s = session_mod.new_session()
    s.inside, s.training = session_mod.Inside(models.BUILTIN, "", (1, 2), 1, snapshot=5), session_mod.Training()
    state = {session_mod.KEY: s, keys.WATCH_SNAPSHOT: bad}
    for module in (inside, session_mod):
        monkeypatch.setattr(module, "st", SimpleNamespace(session_state=state))
    inside.on_snapshot(COUNT)
    assert s.inside.snapshot == 5
    assert "Nothing changed" in s.training.learn_message and f"1 to {COUNT}" in s.training.learn_message
    state[keys.WATCH_SNAPSHOT] = 7
    inside.on_snapshot(COUNT)
    assert s.inside.snapshot == 7 and s.training.learn_message == ""


def _independent(steps: int, hold: int) -> Model:
    """The recipe trained by the engine directly, with the page's schedule written out here."""
    config = induction.recipe_config()
    from attention.model import init_params

    start = Model(config, init_params(config, 11, 0.3), WordVocab(induction.words(32)))

    def lr(step: int) -> float:  # up to 0.015 over 100 steps, held until ``hold``, then down to 0.015 / 50 at ``steps``
        if step < 100:
            return 0.015 * (step + 1) / 100
        return 0.015 if step < hold else max(0.015 * (steps - step) / (steps - hold), 0.015 / 50)

    return train(start, induction.recipe_batch, steps, lr=lr).model


def test_a_live_run_is_the_engines_run_of_the_recipe_and_opens_on_every_head(monkeypatch) -> None:
    steps, hold = 130, 110  # past the warm-up, into the fall
    monkeypatch.setattr(watch_it_learn, "LIVE_STEPS", steps)
    monkeypatch.setattr(watch_it_learn, "LIVE_HOLD", hold)
    at = journey("watch_it_learn")  # entered as a browser does, so the button can switch pages
    at = at.button(key="inside.learn.train").click().run()
    no_exception(at)
    job = jobs.wait(session(at).training.job)
    assert job.state == "done" and len(job.losses) == steps + 1
    at = at.run()
    no_exception(at)
    want = _independent(steps, hold)
    got = models.get(job.result)
    assert job.result.startswith("trained:")
    for name, value in want.params.items():
        np.testing.assert_array_equal(got.params[name], value, err_msg=name)
    ids = [int(t) for t in H["example"]]
    run = want.run(ids)
    first, repeated = induction.half_losses(run.logits[None], np.array(ids)[None], 12)
    said = [s.value for s in at.success][0]
    assert f"Trained {steps} steps in" in said
    assert f"loss on the first half {first:.2f} nats, on the repeated half {repeated:.2f} nats" in said
    # the trained model reads the shipped model's words, so it gets the same ready-made texts
    assert models.ready_made(job.result) == models.ready_made(models.BUILTIN)
    at = at.button(key="inside.learn.open").click().run()
    no_exception(at)
    assert session(at).inside.model == job.result
    assert session(at).inside.ablations == ()
    assert session(at).inside.ids == next(iter(models.ready_made(models.BUILTIN).values()))
    assert [t.value for t in at.title] == ["Inside a model: every head"]  # the button went there
    metric = [m.value for m in at.metric if m.label.startswith("Loss on the repeated half")][0]
    assert metric == f"{repeated:.2f} nats"


def test_cancel_stops_a_live_run_and_keeps_nothing(monkeypatch) -> None:
    monkeypatch.setattr(watch_it_learn, "LIVE_STEPS", 100_000)
    at = app("watch_it_learn")
    at = at.button(key="inside.learn.train").click().run()
    no_exception(at)
    job_id = session(at).training.job
    at = at.button(key="inside.learn.cancel").click().run()
    no_exception(at)
    job = jobs.wait(job_id)
    assert job.state == "cancelled" and job.result is None and len(job.losses) < 100_000
    at = at.run()
    assert any(t.startswith("Cancelled at step") for t in texts(at.info))
    assert not [b for b in at.button if b.key == "inside.learn.open"]


def test_a_busy_server_refuses_to_start_with_a_message(monkeypatch) -> None:
    monkeypatch.setattr(jobs, "RUNNING_MAX", 0)
    at = app("watch_it_learn")
    at = at.button(key="inside.learn.train").click().run()
    no_exception(at)
    assert session(at).training.job is None
    assert any("already training" in e and "Nothing started" in e for e in errors(at)), errors(at)


def test_a_trained_model_let_go_by_the_server_is_refused_with_a_message(monkeypatch) -> None:
    monkeypatch.setattr(watch_it_learn, "LIVE_STEPS", 3)
    monkeypatch.setattr(watch_it_learn, "LIVE_HOLD", 2)
    at = journey("watch_it_learn")
    at = at.button(key="inside.learn.train").click().run()
    job = jobs.wait(session(at).training.job)
    at = at.run()
    with models._HELD_LOCK:
        models._HELD.pop(job.result)  # as when HELD_MAX later models pushed it out
    at = at.run()
    no_exception(at)
    at = at.button(key="inside.learn.open").click().run()  # a press after the eviction: refused, said, no switch
    no_exception(at)
    assert [t.value for t in at.title] == ["Inside a model: watch it learn"]
    assert any("no longer held" in e and "Nothing changed" in e for e in errors(at)), errors(at)
    assert session(at).inside.model == models.BUILTIN


def _fall_by_loop(share: float) -> int:
    """The first snapshot after the random start at which the repeated half's loss has fallen ``share`` of the way
    from its plateau (snapshot 2, the first after step 0) to its last value: a plain loop over the record."""
    top, end = H["loss_repeated"][1], H["loss_repeated"][-1]
    for j in range(1, COUNT):
        if H["loss_repeated"][j] <= top - share * (top - end):
            return j
    raise AssertionError("the loss never fell that far")


def test_the_marked_step_is_named_exactly_and_the_fall_is_read_from_the_curve() -> None:
    """The dashed line is named for what it is (a head's induction score reaching 0.5), not "the phase change" alone,
    and the prose says where the repeated half's loss falls, read from the recorded curve (a tenth, half and nine
    tenths of its fall): the marked step lies inside that fall."""
    at = app("watch_it_learn")
    no_exception(at)
    s = _phase_by_loop()
    step = int(H["step"][s])
    a, half, b = (int(H["step"][_fall_by_loop(f)]) for f in (0.1, 0.5, 0.9))
    assert a <= step <= b  # the record's own point: the induction head appears while the loss falls
    whats = [d["what"] for d in _rows(at.get("vega_lite_chart")[0]) if d.get("dash") == "phase"]
    assert whats == [f"a head's induction score ≥ 0.5 (step {step})"], whats
    prose = "\n".join(_plain(at))
    top, end = H["loss_repeated"][1], H["loss_repeated"][-1]
    assert (
        f"from its plateau of {top:.2f} nats at step {H['step'][1]} it had fallen a tenth of the way to its last "
        f"{end:.2f} by step {a}, half of the way by step {half} and nine tenths by step {b}"
    ) in prose, prose
    assert f"The dashed line marks step {step}: the first snapshot at which a head" in prose
    assert "That is step" not in prose  # no step is called "the phase change" on its own
