"""Fixtures of the oracle tier: each family's tiny transformers-made model, and a tiny Llama folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.families import Made, tiny_llama


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Made]:
    """Each family's Made, built on first use."""
    root, built = tmp_path_factory.mktemp("families"), {}

    def get(family: str) -> Made:
        if family not in built:
            built[family] = Made(family, root)
        return built[family]

    return get




@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama folder (vocabulary 512, grouped heads) with a Llama-style tokenizer; the tests copy it."""
    return tiny_llama(tmp_path_factory.mktemp("llama") / "tiny-llama")
