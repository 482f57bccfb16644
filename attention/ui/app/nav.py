"""The navigation: the pages (labelled as the steps, from the specs) declared once and the chosen one run."""

from __future__ import annotations

import threading
from pathlib import Path

import streamlit as st

from .specs import INSIDE, LABS, NAV, OVERVIEW, STEPS

ROOT = Path(__file__).resolve().parents[3]
_RUNNING = (
    threading.local()
)  # True while the entry point's navigation runs a page (each session runs on its own thread)


def navigation() -> None:
    """Declare the pages and run the chosen one. Called by the entry point; a page that Streamlit runs on
    its own (a direct URL served from ``pages/`` before any session has run the entry point, or AppTest)
    declares the same navigation in :func:`bootstrap`."""
    _RUNNING.active = True
    try:
        st.navigation(sections(pages()), position="top").run()
    finally:
        _RUNNING.active = False


def pages() -> list:
    return [
        st.Page(ROOT / path, title=label, url_path=_url_path(path), default=(path == OVERVIEW)) for path, label in NAV
    ]


def editing_page(name: str):
    """The declared page whose step draws matrix ``name``'s editor at the page's width (X: Tokens; W_q, W_k and W_v:
    Weights), or None."""
    files = {step.file for step in STEPS.values() if name in step.editors}
    return next((p for (path, _), p in zip(NAV, pages(), strict=True) if path in files), None)


def sections(declared: list) -> dict[str, list]:
    """The pages in the navigation bar's groups at the top of every page (one menu per group): the overview and the
    steps, then the pages that go further, then the pages inside a model."""
    further = {lab.file for lab in LABS.values()}
    model = {lab.file for lab in INSIDE.values()}
    steps = [page for (path, _), page in zip(NAV, declared, strict=True) if path not in further | model]
    labs = [page for (path, _), page in zip(NAV, declared, strict=True) if path in further]
    inside = [page for (path, _), page in zip(NAV, declared, strict=True) if path in model]
    return {"Step by step": steps, "Go further": labs, "Inside a model": inside}


def _url_path(path: str) -> str:
    return path.split("_", 1)[1].removesuffix(".py")


def _in_browser() -> bool:
    """False under AppTest, which runs a page file directly and has no browser behind it."""
    try:
        return st.context.headers.get("Host") is not None
    except Exception:  # noqa: BLE001 - no request context at all
        return False


def bootstrap(page_file: str) -> None:
    """When Streamlit ran this page file on its own, declare the same navigation; in a browser session,
    switch to this page through it at once, so every later run of the session (and every widget's
    identity) is the same as when the app is entered through streamlit_app.py."""
    if getattr(_RUNNING, "active", False):
        return
    declared = pages()
    st.navigation(sections(declared), position="top")
    if _in_browser():
        st.switch_page(declared[[path for path, _ in NAV].index(page_file)], query_params=st.query_params.to_dict())
