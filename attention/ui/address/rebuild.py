"""The steps a rebuild from an address takes beyond single parameters: its context, the session, the one resize.

:func:`attention.ui.address.url.rebuild` runs the records of :mod:`.params` in order against a :class:`Reading`;
this module holds what they share: :func:`start` builds the session once the preset, seed, size and model head are
read, :func:`use_sizes` makes one resize of the sentence and sizes (as the controls make it), and the edits are
decoded and found. Every value is user text: a notice quotes it through :func:`attention.ui.core.text.quoted`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ... import names
from ...errors import AttentionError
from ...io import links
from ...io.presets import Preset
from ...labs import challenges as ch
from ...trace import Options
from ..core import parts, session
from ..core.text import esc, quoted
from ..state import reshapes
from ..state.family import source_problem
from . import inside
from .options import whole

MAX_TOKENS_TEXT = 4000  # characters of the sentence carried in an address
_LINK_PREFIX = "the link's edits cannot be restored: "


class Refused(Exception):
    """A value that gives no state, and why (Markdown, user text quoted): the record's notice says it."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass
class Reading:
    """A session being rebuilt from a query: the values read so far that wait for a group, and the notices."""

    qp: Mapping[str, str]
    s: session.Session | None = None
    pending: dict[str, Any] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)


@dataclass
class Writing:
    """What a link is written against: the preset the parameters start from (its options, sizes and matrices), the
    parameters written so far, what cannot travel, and the session the parameters without edits rebuild."""

    travels: bool
    preset: Preset
    options: Options
    dims: names.Dims
    base: dict[str, np.ndarray]
    rebuilt: Callable[[dict[str, str]], session.Session]
    query: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    edit_notes: list[str] = field(default_factory=list)


def read_size(text: str, r: Reading) -> tuple[int, int, int] | None:
    """A blank's size n x d_model x d_k (read only for a blank preset: any other keeps its own)."""
    if parts.kind_of(r.pending.get("preset")) is not parts.BLANK_KIND:
        return session.DEFAULT_BLANK
    sides = text.split("x")
    his = (names.MAX_TOKENS, names.MAX_DIM, names.MAX_DIM)
    sizes = [whole(p, 1, hi) for p, hi in zip(sides, his, strict=False)] if len(sides) == 3 else [None]
    return None if None in sizes else tuple(sizes)  # type: ignore[return-value]


def start(r: Reading) -> None:
    """The session at the preset (its seed and size) or at the model's head the link names; a head that cannot be
    opened is named and the default preset shown."""
    pid = r.pending.get("preset", session.DEFAULT_PRESET)
    kind = parts.kind_of(pid)
    s = _model_head(r) if kind is parts.MODEL_KIND else None
    if s is None:
        pid = session.DEFAULT_PRESET if kind is parts.MODEL_KIND else pid
        shape = r.pending.get("size", session.DEFAULT_BLANK) if kind is parts.BLANK_KIND else session.DEFAULT_BLANK
        s = session.new_session(pid, r.pending.get("seed"), shape)
    r.s, r.pending = s, {}


def _model_head(r: Reading) -> session.Session | None:
    ref = inside.read_head(r.qp.get(inside.HEAD, ""))
    if isinstance(ref, str):
        r.notices.append(f"The link's model head was not opened: {ref}; showing the default preset.")
        return None
    try:
        return session.head_session(ref)
    except AttentionError as exc:
        r.notices.append(f"The link's model head was not opened: {esc(exc.message, 300)}; showing the default preset.")
        return None


def read_tokens(text: str, r: Reading) -> tuple[str, ...] | None:
    """The link's sentence, if it is one the app can hold."""
    words = tuple(text.split())
    if (
        not words
        or len(words) > names.MAX_TOKENS
        or len(text) > MAX_TOKENS_TEXT
        or any(len(w) > names.MAX_TOKEN_CHARS for w in words)
    ):
        return None
    return words


def use_sizes(r: Reading) -> None:
    """The sentence and a resize (d_model, d_k, d_v), in one resize as the controls make it; a sentence of the same
    length only puts its words in."""
    s, tokens = r.s, r.pending.pop("tokens", None)
    dm, dk, dv = (r.pending.pop(key, None) for key in ("dm", "dk", "dv"))
    if tokens is not None and len(tokens) == len(s.tokens):
        s.tokens, tokens = tokens, None
    if tokens is not None or dm is not None or dk is not None or dv is not None:
        reshapes.resize(s, tokens, dm, dk, dv)


def read_edits(text: str, r: Reading) -> dict[str, np.ndarray]:
    """The link's edits, decoded for the shapes of the state rebuilt so far."""
    try:
        return links.decode_any(text, {n: r.s.matrices[n] for n in names.inputs_of(r.s.matrices)})
    except AttentionError as exc:
        raise Refused(quoted(exc.message.removeprefix(_LINK_PREFIX), 200)) from exc


def put_edits(r: Reading, decoded: dict[str, np.ndarray]) -> None:
    for name, arr in decoded.items():
        r.s.matrices[name] = np.array(arr, dtype=np.float64)
    r.s.version += 1


def edits_in(s: session.Session, w: Writing) -> str | None:
    """The matrices that differ from the state the other parameters rebuild, packed; or None, and a note on what
    cannot travel."""
    rebuilt = w.rebuilt(w.query)
    if names.inputs_of(rebuilt.matrices) != names.inputs_of(s.matrices):
        w.edit_notes.append("the matrices W_o and P.")  # cannot happen while wo and pos travel
        return None
    changed = {
        n: s.matrices[n]
        for n in names.inputs_of(s.matrices)
        if not session.identical(rebuilt.matrices[n], s.matrices[n])
    }
    if any(rebuilt.matrices[n].shape != s.matrices[n].shape for n in changed):
        w.edit_notes.append("the matrices' shapes.")  # cannot happen unless the sizes could not be written
        return None
    cells = sum(links.changed_cells(m, rebuilt.matrices[n]).size for n, m in changed.items())  # as a link counts
    if changed and cells > links.MAX_LINK_CELLS:
        w.edit_notes.append(
            f"your edits to {', '.join(changed)} ({cells:,} numbers), more than the {links.MAX_LINK_CELLS} a link can "
            "carry: a reload or a link gives the unedited numbers. Download the preset file to keep them."
        )
        return None
    try:  # the shorter of the changed cells alone and the whole matrices
        return links.encode_shortest(changed, {n: rebuilt.matrices[n] for n in changed}) if changed else None
    except AttentionError as exc:
        w.edit_notes.append(f"your edits ({exc.message}).")
        return None


# the pieces the table's records (attention.ui.address.params) are made of


def option(field: str) -> Callable[[session.Session, Writing], Any]:
    """An option written when it differs from the preset's."""
    return lambda s, w: getattr(s.options, field) if getattr(s.options, field) != getattr(w.options, field) else None


def set_option(field: str) -> Callable[[Reading, Any], None]:
    def put(r: Reading, value: Any) -> None:
        r.s.options = replace(r.s.options, **{field: value})

    return put


def dim(which: str) -> Callable[[session.Session, Writing], Any]:
    return lambda s, w: getattr(s.dims, which) if getattr(s.dims, which) != getattr(w.dims, which) else None


def pending(key: str) -> Callable[[Reading, Any], None]:
    def put(r: Reading, value: Any) -> None:
        r.pending[key] = value

    return put


def tokens_value(s: session.Session, w: Writing) -> str | None:
    if s.tokens == w.preset.tokens:
        return None
    text = " ".join(s.tokens)
    if any(len(t.split()) != 1 for t in s.tokens) or len(text) > MAX_TOKENS_TEXT:
        w.notes.append("the sentence (tokens with spaces in them, or more than 4,000 characters).")
        return None
    return text


def roll_put(r: Reading, k: int) -> None:
    """X's rows moved on k places, as k clicks of "Shuffle tokens" do (the tokens travel as they are)."""
    r.s.matrices["X"], r.s.rolled = np.roll(r.s.matrices["X"], k, axis=0), k


def scale_text(scale: float | None) -> str:
    return "default" if scale is None else "none" if scale == 1.0 else repr(float(scale))


def pad_value(s: session.Session, w: Writing) -> str | None:
    return ",".join(str(i + 1) for i, p in enumerate(s.options.padding) if p) if any(s.options.padding) else None


def pad_parse(text: str, r: Reading) -> tuple[bool, ...]:
    """Each padding token a link names (a bad one is named and left out, the rest kept)."""
    n = len(r.s.tokens)
    pad = [False] * n
    for part in text.split(",") if text else []:
        i = whole(part, 1, n)
        if i is None:
            r.notices.append(f"The link's padding token {quoted(part)} is not a token number from 1 to {n}; ignored.")
        else:
            pad[i - 1] = True
    return tuple(pad)


def pad_then(r: Reading) -> None:
    """The padding flags the link names, when it names one or the mask pads (then none named: no padding token)."""
    pad = r.pending.pop("pad", (False,) * len(r.s.tokens))
    if any(pad) or "padding" in r.s.options.mask:
        r.s.options = replace(r.s.options, padding=pad)


def cmask_value(s: session.Session, w: Writing) -> str | None:
    o = s.options
    if not o.custom_mask or o.custom_mask == w.options.custom_mask:
        return None
    if len(o.custom_mask) > 64:
        w.notes.append("the custom mask (more than 64 tokens).")
        return None
    return ".".join("".join("1" if v else "0" for v in row) for row in o.custom_mask)


def cmask_parse(text: str, r: Reading) -> tuple | None:
    n, rows = len(r.s.tokens), text.split(".")
    if len(rows) == n and all(len(row) == n and set(row) <= {"0", "1"} for row in rows):
        return tuple(tuple(c == "1" for c in row) for row in rows)
    return None


def cmask_then(r: Reading) -> None:
    """A custom mask with no grid allows everything."""
    o, n = r.s.options, len(r.s.tokens)
    if "custom" in o.mask and len(o.custom_mask) != n:
        r.s.options = replace(o, custom_mask=((True,) * n,) * n)


def positions_then(r: Reading) -> None:
    if r.s.options.positions == "learned" and "P" not in r.s.matrices:
        reshapes.use_positions(r.s, "learned")  # P starts as the sinusoidal code; edits travel as edits


def kv_parse(text: str, r: Reading) -> int | None:
    g = whole(text, 1, r.s.options.heads)
    return None if g is None or r.s.options.heads % g else g


def wo_value(s: session.Session, w: Writing) -> str | None:
    has = "W_o" in s.matrices
    return ("1" if has else "0") if has != ("W_o" in w.base) else None


def source_put(r: Reading, text: str) -> None:
    r.s.source = tuple(text.split())


def source_parse(text: str, r: Reading) -> str:
    problem = source_problem(text, (names.MAX_TOKENS, names.MAX_TOKEN_CHARS))
    if problem:
        raise Refused(problem)
    return text


def playing_parse(text: str, r: Reading) -> ch.Challenge:
    try:
        return ch.decode_link(text)
    except AttentionError as exc:
        raise Refused(quoted(exc.message, 200)) from exc


GAINS = {"q": "q_norm", "k": "k_norm"}  # QK-norm's gains in a link: "q:1.5,0.25;k:2.0,1.0" (each number exact)
GAINS_LIMIT = 2 * (names.MAX_DIM * 26 + 2)  # two norms of a head's width, each gain at most 25 characters and a comma


def gains_value(s: session.Session, w: Writing) -> str | None:
    """QK-norm's gains, those that differ from the preset's (a head's own), each number as its shortest exact text;
    none for a state that does not travel (its link starts from another preset, without gains)."""
    if not w.travels:
        return None
    parts_ = [
        f"{short}:" + ",".join(repr(float(g)) for g in getattr(s.options, name))
        for short, name in GAINS.items()
        if getattr(s.options, name) and getattr(s.options, name) != getattr(w.options, name)
    ]
    return ";".join(parts_) or None


def gains_parse(text: str, r: Reading) -> dict[str, tuple[float, ...]]:
    """The link's gains, each as wide as the gains of the state rebuilt so far (a head's: one per column)."""
    out: dict[str, tuple[float, ...]] = {}
    for part in text.split(";"):
        short, _, numbers = part.partition(":")
        name = GAINS.get(short.strip())
        have = getattr(r.s.options, name) if name else ()
        if not have:
            raise Refused(f"{quoted(short, 20)} names no QK-norm gains this state has")
        values = [_gain(v) for v in numbers.split(",")]
        if len(values) != len(have) or None in values:
            raise Refused(f"the {name} gains are not {len(have)} finite numbers")
        out[name] = tuple(values)  # type: ignore[arg-type]
    return out


def _gain(text: str) -> float | None:
    try:
        value = float(text) if len(text) <= 30 else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def heads_put(r: Reading, heads: int) -> None:
    """The number of heads, and QK-norm's gains fitted to the heads' new width (as the sidebar's choice fits them), so
    the link's gains (``qkn``, read after) are checked against the width they were written for."""
    r.s.options = replace(r.s.options, heads=heads)
    reshapes.fit_gains(r.s, r.s.dims.d_k // heads)


def gains_put(r: Reading, gains: dict[str, tuple[float, ...]]) -> None:
    r.s.options = replace(r.s.options, **gains)
