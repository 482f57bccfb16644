"""User text reaches Markdown only through the one escaping helper: a check of the source, and of the helper.

Streamlit renders the text of ``st.markdown``, ``st.caption``, ``st.error`` ..., widget labels and our own
``state.say`` messages as Markdown. The check below walks every call of those in the UI code and the pages, and
fails on any interpolation (f-string slot, ``+`` or ``.format``) of an expression that names user text (tokens,
titles, labels, file names, URL values, notes, cell text...) unless it is wrapped in ``esc``, ``quoted`` or ``md``
from :mod:`attention.ui.core.text`.
Two ways to say "this is already safe Markdown": a name ending in ``_md`` (built from
escaped parts), or a ``# ours: <why>`` comment on the call's first line (our own text, or a message a function built
with the helper). It is a name-based check, so it is proved on a few known-bad and known-good snippets first.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attention.ui.core.text import esc, md, quoted
from tests.helpers import ROOT

SOURCES = sorted(
    [*(ROOT / "attention" / "ui").rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "streamlit_app.py"]
)

# Streamlit calls whose first argument is rendered as Markdown (widget labels included)
RENDERERS = {
    "markdown",
    "caption",
    "error",
    "warning",
    "info",
    "success",
    "write",
    "title",
    "header",
    "subheader",
    "toast",
    "expander",
    "button",
    "download_button",
    "selectbox",
    "radio",
    "number_input",
    "text_input",
    "text_area",
    "checkbox",
    "toggle",
    "file_uploader",
    "tabs",
    "metric",
    "popover",
    "page_link",
    "slider",
    "select_slider",
}
# names that hold user text: whatever they are attributes of, they must be escaped before rendering
TAINTED = {
    "tokens",
    "token",
    "toks",
    "labels",
    "label",
    "title",
    "description",
    "notes",
    "note",
    "filename",
    "file_name",
    "qp",
    "query_params",
    "text",
    "value",
    "src",
    "source",
    "word",
    "words",
    "cell",
    "raw",
    "payload",
    "sentence",
    "loaded",
    "hint",
    "goal",
    "name_text",
    "why",
}
SAFE_CALLS = {"esc", "quoted", "md", "len", "int", "float", "round", "abs", "min", "max", "sum", "range"}


def _rendered_argument(call: ast.Call) -> ast.expr | None:
    """The argument that Streamlit renders as Markdown, if ``call`` is such a call."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in RENDERERS and call.args:
        return call.args[0]
    if isinstance(func, ast.Attribute) and func.attr == "say" and len(call.args) >= 3:  # state.say(place, kind, text)
        return call.args[2]
    if isinstance(func, ast.Name) and func.id == "say" and len(call.args) >= 3:
        return call.args[2]
    return None


def _interpolated(expr: ast.expr) -> list[ast.expr]:
    """The parts of a message that are values rather than our own literal text."""
    if isinstance(expr, ast.JoinedStr):
        return [v.value for v in expr.values if isinstance(v, ast.FormattedValue)]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Mod)):
        return _interpolated(expr.left) + _interpolated(expr.right)
    if isinstance(expr, ast.IfExp):
        return _interpolated(expr.body) + _interpolated(expr.orelse)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "format":
        return [*expr.args, *(k.value for k in expr.keywords)]
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "join":
        return list(expr.args)
    if isinstance(expr, ast.Constant):
        return []
    return [expr]


def _tainted_names(expr: ast.expr) -> list[str]:
    """User-text names used in ``expr`` outside a call of an escaping (or numeric) helper."""
    if isinstance(expr, ast.Call):
        f = expr.func
        fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if fname in SAFE_CALLS:
            return []
        if isinstance(f, ast.Attribute) and f.attr == "join":
            return [n for a in expr.args for n in _tainted_names(a)]
    if isinstance(expr, (ast.GeneratorExp, ast.ListComp)):
        return _tainted_names(expr.elt)
    found = []
    if isinstance(expr, ast.Name) and expr.id.endswith("_md"):
        return []
    if isinstance(expr, ast.Name) and expr.id in TAINTED:
        found.append(expr.id)
    if isinstance(expr, ast.Attribute) and expr.attr in TAINTED:
        found.append(expr.attr)
    for child in ast.iter_child_nodes(expr):
        if isinstance(child, ast.expr):
            found += _tainted_names(child)
    return found


def problems(source: str, where: str = "<snippet>") -> list[str]:
    """Every rendered interpolation of user text that bypasses the escaping helper, as "file:line: names"."""
    out = []
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and "# ours: " in lines[node.lineno - 1]:
            continue
        if isinstance(node, ast.Call) and (arg := _rendered_argument(node)) is not None:
            for part in _interpolated(arg):
                names = _tainted_names(part)
                if names:
                    out.append(f"{where}:{node.lineno}: {', '.join(sorted(set(names)))}")
    return out


@pytest.mark.parametrize(
    "snippet",
    [
        'st.markdown(f"Loaded {preset.title}")',
        'st.caption("Tokens: " + ", ".join(s.tokens))',
        'state.say("x", "error", f"{name} is {value!r}")',
        'st.warning("The link asked for {}".format(qp["preset"]))',
        'st.button(f"Use {label}")',
        'st.error(f"{quoted(a)} and {word}")',
    ],
)
def test_the_check_finds_unescaped_user_text(snippet: str) -> None:
    assert problems(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        'st.markdown(f"Loaded {esc(preset.title)}")',
        'st.caption("Tokens: " + ", ".join(esc(t) for t in s.tokens))',
        'state.say("x", "error", f"{quoted(value)} is not a number; {len(tokens)} tokens")',
        'st.warning(md("The link asked for {}", qp["preset"]))',
        'st.markdown(f"{n} tokens, d_k = {d.d_k}")',
        'st.caption(f"Tokens: {toks_md}")',
        'st.caption("; ".join(notes))  # ours: built with quoted()',
    ],
)
def test_the_check_passes_escaped_text(snippet: str) -> None:
    assert not problems(snippet), problems(snippet)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_user_text_reaches_markdown_unescaped(path: Path) -> None:
    found = problems(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "user text rendered without attention.ui.core.text.esc:\n" + "\n".join(found)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_html_is_let_through(path: Path) -> None:
    assert "unsafe_allow_html=True" not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "hostile",
    [
        "![x](http://example.invalid/p.png)",
        "[click](javascript:alert(1))",
        "<img src=x onerror=alert(1)>",
        ":red[alarm] :material/warning: $x^2$ **bold** _it_ `code` ~~s~~ #h |t|",
        "&lt;b&gt;",
    ],
)
def test_the_helper_leaves_no_markdown_special_unescaped(hostile: str) -> None:
    out = esc(hostile)
    i = 0
    while i < len(out):  # every special character is preceded by a backslash
        if out[i] == "\\":
            i += 2
            continue
        assert out[i] not in "\\`*_{}[]#+|~<>&:$", (hostile, out, i)
        i += 1
    assert quoted(hostile).startswith("“") and md("a {} b", hostile) == f"a {out} b"


def test_the_helper_cuts_long_text_and_folds_line_breaks() -> None:
    assert esc("a\n\n# heading\n- item") == r"a \# heading - item"
    assert len(esc("x" * 10_000)) == 300 and esc("x" * 10_000).endswith("…")
