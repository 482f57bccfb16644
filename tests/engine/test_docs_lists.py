"""Where a doc or a docstring states a list, a count or a file's content, the code it describes is read here and
held against it: the families that open, the length of a page's file, the engine tier's count in the README."""

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


WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
TEXTS = sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("attention/**/*.py")])


def test_what_a_doc_says_of_a_pages_file_is_its_length() -> None:
    """Where a doc says "a two-line file in pages/", every page file is that many lines of code."""
    pages = sorted(ROOT.glob("pages/*.py"))
    lengths = {len([ln for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]) for p in pages}
    said = {
        (str(path.relative_to(ROOT)), word)
        for path in TEXTS
        for word in re.findall(r"\b(\w+)-line file", path.read_text(encoding="utf-8"))
    }
    assert pages and said and len(lengths) == 1, lengths
    wrong = {(path, word) for path, word in said if WORDS.get(word) not in lengths}
    assert not wrong, f"page files have {lengths.pop()} lines of code; these say otherwise: {wrong}"


def test_the_readmes_least_count_of_engine_tests_is_what_ci_requires() -> None:
    """The README's test table says how many engine tests CI requires; .ci/run's table of groups holds the number."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = re.search(r'"engine tier": \(r"[^"]+", (\d+),', (ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    said = re.search(r"the engine only[^|]*requires at least ([\d,]+) tests", readme)
    assert ci and said and int(said.group(1).replace(",", "")) == int(ci.group(1))
