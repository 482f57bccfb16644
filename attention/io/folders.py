"""The folders of JSON files that ship with the engine: the examples (presets) and the built-in challenges.

In a checkout they are top-level folders beside ``attention/``; an installed package carries them inside itself, as
``attention/presets`` and ``attention/challenges`` (pyproject.toml maps them). The installed copy is used where it is.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # attention/


def shipped_folder(name: str) -> Path:
    """The folder ``name`` ("presets" or "challenges"): inside the installed package, else beside it in a checkout."""
    inside = PACKAGE / name
    return inside if inside.is_dir() else PACKAGE.parent / name
