"""Reading and writing the address: the query parameters that reproduce the whole state (a reload restores it).

Parameters (each only when it differs from the preset's own): ``preset``, ``seed``, ``size`` (blank n×d_model×d_k),
``tokens`` (the sentence), ``roll`` (shuffles: X's rows moved on), ``dm`` / ``dk`` / ``dv`` (a resized d_model /
d_k / d_v), the options ``proj``, ``softmax``, ``scale``, ``temp``, ``mask``, ``pad`` (padding tokens, 1-based),
``cmask``, ``pos``, ``heads``, ``kv`` (key/value heads), ``win`` (the sliding window), ``src`` (the source
sentence of cross-attention), ``wo`` (1: the heads' outputs mixed by W_o), the display ``digits``, and ``edits``
(the matrices that differ from the state the other parameters rebuild, packed by :mod:`attention.io.links`).
:func:`read` rebuilds a session from them and says what it could not restore; :func:`write` keeps the address
bar in step with the state on every run; :func:`link` gives the parameters and what cannot travel (edits of
more than 512 numbers, a pinned A, a state loaded from a file). Every value read from the address is user
text: messages quote it through :func:`attention.ui.core.text.quoted`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np
import streamlit as st

from ... import masks, names
from ...errors import AttentionError
from ...io import links
from ..core import models, session
from ..core.text import quoted
from . import inside, membership, playing
from .rebuild import MAX_TOKENS_TEXT, rebuild

_LINK_PREFIX = "the link's edits cannot be restored: "
# every parameter this module writes (others in the address are left alone)
_NAMES = "wo pos cmask preset seed size tokens dm dk dv roll proj softmax scale temp mask pad heads kv win src digits "
_NAMES += "edits playing"
PARAMS = (*_NAMES.split(), inside.HEAD, *inside.PARAMS)
# The most characters each parameter can need (a custom mask: 64 rows of 64 flags and dots; padding: "1,2,...,2048");
# any other is a name or a number. Measured before anything reads a value.
LIMITS = {
    "edits": names.MAX_LINK_CHARS,
    playing.PARAM: playing.LIMIT,
    "tokens": MAX_TOKENS_TEXT,
    "src": MAX_TOKENS_TEXT,  # the source sentence, as the sentence
    "cmask": 64 * 65,
    "pad": names.MAX_TOKENS * 5,
    **inside.LIMITS,
}
SHORT_LIMIT = 100


def bounded(qp: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The parameters without those longer than they can be (:data:`LIMITS`), and a notice for each one dropped."""
    kept, notices = dict(qp), []
    for key in PARAMS:
        limit = LIMITS.get(key, SHORT_LIMIT)
        if key in kept and len(kept[key]) > limit:
            notices.append(
                f"The link's {key} is {len(kept.pop(key)):,} characters long; a link carries at most {limit:,} "
                "there, so it was ignored."
            )
    return kept, notices


def state_params(s: session.Session) -> tuple[dict[str, str], list[str]]:
    """The parameters for everything but the edits, and what cannot travel."""
    notes: list[str] = []
    travels = s.preset_id != session.FILE
    if s.preset_id == session.FILE:
        notes.append("a state loaded from a file: download the preset file to share it.")
    elif s.preset_id == session.MODEL and not models.travels(s.model_head.model_id):
        notes.append("a head of a model you uploaded or trained: such a model cannot travel in a link.")
        travels = False
    base_id = s.preset_id if travels else session.DEFAULT_PRESET
    q = {"preset": base_id}
    if s.seed is not None and travels:
        q["seed"] = str(s.seed)
    if s.preset_id == session.BLANK:
        q["size"] = "x".join(str(v) for v in s.blank_shape)
    if s.preset_id == session.MODEL and travels:
        q[inside.HEAD] = inside.head_param(s.model_head)
    preset, base = (
        (s.origin.preset, s.origin.base) if travels else session.preset_and_base(base_id, None, s.blank_shape)
    )
    o, po = s.options, preset.options
    if o.projection != po.projection:
        q["proj"] = o.projection
    if s.tokens != preset.tokens:
        text = " ".join(s.tokens)
        if any(len(t.split()) != 1 for t in s.tokens) or len(text) > MAX_TOKENS_TEXT:
            notes.append("the sentence (tokens with spaces in them, or more than 4,000 characters).")
        else:
            q["tokens"] = text
    d, pd_ = s.dims, names.dims_of(base, po.projection, po.heads, po.kv)
    if s.rolled:
        q["roll"] = str(s.rolled)
    if d.d_model != pd_.d_model:
        q["dm"] = str(d.d_model)
    if d.d_k != pd_.d_k:
        q["dk"] = str(d.d_k)
    if d.d_v != pd_.d_v:
        q["dv"] = str(d.d_v)
    if o.softmax != po.softmax:
        q["softmax"] = o.softmax
    if o.scale != po.scale:
        q["scale"] = "default" if o.scale is None else "none" if o.scale == 1.0 else repr(float(o.scale))
    if o.temperature != po.temperature:
        q["temp"] = repr(float(o.temperature))
    if o.mask != po.mask:
        q["mask"] = masks.join(o.mask)
    if any(o.padding):
        q["pad"] = ",".join(str(i + 1) for i, p in enumerate(o.padding) if p)
    if o.custom_mask and o.custom_mask != po.custom_mask:
        if len(o.custom_mask) <= 64:
            q["cmask"] = ".".join("".join("1" if v else "0" for v in row) for row in o.custom_mask)
        else:
            notes.append("the custom mask (more than 64 tokens).")
    if o.positions != po.positions:
        q["pos"] = o.positions
    if o.heads != po.heads:
        q["heads"] = str(o.heads)
    if o.kv_heads != po.kv_heads:
        q["kv"] = str(o.kv)
    if o.window != po.window:
        q["win"] = str(o.window)
    if s.source:
        q["src"] = " ".join(s.source)
    if ("W_o" in s.matrices) != ("W_o" in base):
        q["wo"] = "1" if "W_o" in s.matrices else "0"
    if s.digits != session.Session.digits:
        q["digits"] = "full" if s.digits is None else str(s.digits)
    if s.pin is not None:
        notes.append("the pinned state A.")
    q.update(playing.params(s))
    return q, notes


def link(s: session.Session) -> tuple[dict[str, str], list[str]]:
    """The query that reproduces the session, and notes on what it leaves out (made once per state: the address bar
    and the sidebar's link share it)."""
    q, notes = session.derived(s, "link", lambda: _link(s))
    return dict(q), list(notes)


@functools.lru_cache(maxsize=8)  # at most 8 states of at most 2048 × 256: a few MB each
def _rebuilt(query: tuple[tuple[str, str], ...]) -> session.Session:
    """The session a query without edits rebuilds, kept for the next edits of the same state (read only: its
    matrices are compared, never changed)."""
    return rebuild(dict(query))[0]


def _link(s: session.Session) -> tuple[dict[str, str], list[str]]:
    if s.preset_id == session.MODEL and not models.travels(s.model_head.model_id):  # nothing of it can travel
        return {"preset": session.DEFAULT_PRESET}, [
            "a head of a model you uploaded or trained: such a model cannot travel in a link."
        ]
    q, notes = state_params(s)
    rebuilt = _rebuilt(tuple(sorted(q.items())))
    if names.inputs_of(rebuilt.matrices) != names.inputs_of(s.matrices):
        notes.append("the matrices W_o and P.")  # cannot happen while wo and pos travel: nothing to add then
        return q, notes
    changed = {
        n: s.matrices[n]
        for n in names.inputs_of(s.matrices)
        if not session.identical(rebuilt.matrices[n], s.matrices[n])
    }
    if any(rebuilt.matrices[n].shape != s.matrices[n].shape for n in changed):
        changed = {}  # cannot happen unless the sizes could not be written: nothing to add then
        notes.append("the matrices' shapes.")
    cells = sum(m.size for m in changed.values())
    if changed and cells > links.MAX_LINK_CELLS:
        notes.append(
            f"your edits to {', '.join(changed)} ({cells:,} numbers), more than the {links.MAX_LINK_CELLS} a link can "
            "carry: a reload or a link gives the unedited numbers. Download the preset file to keep them."
        )
    elif changed:
        try:
            q["edits"] = links.encode_edits(changed)
        except AttentionError as exc:
            notes.append(f"your edits ({exc.message}).")
    return q, notes


def read() -> tuple[session.Session, list[str]]:
    """The session the address describes (edits included), and notes on what it could not restore; the model pages'
    state and the class membership are restored from it too."""
    s, notices = decode(st.query_params.to_dict())
    qp, _ = bounded(st.query_params.to_dict())  # its notices are decode's
    return s, notices + membership.restore(qp) + inside.restore(qp)


def decode(query: Mapping[str, str]) -> tuple[session.Session, list[str]]:
    """The session a link's parameters describe (edits and the running challenge included), and notes on what could
    not be restored; reads nothing but ``query``."""
    qp, notices = bounded(query)
    s, more = rebuild(qp)
    notices += more
    token = qp.get("edits")
    if token:
        try:
            decoded = links.decode_edits(
                token, expected_shapes={n: s.matrices[n].shape for n in names.inputs_of(s.matrices)}
            )
        except AttentionError as exc:
            why = exc.message.removeprefix(_LINK_PREFIX)
            notices.append(f"The link's edits could not be restored: {quoted(why, 200)}; showing the unedited preset.")
        else:
            for name, arr in decoded.items():
                s.matrices[name] = np.array(arr, dtype=np.float64)
            s.version += 1
    notices += playing.restore(qp, s)
    return s, notices


def write(s: session.Session) -> None:
    """Put the whole state in the address bar (a reload restores it); drop parameters the state no longer has."""
    want, _ = link(s)
    want.update(inside.params())
    current = st.query_params.to_dict()
    for k in PARAMS:
        if k in want and current.get(k) != want[k]:
            st.query_params[k] = want[k]
        elif k not in want and k in current:
            del st.query_params[k]
    membership.write()
