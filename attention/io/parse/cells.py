"""The cell rule: when a piece of text is a number, and the short forms messages quote values in.

One rule for every number a person types, pastes or uploads: a plain decimal (``-1.5``, ``1.``, ``.5``,
``1.2e-05``) matched by :data:`NUMBER`, then converted with ``float``; nan / inf / infinity are recognised
(:data:`NONFINITE`) so a message can name them. Text over :data:`attention.names.MAX_NUMBER_CHARS` is measured
before any pattern runs and never read as a number.
"""

from __future__ import annotations

import math
import re

from ...errors import AttentionError
from ...names import MAX_NUMBER_CHARS, is_number

# A decimal number, strictly: no underscores, no hex, no words. float() is only called on these. Each character
# can be matched in one way only (digits, then an optional "." and digits, then an optional exponent), so a failing
# match costs one pass: linear, whatever the text.
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
NONFINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def unprotect_label(text: str) -> str:
    """A label cell as text: undo :func:`attention.io.tables.protect_text`.

    A guarded cell (``'`` after optional spaces) loses the spaces and that one ``'`` and keeps the
    rest exactly, trailing spaces included; an unguarded cell is stripped of surrounding whitespace.
    """
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith("'") else text.strip()


def is_number_text(text: str) -> bool:
    """True when ``text`` (stripped) would be read as a number or as a non-finite word (nan, inf); text longer than
    :data:`attention.names.MAX_NUMBER_CHARS` never is (it is not matched at all)."""
    t = text.strip()
    return len(t) <= MAX_NUMBER_CHARS and bool(NUMBER.fullmatch(t) or NONFINITE.fullmatch(t))


def number_too_long(raw: object) -> bool:
    """True for text too long to be read as a number (over :data:`attention.names.MAX_NUMBER_CHARS` characters once
    stripped): the callers' messages name the limit instead of calling it "not a number"."""
    return isinstance(raw, str) and len(raw) > MAX_NUMBER_CHARS and len(raw.strip()) > MAX_NUMBER_CHARS


def cell_number(raw: object) -> float | None:
    """The one numeric-cell rule, for grid cells and any single typed value: the number in ``raw`` (text or a
    number), or None when it is blank or not a number. Text must be a plain decimal number (``0.5``,
    ``-1e-3``, ``+2``) or nan / inf / infinity; numbers too large for a 64-bit float (``1e400``, a 400-digit
    integer) come back as ±inf, never as an exception. Callers decide whether a non-finite value is allowed.
    Text over :data:`attention.names.MAX_NUMBER_CHARS` characters is None, measured before any pattern runs
    (:func:`number_too_long` tells the caller why)."""
    if is_number(raw):
        try:
            return float(raw)
        except OverflowError:  # an integer beyond the float range
            return math.inf if raw > 0 else -math.inf
    if not isinstance(raw, str) or number_too_long(raw):
        return None
    t = raw.strip()
    if not (NUMBER.fullmatch(t) or NONFINITE.fullmatch(t)):
        return None
    return float(t)


def cell_value(text: str, name: str, where: str, cell: tuple[int, int], allow_neg_inf: bool) -> float:
    """One cell's text as a finite float, or raise naming the cell."""
    t = text.strip()
    if len(t) > MAX_NUMBER_CHARS:
        raise AttentionError(
            f"{name} {where} is {len(t):,} characters long ({short(t)}); a number has at most {MAX_NUMBER_CHARS:,}",
            matrix=name,
            cell=cell,
        )
    if NUMBER.fullmatch(t):
        value = float(t)
        if math.isinf(value):
            raise AttentionError(
                f"{name} {where} is {short(t)}, which is too large for a 64-bit float (the largest is about 1.8e308)",
                matrix=name,
                cell=cell,
            )
        return value
    if NONFINITE.fullmatch(t):
        if allow_neg_inf and t.lower() in ("-inf", "-infinity"):
            return -math.inf
        raise AttentionError(
            f"{name} {where} is {short(t)}: NaN and infinity are not allowed; every value must be a finite number",
            matrix=name,
            cell=cell,
        )
    if not t:
        raise AttentionError(f"{name} {where} is blank; every cell needs a number", matrix=name, cell=cell)
    raise AttentionError(f"{name} {where} is {short(t)}, which is not a number", matrix=name, cell=cell)


def count(n: int, noun: str) -> str:
    """``3 cells``, ``1 cell``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def short(text: str, limit: int = 40) -> str:
    """``text`` quoted, shortened to ``limit`` characters."""
    text = str(text)
    return repr(text if len(text) <= limit else text[:limit] + "…")
