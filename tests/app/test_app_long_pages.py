"""Issue 47 §3 under AppTest: the Inside-a-model pages at long texts. A position found by its token (the one control
the Logit lens, Attribution, Routes and Generate share), checked against the tokens listed by a loop written here; a
search too long refused; a text longer than an address holds left out of it, said, and a reload that still opens;
First token's grid for any key and query against a loop over the engine's full weights."""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import builtin, load
from attention.ui.core import keys
from tests.app.test_app_model_head_limits import long_ctx  # noqa: F401 - a module fixture: a 4,096-position GPT-2
from tests.helpers.apptest import address, app, errors, goto, journey, no_exception, session, texts

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
ENGINE = builtin("induction")  # a model of its own, not the page's


def _holding(ids: list[int], text: str) -> list[int]:
    """The positions whose token's text holds ``text``, case ignored, by a plain loop over the model's pieces."""
    out = []
    for k, piece in enumerate(ENGINE.pieces(ids)):
        if text.lower() in piece.lower():
            out.append(k)
    return out


def _find(at, text: str):
    return at.text_input(key=keys.FIND_TEXT).input(text).run()


@pytest.mark.parametrize("page", ["logit_lens", "attribution", "routes"])
def test_a_position_is_found_by_its_token_and_chosen(page: str) -> None:
    at = app(page)
    no_exception(at)
    ids = list(session(at).inside.ids)
    word = ENGINE.pieces(ids)[5]
    want = _holding(ids, word.upper()[:2])  # part of a word, in the other case
    at = _find(at, word.upper()[:2])
    no_exception(at)
    box = at.selectbox(key=keys.FIND_PICK)
    assert list(box.options) == [f"pos {k + 1:,} · “{ENGINE.pieces([ids[k]])[0]}”" for k in want], box.options
    assert f"{len(want)} position" in box.label
    target = want[-1]
    at = box.select(target).run()
    no_exception(at)
    assert session(at).inside.position == target
    assert at.selectbox(key=keys.READOUT_POSITION).value == target  # the number box shows it too
    assert any(f"position {target + 1} of {len(ids)}" in c for c in texts(at.caption)), texts(at.caption)
    at = goto(at, "logit_lens" if page != "logit_lens" else "attribution")  # shared: the next page reads it
    no_exception(at)
    assert session(at).inside.position == target and at.text_input(key=keys.FIND_TEXT).value == word.upper()[:2]


def test_no_match_and_a_search_too_long_are_said_and_change_nothing() -> None:
    at = app("logit_lens")
    before = session(at).inside
    at = _find(at, "qqq")
    no_exception(at)
    assert any("No token of the 24 holds that text" in c for c in texts(at.caption)), texts(at.caption)
    assert session(at).inside.position == before.position
    at = _find(at, "x" * 101)
    no_exception(at)
    assert any("The text to find has 101 characters; at most 100. Nothing changed." in e for e in errors(at))
    assert session(at).inside.find == "qqq" and session(at).inside.position == before.position


def test_on_generate_the_token_found_ends_the_prompt() -> None:
    at = app("generate")
    no_exception(at)
    ids = list(session(at).inside.ids)
    word = ENGINE.pieces(ids)[3]
    want = _holding(ids, word)
    at = _find(at, word)
    box = at.selectbox(key=keys.FIND_PICK)
    assert box.options == [f"pos {k + 1:,} · “{ENGINE.pieces([ids[k]])[0]}”" for k in want]
    at = box.select(want[0]).run()
    no_exception(at)
    assert session(at).generation.keep == want[0] + 1 and session(at).generation.steps == 0
    assert at.number_input(key=keys.GEN_KEEP).value == want[0] + 1


def _naive_after(weights: np.ndarray, key: int) -> np.ndarray:
    """Every head's mean weight on ``key`` over the queries after it (its own row for the last token), by loops."""
    L, H, n, _ = weights.shape
    out = np.zeros((L, H))
    queries = list(range(key + 1, n)) or [key]
    for layer in range(L):
        for head in range(H):
            out[layer, head] = sum(float(weights[layer, head, q, key]) for q in queries) / len(queries)
    return out


@pytest.mark.parametrize("key, query", [(3, -1), (23, -1), (5, 17)])
def test_first_tokens_grid_for_any_key_and_query_against_the_full_weights(key: int, query: int) -> None:
    at = app("first_token")
    ids = list(session(at).inside.ids)
    weights = ENGINE.run(ids).weights  # (L, H, n, n): the whole pass, kept
    at = at.selectbox(key=keys.ACROSS_KEY).select(key).run()
    if query >= 0:
        at = at.selectbox(key=keys.ACROSS_QUERY).select(query).run()
    no_exception(at)
    want = _naive_after(weights, key) if query < 0 else weights[:, :, query, key]
    np.testing.assert_allclose(at.dataframe[0].value.to_numpy(), np.round(want, 3), atol=1e-9)


def test_a_text_longer_than_an_address_holds_is_left_out_of_it_and_said(long_ctx, monkeypatch) -> None:  # noqa: F811
    """The test tokenizer's ids are small (< 300): its 2,000 tokens fit in 8,000 characters, so the address holds
    fewer here (SmolLM2's 2,046-token long text needs 11,000)."""
    from attention.ui.address import inside as inside_address

    monkeypatch.setenv("ATTENTION_MODELS", f"long={long_ctx}")
    monkeypatch.setitem(inside_address.LIMITS, "ids", 4000)
    m = load(long_ctx)
    text = " ".join(["Paris is the capital of France and Rome of Italy"] * 200)
    ids = m.encode(text)[:2000]
    assert len(".".join(str(i) for i in ids)) > 4000
    at = journey("logit_lens")
    at = at.selectbox(key=keys.INSIDE_MODEL).set_value("server:long").run()
    at = at.text_input(key=keys.INSIDE_TYPED).input(m.decode(ids)).run()
    no_exception(at)
    assert session(at).inside.ids == tuple(ids) and session(at).inside.position == len(ids) - 1
    near = next(k for k in range(1500, 2000) if m.pieces([ids[k]])[0] == " the")
    at = _find(at, " THE")
    at = at.selectbox(key=keys.FIND_PICK).select(near).run()
    assert session(at).inside.position == near
    bar = address(at)
    assert bar.get("model") == "server:long" and not {"ids", "at", "tok"} & set(bar), bar
    said = " ".join(texts(at.caption))
    assert "This text's 2,000 tokens are more than an address holds" in said and "first text" in said, said
    again = app("logit_lens", bar)  # a reload: the model, the first text, no notice of a broken link
    no_exception(again)
    assert session(again).inside.model == "server:long" and not texts(again.warning), texts(again.warning)
    short = m.encode("Paris is the capital of France")
    at = at.text_input(key=keys.INSIDE_TYPED).input(m.decode(short)).run()
    assert address(at).get("ids") == ".".join(str(i) for i in short)  # a text that fits travels again


def test_patching_a_long_pair_estimates_it_all_and_patches_exactly_only_what_is_chosen(
    long_ctx, monkeypatch  # noqa: F811
) -> None:
    from attention.ui.core import jobs
    from attention.ui.readouts import patching

    monkeypatch.setenv("ATTENTION_MODELS", f"long={long_ctx}")
    monkeypatch.setattr(patching, "PATCHES_MAX", 100)  # this 1-layer model's 302 patches stand for SmolLM2's 61,710
    m = load(long_ctx)
    clean = m.encode(" ".join(["the cat sat on the mat and the dog sat on the log"] * 30))[:300]
    corrupt = list(clean)
    corrupt[298] = next(t for t in range(5, 300) if t != clean[298])  # next to the last: it moves the prediction
    at = app("patching")
    at = at.selectbox(key=keys.INSIDE_MODEL).set_value("server:long").run()
    at.text_area(key=keys.PATCH_CLEAN).input(m.decode(clean))
    at.text_area(key=keys.PATCH_CORRUPT).input(m.decode(corrupt))
    at = at.button(key=keys.PATCH_USE).click().run()
    no_exception(at)
    p = session(at).patching
    assert len(p.clean) == 300 and p.clean != p.corrupt, p.message
    said = " ".join(texts(at.markdown))
    assert "300 tokens, the positions that differ, clean → corrupted:" in said and "299 " in said, said
    assert not errors(at), errors(at)
    assert at.button(key=keys.PATCH_RUN).disabled  # every layer of a long pair: not started
    assert any("At 300 tokens this is 302 exact patches" in c for c in texts(at.caption)), texts(at.caption)
    assert len(at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart")) >= 2  # the estimate: heads, streams
    at = at.radio(key=keys.PATCH_SCOPE).set_value("heads").run()  # 2 patches
    assert not at.button(key=keys.PATCH_RUN).disabled
    at = at.button(key=keys.PATCH_RUN).click().run()
    no_exception(at)
    job = jobs.wait(session(at).patching.job)
    assert job.state == "done" and job.done == job.total == 2  # the chosen layer's two heads, nothing else
    at = at.run()
    no_exception(at)
    assert np.isfinite(job.result.exact.heads).all() and np.isnan(job.result.exact.streams).all()
