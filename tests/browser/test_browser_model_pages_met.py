"""Real headless Chromium: what a person met on the model pages (issue 33 §6). Generate's model chooser shows the
model in use after a model was chosen on Every head (and choosing the shipped one then opens it); on Watch it learn
the "snapshot shown" and "phase change" labels never print on top of each other."""

from __future__ import annotations

import os

import pytest

from tests.helpers.browser import CHROMIUM, SHOTS, error_texts, guarded_context, nav, rerun, settle, streamlit_server

pytestmark = pytest.mark.browser
if not os.path.exists(CHROMIUM):
    pytestmark = [pytest.mark.browser, pytest.mark.skip(reason=f"{CHROMIUM} not installed")]


@pytest.fixture(scope="module")
def served(gpt2):  # noqa: F811
    """A server whose owner lists the tiny GPT-2 as "tiny" (the environment's setting); its base URL."""
    old = os.environ.get("ATTENTION_MODELS")
    os.environ["ATTENTION_MODELS"] = f"tiny={gpt2[0]}"
    try:
        with streamlit_server() as url:  # the server copies the environment when it starts
            yield url
    finally:
        if old is None:
            os.environ.pop("ATTENTION_MODELS")
        else:
            os.environ["ATTENTION_MODELS"] = old


def _model_box(pg):
    return pg.get_by_test_id("stSelectbox").filter(has_text="Model").first


def _shown(pg) -> str:
    """The model the chooser shows: its input's value."""
    return _model_box(pg).locator("input").first.input_value()


def _choose(pg, label: str) -> None:
    box = _model_box(pg).locator("input").first
    box.scroll_into_view_if_needed()
    option = pg.get_by_role("option").filter(has_text=label).first
    for _ in range(10):  # a list opened while the page still scrolls closes again: open it until it stays
        box.click()
        try:
            option.wait_for(state="visible", timeout=2_000)
            break
        except Exception:
            pg.keyboard.press("Escape")
    with rerun(pg):
        option.click()
    assert not error_texts(pg), error_texts(pg)


def test_generates_chooser_shows_the_model_chosen_on_every_head(browser, served) -> None:
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as context:
        pg = context.new_page()
        pg.goto(f"{served}/every_head")
        settle(pg)
        _choose(pg, "tiny (on this server)")
        assert "tiny (on this server)" in _shown(pg)
        nav(pg, "Generate")
        shown = _shown(pg)
        assert "tiny (on this server)" in shown and "shipped" not in shown, shown
        assert "tiny, a checkpoint on this server" in pg.inner_text("body")
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SHOTS / "met_generate_chooser_1280.png"))
        _choose(pg, "The shipped induction model")  # it opens: the page now describes the shipped model
        assert "The shipped model, attention only" in pg.inner_text("body")
        assert "shipped" in _shown(pg)
