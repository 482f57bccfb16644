"""Reading and writing the address: the query parameters that reproduce a state (preset, seed, size, edits).

:func:`read` builds the first state of a session from the URL (and says what it could not restore);
:func:`write` keeps the address bar in step with the state; :func:`link` builds the shareable link's
parameters and says what a link cannot carry. Every value read from the URL is user text: messages
quote it through :func:`attention.ui.text.quoted`.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from .. import names
from ..errors import AttentionError
from ..io import links
from ..io import presets as presets_mod
from . import session
from .text import quoted

_LINK_PREFIX = "the link's edits cannot be restored: "
PARAMS = ("preset", "seed", "size", "edits")


def read() -> tuple[session.Session, list[str]]:
    """The session the URL asks for, and notes (Markdown, user text escaped) on what it could not restore."""
    qp = st.query_params
    notices: list[str] = []
    pid = qp.get("preset", session.DEFAULT_PRESET)
    if pid not in (*presets_mod.list_presets(), session.BLANK):
        notices.append(f"The link asked for preset {quoted(pid)}, which does not exist; showing "
                       f"{quoted(presets_mod.preset_label(session.DEFAULT_PRESET))} instead.")
        pid = session.DEFAULT_PRESET
    seed = None
    if "seed" in qp:
        text = qp["seed"]
        if text.isascii() and text.isdigit() and len(text) <= 10 and int(text) <= names.MAX_SEED:
            seed = int(text)
        else:
            notices.append(f"The link's seed {quoted(text)} is not a whole number from 0 to {names.MAX_SEED}; "
                           "using the preset's own seed.")
    blank_shape = session.DEFAULT_BLANK
    if pid == session.BLANK and "size" in qp:
        shape = _size(qp["size"])
        if shape is None:
            notices.append(f"The link's size {quoted(qp['size'])} is not n x d_model x d_k with n ≤ {names.MAX_TOKENS} "
                           f"and d ≤ {names.MAX_DIM}; using {'×'.join(map(str, session.DEFAULT_BLANK))}.")
        else:
            blank_shape = shape
    new = session.new_session(pid, seed, blank_shape)
    token = qp.get("edits")
    if token:
        try:
            decoded = links.decode_edits(token, expected_shapes={n: new.matrices[n].shape for n in names.INPUTS})
        except AttentionError as exc:
            why = exc.message.removeprefix(_LINK_PREFIX)
            notices.append(f"The link's edits could not be restored: {quoted(why, 200)}; showing the unedited preset.")
        else:
            for name, arr in decoded.items():
                new.matrices[name] = np.array(arr, dtype=np.float64)
            new.version += 1
    return new, notices


def _size(text: str) -> tuple[int, int, int] | None:
    parts = text.split("x")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() and len(p) <= 5 for p in parts):
        return None
    n, d_model, d_k = (int(p) for p in parts)
    if not (1 <= n <= names.MAX_TOKENS and 1 <= d_model <= names.MAX_DIM and 1 <= d_k <= names.MAX_DIM):
        return None
    return n, d_model, d_k


def params(s: session.Session) -> dict[str, str]:
    """The query parameters that reproduce the session's preset: preset, seed, and size for blank."""
    want = {"preset": s.preset_id}
    if s.seed is not None:
        want["seed"] = str(s.seed)
    if s.preset_id == session.BLANK:
        want["size"] = "x".join(str(v) for v in s.blank_shape)
    return want


def write(s: session.Session) -> None:
    """Write preset and seed (and blank size) into the address bar so a reload or a copied address reproduces
    the view; an ``edits`` parameter the state no longer has is dropped (a reload must not bring it back)."""
    want = params(s)
    current = st.query_params.to_dict()
    for k in ("preset", "seed", "size"):
        if k in want and current.get(k) != want[k]:
            st.query_params[k] = want[k]
        elif k not in want and k in current:
            del st.query_params[k]
    if "edits" in current and current["edits"] != link(s)[0].get("edits"):
        del st.query_params["edits"]


def link(s: session.Session) -> tuple[dict[str, str], list[str]]:
    """The URL query that reproduces the session (preset, seed, size, edits) and notes on what it leaves out."""
    query = params(s)
    base = session.base_for(s)
    preset = session.preset_for(s)
    notes: list[str] = []
    changed = {n: s.matrices[n] for n in names.INPUTS
               if s.matrices[n].shape == base[n].shape and not np.array_equal(s.matrices[n], base[n])}
    reshaped = [n for n in names.INPUTS if s.matrices[n].shape != base[n].shape]
    if reshaped:
        notes.append(f"{', '.join(reshaped)} changed shape, which a link cannot carry.")
    if s.tokens != preset.tokens and not reshaped:
        notes.append("The tokens (the sentence) are not in the link.")
    if s.options != preset.options:
        notes.append("Option changes (projection, softmax, scale, temperature, mask) are not in the link.")
    cells = sum(m.size for m in changed.values())
    if changed and cells > links.MAX_LINK_CELLS:
        notes.append(f"The edited matrices ({', '.join(changed)}) hold {cells:,} numbers, more than the {links.MAX_LINK_CELLS} "
                     "a link can carry, so the link gives the unedited preset.")
    elif changed:
        try:
            query["edits"] = links.encode_edits(changed)
        except AttentionError as exc:
            notes.append(f"The edits cannot go in a link: {exc.message}.")
    return query, notes
