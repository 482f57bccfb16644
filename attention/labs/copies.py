"""The class board's copy check: which two hand-ins of one challenge are closer than chance makes likely, and why.

A hand-in is what the student changed: every cell of the matrices the challenge lets her edit that differs from the
challenge's start, with its number as typed (the shortest text that reads back as that float: "-10.001", "0.37").
Cells the hint names are left out (every student who follows the hint types the same numbers there: that is no
sign of copying). Two hand-ins are flagged when they changed the same cells beyond the hint (one or more) and agree
on every one of them, to the digits typed or within NEAR of the other's number (a near copy: "-10.001" beside "-10").

What it cannot catch: a copy of a hand-in that only follows the hint (nothing beyond the hint to compare), a copy
changed on purpose by more than NEAR, or numbers passed on by word of mouth and retyped differently. Two students
who both change one cell beyond the hint to the same round number (-10), or within NEAR of it, are flagged though
they may not have copied: the reason shown says exactly what agreed, for the teacher to judge.

    edits = hand_in({"W_v": start}, {"W_v": now}, hint, {"W_v": (rows, cols)})
    flags = near_copies([("Ada", encode(edits_a)), ("Bob", encode(edits_b))])   # [(("Ada", "Bob"), "why")]
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

NEAR = 1e-3  # two numbers agree within this share of the larger one (or of 1, for numbers near 0)
MAX_EDITS = 4096  # cells kept per hand-in (a whole 64 × 64 matrix): a bigger one is cut, and says so
MAX_TEXT = 400_000  # characters of a stored hand-in read back (bounded before json parses it)


@dataclass(frozen=True)
class Edit:
    """One cell a student changed: its matrix, row and column labels, the number as typed, and whether the hint names
    that cell."""

    matrix: str
    row: str
    col: str
    text: str
    hinted: bool

    @property
    def cell(self) -> tuple[str, str, str]:
        return self.matrix, self.row, self.col

    @property
    def where(self) -> str:
        return f"{self.matrix} {self.row}·{self.col}"


def _named(label: str, hint: str) -> bool:
    """Whether ``hint`` names ``label`` (a row or column label, or a matrix name) as a word of its own."""
    return re.search(rf"(?<![\w']){re.escape(label)}(?![\w'])", hint) is not None or f"'{label}'" in hint


def hinted_cells(hint: str, matrix: str, rows: Sequence[str], cols: Sequence[str], only: bool) -> set[tuple[int, int]]:
    """The cells of ``matrix`` (with these row and column labels) that ``hint`` names: none when it does not name the
    matrix (unless it is the ``only`` one that may be edited); the whole matrix when it speaks of every number of it
    or names neither a row nor a column; else the rows it names (all when none) by the columns it names (all when
    none). Generous on purpose: a cell the hint may mean is never counted against a student."""
    hint = hint[:4000]
    if not (only or _named(matrix, hint)):
        return set()
    named_rows = [i for i, r in enumerate(rows) if _named(r, hint)]
    named_cols = [j for j, c in enumerate(cols) if _named(c, hint)]
    rows_i = named_rows or range(len(rows))
    cols_i = named_cols or range(len(cols))
    return {(i, j) for i in rows_i for j in cols_i}


def hand_in(
    start: Mapping[str, np.ndarray],
    now: Mapping[str, np.ndarray],
    hint: str,
    labels: Mapping[str, tuple[Sequence[str], Sequence[str]]],
) -> list[Edit]:
    """Every cell of the matrices in ``start`` (the editable ones, at the challenge's start) that ``now`` changed,
    with its number as typed and whether the hint names it (``labels``: each matrix's row and column labels)."""
    out: list[Edit] = []
    for name in sorted(start):
        before, after = np.asarray(start[name]), np.asarray(now[name])
        if before.shape != after.shape or before.ndim != 2:
            continue
        rows, cols = labels[name]
        named = hinted_cells(hint, name, rows, cols, only=len(start) == 1)
        for i, j in zip(*np.nonzero(before != after), strict=True):
            out.append(Edit(name, rows[i], cols[j], repr(float(after[i, j])), (int(i), int(j)) in named))
    return out[:MAX_EDITS]


def encode(edits: Sequence[Edit]) -> str:
    """A hand-in as the board stores it (JSON: one list per cell)."""
    return json.dumps([[e.matrix, e.row, e.col, e.text, int(e.hinted)] for e in edits], separators=(",", ":"))


def decode(text: str) -> list[Edit]:
    """A stored hand-in read back; [] when it does not read (never an exception: the board still draws)."""
    if not isinstance(text, str) or not text or len(text) > MAX_TEXT:
        return []
    try:
        rows = json.loads(text)
        return [Edit(str(m), str(r), str(c), str(v), bool(h)) for m, r, c, v, h in rows[:MAX_EDITS]]
    except (ValueError, TypeError):
        return []


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _near(a: str, b: str) -> bool:
    x, y = _number(a), _number(b)
    return x is not None and y is not None and abs(x - y) <= NEAR * max(1.0, abs(x), abs(y))


def compare(a: Sequence[Edit], b: Sequence[Edit]) -> str | None:
    """Why two hand-ins look copied (a sentence), or None when their closeness is what chance or the hint gives."""
    mine = {e.cell: e for e in a if not e.hinted}
    theirs = {e.cell: e for e in b if not e.hinted}
    if not mine or mine.keys() != theirs.keys():  # nothing beyond the hint, or other cells changed
        return None
    cells = sorted(mine)
    same = [c for c in cells if mine[c].text == theirs[c].text]
    if all(_near(mine[c].text, theirs[c].text) for c in cells):  # the same digits are near, too
        shown = [
            f"{mine[c].where} = {mine[c].text}" + ("" if c in same else f" and {theirs[c].text}") for c in cells[:6]
        ]
        more = f" and {len(cells) - 6} more" if len(cells) > 6 else ""
        how = "to the digits typed" if len(same) == len(cells) else f"within {NEAR:.1%} of each other"
        return (
            f"the same {len(cells)} cell{'s' if len(cells) > 1 else ''} changed beyond the hint, {how}: "
            f"{'; '.join(shown)}{more}; no other change beyond the hint"
        )
    return None


def near_copies(hand_ins: Sequence[tuple[str, str]]) -> list[tuple[tuple[str, str], str]]:
    """Each pair of students whose stored hand-ins (name, :func:`encode` text) look copied, with why."""
    read = [(name, decode(text)) for name, text in hand_ins if text]
    found = []
    for (name_a, a), (name_b, b) in combinations(read, 2):
        why = compare(a, b)
        if why is not None:
            found.append(((name_a, name_b), why))
    return found
