"""Reading and writing the address: the query parameters that reproduce the whole state (a reload restores it).

What goes into a link is the table :data:`attention.ui.address.params.PARAMS`: one record per parameter, written
only when it differs from the preset's own (``preset``, ``seed``, ``size``, ``mh``, ``proj``, ``tokens``, ``roll``,
``dm``/``dk``/``dv``, the options, ``src``, ``wo``, ``digits``, ``playing``, and the ``edits``: the matrices that
differ from the state the other parameters rebuild, packed by :mod:`attention.io.links`). :func:`link` writes the
table from a state, with notes on what cannot travel (edits of more than 512 numbers, a pinned A, a state loaded
from a file); :func:`rebuild` and :func:`decode` read it back, with a notice for each value refused; :func:`read`
and :func:`write` keep the address bar in step with the state (with the class membership, and the model pages'
parameters: the address bar's own records :data:`attention.ui.address.params.BAR`, which the shared link leaves
out). Every value read from the address is user text: notices quote it through
:func:`attention.ui.core.text.quoted`.
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from ... import names
from ..core import session
from ..core.cache import TraceCache, nothing
from . import before, membership
from .params import BAR, SHORT_LIMIT, Param
from .params import PARAMS as TABLE
from .rebuild import Reading, Refused, Writing

SESSION_TABLE: tuple[Param, ...] = TABLE  # the Session's parameters: the one table (attention.ui.address.params)
SHARED = tuple(p.name for p in SESSION_TABLE)  # what a shared link may carry (the address bar carries more)
# every parameter this module writes, in the order the address bar first lists them (others are left alone)
_ORDER = "wo pos cmask preset seed size tokens dm dk dv roll proj softmax scale temp mask pad heads kv win src digits "
_ORDER += "edits playing mh"
PARAMS = (*_ORDER.split(), *(p.name for p in SESSION_TABLE if p.name not in _ORDER.split()), *(p.name for p in BAR))
LIMITS = {p.name: p.limit for p in (*SESSION_TABLE, *BAR) if p.limit != SHORT_LIMIT}
_CANNOT_TRAVEL = "a head of a model you uploaded or trained: such a model cannot travel in a link."


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


def link(s: session.Session) -> tuple[dict[str, str], list[str]]:
    """The query that reproduces the session, and notes on what it leaves out (made once per state: the address bar
    and the sidebar's link share it)."""
    q, notes = session.derived(s, "link", lambda: _link(s))
    return dict(q), list(notes)


_REBUILT = TraceCache(max_bytes=0, max_entries=8, ttl=3600, measure=nothing)  # 8 states of ≤ 2048 × 256: a few MB each


def _rebuilt(query: tuple[tuple[str, str], ...]) -> session.Session:
    """The session a query without edits rebuilds, kept for the next edits of the same state (read only: its
    matrices are compared, never changed)."""
    return _REBUILT.get(query, lambda: rebuild(dict(query))[0])


def _writing(s: session.Session) -> Writing:
    """What ``s``'s link is written against: its own preset, or the default one for a state that cannot travel."""
    travels = s.origin.kind.travels(s)
    notes = ["a state loaded from a file: download the preset file to share it."] if not travels else []
    base_id = s.preset_id if travels else session.DEFAULT_PRESET
    preset, base = (
        (s.origin.preset, s.origin.base) if travels else session.preset_and_base(base_id, None, s.blank_shape)
    )
    po = preset.options
    dims = names.dims_of(base, po.projection, po.heads, po.kv)
    return Writing(travels, preset, po, dims, base, lambda q: _rebuilt(tuple(sorted(q.items()))), notes=notes)


def _link(s: session.Session) -> tuple[dict[str, str], list[str]]:
    if s.origin.kind.without_preset == "nothing" and not s.origin.kind.travels(s):  # nothing of it can travel
        return {"preset": session.DEFAULT_PRESET}, [_CANNOT_TRAVEL]
    w = _writing(s)
    for p in SESSION_TABLE:
        value = p.value(s, w)
        if value is not None:
            w.query[p.name] = p.text(value)
    pinned = ["the pinned state A."] if s.pin is not None else []
    return w.query, w.notes + pinned + w.edit_notes


def rebuild(qp: Mapping[str, str], params: tuple[Param, ...] = SESSION_TABLE) -> tuple[session.Session, list[str]]:
    """The session the parameters describe, and notes (Markdown, user text escaped) on what was refused: each
    record of the table in order (the order the controls would make that state), a bad value named and left out."""
    return _run(params, Reading(qp))


def _run(params: tuple[Param, ...], r: Reading) -> tuple[session.Session, list[str]]:
    """Each record in order into ``r``: a value the query has read and put (a bad one named), then its ``then``."""
    for p in params:
        if p.name in r.qp and (r.qp[p.name] or p.empty):
            _read(p, r.qp[p.name], r)
        if p.then is not None:
            p.then(r)
    return r.s, r.notices


def _read(p: Param, text: str, r: Reading) -> None:
    try:
        value, why = p.parse(text, r), ""
    except Refused as exc:
        value, why = None, exc.why
    if value is None:
        r.notices.append(p.bad(text, r, why))
    else:
        p.put(r, value)


def decode(query: Mapping[str, str], params: tuple[Param, ...] = SESSION_TABLE) -> tuple[session.Session, list[str]]:
    """The session a link's parameters describe (edits and the running challenge included), and notes on what could
    not be restored; reads nothing but ``query``."""
    qp, notices = bounded(query)
    s, more = rebuild(qp, params)
    return s, notices + more


def read() -> tuple[session.Session, list[str]]:
    """The session the address describes (edits included), and notes on what it could not restore; the model pages'
    state and the class membership are restored from it too."""
    s, notices = decode(st.query_params.to_dict())
    qp, _ = bounded(st.query_params.to_dict())  # its notices are decode's
    member = membership.restore(qp, s)
    if s.challenge is not None:  # a running challenge's numbers hand in only when they are this student's own
        s.arrived = "" if membership.owns(qp, SHARED, s.member) else "a link"
    kept = before.restore(qp, s, decode)  # the numbers a running challenge replaced ("Back to my numbers from before")
    _, bar = _run(BAR, Reading(qp, s))  # the address bar's own records: the model pages' state
    return s, notices + member + kept + bar


def write(s: session.Session) -> None:
    """Put the whole state in the address bar (a reload restores it); drop parameters the state no longer has."""
    want, _ = link(s)
    own = dict(want) if s.challenge is not None and not s.arrived else None
    want.update({p.name: p.text(v) for p in BAR if (v := p.value(s, None)) is not None})
    current = st.query_params.to_dict()
    for k in PARAMS:
        if k in want and current.get(k) != want[k]:
            st.query_params[k] = want[k]
        elif k not in want and k in current:
            del st.query_params[k]
    membership.write(own)
    before.write(link)
