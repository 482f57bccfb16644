"""Every function in the package is short and shallow: at most MAX_LINES lines of code (from its ``def`` line to its
last line, the signature included, less its docstring's lines: a public function's docstring is prose, not code; a
signature of many lines was once left out, so a 69-line function passed) and at most MAX_DEPTH levels of
nested blocks (if, for, while, with, try, match, and a conditional expression ``a if c else b`` as an if; an
``elif`` is a branch of its ``if``, not a level), measured on the syntax tree. A module is split where its concerns
differ, not where its line count does, so there is no cap on a file."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository
PACKAGE = ROOT / "attention"
MAX_LINES = 60
MAX_DEPTH = 4

BLOCKS = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar, ast.Match)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

PENDING: set[str] = set()  # functions excused while a change that removes them is in flight: none


def _is_elif(parent: ast.AST, child: ast.AST) -> bool:
    """``child`` is the ``elif`` of ``parent`` (written at the if's own column), not an ``if`` inside its else."""
    return (
        isinstance(parent, ast.If)
        and isinstance(child, ast.If)
        and parent.orelse == [child]
        and child.col_offset == parent.col_offset
    )


def depth(node: ast.AST, level: int = 0) -> int:
    """The deepest nesting of blocks inside ``node``, not counting functions, classes and lambdas defined in it
    (each is measured on its own)."""
    deepest = level
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (*FUNCTIONS, ast.ClassDef, ast.Lambda)):
            continue
        deeper = isinstance(child, BLOCKS) and not _is_elif(node, child)
        deepest = max(deepest, depth(child, level + deeper))
    return deepest


def code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines of a function's code: from its def line to its end (the signature is code), less its docstring's."""
    doc = node.body[0] if ast.get_docstring(node) is not None and len(node.body) > 1 else None
    prose = doc.end_lineno - doc.lineno + 1 if doc is not None else 0
    return node.end_lineno - node.lineno + 1 - prose


def too_big(source: str) -> list[str]:
    """Each function of ``source`` over a cap: "name: N lines" or "name: nested N deep"."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, FUNCTIONS):
            continue
        lines, deep = code_lines(node), depth(node)
        if lines > MAX_LINES:
            found.append(f"{node.name}: {lines} lines")
        if deep > MAX_DEPTH:
            found.append(f"{node.name}: nested {deep} deep")
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_function_is_short_and_shallow(path: Path) -> None:
    rel = path.relative_to(ROOT).as_posix()
    found = [f for f in too_big(path.read_text(encoding="utf-8")) if f"{rel}:{f.split(':')[0]}" not in PENDING]
    assert not found, f"{rel}: {found}"


def _function(body_lines: int, doc_lines: int = 0) -> str:
    doc = '    """' + "\n" * doc_lines + '    """\n' if doc_lines else ""
    return "def f(x):\n" + doc + "".join(f"    x = x + {k}\n" for k in range(body_lines)) + "    return x\n"


def _nested(levels: int) -> str:
    code, pad = "def f(x):\n", "    "
    for k in range(levels):
        code += f"{pad}if x > {k}:\n"
        pad += "    "
    return code + f"{pad}return x\n"


def test_the_measure_catches_a_long_function_and_a_deep_one() -> None:
    assert too_big(_function(MAX_LINES - 2)) == []  # def + body + return: exactly MAX_LINES lines
    assert too_big(_function(MAX_LINES - 1)) == [f"f: {MAX_LINES + 1} lines"]
    assert too_big(_function(MAX_LINES - 2, doc_lines=30)) == []  # a docstring is prose, not code
    long_signature = _function(MAX_LINES - 2).replace("def f(x):", "def f(\n    x,\n):")  # two more lines: code
    assert too_big(long_signature) == [f"f: {MAX_LINES + 2} lines"]
    assert too_big(_nested(MAX_DEPTH)) == []
    assert too_big(_nested(MAX_DEPTH + 1)) == [f"f: nested {MAX_DEPTH + 1} deep"]
    # a conditional expression chained in another counts as a level, as a nested if does
    chained = "def f(r, v):\n    for c in r:\n        if v:\n            w = 1 if c else 2 if v else (3 if r else 4)\n"
    assert too_big(chained) == ["f: nested 5 deep"]
    # elif branches are one level; an if inside an else is a level deeper
    branches = "def f(x):\n    if x == 1:\n        return 1\n" + "".join(
        f"    elif x == {k}:\n        return {k}\n" for k in range(2, 2 + 2 * MAX_DEPTH)
    )
    assert depth(ast.parse(branches).body[0]) == 1
    else_if = "def f(x):\n    if x:\n        pass\n    else:\n        if x > 1:\n            return x\n"
    assert depth(ast.parse(else_if).body[0]) == 2
    # a function defined inside another is measured on its own, not as a level of its parent
    inner = "def f(x):\n    if x:\n        def g(y):\n            if y:\n                return y\n        return g\n"
    assert too_big(inner) == []
