"""Challenges: a goal over the trace, the matrices a learner may edit, a hint; files, links and live progress.

A challenge names a preset (and, for a random one, its seed), optional option overrides, the input matrices
that may be edited, and one condition over any array of the trace:

    {"type": "cell", "array": "weights", "row": "sat", "col": "The", "op": ">=", "value": 0.6}
    {"type": "argmax", "row": "on", "col": "cat"}              the row's largest entry is that column, alone
    {"type": "entropy", "row": "all", "op": ">=", "value": 2.4}  bits, of the weights row

``row`` and ``col`` are a 0-based index or a token's text (a token that occurs once); ``row`` may be "all"
(every row that attends something must meet it) and ``col`` may be "self" (the row's own token). With several
heads (options ``heads``), a goal on scores, scaled or weights names one with ``"head"``, a 0-based index (pages
call head 0 "head 1"); without heads there is no ``"head"``. Options asking for grouped key/value heads
(``kv_heads`` < ``heads``) start from the preset's W_k and W_v regrouped as the dashboard does (each shared block
the mean of the blocks it replaces, :func:`attention.heads.regroup`). Challenge
files live in ``challenges/`` at the top of the repository, one ``<id>.json`` each. Titles, goals and hints are
plain text stored as given: a page shows them as text, never as Markdown.

Links: ``c1.<base64url of: checksum (8 bytes) + zlib(compact JSON)>``, the checksum the first 8 bytes of
SHA-256(b"attention-challenge/v1" + zlib bytes), in the edit links' envelope (:class:`attention.io.links.Envelope`):
a changed or cut token is refused before anything is decompressed, decompression is capped at :data:`MAX_BYTES`,
and the JSON then goes through the same checks as a file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .. import masks
from ..errors import AttentionError
from ..heads import regroup
from ..io.folders import shipped_folder
from ..io.jsonfile import NonFinite, load_json
from ..io.links import Envelope
from ..io.presets import Preset, load_preset
from ..names import (
    ARRAYS,
    INPUTS,
    MAX_LINK_CHARS,
    MAX_SEED,
    SQUARE,
    axis_labels,
    is_number,
    is_whole,
    squeeze_batch,
    token_labels,
)
from ..options import from_json as options_from_json
from ..options import short as _short
from ..reading import read
from ..trace import Options, Trace, self_attention

FORMAT = "attention-challenge/1"
CHALLENGE_DIR = shipped_folder("challenges")
MAX_BYTES = 64 * 1024  # a challenge file or a link's JSON
MAX_DEPTH = 6  # the deepest a challenge nests: options.custom_mask is 3 levels below the top
KINDS = ("cell", "argmax", "entropy")
OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
SHOWN_OP = {"<": "<", "<=": "≤", ">": ">", ">=": "≥"}
ALL, SELF = "all", "self"
LINK_VERSION = "c1"
_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
_FIELDS = {  # per condition type: the required fields, then the optional ones
    "cell": ({"type", "array", "row", "col", "op", "value"}, {"head"}),
    "argmax": ({"type", "row", "col"}, {"array", "head"}),
    "entropy": ({"type", "row", "op", "value"}, {"array", "head"}),
}


@dataclass(frozen=True)
class Condition:
    """What must hold. row: an index, a token's text or "all"; col: an index, a token's text or "self" (None for
    entropy); array: one of the trace's arrays (entropy reads "weights"); op and value: the comparison (cell,
    entropy). Indices are 0-based and refer to the array as a person sees it (a batch of one dropped). head: the
    0-based head whose (n, n) array is read when the array has a head axis; None without heads."""

    kind: str
    row: int | str
    col: int | str | None = None
    array: str = "weights"
    op: str | None = None
    value: float | None = None
    head: int | None = None


@dataclass(frozen=True)
class Challenge:
    """One challenge. options: JSON values of :class:`Options` fields that replace the preset's (the learner
    cannot change them); seed: the draw of a random preset (None: the preset's own); order: its place in a list."""

    id: str
    title: str
    preset: str
    goal: str
    condition: Condition
    editable: tuple[str, ...]
    hint: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    order: float = 1000.0


@dataclass(frozen=True)
class Progress:
    """Where a trace stands. value: the current number (for "all", the row furthest from the goal); target: the
    number it must pass (for argmax, the largest other entry); rows_met of rows_total rows meet it; blocked says
    why the trace does not count (a locked matrix edited, other options or tokens, a resized array), else None
    (when blocked, value is None and rows_met = rows_total = 0)."""

    met: bool
    value: float | None
    target: float | None
    description: str
    rows_met: int
    rows_total: int
    blocked: str | None = None


# ------------------------------------------------------------------------------------------------ the engine side


def challenge_preset(challenge: Challenge) -> Preset:
    """The preset the challenge starts from: its seed, and its options with the challenge's overrides (what a page
    loads, and what :func:`evaluate` compares a trace with)."""
    return _start(load_preset(challenge.preset, challenge.seed), challenge.options)


def _start(preset: Preset, overrides: Mapping[str, Any]) -> Preset:
    """The preset with the challenge's option overrides; grouped key/value heads asked of a preset that has one
    key/value block per head get W_k and W_v regrouped (as the dashboard's key/value heads control does)."""
    if not overrides:
        return preset
    o, was = _apply_options(preset.options, overrides), preset.options
    start = dataclasses.replace(preset, options=o)
    if o.kv == o.heads or was.kv != was.heads:
        return start
    m = preset.matrices()
    try:
        for name in ("W_k", "W_v"):  # (d_model, kv · w): h blocks pooled to kv
            m[name] = regroup(m[name], o.heads, o.heads, o.kv, o.projection)
    except ValueError:  # the heads do not divide the widths: computing the start says so (an AttentionError)
        return start
    return dataclasses.replace(start, fixed=m, random=None)


def locked_edit(challenge: Challenge, matrix_name: str) -> str | None:
    """None when ``matrix_name`` may be edited in this challenge; else the message to show for the refused edit."""
    allowed = _and_list(challenge.editable)
    if matrix_name in challenge.editable:
        return None
    if matrix_name not in INPUTS:
        return f"{matrix_name} is not an input matrix; in this challenge you may edit only {allowed}."
    return f"{matrix_name} is locked in this challenge: you may edit only {allowed}."


def run(challenge: Challenge, edits: Mapping[str, np.ndarray] | None = None) -> Trace:
    """The challenge's trace with ``edits`` (name -> new matrix) in place of the preset's; a locked one is refused."""
    preset = challenge_preset(challenge)
    m = preset.matrices()
    for name, value in (edits or {}).items():
        message = locked_edit(challenge, name)
        if message:
            raise AttentionError(message, matrix=name)
        m[name] = np.asarray(value, dtype=np.float64)
    return self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=preset.tokens, options=preset.options)


def evaluate(challenge: Challenge, trace: Trace) -> Progress:
    """Whether ``trace`` meets the challenge, with the current value, the target and a short description.

    The trace counts only if it was computed from the challenge's preset with the challenge's options and its
    tokens, and every locked matrix is exactly the preset's; otherwise ``blocked`` says why and ``met`` is False.
    """
    preset = challenge_preset(challenge)
    cond = challenge.condition
    A = squeeze_batch(np.asarray(getattr(trace, cond.array)))
    if cond.head is not None and A.ndim == 3 and cond.head < A.shape[0]:
        A = A[cond.head]  # (n, n): the head the goal names
    blocked = _blocked(challenge, preset, trace) or _out_of_range(cond, A, preset.tokens)
    if blocked:
        return Progress(False, None, cond.value, blocked, 0, 0, blocked)
    rows_lbl, cols_lbl = axis_labels(cond.array, A.shape, preset.tokens, preset.options.projection)
    masked = set(trace.fully_masked)
    if cond.row == ALL:
        rows = [i for i in range(A.shape[0]) if not (cond.array in SQUARE and i in masked)]
    else:
        i = _index(cond.row, preset.tokens)
        if cond.array in SQUARE and i in masked:
            text = f"'{rows_lbl[i]}' is fully masked: it attends to nothing, so the goal cannot be met"
            return Progress(False, None, cond.value, text, 0, 1)
        rows = [i]
    if not rows:
        return Progress(False, None, cond.value, "every row is fully masked: nothing attends to anything", 0, 0)
    entropy = read(A, trace.allowed).entropy if cond.kind == "entropy" else None
    checks = [_check_row(cond, A, i, preset.tokens, entropy) for i in rows]
    worst = min(range(len(rows)), key=lambda k: checks[k].margin)
    met_count = sum(c.met for c in checks)
    c = checks[worst]
    text = ("" if cond.head is None else f"head {cond.head + 1}: ") + _describe(
        cond, rows_lbl, cols_lbl, rows[worst], c
    )
    if cond.row == ALL:
        if met_count == len(rows):
            text = f"every row meets the goal; the closest call: {text}"
        else:
            text = f"{met_count} of {len(rows)} rows meet the goal; the furthest: {text}"
    return Progress(met_count == len(rows), c.value, c.target, text, met_count, len(rows))


class _RowCheck(NamedTuple):
    met: bool
    value: float  # the cell, the entropy, or (argmax) the entry that must be on top
    target: float  # the number to pass: the condition's value, or (argmax) the largest other entry
    margin: float  # > 0 when met; larger is safer
    col: int  # the cell's column (-1 for an entropy)
    top: int  # the column holding the largest other entry (argmax), else -1


def _check_row(
    cond: Condition, A: np.ndarray, i: int, tokens: tuple[str, ...], entropy: np.ndarray | None
) -> _RowCheck:
    """How row i of A stands against the condition."""
    if cond.kind == "entropy":
        value = float(entropy[i])
        return _RowCheck(OPS[cond.op](value, cond.value), value, cond.value, _margin(cond, value), -1, -1)
    j = i if cond.col == SELF else _index(cond.col, tokens)
    value = float(A[i, j])
    if cond.kind == "cell":
        return _RowCheck(OPS[cond.op](value, cond.value), value, cond.value, _margin(cond, value), j, -1)
    others = np.where(np.arange(A.shape[1]) == j, -np.inf, A[i])  # (cols,): the row without column j
    k = int(np.argmax(others))
    best = float(others[k]) if A.shape[1] > 1 else -math.inf
    return _RowCheck(value > best, value, best, value - best, j, k)


def _margin(cond: Condition, value: float) -> float:
    """How far a value is past the condition's number (negative when short; an unmet equality is short too)."""
    margin = value - cond.value if cond.op in (">", ">=") else cond.value - value
    return margin if OPS[cond.op](value, cond.value) else min(margin, -1e-300)


def _describe(cond: Condition, rows: list[str], cols: list[str], i: int, c: _RowCheck) -> str:
    who = f"'{rows[i]}'"
    if cond.kind == "entropy":
        return f"{who} has an entropy of {_num(c.value)} bits; the goal is {SHOWN_OP[cond.op]} {_num(cond.value)} bits"
    if cond.kind == "cell":
        what = (
            f"{who} gives '{cols[c.col]}' {_num(c.value)} of its attention"
            if cond.array == "weights"
            else f"{cond.array}[{who}, '{cols[c.col]}'] is {_num(c.value)}"
        )
        return f"{what}; the goal is {SHOWN_OP[cond.op]} {_num(cond.value)}"
    lead = f"{who} attends most to" if cond.array == "weights" else f"row {who} of {cond.array} is largest at"
    if c.met:
        return f"{lead} '{cols[c.col]}' ({_num(c.value)}); the next is {_num(c.target)}"
    return f"{lead} '{cols[c.top]}' ({_num(c.target)}); the goal is '{cols[c.col]}' (now {_num(c.value)})"


def _num(v: float | None) -> str:
    return "—" if v is None else f"{v:.4g}"


def _said(o: Options, name: str) -> str:
    """An option's value in a message, in words: the mask joined as a file spells it ("causal+padding"), the
    projections in the learner's words (X·W, X·Wᵀ), padding by the tokens it marks, on/off, a grid as a grid."""
    value = masks.join(o.mask) if name == "mask" else getattr(o, name)
    if name == "padding":
        marked = [str(i + 1) for i, flag in enumerate(value) if flag]
        return f"on token {', '.join(marked)}" if marked else "on no token"
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None or value == ():
        return "none"
    if isinstance(value, tuple):
        return f"a {len(value)}-row grid" if isinstance(value[0], tuple) else ", ".join(map(str, value))
    return {"x_w": "X·W", "x_wt": "X·Wᵀ"}.get(value, repr(value)) if isinstance(value, str) else repr(value)


def _plain(o: Options) -> Options:
    """``o`` with padding flags that mark no token read as none (they change nothing)."""
    return o if any(o.padding) else dataclasses.replace(o, padding=())


def _blocked(challenge: Challenge, preset: Preset, trace: Trace) -> str | None:
    """Why a trace does not count for this challenge, or None."""
    if trace.X_kv is not None:
        return "this challenge is set on self-attention; the page shows cross-attention (clear the source sentence)"
    if tuple(trace.tokens) != tuple(preset.tokens):
        return f"this challenge is set on the tokens {' '.join(preset.tokens)!r}; the page shows other tokens"
    now, was = _plain(trace.options), _plain(preset.options)
    if now != was:
        diff = [
            f"{f.name} is {_said(now, f.name)} (the challenge uses {_said(was, f.name)})"
            for f in dataclasses.fields(Options)
            if getattr(now, f.name) != getattr(was, f.name)
        ]
        return "the options differ from the challenge's: " + "; ".join(diff)
    start = preset.matrices()
    for name in INPUTS:  # a batch of one is the same sentence as its single item (the dashboard holds it 2-D)
        now, was = squeeze_batch(np.asarray(getattr(trace, name))), squeeze_batch(start[name])
        if name not in challenge.editable and not np.array_equal(now, was):
            return f"{name} was edited, but {(locked_edit(challenge, name) or '').rstrip('.')}"
    begun = preset.compute()  # W_o and learned positions are never editable in a challenge: as at its start or absent
    for name, now, was in (("W_o", trace.W_o, begun.W_o), ("P", trace.positions_added, begun.positions_added)):
        if (now is None) != (was is None) or (
            now is not None and not np.array_equal(squeeze_batch(np.asarray(now)), squeeze_batch(np.asarray(was)))
        ):
            return f"{name} differs from the challenge's start, and a challenge's {name} cannot be edited"
    return None


def _out_of_range(cond: Condition, A: np.ndarray, tokens: tuple[str, ...]) -> str | None:
    """Why the condition cannot be read on A (its shape changed with an edit of an editable matrix), or None."""
    if A.ndim != 2:
        return f"{cond.array} has shape {A.shape} here; this challenge reads one head's 2-D {cond.array}"
    for ref, size, what in ((cond.row, A.shape[0], "row"), (cond.col, A.shape[1], "column")):
        if ref not in (None, ALL, SELF) and _index(ref, tokens) >= size:
            return f"{cond.array} now has {size} {what}s; this challenge reads its {what} {_index(ref, tokens)}"
    if cond.col == SELF and A.shape[0] != A.shape[1]:
        return f"{cond.array} is not square here {A.shape}; this challenge reads its diagonal"
    return None


def _index(ref: int | str, tokens: tuple[str, ...]) -> int:
    """A row or column reference as an index (the reference was checked when the challenge was read)."""
    return ref if isinstance(ref, int) else tokens.index(ref)


def _apply_options(base: Options, overrides: Mapping[str, Any]) -> Options:
    """The preset's options with the challenge's overrides (JSON values), read by the one reader of options."""
    return options_from_json(overrides, base)


def _and_list(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# ------------------------------------------------------------------------------------------------ files


def list_challenges() -> list[str]:
    """The ids of the challenge files in ``challenges/``, in their ``order`` (then by id); broken files are left
    out (:func:`load_challenge` names what is wrong)."""
    found = []
    for path in sorted(CHALLENGE_DIR.glob("*.json")):
        try:
            c = read_challenge_file(path)
        except AttentionError:
            continue
        if c.id == path.stem:
            found.append(c)
    return [c.id for c in sorted(found, key=lambda c: (c.order, c.id))]


def load_challenge(challenge_id: str) -> Challenge:
    """Load ``challenges/<id>.json``."""
    if not (isinstance(challenge_id, str) and _ID.fullmatch(challenge_id)):
        raise AttentionError(f"a challenge id is letters, digits, '_' or '-'; got {challenge_id!r}")
    path = CHALLENGE_DIR / f"{challenge_id}.json"
    if not path.is_file():
        raise AttentionError(f"there is no challenge {challenge_id!r}; choose one of {', '.join(list_challenges())}")
    return read_challenge_file(path)


def read_challenge_file(path: Path) -> Challenge:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise AttentionError(f"{Path(path).name}: cannot read the challenge file ({exc.strerror})") from None
    return parse_challenge(data, Path(path).name)


def to_json(challenge: Challenge, *, compact: bool = False) -> str:
    """The challenge as JSON text (``compact`` for links: no spaces); ``parse_challenge`` reads it back equal."""
    c = challenge.condition
    cond: dict[str, Any] = {"type": c.kind}
    if c.kind != "entropy" or c.array != "weights":
        cond["array"] = c.array
    cond["row"] = c.row
    if c.col is not None:
        cond["col"] = c.col
    if c.op is not None:
        cond["op"], cond["value"] = c.op, c.value
    if c.head is not None:
        cond["head"] = c.head
    d: dict[str, Any] = {"format": FORMAT, "id": challenge.id, "title": challenge.title, "preset": challenge.preset}
    if challenge.seed is not None:
        d["seed"] = challenge.seed
    if challenge.order != 1000.0:
        d["order"] = challenge.order
    d |= {"goal": challenge.goal, "condition": cond, "editable": list(challenge.editable), "hint": challenge.hint}
    if challenge.options:
        d["options"] = dict(challenge.options)
    if compact:
        return json.dumps(d, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return json.dumps(d, ensure_ascii=False, allow_nan=False, indent=2) + "\n"


def fingerprint(challenge: Challenge) -> str:
    """The challenge's content key: a hash of its whole definition (title, goal, condition, bound, preset, options,
    editable matrices, hint), so that a copy with a lower bound under the same title is another challenge."""
    return "c-" + hashlib.sha256(to_json(challenge, compact=True).encode("utf-8")).hexdigest()[:24]


def parse_challenge(data: str | bytes, source_name: str = "challenge.json") -> Challenge:
    """Read and check challenge JSON; every failure names the source and the field. Bounded: at most
    :data:`MAX_BYTES`, nested at most :data:`MAX_DEPTH` deep, numbers finite, integers of at most 18 digits.
    Token references and indices are checked against the preset's tokens and the arrays' shapes."""
    if isinstance(data, (bytes, bytearray)) or len(data) > MAX_BYTES:  # a character is at least one byte
        size = len(data)
    else:
        size = len(data.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise AttentionError(
            f"{source_name}: the challenge is too large ({size / 1024:.1f} KB); the limit is {MAX_BYTES // 1024} KB"
        )
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise AttentionError(f"{source_name}: the challenge is not UTF-8 text") from None
    parsed = load_json(data, source_name, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH)
    return _Reader(source_name).challenge(parsed)


class _Reader:
    """The hand-written schema check; each error names the source and the dotted field."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, message: str) -> AttentionError:
        return AttentionError(f"{self.source}: field '{where}' {message}", field=where)

    def obj(self, value: Any, where: str, required: set[str], optional: set[str]) -> dict:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be an object, got {_kind(value)}")
        prefix = "" if where == "(top level)" else f"{where}."
        missing = sorted(required - value.keys())
        if missing:
            raise self.fail(prefix + missing[0], "is missing")
        extra = sorted(value.keys() - required - optional)
        if extra:
            known = ", ".join(sorted(required | optional))
            raise self.fail(prefix + extra[0], f"is not a known field (known: {known})")
        return value

    def text(self, value: Any, where: str, max_len: int, *, empty: bool = False) -> str:
        if isinstance(value, NonFinite) or not isinstance(value, str):
            raise self.fail(where, f"must be text, got {_kind(value)}")
        if not value.strip() and not empty:
            raise self.fail(where, "is empty")
        if len(value) > max_len:
            raise self.fail(where, f"is longer than {max_len:,} characters")
        return value

    def number(self, value: Any, where: str) -> float:
        if isinstance(value, NonFinite):
            raise self.fail(where, f"is {value}, which is not allowed; every number must be finite")
        if not is_number(value):
            raise self.fail(where, f"must be a number, got {_kind(value)}")
        if not math.isfinite(value):
            raise self.fail(where, "is a number too large for a 64-bit float (the largest is about 1.8e308)")
        return float(value)

    def whole(self, value: Any, where: str, lo: int, hi: int) -> int:
        if not is_whole(value) or not lo <= value <= hi:
            raise self.fail(where, f"must be a whole number from {lo} to {hi:,}, got {_short(value)}")
        return value

    def challenge(self, data: Any) -> Challenge:
        top = self.obj(
            data,
            "(top level)",
            {"format", "id", "title", "preset", "goal", "condition", "editable"},
            {"hint", "options", "seed", "order"},
        )
        if top["format"] != FORMAT:
            raise self.fail("format", f"must be {FORMAT!r}, got {_short(top['format'])}")
        cid = self.text(top["id"], "id", 100)
        if not _ID.fullmatch(cid):
            raise self.fail("id", f"must be letters, digits, '_' or '-', got {_short(cid)}")
        title = self.text(top["title"], "title", 200)
        goal = self.text(top["goal"], "goal", 2000)
        hint = self.text(top.get("hint", ""), "hint", 2000, empty=True)
        order = self.number(top.get("order", 1000.0), "order")
        seed = None if top.get("seed") is None else self.whole(top["seed"], "seed", 0, MAX_SEED)
        editable = self.editable(top["editable"])
        preset_id = self.text(top["preset"], "preset", 100)
        try:
            preset = load_preset(preset_id, seed)
        except AttentionError as exc:
            raise self.fail("preset", f"names no preset here: {exc.message}") from None
        self.options(top.get("options", {}), preset)  # checked field by field; _start applies them
        try:
            trace = _start(preset, top.get("options", {})).compute()  # W_k, W_v regrouped for kv_heads
        except AttentionError as exc:
            raise self.fail("options", f"does not work with preset {preset_id!r}: {exc.message}") from None
        condition = self.condition(top["condition"], preset.tokens, trace)
        return Challenge(
            id=cid,
            title=title,
            preset=preset_id,
            goal=goal,
            condition=condition,
            editable=editable,
            hint=hint,
            options=dict(top.get("options", {})),
            seed=seed,
            order=order,
        )

    def editable(self, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            raise self.fail("editable", f"must be a non-empty list of matrix names ({', '.join(INPUTS)})")
        for k, name in enumerate(value):
            if name not in INPUTS:
                raise self.fail(f"editable[{k}]", f"must be one of {', '.join(INPUTS)}, got {_short(name)}")
        if len(set(value)) != len(value):
            raise self.fail("editable", "names a matrix twice")
        return tuple(n for n in INPUTS if n in value)  # pipeline order, whatever order the file gives

    def options(self, value: Any, preset: Preset) -> Options:
        """The overrides, read over the preset's options by :func:`attention.options.from_json` (the one reader of
        options, as for a preset file); a NaN or Infinity literal is named as in any other field."""
        o = self.obj(value, "options", set(), {f.name for f in dataclasses.fields(Options)})
        for key, v in o.items():
            if isinstance(v, NonFinite):
                raise self.fail(f"options.{key}", f"is {v}, which is not allowed; every number must be finite")
        try:
            return _apply_options(preset.options, o)
        except AttentionError as exc:
            name = exc.field or ""
            raise self.fail(f"options.{name}" if name else "options", exc.message.removeprefix(f"{name} ")) from None

    def condition(self, value: Any, tokens: tuple[str, ...], trace: Trace) -> Condition:
        if not isinstance(value, dict):
            raise self.fail("condition", f"must be an object, got {_kind(value)}")
        kind = value.get("type")
        if kind not in KINDS:
            raise self.fail("condition.type", f"must be one of {', '.join(KINDS)}, got {_short(kind)}")
        required, optional = _FIELDS[kind]
        c = self.obj(value, "condition", required, optional)
        array = c.get("array", "weights")
        if array not in ARRAYS:
            raise self.fail(
                "condition.array", f"must be one of the trace's arrays ({', '.join(ARRAYS)}), got {_short(array)}"
            )
        if kind == "entropy" and array != "weights":
            raise self.fail(
                "condition.array", f"must be 'weights' for an entropy (only weights rows sum to 1), got {_short(array)}"
            )
        A = squeeze_batch(np.asarray(getattr(trace, array)))
        head = None
        if A.ndim == 3 and "head" not in c:
            raise self.fail(
                "condition.head", f"is missing: {array} has {A.shape[0]} heads here; name one (0 to {A.shape[0] - 1})"
            )
        if "head" in c:
            if A.ndim != 3:
                raise self.fail("condition.head", f"names a head, but {array} has no head axis here {A.shape}")
            head = self.whole(c["head"], "condition.head", 0, A.shape[0] - 1)
            A = A[head]  # (n, n)
        if A.ndim != 2:
            raise self.fail("condition.array", f"is {A.ndim}-D here {A.shape}; a challenge reads one head's 2-D array")
        row = self.ref(c["row"], "condition.row", tokens, A.shape[0], ALL, rows=True, square=array in SQUARE)
        col = None
        if kind != "entropy":
            col = self.ref(c["col"], "condition.col", tokens, A.shape[1], SELF, rows=False, square=array in SQUARE)
        op = value_ = None
        if kind != "argmax":
            op = c["op"]
            if op not in OPS:
                raise self.fail("condition.op", f"must be one of {', '.join(OPS)}, got {_short(op)}")
            value_ = self.number(c["value"], "condition.value")
        return Condition(kind, row, col, array, op, value_, head)

    def ref(
        self, value: Any, where: str, tokens: tuple[str, ...], size: int, keyword: str, *, rows: bool, square: bool
    ) -> int | str:
        """A row or column reference: an index below ``size``, the keyword, or a token occurring once (rows of any
        array and columns of the queries × keys arrays are tokens)."""
        if is_whole(value):
            if not 0 <= value < size:
                what = "rows" if rows else "columns"
                raise self.fail(where, f"is {value}, but the array has {size} {what} (indices 0 to {size - 1})")
            return value
        if isinstance(value, NonFinite) or not isinstance(value, str):
            raise self.fail(where, f"must be a whole-number index, a token or {keyword!r}, got {_short(value)}")
        if value == keyword:
            if value in tokens:
                raise self.fail(where, f"is {value!r}, which is also a token here; give the token's index instead")
            if keyword == SELF and not square:
                raise self.fail(where, "'self' needs a queries × keys array (scores, scaled or weights)")
            return value
        if not (rows or square):
            raise self.fail(where, f"must be a column index here (the columns are not tokens), got {_short(value)}")
        count = tokens.count(value)
        if count != 1:
            listed = ", ".join(repr(t) for t in token_labels(tokens))
            problem = "is no token" if count == 0 else f"occurs {count} times (give its index)"
            raise self.fail(where, f"{_short(value)} {problem}; the tokens are {listed}")
        return value


def _kind(value: Any) -> str:
    if isinstance(value, NonFinite):
        return str(value)
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


# ------------------------------------------------------------------------------------------------ links


LINK = Envelope(LINK_VERSION, b"attention-challenge/v1", MAX_BYTES, "the challenge link cannot be read")


def encode_link(challenge: Challenge) -> str:
    """The challenge as a URL-safe token, ``c1.<base64url(checksum + zlib(compact JSON))>``."""
    token = LINK.seal(to_json(challenge, compact=True).encode("utf-8"))
    if len(token) > MAX_LINK_CHARS:
        raise AttentionError(
            f"the challenge makes a link of {len(token):,} characters, more than {MAX_LINK_CHARS:,}; share its JSON "
            "file instead (shorten the goal or the hint to fit a link)"
        )
    return token


def decode_link(token: str) -> Challenge:
    """The exact inverse of :func:`encode_link`. The envelope (:class:`attention.io.links.Envelope`, as the edit
    links) refuses, with a message, before any decompression: too long, another version, not base64url, a checksum
    that does not match; then a payload over :data:`MAX_BYTES` unpacked; then anything :func:`parse_challenge`
    refuses."""
    return parse_challenge(LINK.open(token), "the challenge link")
