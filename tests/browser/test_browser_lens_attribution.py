"""Real headless Chromium: the Logit lens and Attribution pages on the shipped model and on a server GPT-2 (its MLPs'
bars), at 1280 × 720 and 1400 × 1000: every chart readable (box, plot, 12 px text, nothing cut, pixels not blank),
its axis labels all written, axe-core; the journey (the prediction becomes top 1 at layer 2, layer 2 · head 1 has
the largest share) and a click on a head in the heatmap opening it on the step pages."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from attention import charts
from attention.model import attribute, builtin, induction
from tests.helpers.browser import CHARTS, check, click_opens_head, guarded_context, open_charts, shot, streamlit_server
from tests.helpers.visible import CANVAS_HOOK, LARGE, VIEWPORT_IDS, VIEWPORTS, chart_texts, check_page

# (page, model in the address, the labels each chart must write)
LAYERS, HEADS = ["layer 1", "layer 2"], ["head 1", "head 2"]
WIDE = ([f"layer {k}" for k in range(1, 31)], [f"head {k}" for k in range(1, 10)])  # a SmolLM2-shaped model's
CASES = {
    "lens, shipped": ("logit_lens", "", [["embeddings", *LAYERS, "read after", "probability"]]),
    "attribution, shipped": ("attribution", "", [[*LAYERS, *HEADS]]),
    "lens, GPT-2": ("logit_lens", "server:tiny", [["embeddings", *LAYERS, "read after", "probability"]]),
    "attribution, GPT-2": (
        "attribution",
        "server:tiny",
        [[*LAYERS, *HEADS, "head 3", "head 4"], [*LAYERS, "MLP of", "share of the logit"]],
    ),
    "lens, 30 × 9": ("logit_lens", "server:smol", [["embeddings", *WIDE[0]]]),
    "attribution, 30 × 9": ("attribution", "server:smol", [[*WIDE[0], *WIDE[1]], [*WIDE[0], "MLP of"]]),
}


def _smol(folder: Path) -> list[int]:
    """A random Llama of SmolLM2's shape (30 layers × 9 query heads, 3 key/value heads), narrow (d = 72), with a
    Llama-style tokenizer; the ids of a repeated sentence."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.helpers.families import llama_tokenizer

    torch.manual_seed(0)
    sizes = dict(vocab_size=512, hidden_size=72, intermediate_size=96, num_hidden_layers=30, num_attention_heads=9)
    cfg = LlamaConfig(**sizes, num_key_value_heads=3, max_position_embeddings=64, bos_token_id=1, eos_token_id=2)
    LlamaForCausalLM(cfg).save_pretrained(str(folder), safe_serialization=True)
    llama_tokenizer(folder)
    from attention.model import load

    ids = load(folder).encode("the cat sat on the mat and the dog")
    return ids + ids[1:]


@pytest.fixture(scope="module")
def served(gpt2, tmp_path_factory):  # noqa: F811
    """A server whose owner lists the tiny GPT-2 as "tiny" and a SmolLM2-shaped model as "smol" (the environment's
    setting); its base URL, and each model's text in an address (a repeated sentence, as token ids)."""
    from tokenizers import Tokenizer

    folder, _ = gpt2
    half = Tokenizer.from_file(str(folder / "tokenizer.json")).encode("The cat sat on the mat.").ids
    smol = tmp_path_factory.mktemp("smol")
    texts = {"server:tiny": half + half, "server:smol": _smol(smol)}
    old = os.environ.get("ATTENTION_MODELS")
    os.environ["ATTENTION_MODELS"] = f"tiny={folder};smol={smol}"
    try:
        with streamlit_server() as url:  # the server copies the environment when it starts
            yield url, {k: ".".join(str(i) for i in ids) for k, ids in texts.items()}
    finally:
        os.environ.pop("ATTENTION_MODELS")
        if old is not None:
            os.environ["ATTENTION_MODELS"] = old


def _open(pg, served: tuple[str, dict[str, str]], page: str, model: str, charts_drawn: int) -> None:
    url, texts = served
    open_charts(pg, f"{url}/{page}" + (f"?model={model}&ids={texts[model]}" if model else ""), charts_drawn)


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=VIEWPORT_IDS)
@pytest.mark.parametrize("case", list(CASES))
def test_every_chart_is_readable_and_labelled(browser, served, axe_script, case: str, viewport) -> None:  # noqa: F811
    page, model, labels = CASES[case]
    with guarded_context(browser, viewport={"width": viewport[0], "height": viewport[1]}) as context:
        pg = context.new_page()
        pg.add_init_script(CANVAS_HOOK)
        _open(pg, served, page, model, len(labels))
        assert ("position 13 (“fa”)" in pg.inner_text("body")) != bool(model)  # the shipped model's 13th token
        problems = check_page(pg, page, "1 head, 6 tokens", viewport)
        assert not problems, "\n".join(problems)
        written = chart_texts(pg, shown=True)
        assert len(written) == len(labels)
        for k, (want, got) in enumerate(zip(labels, written, strict=True)):
            missing = [w for w in want if w not in got]
            assert not missing, f"chart {k + 1} does not write {missing}: {got[:40]}"
        shot(pg, f"{page}_{model.removeprefix('server:') or 'shipped'}_{viewport[0]}", pg.locator(CHARTS).first)
        if viewport == LARGE:
            check(pg, axe_script, case)


def test_the_journey_and_a_click_on_a_head_opens_it(browser, served) -> None:  # noqa: F811
    ids = [int(i) for i in induction.history("induction")["example"]]  # the pages' first ready-made sequence
    t = len(ids) // 2  # the first token of the repeat: the position the pages start at
    a = attribute(builtin("induction").run(ids), t)
    layer, head = np.unravel_index(np.argmax(a.heads), a.heads.shape)
    assert (layer, head) == (1, 0)
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as context:
        pg = context.new_page()
        _open(pg, served, "logit_lens", "", 1)
        # 1. the lens shows the prediction becoming top 1 at layer 2
        assert "it first becomes the top token at layer 2" in pg.inner_text("body")
        _open(pg, served, "attribution", "", 1)
        # 2. the attribution names layer 2 · head 1 as the largest share
        assert "The largest share of a head: layer 2 · head 1" in pg.inner_text("body")
        chart = pg.locator(CHARTS).first
        chart.scroll_into_view_if_needed()
        shown = charts.decimals_for(a.heads, 4).format(a.heads[1, 0])  # the number written in its cell
        cell = chart.locator("svg text").filter(has_text=shown).first
        box = cell.bounding_box()
        assert box is not None, f"{shown} is written in layer 2 · head 1's cell"
        click_opens_head(pg, box, "layer 2 · head 1", "attribution_clicked_1280")
