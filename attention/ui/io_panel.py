"""Bring your own numbers, take them home as code (issue 5): upload/paste matrices, load a preset
file, export the state as a Python script or notebook, and a shareable link carrying small edits.

Hooks called by the page frame (attention/ui/page.py) and state (attention/ui/state.py):
- ``matrix_import(name, rows, cols)``: under each matrix editor (X, W_q, W_k, W_v).
- ``sidebar_tools()``: in the sidebar, after the controls.
- ``restore_link_edits(session)``: once, when a session is created from the URL.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import state


def matrix_import(name: str, rows: Sequence[str], cols: Sequence[str]) -> None:
    """Upload a CSV or paste a numpy literal for one matrix (to be built)."""


def sidebar_tools() -> None:
    """Preset file upload, export as code / notebook, copy link (to be built)."""


def restore_link_edits(session: state.Session) -> None:
    """Apply edits carried by the URL's ``edits`` parameter (to be built)."""
