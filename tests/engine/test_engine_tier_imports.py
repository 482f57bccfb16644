"""The engine tier runs without Streamlit, torch or transformers (docs/testing.md): no module of tests/engine, nor
anything it imports from the project (the attention modules and the test helpers, followed to the end, function-level
imports included, with the packages each one's import runs), imports them. Read from the source, so a test that would
import one only when it runs is caught as well."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT

NOT_HERE = ("streamlit", "torch", "transformers")  # the app tier's and the oracles' own
PROJECT = ("attention", "tests")
ENGINE = sorted((ROOT / "tests" / "engine").glob("*.py"))  # the tier's modules (tests/conftest.py: the test below)


def _file(module: str) -> Path | None:
    """The project file of a dotted module name (a package: its __init__.py), or None (not the project's)."""
    base = ROOT / Path(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _package(path: Path) -> str:
    """The package a file's relative imports start from ("" outside the project)."""
    if not path.is_relative_to(ROOT):
        return ""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1])


def imports(path: Path) -> set[str]:
    """Every module a file imports, anywhere in it, as absolute names; ``from p import m`` names p.m when m is a
    module, and each import also runs its parent packages."""
    package = _package(path).split(".")
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names if _file(f"{module}.{a.name}"))
    parents = {".".join(m.split(".")[:k]) for m in found for k in range(1, m.count(".") + 1)}
    return found | parents


def reached(start: list[Path]) -> dict[str, str]:
    """Every module the files reach through the project's own modules: {module: the project module importing it}."""
    seen: dict[str, str] = {}
    todo = list(start)
    done: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in done:
            continue
        done.add(path)
        for module in imports(path):
            seen.setdefault(module, path.name if not path.is_relative_to(ROOT) else str(path.relative_to(ROOT)))
            if module.split(".")[0] in PROJECT and (found := _file(module)):
                todo.append(found)
    return seen


def test_no_engine_test_reaches_streamlit_torch_or_transformers() -> None:
    bad = {m: by for m, by in reached(ENGINE).items() if m.split(".")[0] in NOT_HERE}
    assert not bad, f"imported in the engine tier (module: the file that imports it): {bad}"


def test_no_engine_test_asks_for_a_shared_fixture_made_with_transformers() -> None:
    """tests/conftest.py's fixtures (the GPT-2 checkpoints) import torch and transformers when a test asks for one."""
    conftest = ast.parse((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    fixtures = {node.name for node in conftest.body if isinstance(node, ast.FunctionDef)}
    asked = {
        f"{path.name}::{node.name}": arg.arg
        for path in ENGINE
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef)
        for arg in node.args.args
        if arg.arg in fixtures
    }
    assert fixtures and not asked, asked


def test_the_scan_follows_imports_through_the_project(tmp_path) -> None:
    """The check sees an import two project modules away, and one inside a function."""
    assert "streamlit" in reached([ROOT / "attention" / "ui" / "core" / "compute.py"])
    test = tmp_path / "test_x.py"
    test.write_text("def test_x():\n    from attention.ui.state.board import _clause\n")
    found = reached([test])
    assert "attention.ui.state.board" in found and "streamlit" in found
