"""The browser tier's fixtures: a `streamlit run` server per module, headless Chromium, a guarded page, axe-core."""

from __future__ import annotations

import pytest

from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, SHOTS, guarded_context, streamlit_server


@pytest.fixture(scope="module")
def base_url():
    with streamlit_server() as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)  # screenshots land here whichever browser test runs first
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A page of a guarded context: at the end no request has left the machine and no console error was logged."""
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}, accept_downloads=True) as context:
        yield context.new_page()


@pytest.fixture(scope="module")
def axe_script() -> str:
    from axe_playwright_python.base import AXE_SCRIPT

    assert "axe v4." in AXE_SCRIPT[:200]  # the package's own copy of axe-core, read from disk
    return AXE_SCRIPT
