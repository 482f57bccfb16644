"""The models folder: where the fetch command writes checkpoints, and the folders in it the app's chooser offers.

``python -m attention.model.fetch`` writes one folder a model into ``models`` in the working folder, or into the
folder named by the environment variable :data:`FOLDER_ENV`. A model's folder is listed under its own name, as
``server:NAME``, when the name is :func:`plain` (ASCII letters, digits, '-', '_' or '.', at most :data:`MAX_NAME`, not
starting with '.'): a download still under way is in a hidden sibling (:func:`partial`), renamed to its name only
when complete, so a half-written model is never listed. Listing reads names only: a folder that does not open says
so when it is chosen.
"""

from __future__ import annotations

import os
from pathlib import Path

FOLDER_ENV = "ATTENTION_MODELS_DIR"
DEFAULT_FOLDER = "models"
MAX_NAME = 40  # a model's name, as listed
MAX_LISTED = 100  # folders offered at most, the first by name
MAX_SCANNED = 1000  # entries read at most: a wrong folder is not walked to its end


def folder() -> Path:
    """The models folder: $ATTENTION_MODELS_DIR, else ``models`` in the working folder."""
    return Path(os.environ.get(FOLDER_ENV, "").strip() or DEFAULT_FOLDER).expanduser()


def plain(name: str) -> bool:
    """Whether ``name`` can name a model: 1 to MAX_NAME ASCII letters, digits, '-', '_' or '.', not hidden."""
    return (
        0 < len(name) <= MAX_NAME
        and not name.startswith(".")
        and all(c.isascii() and (c.isalnum() or c in "-_.") for c in name)
    )


def partial(root: Path, name: str) -> Path:
    """The hidden sibling a model is downloaded into before it is renamed to ``root / name``."""
    return root / f".{name}.partial"


def listed(root: Path | None = None) -> dict[str, Path]:
    """The model folders in the models folder, by name (plain names only, at most MAX_LISTED); none if it is absent."""
    root = folder() if root is None else root
    names = []
    try:
        with os.scandir(root) as entries:
            for count, entry in enumerate(entries):
                if count >= MAX_SCANNED:
                    break
                if plain(entry.name) and entry.is_dir():
                    names.append(entry.name)
    except OSError:  # no models folder (nothing fetched yet), or one that cannot be read
        return {}
    return {name: root / name for name in sorted(names)[:MAX_LISTED]}
