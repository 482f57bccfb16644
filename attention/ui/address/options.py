"""The values of an address spelled as numbers: whole numbers in a range, scales and temperatures.

Each returns None for a text that is not such a value (every value is user text: bounded before it is read).
"""

from __future__ import annotations

import math

from ... import names
from ..core import session

SOFTMAXES = names.SOFTMAX_VARIANTS  # the values a link may give


def whole(text: str, lo: int, hi: int) -> int | None:
    """The whole number ``text`` spells, if it is plain digits from ``lo`` to ``hi``; else None."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 10 and lo <= int(text) <= hi else None


def number(text: str) -> float | None:
    """The number ``text`` spells, if it is a finite scale or temperature in range; else None."""
    try:
        value = float(text) if len(text) <= 40 else math.nan
    except ValueError:
        return None
    lo, hi = session.FACTOR_RANGE
    return value if math.isfinite(value) and lo <= value <= hi else None


def scale_value(text: str, r: object = None) -> tuple[float | None] | None:
    """A scale as a link spells it: default (1/sqrt(d_k)), none (1) or a number in range; as a 1-tuple (None is a
    value: the default), or None when it is none of them."""
    value = {"default": None, "none": 1.0}.get(text, number(text))
    return None if value is None and text != "default" else (value,)
