"""Values kept between runs go into the one process cache (attention.ui.core.cache.TraceCache; the rule is in
attention/ui/state/__init__.py): no functools cache, no st.cache_data or st.cache_resource and no module-level
OrderedDict is added to attention/ui. Those still there are LEFT (file: function or name), to be moved into the cache
(issue 50 §2); an entry moved into the cache leaves the list (not checked here, so that a change that moves or
renames one of these functions is not held up by it)."""

from __future__ import annotations

import ast

from tests.helpers import ROOT

UI = ROOT / "attention" / "ui"
OLD_WAYS = ("lru_cache", "cache", "cache_data", "cache_resource")
HELD = {"jobs.py: _JOBS", "models.py: _HELD"}  # registries of what cannot be made again (the rule's second kind)
LEFT = {  # found in December 2026 (31), not yet moved
    "before.py: _pack", "board.py: _builtins", "challenge_form.py: _audit", "challenge_form.py: example_preset",
    "challenges.py: builtins", "challenges.py: from_file", "challenges.py: from_link", "classboard.py: _board",
    "compute.py: document_match", "every_head.py: _heatmap", "first_token.py: value_norms",
    "learnviews.py: reordered", "models.py: _builtin", "models.py: _head_preset", "models.py: _ready_made",
    "models.py: _server", "number_tables.py: _frame", "readout.py: attributed", "readout.py: head_pushes",
    "readout.py: lensed", "readout.py: mlp_pushes", "routes.py: found", "session.py: preset_and_base",
    "stability.py: headroom", "stability.py: masks", "stability.py: sweep", "stability.py: widths",
    "watch_it_learn.py: record", "why_sqrt_dk.py: curves", "why_sqrt_dk.py: own_rows", "why_sqrt_dk.py: saturation",
}  # fmt: skip


def _old_ways() -> set[str]:
    """Each function decorated with a functools or Streamlit cache, and each module-level OrderedDict(), in ui/."""
    found = set()
    for path in sorted(UI.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for d in node.decorator_list:
                    name = d.func if isinstance(d, ast.Call) else d
                    if (name.attr if isinstance(name, ast.Attribute) else getattr(name, "id", "")) in OLD_WAYS:
                        found.add(f"{path.name}: {node.name}")
        for node in tree.body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "OrderedDict":
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                found.add(f"{path.name}: {ast.unparse(target)}")
    return found


def test_values_kept_between_runs_go_into_the_one_cache() -> None:
    found = _old_ways()
    assert not found - LEFT - HELD, f"a new cache outside the one cache: {sorted(found - LEFT - HELD)}"
    assert found >= HELD, f"a registry the rule names is gone: {sorted(HELD - found)}"
