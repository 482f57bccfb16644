"""What the UI keeps between runs has one mechanism (its rule is written with the state's, in
attention/ui/state/__init__.py and docs/architecture.md): a value made again from its key is kept in a
attention.ui.core.cache.TraceCache (a ``kept`` function's own, or one named), what cannot be made again is held in a
Registry. So attention/ui has no functools or Streamlit cache and no
module-level container made empty to be filled as the process runs: no exception."""

from __future__ import annotations

import ast
import threading
import time

from attention.ui.core.cache import Registry, kept
from tests.helpers import ROOT

UI = ROOT / "attention" / "ui"
OLD_WAYS = ("lru_cache", "cache", "cache_data", "cache_resource")  # functools' and Streamlit's
CONTAINERS = ("dict", "set", "list", "OrderedDict", "defaultdict", "deque", "WeakValueDictionary", "WeakKeyDictionary")


def _empty_container(value: ast.expr | None) -> bool:
    """An empty ``{}``, ``[]``, or a container type called with no arguments (``set()``, ``OrderedDict()`` ...)."""
    if isinstance(value, ast.Dict | ast.List | ast.Set):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts)
    if isinstance(value, ast.Call) and not (value.args or value.keywords):
        name = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
        return name in CONTAINERS
    return False


def kept_outside(source: str, name: str) -> set[str]:
    """Each function of ``source`` decorated with a functools or Streamlit cache, and each module-level name bound to
    an empty container (``name: function`` or ``name: name``)."""
    tree = ast.parse(source)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for d in node.decorator_list:
                f = d.func if isinstance(d, ast.Call) else d
                if (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")) in OLD_WAYS:
                    found.add(f"{name}: {node.name}")
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and _empty_container(node.value):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            found.add(f"{name}: {ast.unparse(target)}")
    return found


def test_values_kept_between_runs_are_kept_by_the_one_mechanism() -> None:
    found = set()
    for path in sorted(UI.rglob("*.py")):
        found |= kept_outside(path.read_text(encoding="utf-8"), str(path.relative_to(UI)))
    assert not found, f"kept outside the one mechanism (a kept function, a TraceCache or a Registry): {sorted(found)}"


def test_the_check_finds_each_older_way() -> None:
    source = """
import functools
from collections import OrderedDict, defaultdict
import streamlit as st
BUSY = {"train": "busy"}
NAMES = ["a", "b"]
_SEEN: set[str] = set()
_BY_KEY = {}
_ORDER = OrderedDict()
_LISTS = defaultdict()
@functools.lru_cache(maxsize=4)
def a(x): return x
@functools.cache
def b(): return 1
@st.cache_data(max_entries=4)
def c(): return 1
@st.cache_resource
def d(): return 1
def e():
    local = {}
    return local
"""
    assert kept_outside(source, "m") == {
        "m: a", "m: b", "m: c", "m: d", "m: _SEEN", "m: _BY_KEY", "m: _ORDER", "m: _LISTS",
    }  # fmt: skip


def test_a_kept_function_is_made_once_per_key_within_its_entries_and_forgets_on_clear() -> None:
    made = []

    @kept(2)
    def square(x: int) -> int:
        made.append(x)
        return x * x

    assert [square(3), square(3), square(4), square(3)] == [9, 9, 16, 9] and made == [3, 4]
    square(5)  # a third key: the least recently used (4) goes
    assert square(4) == 16 and made == [3, 4, 5, 4]
    square.clear()
    assert square(3) == 9 and made == [3, 4, 5, 4, 3]


def test_a_kept_functions_key_leaves_out_what_the_result_does_not_depend_on() -> None:
    made = []

    @kept(4, key=lambda content, _trace: content)
    def rows(content: str, _trace: list) -> int:
        made.append(content)
        return len(_trace)

    assert rows("a", [1, 2]) == 2 and rows("a", [1, 2, 3]) == 2 and made == ["a"]  # an unhashable trace, read once


def test_two_sessions_asking_for_one_key_at_once_make_it_once() -> None:
    made = []

    @kept(4)
    def slow(x: int) -> int:
        made.append(x)
        time.sleep(0.2)
        return x

    threads = [threading.Thread(target=slow, args=(1,)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert made == [1]


def test_a_registry_lets_go_only_what_it_may_oldest_first_and_by_use_when_asked() -> None:
    jobs = Registry(2, may_go=lambda state: state != "running")
    jobs.add("a", "running")
    jobs.add("b", "done")
    jobs.add("c", "running")  # over 2: the oldest that may go is b; a runs on
    assert jobs.values() == ["running", "running"] and jobs.get("b") is None
    jobs.add("d", "running")  # none may go: all kept
    assert len(jobs) == 3 and jobs.add("a", "done") == "running"  # a value held for a key stays
    models = Registry(2, by_use=True)
    models.add("x", 1)
    models.add("y", 2)
    assert models.get("x") == 1  # x is now the newest
    models.add("z", 3)
    assert models.get("y") is None and models.values() == [1, 3] and models.pop("x") == 1 and len(models) == 1
