"""Real headless Chromium: a server GPT-2 folder (listed in the server's environment) chosen in the model chooser, its
every head's heatmap readable and drawn, then the First token page on it; at 1280 × 720 and 1400 × 1000; axe-core."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from tests.helpers.browser import (
    CHARTS,
    SHOTS,
    check,
    choose_model,
    error_texts,
    guarded_context,
    nav_link,
    rerun,
    settle,
    streamlit_server,
    wait_readable,
)


@pytest.fixture(scope="module")
def served(gpt2, wide):  # noqa: F811
    """A server whose owner lists the tiny GPT-2 as "tiny" and a 3 × 6-head one as "wide" (the environment's setting);
    its base URL, the tiny folder and its torch model."""
    folder, model = gpt2
    old = os.environ.get("ATTENTION_MODELS")
    os.environ["ATTENTION_MODELS"] = f"tiny={folder};wide={wide[0]}"
    try:
        with streamlit_server() as url:  # the server copies the environment when it starts
            if old is None:
                os.environ.pop("ATTENTION_MODELS")
            else:
                os.environ["ATTENTION_MODELS"] = old
            yield url, folder, model
    finally:
        if old is not None:
            os.environ["ATTENTION_MODELS"] = old


def _torch_sink(model: object, ids: list[int]) -> np.ndarray:
    import torch

    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)  # type: ignore[operator]
    return np.stack([a[0, :, 1:, 0].mean(-1).numpy() for a in out.attentions])  # (L, H)


@pytest.mark.parametrize("viewport", [(1280, 720), (1400, 1000)], ids=["1280x720", "1400x1000"])
def test_a_server_gpt2_opened_and_every_head_drawn(browser, served, axe_script, viewport) -> None:  # noqa: F811
    url, folder, model = served
    from tokenizers import Tokenizer

    half = Tokenizer.from_file(str(folder / "tokenizer.json")).encode("The cat sat on the mat.").ids
    ids = half + half
    w, h = viewport
    with guarded_context(browser, viewport={"width": w, "height": h}) as context:
        pg = context.new_page()
        pg.goto(f"{url}/every_head")
        settle(pg)
        wait_readable(pg, 2)
        choose_model(pg, "tiny (on this server)")
        wait_readable(pg, 2)  # 2 layers × 4 heads, a chart a layer, readable and not blank
        body = pg.inner_text("body")
        assert "tiny, a checkpoint on this server: 2 layers × 4 heads" in body
        typed = pg.get_by_label(re.compile("^Type a text")).input_value()  # the new model's text, not the old words
        assert typed == "The cat sat on the mat.The cat sat on the mat.", typed
        assert f"{len(ids)} tokens:" in body and "␣" in body  # the BPE pieces, spaces made visible
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.get_by_test_id("stSelectbox").filter(has_text="Model").first.scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / f"checkpoints_every_head_{w}.png"), full_page=False)
        pg.locator(CHARTS).nth(0).scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / f"checkpoints_every_head_heads_{w}.png"))
        if w == 1400:
            check(pg, axe_script, "every_head on a server GPT-2")
        # the First token page, through the navigation (the same session, the same model)
        link = nav_link(pg, "First token")
        with rerun(pg):
            link.click()
        wait_readable(pg, 2)
        sink = _torch_sink(model, ids)
        layer, head = np.unravel_index(np.argmax(sink), sink.shape)
        body = pg.inner_text("body")
        assert f"layer {layer + 1} · head {head + 1}, a mean of {sink[layer, head]:.2f}" in body, body[:2000]
        pg.screenshot(path=str(SHOTS / f"checkpoints_first_token_{w}.png"))
        if w == 1400:
            check(pg, axe_script, "first_token on a server GPT-2")


def test_a_model_with_many_heads_draws_the_score_grids_then_one_layer(browser, served, axe_script) -> None:  # noqa: F811
    url, _, _ = served
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as context:
        pg = context.new_page()
        pg.goto(f"{url}/every_head")
        settle(pg)
        wait_readable(pg, 2)
        choose_model(pg, "wide (on this server)")
        wait_readable(pg, 4)  # three 3 × 6 score grids, then layer 1's six heads as one chart
        pg.locator(CHARTS).nth(0).scroll_into_view_if_needed()
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SHOTS / "checkpoints_many_heads_1280.png"))
        check(pg, axe_script, "every_head on a model with 18 heads")


def test_an_upload_in_the_browser_opens_and_a_pickle_is_refused(browser, served, tmp_path) -> None:  # noqa: F811
    url, folder, _ = served
    pickle = tmp_path / "pytorch_model.bin"
    pickle.write_bytes(b"\x80\x04K\x01.")
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        pg.goto(f"{url}/every_head")
        settle(pg)
        wait_readable(pg, 2)
        pg.get_by_text("Upload a small checkpoint").click()
        chooser = pg.locator("input[type='file']").first
        with rerun(pg):
            chooser.set_input_files([str(pickle)])
        said = " ".join(error_texts(pg))
        assert "The upload was not opened: pytorch_model.bin: pickled weights are never opened" in said, said
        assert "Nothing changed" in said
        wait_readable(pg, 2)  # still the shipped model
        with rerun(pg):
            pg.locator("input[type='file']").first.set_input_files(
                [str(folder / n) for n in ("config.json", "model.safetensors", "tokenizer.json")]
            )
        assert not error_texts(pg), error_texts(pg)
        wait_readable(pg, 2)
        body = pg.inner_text("body")
        assert "An uploaded or trained model cannot travel in a link" in body
        shown = pg.get_by_test_id("stSelectbox").filter(has_text="Model").first
        named = shown.inner_text() + " " + " ".join(shown.locator("input").evaluate_all("els => els.map(e => e.value)"))
        assert "Uploaded files (2 layers × 4 heads," in named, named  # the chooser names it
        pg.get_by_test_id("stSelectbox").filter(has_text="Model").first.scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / "checkpoints_uploaded_1400.png"))
