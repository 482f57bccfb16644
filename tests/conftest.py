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

# The files that take longest, longest first (`python -m pytest -n 3 --durations=80` on a quiet 2-core machine,
# 2026-12-07: the KV cache page's study at 2,046 tokens alone took 442 s). Run in parallel, each file goes whole to a
# worker in this order, so no worker is left alone with a long file at the end while the others wait.
LONGEST_FIRST = (
    "tests/browser/test_browser_kv_cache.py",
    "tests/oracles/test_model_real.py",
    "tests/browser/test_browser_long_pages.py",
    "tests/browser/test_browser_every_head_long.py",
    "tests/oracles/test_kvcache_real.py",
    "tests/browser/test_browser_visible.py",
    "tests/browser/test_browser_a11y.py",
    "tests/browser/test_browser_editing.py",
    "tests/oracles/test_atp_real.py",
)


@pytest.hookimpl(tryfirst=True)  # before stepwise and the like choose among the items, so they see this order
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first, the rest in their usual order (the sort keeps the order of equal keys)."""
    rank = {path: k for k, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A tiny random GPT-2 folder (2 layers, 4 heads, d = 64) and its torch model (tests.helpers.gpt2)."""
    return tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2"))


@pytest.fixture(scope="module")
def wide(gpt2, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A random GPT-2 of 3 layers × 6 heads with the tiny one's tokenizer (tests.helpers.gpt2)."""
    return wide_gpt2(gpt2, tmp_path_factory.mktemp("wide_gpt2"))
