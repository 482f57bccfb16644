"""The Patching page under AppTest: the ready-made pair patched in the background to a finished result whose two
heatmaps hold the naive patch's shares (each patch the whole corrupted run again, made here with the engine's own
patch() on a model of its own), kept when the learner comes back; Cancel; a busy server; bad texts and tokens, each
refused with a message naming what is wrong and the state as it was; a GPT-2 checkpoint and a tiny Llama."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import numpy as np
import pytest

from attention.ui.core import jobs
from tests.helpers.apptest import address, app, errors, goto, journey, no_exception, session, texts
from tests.helpers.families import tiny_llama
from tests.helpers.patching import ENGINE, charts_of, grid_of, naive_shares, patch_to_end


def test_the_ready_made_pair_restores_through_the_induction_and_previous_token_heads() -> None:
    at = journey("patching")
    no_exception(at)
    p = session(at).patching
    assert len(p.clean) == len(p.corrupt) == 24
    assert [k for k in range(24) if p.clean[k] != p.corrupt[k]] == [11]
    a, b = ENGINE.run(list(p.clean)).logits[-1], ENGINE.run(list(p.corrupt)).logits[-1]
    answer, wrong = int(np.argmax(a)), int(np.argmax(b))  # the defaults: each text's prediction
    assert answer != wrong
    assert at.selectbox(key="inside.w.patch.answer").value == answer
    assert at.selectbox(key="inside.w.patch.wrong").value == wrong
    at, job = patch_to_end(at)
    assert job.key == jobs.patch_key(jobs.PatchRequest("induction", p.clean, p.corrupt, answer, wrong))
    heads, streams = naive_shares(ENGINE, list(p.clean), list(p.corrupt), answer, wrong)
    charts = charts_of(at)
    assert set(charts) == {"heads", "streams"}
    got = grid_of(charts["heads"], ["layer 1", "layer 2"], ["head 1", "head 2"])
    np.testing.assert_allclose(got, heads, rtol=0, atol=1e-9)
    pieces = ENGINE.pieces(list(p.clean))
    cols = [f"{k + 1} {t}" for k, t in enumerate(pieces)]
    got = grid_of(charts["streams"], ["into layer 1", "into layer 2"], cols)
    np.testing.assert_allclose(got, streams, rtol=0, atol=1e-9)
    # the journey: the previous-token head (layer 1 · head 2) and the induction head (layer 2 · head 1) carry it
    said = " ".join(texts(at.markdown)).replace("**", "")
    order = sorted(
        ((heads[la, h], f"layer {la + 1} · head {h + 1}") for la in range(2) for h in range(2)), reverse=True
    )
    assert {name for _, name in order[:2]} == {"layer 1 · head 2", "layer 2 · head 1"}
    assert (
        f"The heads that restore the most: {order[0][1]} ({order[0][0]:.2f}), {order[1][1]} ({order[1][0]:.2f})" in said
    )
    da, db = a[answer] - a[wrong], b[answer] - b[wrong]
    assert f"is {da:.3f} after the clean text and {db:.3f} after the corrupted one" in said


def test_the_token_choosers_show_each_probability_as_the_digits_control_says() -> None:
    """Each label's two probabilities: the naive softmax of each text's last logits, written with the digits
    control's significant digits (2 and 6 here), never a fixed three."""
    at = journey("patching")
    p = session(at).patching
    a, b = ENGINE.run(list(p.clean)).logits[-1], ENGINE.run(list(p.corrupt)).logits[-1]
    naive = [np.exp(z - z.max()) / np.exp(z - z.max()).sum() for z in (a, b)]  # softmax, one position
    for digits in (2, 6):
        at.session_state["attention_session"] = dataclasses.replace(session(at), digits=digits)
        at = at.run()
        no_exception(at)
        chooser = at.selectbox(key="inside.w.patch.answer")
        label = chooser.options[chooser.index]
        shown = re.search(r"clean ([0-9.e+-]+), corrupted ([0-9.e+-]+)\)$", label)
        assert shown is not None, label
        for text, probs in zip(shown.groups(), naive, strict=True):
            assert len(text.split("e")[0].replace(".", "").lstrip("0")) == digits, label
            want = probs[chooser.value]
            assert abs(float(text) - want) <= 0.5 * 10 ** (np.floor(np.log10(want)) - digits + 1) * (1 + 1e-9), label


def test_a_finished_result_is_shown_again_without_recomputing() -> None:
    at = journey("patching")
    at, job = patch_to_end(at)
    at = goto(at, "every_head")
    no_exception(at)
    before = len(jobs._JOBS)
    at = goto(at, "patching")
    no_exception(at)
    assert len(charts_of(at)) == 2 and len(jobs._JOBS) == before  # drawn from the kept result, nothing started
    at = at.button(key="inside.patch.run").click().run()  # pressed again: the same job, no thread
    assert session(at).patching.job == job.id and len(jobs._JOBS) == before


@pytest.mark.parametrize("typed", [None, ("fa bi de ga fa bi de", "fa bi ko ga fa bi de")], ids=["ready-made", "typed"])
def test_a_rerun_and_a_page_opened_again_run_neither_text_when_the_run_cache_keeps_one(
    monkeypatch: pytest.MonkeyPatch, typed: tuple[str, str] | None
) -> None:
    """At 2,047 tokens on SmolLM2 a run holds 0.7 GB and the model's run cache 1 GiB: it keeps one text of a pair,
    so reading the two in turn ran both again on every rerun (the page's tokens, and the intro's top heads for a
    typed pair). Each text's last logits are kept by content: made here with a run cache that keeps one run, a
    rerun and the page opened again compute no layer (a run the cache holds computes none either)."""
    from attention.model import runcache
    from attention.model.model import Model

    monkeypatch.setattr(runcache, "CACHE_BYTES", 1)  # every run but the newest let go, as at length
    at = journey("patching")
    if typed is not None:
        at.text_area(key="inside.w.patch.clean").input(typed[0])
        at.text_area(key="inside.w.patch.corrupt").input(typed[1])
        at = at.button(key="inside.patch.use").click().run()
    no_exception(at)
    p = session(at).patching
    assert p.clean != p.corrupt and (p.pair == "") == (typed is not None)  # two texts, as chosen
    layers, real = [], Model.layer
    monkeypatch.setattr(Model, "layer", lambda self, *a, **k: (layers.append(1), real(self, *a, **k))[1])
    at.run()
    at = goto(goto(at, "overview"), "patching")
    no_exception(at)
    assert layers == [], f"{len(layers)} layers computed"
    assert at.selectbox(key="inside.w.patch.answer").value is not None and at.get("vega_lite_chart")  # drawn


def _slow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each patch takes 50 ms more, so a test can press Cancel while the sweep runs."""
    real = jobs.sweep

    def slow(*args, on_step, **kwargs):
        return real(*args, on_step=lambda k, n: (time.sleep(0.05), on_step(k, n))[1], **kwargs)

    monkeypatch.setattr(jobs, "sweep", slow)


def test_cancel_stops_the_sweep_keeps_nothing_and_leaves_the_page_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    _slow(monkeypatch)
    at = app("patching")
    at = at.selectbox(key="inside.w.patch.pair").select_index(1).run()  # a pair no other test has patched
    no_exception(at)
    before = session(at).patching
    at = at.button(key="inside.patch.run").click().run()
    no_exception(at)
    job_id = session(at).patching.job
    assert [b for b in at.button if b.key == "inside.patch.cancel"]
    at = at.button(key="inside.patch.cancel").click().run()
    no_exception(at)
    job = jobs.wait(job_id)
    assert job.state == "cancelled" and job.result is None and job.done < job.total
    at = at.run()
    no_exception(at)
    assert any(t.startswith("Cancelled after") and "nothing of it was kept" in t for t in texts(at.info))
    assert charts_of(at) == {}
    assert dataclasses.replace(session(at).patching, job=None) == dataclasses.replace(before, job=None)


def test_two_sessions_share_one_sweep_and_one_cancel_leaves_it_running_for_the_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A class on the same ready-made pair: the second learner's press joins the first one's running sweep (with
    room for one sweep only, nothing is refused); the second's Cancel leaves it running for the first, who gets it."""
    _slow(monkeypatch)
    monkeypatch.setattr(jobs, "RUNNING_MAX", 1)
    first, second = (app("patching").selectbox(key="inside.w.patch.pair").select_index(1).run() for _ in range(2))
    first = first.button(key="inside.patch.run").click().run()
    second = second.button(key="inside.patch.run").click().run()
    no_exception(first)
    no_exception(second)
    assert errors(second) == []
    job = jobs.get(session(first).patching.job)
    assert job is not None and session(second).patching.job == job.id and job.state == "running"
    second = second.button(key="inside.patch.cancel").click().run()
    no_exception(second)
    assert session(second).patching.job is None and not job.cancel.is_set()
    assert jobs.wait(job.id).state == "done" and job.done == job.total
    first = first.run()
    no_exception(first)
    assert set(charts_of(first)) == {"heads", "streams"}


def test_a_busy_server_refuses_to_start_with_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs, "RUNNING_MAX", 0)
    at = app("patching")
    at = at.selectbox(key="inside.w.patch.pair").select_index(2).run()
    at = at.button(key="inside.patch.run").click().run()
    no_exception(at)
    assert session(at).patching.job is None
    assert any("already patching" in e and "Nothing started" in e for e in errors(at)), errors(at)


BAD = {
    "an empty clean text": (" ", "fa bi", "The clean text is empty"),
    "an empty corrupted text": ("fa bi", "", "The corrupted text is empty"),
    "different lengths": ("fa bi de", "fa bi", "The clean text has 3 tokens and the corrupted one 2"),
    "a word outside the vocabulary": ("fa bi zz", "fa bi de", "zz"),
    "one word": ("fa", "bi", "The clean text has 1 word; the pages need at least 2"),
    "longer than the context": (
        "fa " * 30,
        "fa " * 30,
        "The clean text has 30 words; this model's pages read at most 24 (its context is 24)",
    ),
    "the same texts": ("fa bi de", "fa bi de", "The two texts are the same tokens"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_texts_are_named_and_change_nothing(case: str) -> None:
    clean, corrupt, said = BAD[case]
    at = app("patching")
    before = session(at).patching
    at.text_area(key="inside.w.patch.clean").input(clean)
    at.text_area(key="inside.w.patch.corrupt").input(corrupt)
    at = at.button(key="inside.patch.use").click().run()
    no_exception(at)
    assert any(said in e for e in errors(at)), (case, errors(at))
    assert dataclasses.replace(session(at).patching, message="") == before
    assert at.text_area(key="inside.w.patch.corrupt").value == corrupt  # what was typed stays, with its message


def test_typed_texts_become_the_pair_and_the_tokens_follow() -> None:
    at = app("patching")
    at.text_area(key="inside.w.patch.clean").input("fa bi de ga fa bi de")
    at.text_area(key="inside.w.patch.corrupt").input("fa bi ko ga fa bi de")
    at = at.button(key="inside.patch.use").click().run()
    no_exception(at)
    p = session(at).patching
    words = ENGINE.vocab.words
    assert p.clean == tuple(words.index(w) for w in ["fa", "bi", "de", "ga", "fa", "bi", "de"])
    assert p.corrupt[2] == words.index("ko") and p.pair == "" and p.answer is None
    assert at.selectbox(key="inside.w.patch.pair").value == "Your own texts (typed below)"
    a = ENGINE.run(list(p.clean)).logits[-1]
    assert at.selectbox(key="inside.w.patch.answer").value == int(np.argmax(a))
    wrong = at.selectbox(key="inside.w.patch.wrong")
    at = wrong.set_value(at.selectbox(key="inside.w.patch.answer").value).run()  # the same as the answer: refused
    assert any("must differ" in e for e in errors(at)) and session(at).patching.wrong is None
    choice = next(o for o in at.selectbox(key="inside.w.patch.wrong").options if o != "")
    assert choice


def _server_model(monkeypatch: pytest.MonkeyPatch, name: str, folder: Path):
    monkeypatch.setenv("ATTENTION_MODELS", f"{name}={folder}")
    at = app("patching")
    at = at.selectbox(key="inside.w.model").set_value(f"server:{name}").run()
    no_exception(at)
    return at


def test_a_gpt2_checkpoint_patches_to_the_naive_shares(gpt2, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from attention.model import load

    folder, _ = gpt2
    at = _server_model(monkeypatch, "tiny", folder)
    p = session(at).patching
    assert p.model == "server:tiny" and len(p.clean) == len(p.corrupt)
    assert at.text_area(key="inside.w.patch.clean").value == load(folder).decode(list(p.clean))
    at, job = patch_to_end(at)
    m = load(folder)
    s = job.result.exact
    heads, _ = naive_shares(m, list(p.clean), list(p.corrupt), s.answer, s.wrong)
    got = grid_of(
        charts_of(at)["heads"],
        [f"layer {k + 1}" for k in range(heads.shape[0])],
        [f"head {k + 1}" for k in range(heads.shape[1])],
    )
    np.testing.assert_allclose(got, heads, rtol=0, atol=1e-9)


def test_a_tiny_llama_patches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tiny_llama(tmp_path / "tiny-llama")
    at = _server_model(monkeypatch, "llama", folder)
    at, job = patch_to_end(at)
    s = job.result.exact
    assert s.heads.shape == (2, 4) and np.isfinite(s.heads).all() and np.isfinite(s.streams).all()
    assert len(charts_of(at)) == 2


def test_the_pair_travels_in_the_address_and_a_bad_one_is_named() -> None:
    at = app("patching")
    assert not {"clean", "corrupt"} & set(address(at))  # the first ready-made pair: nothing written
    at = at.selectbox(key="inside.w.patch.pair").select_index(3).run()
    p = session(at).patching
    written = address(at)
    assert written["clean"] == ".".join(map(str, p.clean)) and written["corrupt"] == ".".join(map(str, p.corrupt))
    again = app("patching", {"clean": written["clean"], "corrupt": written["corrupt"]})  # a reload, a new session
    no_exception(again)
    assert (session(again).patching.clean, session(again).patching.corrupt) == (p.clean, p.corrupt)
    assert at.text_area(key="inside.w.patch.clean").value == again.text_area(key="inside.w.patch.clean").value
    for query, said in (
        ({"clean": "1.2.3", "corrupt": "1.2"}, "the texts have 3 and 2 tokens"),
        ({"clean": "1.2.3", "corrupt": "1.x.3"}, "is not token ids separated by dots"),
        ({"clean": "1.2.3", "corrupt": "1.2.99"}, "outside the vocabulary"),
        ({"clean": "1.2.3", "corrupt": "1.2.3"}, "the same tokens"),
    ):
        bad = app("patching", query)
        no_exception(bad)
        notes = [t for t in texts(bad.warning) if "patching pair" in t]
        assert notes and said in notes[0], (query, texts(bad.warning))
        assert session(bad).patching.pair.startswith("12 words, then the same 12 again")  # the page as it starts


@pytest.mark.parametrize("typed", ["fa", "fa bi zz", "fa " * 30, "x" * 5000])
def test_every_head_and_patching_read_a_text_with_one_wording(typed: str) -> None:
    """One validator for a model text: Every head's text box and Patching's texts say the same of the same text."""
    heads = app("every_head").text_input(key="inside.w.typed").input(typed).run()
    patching = app("patching")
    patching.text_area(key="inside.w.patch.clean").input(typed)
    patching.text_area(key="inside.w.patch.corrupt").input("fa bi de")
    patching = patching.button(key="inside.patch.use").click().run()
    said = [e.removeprefix("The text") for e in errors(heads) if e.startswith("The text")]
    told = [e.removeprefix("The clean text") for e in errors(patching) if e.startswith("The clean text")]
    assert said and said == told, (errors(heads), errors(patching))
