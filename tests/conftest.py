"""Shared test setup: make the repo root importable (``import attention``) without installing it, list no models
folder (the developer's own fetched models would change what the model chooser offers), and the fixtures more than
one tier uses (the small GPT-2 checkpoints, made with transformers only when a test asks)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# a folder that does not exist: the app lists nothing from it, here and in the servers the tests start
os.environ["ATTENTION_MODELS_DIR"] = str(ROOT / "tests" / "no-models-folder")

from tests.helpers.gpt2 import tiny_gpt2, wide_gpt2  # noqa: E402 - after the root is importable


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A tiny random GPT-2 folder (2 layers, 4 heads, d = 64) and its torch model (tests.helpers.gpt2)."""
    return tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2"))


@pytest.fixture(scope="module")
def wide(gpt2, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A random GPT-2 of 3 layers × 6 heads with the tiny one's tokenizer (tests.helpers.gpt2)."""
    return wide_gpt2(gpt2, tmp_path_factory.mktemp("wide_gpt2"))
