"""Where a doc or a docstring states a list, a count or a file's content, the code it describes is read here and
held against it: the families that open, ..."""

from __future__ import annotations

import re

import pytest

from attention.model.families import FAMILIES
from tests.helpers import ROOT

TITLES = sorted({f.title for f in FAMILIES.values()})
FAMILY_LISTS = {  # file -> the words that open its list of the families that open (titles, or model_types)
    "README.md": ("open checkpoint folders of", TITLES),
    "docs/models.md": ("It opens checkpoint folders of", TITLES),
    "docs/architecture.md": ("every family (", TITLES),
    "attention/model/__init__.py": ("(a checkpoint folder of", TITLES),
    "attention/model/checkpoint.py": ("read by model_type (", sorted(FAMILIES)),
}


def _after(path: str, opening: str, length: int = 220) -> str:
    """The ``length`` characters after ``opening`` in the file, whitespace made single spaces."""
    text = re.sub(r"\s+", " ", (ROOT / path).read_text(encoding="utf-8"))
    assert opening in text, f"{path} no longer says {opening!r}"
    return text[text.index(opening) + len(opening) :][:length]


@pytest.mark.parametrize("path", sorted(FAMILY_LISTS))
def test_each_list_of_the_families_that_open_names_every_family(path) -> None:
    opening, names = FAMILY_LISTS[path]
    listed = _after(path, opening)
    missing = [name for name in names if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", listed)]
    assert not missing, f"{path}'s list of the families ({listed!r}) lacks {missing}"
