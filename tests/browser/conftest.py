"""The browser tier's fixtures: a `streamlit run` server per module, headless Chromium, a guarded page, axe-core; and
its one marker: every test here is marked ``browser``, and skipped, saying why, on a machine without Chromium."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, SHOTS, guarded_context, streamlit_server

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items) -> None:  # noqa: ARG001 - pytest's hook signature
    """Mark this tier's tests ``browser``; skip them where Chromium is missing (CI installs it, and counts them)."""
    missing = not os.path.exists(CHROMIUM)
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.browser)
            if missing:
                item.add_marker(pytest.mark.skip(reason=f"{CHROMIUM} not installed (apt-get install -y chromium)"))


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
