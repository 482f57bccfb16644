"""The layout holds: layers import only downward, no import cycles, one-line module docstrings, presets found by
listing the folder, and the app's charts usable from a notebook (short functions: tests/test_function_size.py)."""

from __future__ import annotations

import ast
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import altair as alt
import numpy as np
import pytest

import attention
from attention import charts
from attention.io import presets as presets_mod
from tests.helpers import ROOT

PACKAGE = ROOT / "attention"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in the file (function-level imports included), as absolute names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if node.module or not node.level:
                found.add(mod)
            for alias in node.names:  # "from . import state" imports the module attention.ui.state
                target = ROOT / Path(*f"{mod}.{alias.name}".split("."))
                if target.with_suffix(".py").exists() or (target / "__init__.py").exists():
                    found.add(f"{mod}.{alias.name}")
    return found


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _parts_table() -> dict[str, tuple[set[str], set[str], set[str]]]:
    """docs/architecture.md's table of the parts of attention/ (the rule itself, written nowhere else): {part: (its
    modules or module prefixes, the parts it may import, the libraries it imports)}; "engine" holds the rest."""
    lines = ARCHITECTURE.split("| part | its rooms | may import |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    table = {}
    for line in lines:
        part, rooms, may, libraries = (cell.strip() for cell in line.strip("|").split("|"))
        modules = {_room_module(room) for room in re.findall(r"`([^`]+)`", rooms)}
        table[part] = (modules, {p.strip() for p in may.split(",")}, set(re.findall(r"`(\w+)`", libraries)))
    return table


def _room_module(room: str) -> str:
    """A room of the table as a dotted name: a folder ends in "." (its modules start so), a file is one module."""
    name = "attention." + room.removeprefix("attention/").removesuffix(".py").replace("/", ".")
    return "attention" if name == "attention.__init__" else name


PARTS = _parts_table()
ALLOWED = {part: may for part, (_, may, _) in PARTS.items()}  # what each part may import of the project's parts
THIRD_PARTY = {part: libraries for part, (_, _, libraries) in PARTS.items()}  # and of other libraries


def _layer(module: str) -> str:
    """The part of the table a module of attention/ belongs to."""
    for part, (modules, _, _) in PARTS.items():
        if any(module == m.rstrip(".") or (m.endswith(".") and module.startswith(m)) for m in modules):
            return part
    return "engine"


def _library(name: str) -> str | None:
    """The top-level name of a library a module imports, or None for the project and Python's own."""
    top = name.split(".")[0]
    return None if top in ("attention", "__future__") or top in sys.stdlib_module_names else top


@pytest.mark.parametrize("module", sorted(MODULES))
def test_layers_import_only_what_they_may(module: str) -> None:
    layer = _layer(module)
    for imported in _imports(MODULES[module]):
        if imported.split(".")[0] == "attention":
            target = imported if imported in MODULES else imported.rsplit(".", 1)[0]
            assert _layer(target) in ALLOWED[layer], f"{module} ({layer}) imports {imported} ({_layer(target)})"
        elif (library := _library(imported)) is not None:
            assert library in THIRD_PARTY[layer], f"{module} ({layer}) imports {library}"


def test_the_table_of_parts_names_every_library_each_part_imports() -> None:
    """The table in docs/architecture.md says which libraries each part needs: exactly the ones its modules import."""
    used: dict[str, set[str]] = {part: set() for part in PARTS}
    for module, path in MODULES.items():
        used[_layer(module)] |= {lib for name in _imports(path) if (lib := _library(name))}
    assert used == THIRD_PARTY
    assert set(PARTS) >= {"engine", "model", "io", "ui"} and all(PARTS[p][0] for p in PARTS if p != "engine")




def _floor_picture(after: str) -> dict[str, int]:
    """A floor picture of docs/architecture.md (the first code block after the line ``after``): {room: its floor}.
    Each line is ``N  room, room  what they hold``; a room is a folder (``attention/io/``) or a module
    (``trace.py``)."""
    block = ARCHITECTURE.split(after, 1)[1].split("```\n", 1)[1].split("```", 1)[0]
    floors = {}
    for line in block.splitlines():
        number, rest = line.split(maxsplit=1)
        names = [part.split(" (")[0].strip() for part in re.split(r",\s*|\s{2,}", rest)]
        floors.update((name, int(number)) for name in names if name.endswith(("/", ".py")) and " " not in name)
    return floors


def _room(module: str) -> str:
    """A UI module's room: attention.ui.<room>.<module>."""
    return module.split(".")[2]


HOUSE = _floor_picture("From the top floor down:")  # the whole tree: attention's rooms, pages, scripts, benchmarks
UI_FLOORS = {room.rstrip("/"): floor for room, floor in _floor_picture("Inside `attention/ui`").items()}
UI_ROOMS = tuple(sorted(UI_FLOORS, key=UI_FLOORS.get))  # the UI's rooms, from the ground floor up


def _house_room(module: str) -> str | None:
    """The room of the house picture a module stands in (None: the package's own __init__, which re-exports)."""
    parts = module.split(".")
    if parts[0] != "attention":
        return "streamlit_app.py" if parts == ["streamlit_app"] else f"{parts[0]}/"
    if len(parts) == 1:
        return None
    return f"attention/{parts[1]}/" if (PACKAGE / parts[1]).is_dir() else f"{parts[1]}.py"


def _top_level_files() -> dict[str, Path]:
    folders = ("pages", "scripts", "benchmarks")
    files = [ROOT / "streamlit_app.py", *(p for d in folders for p in ROOT.glob(f"{d}/*.py"))]
    return {_module_name(p): p for p in files}


def test_the_house_picture_holds_every_room_and_every_arrow_runs_down() -> None:
    """docs/architecture.md's picture of the whole tree is the truth: every room is on it, every import of a room
    reaches a room on a lower floor (pages, scripts and benchmarks included)."""
    rooms = {_house_room(m) for m in {**MODULES, **_top_level_files()}} - {None}
    assert rooms == set(HOUSE), f"pictured, not in the tree: {set(HOUSE) - rooms}; not pictured: {rooms - set(HOUSE)}"
    for module, path in {**MODULES, **_top_level_files()}.items():
        room = _house_room(module)
        for imported in _imports(path):
            target = _house_room(imported if imported in MODULES else imported.rsplit(".", 1)[0])
            if imported.startswith("attention") and room and target and target != room:
                where = f"{module} (floor {HOUSE[room]}) imports {imported} (floor {HOUSE[target]})"
                assert HOUSE[target] < HOUSE[room], where


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.count(".") >= 3 and m.startswith("attention.ui.")))
def test_ui_rooms_import_only_downward(module: str) -> None:
    """The picture of attention/ui's floors in docs/architecture.md: a room imports only from floors below its own."""
    floor = UI_FLOORS[_room(module)]
    for imported in _imports(MODULES[module]):
        if imported.startswith("attention.ui.") and imported.count(".") >= 2 and _room(imported) != _room(module):
            room = _room(imported)
            assert UI_FLOORS[room] < floor, f"{module} (floor {floor}) imports {imported} (floor {UI_FLOORS[room]})"


def test_the_ui_is_only_rooms_of_a_dozen_modules_or_fewer() -> None:
    ui = PACKAGE / "ui"
    assert sorted(p.name for p in ui.glob("*.py")) == ["__init__.py"], "a UI module outside the rooms"
    assert sorted(p.name for p in ui.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(UI_ROOMS)
    for room in UI_ROOMS:
        modules = [p for p in (ui / room).glob("*.py") if p.name != "__init__.py"]
        most = 13 if room == "core" else 12  # core: one more, keys.py (every widget key in one module, issue 31)
        assert 1 <= len(modules) <= most, f"attention/ui/{room}/ holds {len(modules)} modules"


def _documented_tree() -> set[str]:
    """The module paths the module map in docs/architecture.md names: a folder line ``name/`` opens a folder at its
    indent, and the file names before a line's description (``a.py, b.py   what they hold``) sit in the folder above
    them."""
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = doc.split("```\nstreamlit_app.py", 1)[1].split("```", 1)[0]
    found, folders = set(), []  # folders: (indent, path)
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        head = line.strip().split("  ")[0]
        folders = [(i, f) for i, f in folders if i < indent]
        where = folders[-1][1] if folders else ""
        if head.endswith("/"):
            folders.append((indent, head if not where or head.startswith(where) else where + head))
        else:
            found.update(where + name.strip() for name in head.split(",") if name.strip().endswith(".py"))
    return found


def test_the_module_map_lists_every_module() -> None:
    listed = _documented_tree()
    modules = {p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    assert not sorted(modules - listed), f"modules missing from the module map: {sorted(modules - listed)}"
    assert not sorted(listed - modules), f"docs/architecture.md names missing modules: {sorted(listed - modules)}"


def test_no_import_cycles() -> None:
    graph = {m: {i for i in _imports(p) if i in MODULES and i != m} for m, p in MODULES.items()}
    graph = {m: {i for i in deps if not m.startswith(i + ".") and i != "attention"} for m, deps in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in graph[m]:
            if state.get(d) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(d) :] + [d]))
            if d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m)


def _divides_by_the_loop_variable(test: ast.expr, target: str) -> bool:
    """Whether a condition holds ``something % target == 0``: a divisor test of the loop's variable."""
    return any(
        isinstance(node, ast.Compare)
        and isinstance(node.left, ast.BinOp)
        and isinstance(node.left.op, ast.Mod)
        and isinstance(node.left.right, ast.Name)
        and node.left.right.id == target
        and any(isinstance(c, ast.Constant) and c.value == 0 for c in node.comparators)
        for node in ast.walk(test)
    )


def _lists_divisors(node: ast.AST) -> bool:
    """A loop or comprehension over range(...) that keeps the values dividing something: divisors rebuilt."""
    if isinstance(node, ast.comprehension | ast.For) and isinstance(node.target, ast.Name):
        over_range = isinstance(node.iter, ast.Call) and getattr(node.iter.func, "id", None) == "range"
        body_ifs = [n.test for n in getattr(node, "body", []) if isinstance(n, ast.If)]
        tests = node.ifs if isinstance(node, ast.comprehension) else body_ifs
        return over_range and any(_divides_by_the_loop_variable(t, node.target.id) for t in tests)
    return False


def _reads_a_whole_number(node: ast.AST) -> bool:
    """``float(value).is_integer()``: a typed number checked for being whole."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "is_integer"
        and isinstance(node.func.value, ast.Call)
        and getattr(node.func.value.func, "id", None) == "float"
    )


def _names_byte_units(node: ast.AST) -> bool:
    """A literal list of byte units ("KiB", "MiB", ...): a byte count being written out."""
    if not isinstance(node, ast.Tuple | ast.List):
        return False
    texts = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return {"KiB", "MiB"} <= texts or {"KB", "MB"} <= texts


LEARN_PAGE = "attention/ui/labpages/learn.py"  # the learning lab reads whole and decimal numbers alike
ONE_HOME = {  # what a helper does (found in the code's structure) -> (its home, other files allowed to do it)
    "lists divisors": (_lists_divisors, "attention/heads.py", set()),
    "reads a whole number": (_reads_a_whole_number, "attention/ui/widgets/common.py", {LEARN_PAGE}),
    "writes bytes out": (_names_byte_units, "attention/kvcache.py", set()),
}


def _rewrites(source: str, finds: Callable[[ast.AST], bool]) -> list[int]:
    """The lines of ``source`` where the structure ``finds`` looks for stands."""
    nodes = [node for node in ast.walk(ast.parse(source)) if finds(node)]
    return [node.iter.lineno if isinstance(node, ast.comprehension) else node.lineno for node in nodes]


def test_helpers_have_one_home() -> None:
    """The divisors are built only by attention.heads.divisors, a typed whole number is read only by
    widgets.whole_number, and bytes are written only by kvcache.readable: callers call them, never rewrite them.
    The check reads each module's syntax tree, so a rewrite with other names or spacing is found too."""
    for what, (finds, home, allowed) in ONE_HOME.items():
        assert _rewrites((ROOT / home).read_text(encoding="utf-8"), finds), f"{home} no longer {what}"
        found = {
            f"{p.relative_to(ROOT).as_posix()}:{line}"
            for p in PACKAGE.rglob("*.py")
            if p.relative_to(ROOT).as_posix() not in allowed | {home}
            for line in _rewrites(p.read_text(encoding="utf-8"), finds)
        }
        assert not found, f"{home}'s helper ({what}) rewritten at {sorted(found)}"


@pytest.mark.parametrize(
    "rewrite",
    [
        "def valid_heads(s):\n    d = s.dims\n"
        "    return [h for h in range(1, min(d.d_k, d.d_v) + 1) if d.d_k % h == 0 and d.d_v % h == 0]\n",
        "out = []\nfor g in range(1, n + 1):\n    if n % g == 0:\n        out.append(g)\n",
        "ks = {k for k in range(2, top) if not (top % k != 0) and top % k == 0}\n",
    ],
)
def test_the_one_home_check_sees_a_divisor_rewrite(rewrite: str) -> None:
    """The rewrite that once went unseen (core/session.valid_heads before it called heads.divisors), and two others."""
    assert _rewrites(rewrite, _lists_divisors)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_opens_with_one_line_saying_its_job(module: str) -> None:
    doc = ast.get_docstring(ast.parse(MODULES[module].read_text(encoding="utf-8")))
    assert doc, f"{module} has no docstring"
    first = doc.splitlines()[0]
    assert first.endswith(".") and len(first) <= 120, f"{module}: first docstring line {first!r}"


def test_pages_are_two_lines_calling_the_frame() -> None:
    for page in ROOT.glob("pages/*.py"):
        code = [ln for ln in page.read_text(encoding="utf-8").splitlines() if ln.strip()]
        assert len(code) == 2 and code[0].startswith("from attention.ui.app.frame import"), page.name


def test_a_broken_preset_file_is_left_out_and_named_when_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "presets"
    shutil.copytree(presets_mod.PRESET_DIR, folder)
    (folder / "broken.json").write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(presets_mod, "PRESET_DIR", folder)
    assert "broken" not in presets_mod.list_presets()
    with pytest.raises(attention.AttentionError, match="unknown preset 'broken'"):
        presets_mod.load_preset("broken")


def test_a_notebook_draws_the_same_heatmap_as_the_app() -> None:
    trace = attention.load_preset("the_cat_sat").compute()
    tokens = list(trace.tokens)
    spec = alt.LayerChart.from_dict(charts.heatmap(trace.weights, tokens, tokens)).to_dict()  # as in a notebook
    cells = [d for d in spec["datasets"].values()][0]
    assert len(cells) == 9
    by_cell = {(c["query"], c["key"]): c["value"] for c in cells}
    for i, q in enumerate(tokens):
        for j, k in enumerate(tokens):
            assert by_cell[(q, k)] == pytest.approx(trace.weights[i, j], abs=0)
    batched = attention.load_preset("the_cat_sat_on_the_mat").compute()
    six = charts.heatmap(batched.weights, list(batched.tokens), list(batched.tokens))  # (1, 6, 6) drawn as 6 × 6
    assert len(six["data"]["values"]) == 36
    with pytest.raises(attention.AttentionError, match="2-D"):
        charts.heatmap(np.zeros((2, 2, 2)), ["a", "b"], ["a", "b"])


STATE_WRITERS = ("attention/ui/state/", "attention/ui/core/", "attention/ui/widgets/common.py")
WRITES = {"pop", "setdefault", "update", "clear", "__setitem__", "__delitem__"}


def _session_state(node: ast.AST) -> bool:
    """``st.session_state`` (or ``streamlit.session_state``)."""
    return isinstance(node, ast.Attribute) and node.attr == "session_state"


def _writes_session_state(tree: ast.AST) -> list[int]:
    """The lines that write st.session_state: an item or attribute set or deleted, or a writing method called."""
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else []
        targets = [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else targets
        if any(isinstance(t, ast.Subscript | ast.Attribute) and _session_state(t.value) for t in targets):
            found.append(node.lineno)
        call = node.func if isinstance(node, ast.Call) else None
        if isinstance(call, ast.Attribute) and call.attr in WRITES and _session_state(call.value):
            found.append(node.lineno)
    return found


def test_session_state_is_written_only_in_the_state_rooms() -> None:
    """The truth is changed in one place: st.session_state is written only by attention/ui/state, attention/ui/core
    and the one binding helper (widgets/common.bind) that shows a value in a widget."""
    writes = {
        f"{p.relative_to(ROOT).as_posix()}:{line}"
        for p in (PACKAGE / "ui").rglob("*.py")
        if not p.relative_to(ROOT).as_posix().startswith(STATE_WRITERS)
        for line in _writes_session_state(ast.parse(p.read_text(encoding="utf-8")))
    }
    assert not writes, f"st.session_state written outside the state rooms: {sorted(writes)}"


def test_the_state_room_check_sees_each_kind_of_write() -> None:
    code = "st.session_state['a'] = 1\nst.session_state.b = 2\ndel st.session_state['c']\nst.session_state.pop('d')\n"
    assert _writes_session_state(ast.parse(code)) == [1, 2, 3, 4]


def test_the_address_is_read_only_through_the_address_rooms_table() -> None:
    """st.query_params is read and written by attention/ui/address alone (its table of parameters), and by the
    navigation, which carries the address to the next page as it is; a page never reads a parameter itself."""
    readers = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (PACKAGE / "ui").rglob("*.py")
        if any(isinstance(n, ast.Attribute) and n.attr == "query_params" for n in ast.walk(ast.parse(p.read_text())))
        and not p.relative_to(ROOT).as_posix().startswith(("attention/ui/address/", "attention/ui/app/nav.py"))
    )
    assert not readers, f"st.query_params used outside the address table: {readers}"


def _bound_modules(path: Path) -> list[str]:
    """Each project module a file's top-level imports bind to a name (``from . import a``, ``from .. import b as c``),
    as absolute names, once per name bound."""
    me = _module_name(path)
    package = (me if path.name == "__init__.py" else me.rsplit(".", 1)[0]).split(".")
    bound = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            bound += [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in MODULES]
    return bound


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_is_imported_once_under_one_name(module: str) -> None:
    bound = _bound_modules(MODULES[module])
    assert len(bound) == len(set(bound)), f"{module} imports {sorted(m for m in bound if bound.count(m) > 1)} twice"

