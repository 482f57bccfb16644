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


def test_a_grid_key_is_one_per_matrix_and_window_and_never_renewed() -> None:
    """The matrix editor keeps its page (and what was typed there) across reruns: its key names only the matrix and
    the window, none of the numbers that move (version, grids), and no other widget has one like it."""
    keys_made = {keys.grid(n, r0, c0) for n in ("X", "W_q", "W_k") for r0, c0 in ((0, 0), (64, 0), (0, 8))}
    assert len(keys_made) == 9 and keys.GAINS_GRID not in keys_made
    made = [keys.SB_PRESET, keys.import_box("X", "text"), keys.cell("scores", "q"), keys.heatmap("scores", 1)]
    made += [keys.INSIDE_TYPED, keys.GEN_KEEP, keys.edit_window("X", 8), keys.window(keys.edit_window("X", 8), "r0")]
    assert not keys_made & set(made)
