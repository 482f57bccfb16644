"""The session an address describes: :func:`rebuild` from the query parameters, one small step per parameter group.

Every value is user text: a value that cannot be used leaves a notice (Markdown, quoted through
:func:`attention.ui.core.text.quoted`) and the preset's own value in force. The steps run in the order the
controls would make that state, and reshape through :mod:`attention.ui.state.reshapes`, as the controls do.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ... import names
from ...errors import AttentionError
from ...io import presets as presets_mod
from ..core import session
from ..core.text import esc, quoted
from ..state import reshapes
from ..state.family import source_problem
from . import inside
from .options import read_options, whole

MAX_TOKENS_TEXT = 4000  # characters of the sentence carried in an address


def _size(text: str) -> tuple[int, int, int] | None:
    parts = text.split("x")
    his = (names.MAX_TOKENS, names.MAX_DIM, names.MAX_DIM)
    sizes = [whole(p, 1, hi) for p, hi in zip(parts, his, strict=False)] if len(parts) == 3 else [None]
    return None if None in sizes else tuple(sizes)  # type: ignore[return-value]


def rebuild(qp: Mapping[str, str]) -> tuple[session.Session, list[str]]:
    """The session the parameters describe, edits aside, and notes (Markdown, user text escaped) on what was refused.

    In the order the controls would make that state: the preset, its seed and size; the projection; the sentence and
    sizes (a resize, as the controls do it); the options; then key/value heads, the source sentence, positions, W_o
    and the digits shown."""
    notices: list[str] = []
    pid = _preset_id(qp, notices)
    s = _model_head(qp, notices) if pid == session.MODEL else None
    if s is None:
        pid = session.DEFAULT_PRESET if pid == session.MODEL else pid
        s = session.new_session(pid, _seed(qp, notices), _blank_shape(qp, pid, notices))
    _projection(s, qp, notices)
    _sizes(s, qp, notices)
    read_options(s, qp, notices)
    _kv_heads(s, qp, notices)
    _source(s, qp, notices)
    if s.options.positions == "learned" and "P" not in s.matrices:
        reshapes.use_positions(s, "learned")  # P starts as the sinusoidal code; edits travel as edits
    _w_o(s, qp, notices)
    _digits(s, qp, notices)
    return s, notices


def _preset_id(qp: Mapping[str, str], notices: list[str]) -> str:
    pid = qp.get("preset", session.DEFAULT_PRESET)
    if pid in (*presets_mod.list_presets(), session.BLANK, session.MODEL):
        return pid
    notices.append(
        f"The link asked for preset {quoted(pid)}, which does not exist; showing "
        f"{quoted(session.preset_label(session.DEFAULT_PRESET))} instead."
    )
    return session.DEFAULT_PRESET


def _model_head(qp: Mapping[str, str], notices: list[str]) -> session.Session | None:
    """The state at the model's head ``mh`` names, or None with a notice (the default preset is shown then)."""
    ref = inside.read_head(qp.get(inside.HEAD, ""))
    if isinstance(ref, str):
        notices.append(f"The link's model head was not opened: {ref}; showing the default preset.")
        return None
    try:
        return session.head_session(ref)
    except AttentionError as exc:
        notices.append(f"The link's model head was not opened: {esc(exc.message, 300)}; showing the default preset.")
        return None


def _seed(qp: Mapping[str, str], notices: list[str]) -> int | None:
    if "seed" not in qp:
        return None
    seed = whole(qp["seed"], 0, names.MAX_SEED)
    if seed is None:
        notices.append(
            f"The link's seed {quoted(qp['seed'])} is not a whole number from 0 to {names.MAX_SEED}; "
            "using the preset's own seed."
        )
    return seed


def _blank_shape(qp: Mapping[str, str], pid: str, notices: list[str]) -> tuple[int, int, int]:
    if pid != session.BLANK or "size" not in qp:
        return session.DEFAULT_BLANK
    shape = _size(qp["size"])
    if shape is None:
        notices.append(
            f"The link's size {quoted(qp['size'])} is not n x d_model x d_k with n ≤ {names.MAX_TOKENS} "
            f"and d ≤ {names.MAX_DIM}; using {'×'.join(map(str, session.DEFAULT_BLANK))}."
        )
        return session.DEFAULT_BLANK
    return shape


def _projection(s: session.Session, qp: Mapping[str, str], notices: list[str]) -> None:
    if qp.get("proj") in names.PROJECTIONS and qp["proj"] != s.options.projection:
        reshapes.project(s, qp["proj"])
    elif "proj" in qp and qp["proj"] not in names.PROJECTIONS:
        notices.append(f"The link's projection {quoted(qp['proj'])} is not x_w or x_wt; keeping the preset's.")


def _tokens(qp: Mapping[str, str], notices: list[str]) -> tuple[str, ...] | None:
    """The link's sentence, if it is one the app can hold."""
    if "tokens" not in qp:
        return None
    words = tuple(qp["tokens"].split())
    if (
        not words
        or len(words) > names.MAX_TOKENS
        or len(qp["tokens"]) > MAX_TOKENS_TEXT
        or any(len(w) > names.MAX_TOKEN_CHARS for w in words)
    ):
        notices.append(f"The link's sentence {quoted(qp['tokens'])} is empty or too long; keeping the preset's.")
        return None
    return words


def _dim(qp: Mapping[str, str], key: str, notices: list[str]) -> int | None:
    """A resized d_model, d_k or d_v (``dm``, ``dk``, ``dv``), if the link has a valid one."""
    if key not in qp:
        return None
    value = whole(qp[key], 1, names.MAX_DIM)
    if value is None:
        notices.append(f"The link's {key} {quoted(qp[key])} is not a whole number from 1 to {names.MAX_DIM}; ignored.")
    return value


def _sizes(s: session.Session, qp: Mapping[str, str], notices: list[str]) -> None:
    """The sentence, the shuffles (X's rows moved on) and a resize, as the controls make them."""
    tokens = _tokens(qp, notices)
    dm, dk, dv = (_dim(qp, key, notices) for key in ("dm", "dk", "dv"))
    if tokens is not None and len(tokens) == len(s.tokens):
        s.tokens, tokens = tokens, None  # the same count: new words only
    if "roll" in qp:
        k = whole(qp["roll"], 0, len(s.tokens) - 1)
        if k is None:
            notices.append(
                f"The link's shuffle {quoted(qp['roll'])} is not a whole number from 0 to {len(s.tokens) - 1}; the "
                "tokens' rows stay in the preset's order."
            )
        else:  # X's rows moved on k places, as k clicks of "Shuffle tokens" do (the tokens travel as they are)
            s.matrices["X"], s.rolled = np.roll(s.matrices["X"], k, axis=0), k
    if tokens is not None or dm is not None or dk is not None or dv is not None:
        reshapes.resize(s, tokens, dm, dk, dv)


def _kv_heads(s: session.Session, qp: Mapping[str, str], notices: list[str]) -> None:
    """After the heads: W_k and W_v regrouped exactly as the sidebar does."""
    if "kv" not in qp:
        return
    g = whole(qp["kv"], 1, s.options.heads)
    if g is None or s.options.heads % g:
        notices.append(
            f"The link's key/value heads {quoted(qp['kv'])} do not divide the {s.options.heads} heads; one per head."
        )
    else:
        reshapes.use_kv_heads(s, g)


def _source(s: session.Session, qp: Mapping[str, str], notices: list[str]) -> None:
    if "src" not in qp:
        return
    problem = source_problem(qp["src"], (names.MAX_TOKENS, names.MAX_TOKEN_CHARS))
    if problem:
        notices.append(f"The link's source sentence was not restored: {problem}.")
    else:
        s.source = tuple(qp["src"].split())


def _w_o(s: session.Session, qp: Mapping[str, str], notices: list[str]) -> None:
    if "wo" not in qp:
        return
    if qp["wo"] in ("0", "1"):
        reshapes.use_w_o(s, qp["wo"] == "1")
    else:
        notices.append(f"The link's W_o switch {quoted(qp['wo'])} is not 0 or 1; no W_o.")


def _digits(s: session.Session, qp: Mapping[str, str], notices: list[str]) -> None:
    if "digits" not in qp:
        return
    allowed = {("full" if d is None else str(d)): d for d in session.DIGIT_CHOICES}
    if qp["digits"] in allowed:
        s.digits = allowed[qp["digits"]]
    else:
        notices.append(
            f"The link's digits {quoted(qp['digits'])} are not one of {', '.join(allowed)}; showing "
            f"{session.Session.digits} significant digits."
        )
