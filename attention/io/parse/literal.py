"""The bracket-literal parser: numpy and Python matrix literals read by a hand-written tokenizer, never evaluated.

Pasted text is split into brackets, commas and "atoms"; an atom becomes a number only when it matches the strict
decimal pattern of :mod:`.cells`. ``eval``, ``exec`` and ``ast.literal_eval`` are not used at all, so
``__import__('os').system('x')``, ``np.ones((3, 3))``, ``[1]*3`` or ``lambda: 0`` are refused as "not a matrix
literal" without running anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from ...errors import AttentionError
from ...names import MAX_NUMBER_CHARS
from .cells import NONFINITE, NUMBER, cell_value, count, short
from .limits import MAX_CELLS, MAX_DEPTH

_DTYPES = {
    "float64",
    "float32",
    "float16",
    "float",
    "double",
    "int64",
    "int32",
    "int16",
    "int8",
    "int",
    "uint64",
    "uint32",
    "uint16",
    "uint8",
}
_WRAPPER = re.compile(
    r"(?:(?:np|numpy)\s*\.\s*)?(?:array|asarray)\s*\((?P<body>.*?)"
    r"(?:,\s*dtype\s*=\s*(?P<dtype>[\w.'\"]+)\s*)?\)\s*;?",
    re.DOTALL,
)
_ASSIGN = re.compile(r"[A-Za-z_]\w*\s*=(?!=)\s*")
_LEX = re.compile(r"\s+|[\[\]()]|,|[^\s\[\](),]+")


def literal_body(body: str, name: str, source: str = "paste") -> str | None:
    """The bracketed part of a numpy/Python literal, or None when ``body`` is not one.

    Strips ``W = ``, ``np.array(``/``numpy.array(``/``array(`` and a trailing ``dtype=...``.
    """
    rest = body
    m = _ASSIGN.match(rest)
    if m and (rest[m.end() :].startswith("[") or _WRAPPER.fullmatch(rest[m.end() :])):
        rest = rest[m.end() :]
    w = _WRAPPER.fullmatch(rest)
    if w:
        dtype = w.group("dtype")
        if dtype is not None:
            plain = dtype.strip("'\"").removeprefix("np.").removeprefix("numpy.")
            if plain not in _DTYPES:
                raise AttentionError(
                    f"{name}: the {source} is not a matrix literal (dtype={short(dtype, 20)} is not a number type)",
                    matrix=name,
                )
        inner = w.group("body").strip()
        if not inner.startswith("["):
            raise AttentionError(
                f"{name}: the {source} is not a matrix literal ({short(body)}); inside np.array(...) there must be "
                "a bracketed list of numbers, and nothing pasted is ever run",
                matrix=name,
            )
        return inner
    if rest.startswith("["):
        return rest
    return None


def _where_in(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line}, character {col}"


def parse_brackets(text: str, name: str, source: str = "paste") -> np.ndarray:
    """Tokenize and parse a bracketed literal into an array (1-D, 2-D or 3-D); never evaluates."""

    def not_literal(why: str) -> AttentionError:
        return AttentionError(
            f"{name}: the {source} is not a matrix literal ({why}); only numbers, brackets, commas and spaces "
            "are read, and nothing pasted is ever run",
            matrix=name,
        )

    stack: list[list] = []
    closers: list[str] = []
    root: list | None = None
    after_item, cells = False, 0  # the last thing in the current list was an element (so ',' is allowed); numbers read
    for m in _LEX.finditer(text):
        tok = m.group()
        if tok[0].isspace():
            continue
        if root is not None:
            raise not_literal(f"unexpected {short(tok, 20)} after the closing bracket, at {_where_in(text, m.start())}")
        if tok in "[(":
            if len(stack) >= MAX_DEPTH:
                raise AttentionError(
                    f"{name}: the {source} is nested more than {MAX_DEPTH} levels deep; {_FORM}", matrix=name
                )
            new: list = []
            if stack:
                stack[-1].append(new)
            stack.append(new)
            closers.append("]" if tok == "[" else ")")
            after_item = False
        elif tok in "])":
            if not stack or tok != closers[-1]:
                raise not_literal(f"unmatched {tok!r} at {_where_in(text, m.start())}")
            closers.pop()
            done = stack.pop()
            after_item = True
            if not stack:
                root = done
        elif tok == ",":
            if not stack or not after_item:
                raise not_literal(f"a comma with nothing before it at {_where_in(text, m.start())}")
            after_item = False
        else:
            if not stack:
                raise not_literal(f"{short(tok, 20)} outside the brackets")
            _check_number(tok, _where_in(text, m.start()), name, source, not_literal)
            cells += 1
            if cells > MAX_CELLS:
                raise AttentionError(
                    f"{name}: the {source} has more than {MAX_CELLS:,} numbers; that is larger than any supported "
                    f"matrix",
                    matrix=name,
                )
            stack[-1].append(tok)
            after_item = True
    if stack:
        raise not_literal(f"{len(stack)} bracket(s) left open at the end")
    if root is None:
        raise AttentionError(f"{name}: the {source} is empty", matrix=name)
    return _nested_to_array(root, name, source)


_FORM = "a matrix is [[row], [row], ...]"


def _check_number(tok: str, where: str, name: str, source: str, not_literal: Callable[[str], AttentionError]) -> None:
    """An atom between the brackets must be a number: not numpy's '...' of a shortened print, not too long, and a
    number or a non-finite word (checked later) by its form."""
    if tok == "..." or tok == "…":
        raise AttentionError(
            f"{name}: the {source} contains '...', so numpy shortened the array when printing it; print it "
            "in full with np.set_printoptions(threshold=sys.maxsize) and paste again",
            matrix=name,
        )
    if len(tok) > MAX_NUMBER_CHARS:
        raise AttentionError(
            f"{name}: the {source} has {len(tok):,} characters without a break at "
            f"{where} ({short(tok, 20)}); a number has at most {MAX_NUMBER_CHARS:,}",
            matrix=name,
        )
    if not (NUMBER.fullmatch(tok) or NONFINITE.fullmatch(tok)):
        raise not_literal(f"{short(tok, 20)} at {where} is not a number")


def _nested_to_array(root: list, name: str, source: str = "paste") -> np.ndarray:
    """Check a nested list of atom strings is rectangular, then convert every atom (row/column named on error)."""
    depth, node = 1, root
    while node and isinstance(node[0], list):
        depth, node = depth + 1, node[0]
    levels = {1: ["numbers"], 2: ["row", "numbers"], 3: ["batch item", "row", "numbers"]}[depth]

    def shape_of(node: list, level: int, where: str) -> tuple[int, ...]:
        if not node:
            raise AttentionError(f"{name}: {where or 'the ' + source} is empty; every row needs numbers", matrix=name)
        kinds = {isinstance(x, list) for x in node}
        if len(kinds) > 1 or (True in kinds) != (level < depth - 1):
            raise AttentionError(
                f"{name}: {where or 'the ' + source} mixes numbers and bracketed rows; every row must be a list of "
                f"numbers",
                matrix=name,
            )
        if level == depth - 1:
            return (len(node),)
        label = levels[level]
        prefix = f"{where}, " if where else ""
        first = shape_of(node[0], level + 1, f"{prefix}{label} 1")
        for i, child in enumerate(node[1:], start=2):
            s = shape_of(child, level + 1, f"{prefix}{label} {i}")
            if s != first:
                if len(s) == 1:
                    raise AttentionError(
                        f"{name}: {prefix}{label} {i} has {count(s[0], 'number')} but {label} 1 has {first[0]}; "
                        "every row needs the same number of columns",
                        matrix=name,
                        cell=(i - 1, min(s[0], first[0])),
                    )
                raise AttentionError(
                    f"{name}: {prefix}{label} {i} has shape {s} but {label} 1 has {first}; the rows are ragged",
                    matrix=name,
                )
        return (len(node),) + first

    shape = shape_of(root, 0, "")
    flat: list[str] = []

    def walk(node: list) -> None:
        for x in node:
            if isinstance(x, list):
                walk(x)
            else:
                flat.append(x)

    walk(root)
    out = np.empty(len(flat), dtype=np.float64)
    cols = shape[-1]
    rows = shape[-2] if len(shape) >= 2 else 1
    for k, tok in enumerate(flat):
        r, c = (k // cols) % rows, k % cols
        where = (f"batch item {k // (rows * cols) + 1}, " if len(shape) == 3 else "") + f"row {r + 1}, column {c + 1}"
        out[k] = cell_value(tok, name, where, (r, c), allow_neg_inf=False)
    return out.reshape(shape)
