"""The numbers a running challenge replaced, kept in the address bar.

So "Back to my numbers from before" survives a reload: the link of that state (the same table a shared link writes),
packed into one value ``before``. Written to the address bar only, never into a shared link; a state too large to
travel (more than a link holds) is left out, and the button then goes with a reload as before.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable, Mapping

import streamlit as st

from ...names import MAX_LINK_CHARS
from ..core import session
from ..core.cache import kept
from ..state.challenges import BEFORE, keep_before

PARAM = "before"


@kept(8)
def _pack(query: tuple[tuple[str, str], ...]) -> str:
    raw = zlib.compress(json.dumps(dict(query), separators=(",", ":")).encode("utf-8"), 9)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _unpack(value: str) -> dict[str, str] | None:
    """The query packed in ``value``, or None when it does not read (bounded before it is inflated)."""
    if len(value) > MAX_LINK_CHARS:
        return None
    try:
        raw = zlib.decompressobj().decompress(
            base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)), 8 * MAX_LINK_CHARS
        )
        query = json.loads(raw)
    except (ValueError, zlib.error):
        return None
    ok = isinstance(query, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in query.items())
    return query if ok else None


def write(link: Callable[[session.Session], tuple[dict[str, str], list[str]]]) -> None:
    """Keep the address bar's ``before`` in step with the state a running challenge replaced (``link`` writes a
    state's query)."""
    before = st.session_state.get(BEFORE)
    want = None
    if isinstance(before, session.Session):
        query, notes = link(before)
        packed = _pack(tuple(sorted(query.items())))
        want = packed if not notes and len(packed) <= MAX_LINK_CHARS else None
    if want is not None and st.query_params.get(PARAM) != want:
        st.query_params[PARAM] = want
    elif want is None and PARAM in st.query_params:
        del st.query_params[PARAM]


def restore(
    qp: Mapping[str, str], s: session.Session, decode: Callable[[Mapping[str, str]], tuple[session.Session, list]]
) -> list[str]:
    """Put back the state a running challenge replaced, when the address carries it and a challenge runs; a notice
    when its value does not read."""
    value = qp.get(PARAM)
    if not value or s.challenge is None or BEFORE in st.session_state:
        return []
    query = _unpack(value)
    if query is None:
        return [
            "The address's numbers from before the challenge do not read, so *Back to my numbers from before* is "
            "not offered; the challenge runs as the address says."
        ]
    keep_before(decode(query)[0])
    return []
