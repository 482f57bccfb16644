"""Every message the class board shows (issue 41 §3): no "her"/"she" for every student, no empty name quoted
("There is no student ''"), no double full stop, and counts through one plural helper. The messages are the string
literals (docstrings and comments left out) of the board's modules, read with ast, so a new message is checked too."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = (
    "attention/io/board.py",
    "attention/ui/state/board.py",
    "attention/ui/labpages/board.py",
    "attention/ui/address/membership.py",
    "attention/ui/address/teacher.py",
    "attention/ui/core/classboard.py",
    "attention/ui/sidebar/challenge_status.py",
)


def _messages(path: str) -> list[str]:
    """Each string literal of ``path`` that is not a docstring, f-strings joined with {} for their fields."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found.append(node.value)
    return [m for m in found if " " in m]  # words, not keys


@pytest.mark.parametrize("path", MODULES)
def test_board_messages_use_no_gendered_pronoun_for_every_student(path: str) -> None:
    bad = [m for m in _messages(path) if re.search(r"\b(her|she|hers|herself|his|he|him|himself)\b", m, re.I)]
    assert not bad, bad


@pytest.mark.parametrize("path", MODULES)
def test_board_messages_have_no_double_full_stop_and_quote_no_empty_name(path: str) -> None:
    for m in _messages(path):
        assert ".." not in m.replace("…", ""), m
    source = (ROOT / path).read_text(encoding="utf-8")
    raw = re.findall(r"\{esc\(exc\.message, \d+\)\}\.", source)  # a stored message's own stop, then ours
    assert not raw, raw


def test_counts_in_the_board_messages_are_written_with_the_plural_helper() -> None:
    """No "{n} student" written out: a count goes through the plural helper (its output: tests/app)."""
    for path in MODULES:
        for m in _messages(path):
            assert not re.search(r"\{\} (student|challenge|solve)\b", m), m  # "{n} student" without the helper
