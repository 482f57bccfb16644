"""The one bounded JSON reader for preset and challenge files: size, depth and numbers checked before parsing.

``json.loads`` alone recurses once per nesting level (10,000 levels raise RecursionError), turns a 400-digit
number into a Python int that numpy cannot check (``np.isfinite`` raises TypeError), and stops at 4,300 digits
with Python's own "sys.set_int_max_str_digits()" text. :func:`load_json` refuses too-large and too-deep input
before parsing, reads integers of more than 18 digits as floats (so a huge one becomes inf and is refused by
the caller's "must be a finite number" rule), and marks NaN/Infinity literals so the caller can name the field.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from ..errors import AttentionError
from ..names import MAX_UPLOAD_BYTES

MAX_JSON_BYTES = MAX_UPLOAD_BYTES  # 16 MiB, as any upload
MAX_JSON_DEPTH = 32  # a preset nests 5 levels (expected.shapes..., a 3-D matrix); notes may nest a little more


class NonFinite(str):
    """Marks a NaN / Infinity / -Infinity literal while parsing, so the caller can name its field."""


def _int(text: str) -> int | float:
    """An integer literal: exact when it fits in 18 digits, else a float (inf when it overflows)."""
    digits = len(text.lstrip("-"))
    if digits <= 18:
        return int(text)
    try:
        return float(text)
    except OverflowError:  # pragma: no cover - float() of a digit string gives inf rather than raising
        return float("-inf") if text.startswith("-") else float("inf")


# A JSON string (escapes included), or an unterminated one running to the end (as a trailing backslash does):
# possessive, so it never backtracks.
_STRING = re.compile(r'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)
# [ and { one level deeper (+1), ] and } one back (-1 as int8), anything else 0: a table for bytes.translate
_STEPS = bytes(1 if c in b"[{" else 255 if c in b"]}" else 0 for c in range(256))
_CHUNK = 1 << 14  # small enough that its running sum (64 KB) stays in reused memory


def nesting_depth(text: str) -> int:
    """The deepest nesting of [ and { in JSON text, skipping strings: linear, and in C (strings removed by one
    possessive pattern, the rest a running sum over bytes, 16 KB at a time)."""
    steps = _STRING.sub("", text).encode("utf-8", "surrogatepass").translate(_STEPS)
    depth = deepest = 0
    for start in range(0, len(steps), _CHUNK):
        chunk = np.frombuffer(steps, dtype=np.int8, count=min(_CHUNK, len(steps) - start), offset=start)
        level = depth + np.cumsum(chunk, dtype=np.int32)  # (chunk,): the nesting after each byte
        deepest, depth = max(deepest, int(level.max())), int(level[-1])
    return deepest


def load_json(
    data: str | bytes, source: str, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """Parse JSON text from ``source`` (a file name, for messages) within the bounds; AttentionError otherwise."""
    if isinstance(data, (bytes, bytearray)):
        if len(data) > max_bytes:
            raise AttentionError(
                f"{source}: the preset file is too large ({len(data) / 1024 / 1024:.1f} MB); the limit is "
                f"{max_bytes / 1024 / 1024:.0f} MB"
            )
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise AttentionError(f"{source}: the preset file is not UTF-8 text") from None
    if not isinstance(data, str):
        raise AttentionError(f"{source}: expected JSON text, got {type(data).__name__}")
    if len(data) > max_bytes:
        raise AttentionError(
            f"{source}: the preset file is too large ({len(data) / 1024 / 1024:.1f} MB); the limit is "
            f"{max_bytes / 1024 / 1024:.0f} MB"
        )
    depth = nesting_depth(data)
    if depth > max_depth:
        raise AttentionError(
            f"{source}: the JSON is nested {depth:,} levels deep; a file here nests at most {max_depth}"
        )
    try:
        return json.loads(data, parse_constant=NonFinite, parse_int=_int)
    except json.JSONDecodeError as exc:
        raise AttentionError(f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # defensive: the checks above should make these unreachable
        raise AttentionError(f"{source}: the JSON cannot be read ({type(exc).__name__})") from None
