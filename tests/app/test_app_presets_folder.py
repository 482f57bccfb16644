"""A preset file dropped into the presets folder is listed and selectable in the app (moved from the engine tier's
tests/engine/test_architecture.py, whose other preset checks need no Streamlit)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attention.io import presets as presets_mod
from tests.helpers.apptest import journey, no_exception, select, session


def test_a_new_preset_file_is_listed_and_selectable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dropping a JSON file into (a copy of) presets/ makes it a preset, in the order and with the label it gives."""
    folder = tmp_path / "presets"
    shutil.copytree(presets_mod.PRESET_DIR, folder)
    data = json.loads((folder / "the_cat_sat.json").read_text(encoding="utf-8"))
    data.update(id="my_new_one", title="My new one", label="A brand new preset", order=2.5)
    (folder / "my_new_one.json").write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(presets_mod, "PRESET_DIR", folder)
    ids = presets_mod.list_presets()
    assert ids.index("my_new_one") == ids.index("the_cat_sat") + 1  # order 2.5 sits between 2 and 3
    assert presets_mod.preset_label("my_new_one") == "A brand new preset"
    at = journey("softmax")
    assert "A brand new preset" in at.selectbox(key="sb.preset").options
    at = select(at, "sb.preset", "my_new_one")
    no_exception(at)
    assert session(at).preset_id == "my_new_one"
    assert session(at).tokens == ("The", "cat", "sat")
