"""Every dotted name ``attention.…`` that the docs (README.md, docs/) or a docstring of the code write resolves to a
module, or to a name in one: a function that is removed or renamed fails here until its mentions follow. (In the
app tier: resolving ``attention.ui.…`` imports Streamlit.)"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tests.helpers import ROOT

DOTTED = re.compile(r"(?<![\w./-])attention(?:\.[A-Za-z_]\w*)+")
# file names ("attention.py") and host names ("attention.example.org" in the nginx example) are not Python names
NOT_NAMES = (".py", ".md", ".json", ".npz", ".toml", ".org", ".com", ".net")


def _docstrings(path: Path) -> str:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef))]
    return "\n".join(doc for node in nodes if (doc := ast.get_docstring(node)))


def _texts() -> dict[str, str]:
    texts = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in ROOT.glob("docs/*.md")}
    texts["README.md"] = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in sorted((ROOT / "attention").rglob("*.py")):
        texts[path.relative_to(ROOT).as_posix()] = _docstrings(path)
    return texts


def _mentions() -> list[tuple[str, str]]:
    found = {(where, name) for where, text in _texts().items() for name in DOTTED.findall(text)}
    return sorted((where, name) for where, name in found if not name.endswith(NOT_NAMES))


def _resolves(name: str) -> bool:
    """Import the longest module prefix of ``name``, then look the rest up as attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_the_docs_mention_many_names() -> None:
    """The check reads what it should: the docs and docstrings do name the engine's functions this way."""
    assert len(_mentions()) >= 20


@pytest.mark.parametrize(("where", "name"), _mentions())
def test_every_dotted_name_resolves(where: str, name: str) -> None:
    assert _resolves(name), f"{where} names {name}, which does not exist"


def test_a_removed_name_fails() -> None:
    assert _resolves("attention.model.lens") and not _resolves("attention.ui.state.edit_cells")
