"""Every widget key comes from one module (attention/ui/core/keys.py), and the grid-edit check asks it which keys are
the grids' (issue 31 §3 "Keys")."""

from __future__ import annotations

import ast
from pathlib import Path

from attention.ui.core import keys

UI = Path(__file__).resolve().parents[2] / "attention" / "ui"


def _literal_keys(path: Path) -> list[str]:
    """Keys written in ``path`` as a string or f-string: a ``key=`` argument, or a form's key."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        given = [k.value for k in node.keywords if k.arg == "key"]
        if isinstance(node.func, ast.Attribute) and node.func.attr == "form" and node.args:
            given.append(node.args[0])
        found += [ast.unparse(v) for v in given if isinstance(v, ast.Constant | ast.JoinedStr)]
    return found


def test_no_widget_key_is_written_outside_the_keys_module() -> None:
    modules = [p for p in sorted(UI.rglob("*.py")) if p.name != "keys.py"]
    written = {str(p.relative_to(UI)): got for p in modules if (got := _literal_keys(p))}
    assert not written, written


def test_the_guard_finds_a_literal_key(tmp_path: Path) -> None:
    """The scan above finds what it looks for: a key= string, an f-string and a form's key."""
    f = tmp_path / "page.py"
    f.write_text('st.button("Go", key="go")\nst.slider("n", key=f"n.{k}")\nwith st.form("f.x"):\n    pass\n')
    assert _literal_keys(f) == ["'go'", "f'n.{k}'", "'f.x'"]


def test_the_grids_are_told_apart_by_the_keys_module() -> None:
    assert keys.is_grid(keys.grid("W_k", 3, 1, 0, 16))
    made = [keys.SB_PRESET, keys.import_box("X", "text"), keys.cell("scores", "q"), keys.heatmap("scores", 1)]
    made += [keys.INSIDE_TYPED, keys.GEN_KEEP, keys.edit_window("X", 8), keys.window(keys.edit_window("X", 8), "r0")]
    assert not [k for k in made if keys.is_grid(k)]


def test_two_grid_keys_are_the_same_window_when_only_the_renewal_count_differs() -> None:
    a = keys.grid("W_q", 3, 7, 0, 0)
    assert keys.same_window(a, keys.grid("W_q", 3, 9, 0, 0))
    assert not keys.same_window(a, keys.grid("W_q", 4, 7, 0, 0))  # another version: another state's grid
    assert not keys.same_window(a, keys.grid("W_q", 3, 7, 8, 0))  # another window of the matrix
    assert not keys.same_window(a, keys.grid("W_k", 3, 7, 0, 0))
    assert not keys.same_window(a, "sb.window.3.2")
