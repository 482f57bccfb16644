"""The Generate page under AppTest: every step's tokens, query, attention row, top next tokens and cache bytes against
the engine's full forward pass on the sequence so far (run here, on a model of its own); the induction model
completing a repeat; a change of text or model starting again with a message; bad values refused, nothing changed."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attention.model import Config, Model, builtin, init_params
from attention.model.vocab import WordVocab
from attention.ui.core import models
from tests.helpers.apptest import app, drawn_cells, goto, journey, no_exception, press, put_inside, session, texts
from tests.helpers.drawn import title_of

ENGINE = builtin("induction")  # a model of its own, not the page's: the oracle runs the engine directly
L, H, DH = ENGINE.config.n_layers, ENGINE.config.n_heads, ENGINE.config.d_head


TITLES = {"q": "The query of token", "row": "attention over the", "cache": "Rows in the cache"}


def _chart(at, which: str) -> list[dict]:
    """The rows drawn by the page's chart whose title says what it is: "q", "row" or "cache"."""
    charts = [c for c in at.get("vega_lite_chart") if TITLES[which] in title_of(c)]
    assert len(charts) == 1, [title_of(c) for c in at.get("vega_lite_chart")]
    (rows,) = drawn_cells(charts[0])
    return rows


def _cells(rec: list[dict]) -> np.ndarray:
    """A heatmap's values as a matrix, from the records the chart is drawn from."""
    out = np.full((max(r["row"] for r in rec), max(r["col"] for r in rec)), np.nan)
    for r in rec:
        out[r["row"] - 1, r["col"] - 1] = r["value"]
    return out


def _generated(at) -> list[str]:
    line = [t for t in texts(at.markdown) if t.startswith("**Generated")][0]
    return re.findall(r"\*\*\d+ (\S+)\*\*", line)


def _press(at, key: str):
    at = press(at, key)
    no_exception(at)
    return at


def _check_against_the_engine(at, prompt: list[int], steps: int) -> None:
    """What the page shows for this step equals a full forward pass of the engine on the sequence so far."""
    tokens = ENGINE.generate(prompt, steps) if steps else prompt
    assert _generated(at) == (ENGINE.pieces(tokens[len(prompt) :]) if steps else [])
    run = ENGINE.run(tokens)
    t = len(tokens)
    rows = _cells(_chart(at, "row"))  # (L · H, t): every layer's heads, the default
    np.testing.assert_allclose(rows, run.weights[:, :, -1, :].reshape(L * H, t), rtol=1e-9, atol=1e-12)
    Q = np.stack([tr.Q[-1].reshape(H, DH) for tr in run.traces]).reshape(L * H, DH)  # the last row's query per head
    np.testing.assert_allclose(_cells(_chart(at, "q")), Q, rtol=1e-9, atol=1e-12)
    p = np.exp(run.logits[-1] - run.logits[-1].max())
    p /= p.sum()
    top = at.dataframe[0].value  # the top next tokens: the page's first table
    assert list(top["next token"]) == ENGINE.pieces(list(np.argsort(-p, kind="stable")[:5]))
    np.testing.assert_allclose(top["probability"], np.sort(p)[::-1][:5], rtol=1e-9)
    counted = L * 2 * H * DH * t * 8  # layers × (K and V) × heads × d_head × tokens × 8 bytes (float64)
    shown = "\n".join(texts(at.markdown) + texts(at.caption))
    assert f"({counted:,} B)" in shown and f"hold {counted:,} bytes" in shown
    assert f"({L * 2 * H * DH * t * 4:,} B)" in shown and f"({L * 2 * H * DH * t * 2:,} B)" in shown  # float32, 16
    assert f"Each layer's K and V have {t} rows" in shown
    cache = _chart(at, "cache")
    assert sum(r["rows"] for r in cache) == 2 * L * t and all(r["rows"] > 0 for r in cache)
    assert {r["rows"] for r in cache if r["what"] == "added by this step"} == {1}


def test_each_step_shows_the_engines_full_forward_on_the_sequence_so_far() -> None:
    at = app("generate")
    no_exception(at)
    ids = session(at).inside.ids
    prompt = list(ids[:15])  # a repeated text: its first half and 3 tokens of the repeat
    assert session(at).generation.keep == 15
    _check_against_the_engine(at, prompt, 0)
    for k in (1, 2, 3):
        at = _press(at, "inside.gen.b.next")
        _check_against_the_engine(at, prompt, k)
    at = at.number_input(key="inside.w.gen.many").set_value(2).run()
    at = _press(at, "inside.gen.b.many")
    _check_against_the_engine(at, prompt, 5)
    at = at.selectbox(key="inside.w.gen.layer").set_value(1).run()  # layer 2 alone: its heads' rows
    run = ENGINE.run(ENGINE.generate(prompt, 5))
    np.testing.assert_allclose(_cells(_chart(at, "row")), run.weights[1, :, -1], atol=1e-12)
    at = _press(at, "inside.gen.b.again")
    assert _generated(at) == [] and session(at).generation.steps == 0


def test_the_induction_model_completes_the_repeat_and_stops_at_its_context() -> None:
    at = app("generate")
    ids = session(at).inside.ids
    at = _press(at, "inside.gen.b.end")
    assert _generated(at) == ENGINE.pieces(list(ids[15:]))  # the 9 repeated tokens, each one right
    said = [t for t in texts(at.caption) if t.startswith("Compared with the text")][0]
    assert "the model completed 9 of the 9 made so far correctly" in said
    assert [t for t in texts(at.markdown) if t.startswith("**Generated")][0].count("✓") == 9
    _check_against_the_engine(at, list(ids[:15]), 9)
    assert at.button(key="inside.gen.b.next").disabled  # the context of 24 is full: nothing more, and the page says so
    assert session(at).generation.steps == 9
    assert any("The context of 24 tokens is full" in t for t in texts(at.caption))


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("inside.w.gen.keep", 0, "The prompt keeps 1 to 23 tokens"),
        ("inside.w.gen.keep", 24, "The prompt keeps 1 to 23 tokens"),
        ("inside.w.gen.keep", -5, "The prompt keeps 1 to 23 tokens"),
        ("inside.w.gen.many", 0, "Generate makes 1 to 256 tokens a press with this model"),
        ("inside.w.gen.many", 257, "Generate makes 1 to 256 tokens a press with this model"),
    ],
)
def test_bad_values_are_refused_and_nothing_changes(key: str, value: int, words: str) -> None:
    at = app("generate")
    at = _press(at, "inside.gen.b.next")
    before = session(at).generation
    at = at.number_input(key=key).set_value(value).run()
    no_exception(at)
    assert any(words in t and "Nothing changed" in t for t in texts(at.error)), texts(at.error)
    assert (session(at).generation.keep, session(at).generation.steps, session(at).generation.many) == (
        before.keep,
        before.steps,
        before.many,
    )
    in_force = before.keep if key.endswith("keep") else before.many
    assert at.number_input(key=key).value == in_force  # the box shows the value in force
    assert len(_generated(at)) == 1


def test_a_shorter_prompt_then_a_new_text_start_again() -> None:
    at = journey("generate")
    ids = session(at).inside.ids
    at = at.number_input(key="inside.w.gen.keep").set_value(5).run()
    at = _press(at, "inside.gen.b.next")
    _check_against_the_engine(at, list(ids[:5]), 1)
    at = goto(at, "every_head")  # a page switch keeps the generation
    at = goto(at, "generate")
    assert session(at).generation.steps == 1 and at.number_input(key="inside.w.gen.keep").value == 5
    labels = list(models.ready_made(models.BUILTIN))
    at = at.selectbox(key="inside.w.sequence").set_value(labels[1]).run()
    no_exception(at)
    assert session(at).generation.steps == 0 and session(at).generation.keep == 15
    assert any("The text changed, so the generation started again" in t for t in texts(at.info))
    _check_against_the_engine(at, list(models.ready_made(models.BUILTIN)[labels[1]][:15]), 0)


def test_a_change_of_model_starts_again_with_that_models_own_sizes() -> None:
    cfg = Config(vocab_size=12, n_ctx=10, d_model=12, n_layers=3, n_heads=3, d_mlp=24, positions="learned")
    other = Model(cfg, init_params(cfg, 4, std=0.5), WordVocab([f"w{i}" for i in range(12)]), name="other")
    held = models.hold(other, "trained")
    at = app("generate")
    at = _press(at, "inside.gen.b.next")
    put_inside(at, model=held)  # as a model chooser would set it, with a text of that model's
    put_inside(at, ids=(1, 2, 3, 4, 5, 6))
    at = at.run()
    no_exception(at)
    assert any("The model changed, so the generation started again" in t for t in texts(at.info))
    assert session(at).generation.steps == 0 and session(at).generation.keep == 6
    at = _press(at, "inside.gen.b.end")
    assert session(at).generation.steps == 4  # up to that model's context of 10
    tokens = other.generate([1, 2, 3, 4, 5, 6], 4)
    assert _generated(at) == other.pieces(tokens[6:])
    run = other.run(tokens)
    rows = _cells(_chart(at, "row"))  # 3 layers × 3 heads = 9 rows: every layer fits
    np.testing.assert_allclose(rows, run.weights[:, :, -1].reshape(9, 10), rtol=1e-9, atol=1e-12)
    shown = "\n".join(texts(at.markdown))
    assert f"({3 * 2 * 3 * 4 * 10 * 8:,} B)" in shown  # 3 layers × 2 × 3 heads × d_head 4 × 10 tokens × 8 bytes


def test_a_press_makes_at_most_what_the_models_size_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A token reads every weight once: a large model makes fewer tokens a press (counted from the engine's own
    parameters here), and the page says so; the next press goes on from there."""
    from attention.model import param_shapes
    from attention.ui.state import generation

    c = ENGINE.config
    shapes = param_shapes(c)
    read = sum(int(np.prod(shapes[f"{layer}.{w}"])) for layer in range(L) for w in ("W_q", "W_k", "W_v", "W_o"))
    read += int(np.prod(shapes["W_U"]))  # attention-only: no MLP
    assert generation.weights_per_token(c) == read
    gpt2_small = Config(vocab_size=50257, n_ctx=1024, d_model=768, n_layers=12, n_heads=12, d_mlp=3072)
    assert generation.weights_per_token(gpt2_small) == 123_532_032  # GPT-2 small without its embeddings' lookups
    monkeypatch.setattr(generation, "PRESS_WORK", 3 * read + 5)  # as if the shipped model were large: 3 a press
    at = app("generate")
    at = _press(at, "inside.gen.b.end")
    assert session(at).generation.steps == 3
    assert any(
        f"Made 3 tokens (at most 3 a press with this model: each token reads all its {read:,} weights)" in t
        for t in texts(at.info)
    ), texts(at.info)
    at = _press(at, "inside.gen.b.end")
    _check_against_the_engine(at, list(session(at).inside.ids[:15]), 6)


def test_ablations_made_on_every_head_are_named_and_not_applied() -> None:
    at = journey("every_head")
    at = _press(at, "inside.toggle.1.0")
    at = goto(at, "generate")
    no_exception(at)
    assert any(
        t.startswith("Ablated on Every head: layer 2 · head 1. Generation here runs the whole model")
        for t in texts(at.caption)
    )
    _check_against_the_engine(at, list(session(at).inside.ids[:15]), 0)  # the engine's unablated numbers


def test_a_full_context_disables_the_generate_buttons_and_says_why() -> None:
    """When 0 more tokens fit, Next token, Generate N and Generate to the end are disabled and the page says why;
    Start again (or a shorter prompt) enables them again."""
    at = app("generate")
    made = ("inside.gen.b.next", "inside.gen.b.many", "inside.gen.b.end")
    assert not any(at.button(key=k).disabled for k in made)
    at = _press(at, "inside.gen.b.end")  # the context of 24 is full
    assert all(at.button(key=k).disabled for k in made)
    assert not at.button(key="inside.gen.b.again").disabled
    said = "\n".join(texts(at.caption) + texts(at.markdown))
    assert "The context of 24 tokens is full" in said and "Start again" in said, said
    at = _press(at, "inside.gen.b.again")
    assert not any(at.button(key=k).disabled for k in made)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("inside.w.gen.many", 300, "Generate makes 1 to 256 tokens a press with this model; 300 is not one of them"),
        ("inside.w.gen.keep", 99, "The prompt keeps 1 to 23 tokens of the text; 99 is not one of them"),
    ],
)
def test_a_value_refused_as_a_button_is_pressed_is_still_said(key: str, value: int, words: str) -> None:
    """A number typed and a button pressed at once (the box's value and the press reach the page in one run, the
    box's callback first): the refusal is still said, with what the press made. The press had wiped it: 10 typed
    into Generate's box made 5, without a word."""
    at = app("generate")
    before = session(at).generation
    at.number_input(key=key).set_value(value)
    at = _press(at, "inside.gen.b.many")
    said = [t for t in texts(at.warning)]
    assert any(words in t and f"This press made {before.many} tokens" in t for t in said), (said, texts(at.error))
    assert session(at).generation.steps == before.many and session(at).generation.many == before.many
    at = _press(at, "inside.gen.b.next")  # the next action: the refusal has been answered and goes
    assert not [t for t in texts(at.warning) if words in t]


def test_a_grouped_query_model_shows_its_cache_by_key_value_head(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """A Llama with grouped-query attention (4 query heads sharing 2 key/value heads) keeps 2 K and 2 V rows per
    layer, not 4: the new row's numbers name each key/value head with the query heads sharing it, and equal the
    engine's own cache (prefill's K and V), and the caption counts the key/value heads."""
    from attention.model import load
    from attention.ui.core import keys
    from tests.helpers.families import tiny_llama

    folder = tiny_llama(tmp_path / "llama")
    monkeypatch.setenv("ATTENTION_MODELS", f"tiny={folder}")
    at = journey("generate")
    at = at.selectbox(key=keys.INSIDE_MODEL).set_value("server:tiny").run()
    no_exception(at)
    ids = list(session(at).inside.ids)[: session(at).generation.keep]  # the prompt: the text's first tokens
    _, cache = load(folder).prefill(ids)
    tables = [d.value for d in at.dataframe if any("K/V head" in str(r) for r in d.value.index)]
    assert len(tables) == 1, [list(d.value.index)[:3] for d in at.dataframe]
    table = tables[0]
    assert len(table) % 4 == 0 and not any("· head 3" in str(r) for r in table.index), table.index  # 2 K/V heads
    K, V = cache[0]  # (2, n, d_head) each
    for g in range(2):
        name = f"layer 1 · K/V head {g + 1} (heads {2 * g + 1}–{2 * g + 2})"
        np.testing.assert_allclose(table.loc[f"{name} · K"].to_numpy(float), K[g, -1], atol=6e-5)  # shown to 4 places
        np.testing.assert_allclose(table.loc[f"{name} · V"].to_numpy(float), V[g, -1], atol=6e-5)
    assert any("2 key/value heads (each shared by 2 query heads)" in c for c in texts(at.caption)), texts(at.caption)
