"""The mask inside the app is a tuple of parts; files and links spell it joined ("causal+padding")."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from attention import masks
from attention.errors import AttentionError
from attention.io.presets import load_preset
from attention.options import Options


@pytest.mark.parametrize("kind", masks.KINDS)
def test_a_kind_as_files_spell_it_is_held_as_its_parts_and_written_back_the_same(kind: str) -> None:
    o = Options(mask=kind)
    want = () if kind == "none" else tuple(kind.split("+"))  # the spelling, split by hand
    assert o.mask == want and isinstance(o.mask, tuple)
    assert o.to_dict()["mask"] == kind  # the file field is the joined string, "none" for no part
    assert Options.from_dict({"mask": kind}) == o == Options(mask=want)
    assert o.replace(mask=kind) == o


@pytest.mark.parametrize("bad", ["padding+causal", "diag", "causal+", "", ["causal"], ("padding", "causal"), 3])
def test_a_mask_that_is_no_kind_is_refused_with_the_kinds_named(bad: object) -> None:
    with pytest.raises(AttentionError, match=r"^mask must be one of none, causal, padding, custom, window, causal\+"):
        Options(mask=bad).validate()  # type: ignore[arg-type]


def test_a_preset_file_keeps_its_mask_field_spelled_joined() -> None:
    preset = load_preset("the_cat_sat")
    o = preset.options.replace(mask="causal+window")
    written = json.loads(replace(preset, options=o).to_json())
    assert written["options"]["mask"] == "causal+window" and written["options"]["window"] == o.window
