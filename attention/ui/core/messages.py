"""The messages left for each input (a refusal, a note on what changed), read for the page being drawn.

A message belongs to the input that caused it and to the page it was left on; :mod:`attention.ui.state` writes them.
"""

from __future__ import annotations

from streamlit.runtime.scriptrunner import get_script_run_ctx

from .session import get


def page_id() -> str:
    """Which page this run draws (its script's hash; a widget's callback runs in the run of the page it is on)."""
    ctx = get_script_run_ctx()
    return "" if ctx is None else ctx.page_script_hash


def messages(prefix: str) -> list[tuple[str, str]]:
    """(kind, text) of the messages still current at places starting with ``prefix`` and left on this page, oldest
    first."""
    s, page = get(), page_id()
    return [
        (kind, text)
        for place, (epoch, kind, text, where) in s.messages.items()
        if place.startswith(prefix) and epoch == s.epoch and where in (page, "*")
    ]
