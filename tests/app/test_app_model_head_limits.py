"""Review of issue 23: a model head opened from a link reads no more tokens than the model pages do (2 to
models.longest), so a link cannot make a server's GPT-2 run and draw a whole 1,024-token context."""

from __future__ import annotations

from pathlib import Path

import pytest

from attention.ui.core import models
from tests.helpers.apptest import app, errors, head_button, no_exception, put_inside, session, texts
from tests.helpers.drawn import rows_of, subtitle_of, title_of

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def long_ctx(gpt2, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    """A random GPT-2 whose context (4,096) is longer than the pages read of a tokenizer's text (MAX_TOKENS, 2,048)."""
    import shutil

    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = tmp_path_factory.mktemp("long_gpt2")
    shutil.copy(gpt2[0] / "tokenizer.json", folder / "tokenizer.json")
    torch.manual_seed(2)
    cfg = GPT2Config(vocab_size=gpt2[1].config.vocab_size, n_positions=4096, n_embd=16, n_layer=1, n_head=2)
    GPT2LMHeadModel(cfg).double().eval().save_pretrained(str(folder), safe_serialization=True)
    return folder


def test_a_link_to_a_head_on_more_tokens_than_the_pages_read_is_refused(long_ctx, monkeypatch) -> None:
    monkeypatch.setenv("ATTENTION_MODELS", f"long={long_ctx}")
    too_many = ".".join(["5"] * (models.MAX_TOKENS + 36))  # 2,084 tokens: within the model's context, over the cap
    at = app("scores", {"preset": "model", "mh": f"server:long~1.1~{too_many}~"})
    no_exception(at)
    notes = " ".join(texts(at.warning))
    assert f"2,084 token ids; the pages read at most {models.MAX_TOKENS:,}" in notes, notes
    assert session(at).model_head is None
    ok = ".".join(["5"] * models.MAX_TOKENS)
    at = app("scores", {"preset": "model", "mh": f"server:long~1.1~{ok}~"})
    no_exception(at)
    assert len(session(at).model_head.ids) == models.MAX_TOKENS


def test_a_link_to_a_head_on_one_token_is_refused_as_the_model_pages_refuse_it() -> None:
    at = app("scores", {"preset": "model", "mh": "induction~1.1~1~"})
    no_exception(at)
    notes = " ".join(texts(at.warning))
    assert "1 tokens" in notes or "1 token" in notes, notes
    assert session(at).model_head is None


def test_a_head_of_a_learners_model_let_go_keeps_the_step_page_and_says_so() -> None:
    """HELD_MAX learners' models are held per process: a head opened from one that was let go since (another
    learner uploaded or trained) keeps its page, with a message instead of a traceback."""
    from attention.model import builtin
    from attention.ui.modelpages import runs
    from tests.helpers.apptest import goto, journey

    mid = models.hold(builtin("induction"), "trained")
    at = journey("every_head")
    put_inside(at, held=((mid, "Trained here"),))
    at = at.run()
    at = at.selectbox(key="inside.w.model").set_value(mid).run()
    at = goto(head_button(at, "open", 1, 0).click().run(), "scores")
    no_exception(at)
    assert session(at).model_head.model_id == mid
    address = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}
    assert address.get("preset") == "she_likes_coffee" and "mh" not in address, address  # it cannot travel: nothing
    assert not any(k in address for k in ("edits", "dm", "dk", "softmax", "mask")), address  # of it is written
    with models._HELD_LOCK:
        models._HELD.pop(mid)  # let go, as a seventh learner's model would
    runs._RUNS._items.clear()
    at = at.run()
    no_exception(at)
    assert any("no longer held" in w for w in texts(at.warning)), texts(at.warning)
    assert session(at).model_head.model_id == mid


def test_a_typed_text_of_up_to_2048_tokens_is_read_and_its_characters_are_bounded_first(long_ctx, monkeypatch) -> None:
    """A model with a tokenizer reads a typed text of 2 to 2,048 tokens (MAX_TOKENS); a longer one is refused by name,
    and the tokenizer never sees more than MAX_CHARS characters (a longer value is refused by its length, named, before
    it is split or tokenized); nothing changes either time."""
    from attention.model import Model, load
    from attention.ui.core import keys
    from attention.ui.state import inside

    assert models.MAX_TOKENS == 2048 and 10_000 <= inside.MAX_CHARS <= 13_000  # what 2,048 tokens of prose need
    monkeypatch.setenv("ATTENTION_MODELS", f"long={long_ctx}")
    m = load(long_ctx)
    text = " ".join(["the cat sat on the mat and the dog sat on the log"] * 170)
    ids = m.encode(text)
    assert len(ids) > 2049 and len(text) <= inside.MAX_CHARS
    at = app("logit_lens")
    at = at.selectbox(key=keys.INSIDE_MODEL).set_value("server:long").run()
    no_exception(at)
    exactly = m.decode(ids[:2048])
    assert len(m.encode(exactly)) == 2048
    at = at.text_input(key=keys.INSIDE_TYPED).input(exactly).run()
    no_exception(at)
    assert session(at).inside.ids == tuple(ids[:2048]) and not session(at).inside.message
    assert len(at.get("vega_lite_chart")) >= 1  # the lens's line, at the last of 2,048 positions
    over = m.decode(ids[:2311])
    at = at.text_input(key=keys.INSIDE_TYPED).input(over).run()
    said = session(at).inside.message
    assert "The text has 2,311 tokens; this model's pages read at most 2,048" in said and "Nothing changed" in said
    assert session(at).inside.ids == tuple(ids[:2048])
    assert any(said in e for e in texts(at.error)), texts(at.error)  # where the eye is: under the box
    seen, encode = [], Model.encode
    monkeypatch.setattr(Model, "encode", lambda self, t: seen.append(len(t)) or encode(self, t))
    at = at.text_input(key=keys.INSIDE_TYPED).set_value("a " * inside.MAX_CHARS).run()  # a client past max_chars
    no_exception(at)
    assert not seen, seen  # refused by its length before the tokenizer saw any of it
    said = session(at).inside.message
    assert f"{2 * inside.MAX_CHARS:,} characters" in said and "Nothing changed" in said, said
    assert session(at).inside.ids == tuple(ids[:2048])


def test_generate_reads_a_prompt_of_2048_tokens_and_draws_each_head_over_all_cached_keys(long_ctx, monkeypatch) -> None:
    """Generate at the pages' limit: a prompt of 2,047 tokens prefilled, its last token's attention row drawn one row
    per head over the 2,047 cached keys (the keys pooled in blocks, the heads kept: the chart's rows are the heads'
    names), the cache's rows counted, and no error anywhere on the page."""
    from attention.model import load
    from attention.ui.core import keys

    monkeypatch.setenv("ATTENTION_MODELS", f"long={long_ctx}")
    m = load(long_ctx)
    ids = m.encode(" ".join(["the cat sat on the mat and the dog sat on the log"] * 170))[:2047]
    at = app("generate")
    at = at.selectbox(key=keys.INSIDE_MODEL).set_value("server:long").run()
    at = at.text_input(key=keys.INSIDE_TYPED).input(m.decode(ids)).run()
    no_exception(at)
    assert not errors(at), errors(at)
    n = len(session(at).inside.ids)
    assert 2040 <= n <= 2048, n
    charts = [c for c in at.get("vega_lite_chart") if f"over the {n} cached keys" in title_of(c)]
    assert len(charts) == 1, [title_of(c) for c in at.get("vega_lite_chart")]
    heads = {r["query"] for r in rows_of(charts[0])}
    assert heads == {f"layer 1 · head {h}" for h in (1, 2)}, heads
    assert subtitle_of(charts[0]).startswith("blocks of 1×"), subtitle_of(charts[0])
