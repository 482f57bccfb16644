"""The trace of a state, computed once per content and shared by every page and session (bounded caches).

Reads the session, never changes it: :func:`current_trace` for what the pages show, :func:`base_trace` for the
unedited preset (the "what moved" highlights) and :func:`document_match` for the check against the documents.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import numpy as np
import streamlit as st

from .. import names
from ..errors import AttentionError
from ..trace import Options, Trace, self_attention
from .cache import TraceCache, return_large_frees_to_the_os
from .state import Session, preset_and_base


def content_key(tokens: tuple[str, ...], matrices: Mapping[str, np.ndarray], options: Options) -> str:
    """A hash of everything a trace depends on (Streamlit's own hashing samples large arrays, so a
    one-cell edit in a big matrix could be missed; this reads every byte)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr((tokens, options)).encode())
    for name in names.INPUTS:
        m = np.ascontiguousarray(matrices[name])
        h.update(f"{name}{m.shape}".encode())
        h.update(m.tobytes())
    return h.hexdigest()


return_large_frees_to_the_os()
TRACES = TraceCache(max_bytes=256 * 2**20, max_entries=8, ttl=1800)  # two n = 2048 traces at most


def compute(tokens: tuple[str, ...], matrices: Mapping[str, np.ndarray], options: Options) -> Trace:
    """The trace for this content, cached by content so an edit recomputes once and every page reuses
    it (raises AttentionError on bad input; errors are not cached)."""

    def run() -> Trace:
        trace = self_attention(matrices["X"], matrices["W_q"], matrices["W_k"], matrices["W_v"], tokens=tokens, options=options)
        for a in trace.arrays().values():
            a.setflags(write=False)
        return trace

    n = matrices["X"].shape[-2]
    return TRACES.get(content_key(tokens, matrices, options), run, expected_bytes=3 * n * n * 8)  # scores, scaled, weights


def current_trace(s: Session) -> Trace | AttentionError:
    """The trace of the session's current state, or the error that stops it."""
    try:
        return compute(s.tokens, s.matrices, s.options)
    except AttentionError as exc:
        return exc


def base_trace(s: Session) -> Trace | None:
    """The unedited preset's trace (for the 'what moved' view), or None if it cannot be computed."""
    preset, base = preset_and_base(s.preset_id, s.seed, s.blank_shape)
    try:
        return compute(preset.tokens, base, preset.options)
    except AttentionError:
        return None


DOC_TOL = 1e-8


@st.cache_resource(max_entries=16, ttl=3600, show_spinner=False)
def document_match(preset_id: str, seed: int | None, blank_shape: tuple[int, int, int]) -> tuple[bool, str]:
    """Does the engine, run on the unedited preset, give the numbers (or shapes) its document prints?"""
    preset = preset_and_base(preset_id, seed, blank_shape)[0]
    trace = preset.compute()
    if preset.expected:
        worst = max(float(np.max(np.abs(getattr(trace, k).reshape(v.shape) - v))) for k, v in preset.expected.items())
        listed = ", ".join(preset.expected)
        return worst <= DOC_TOL, f"{listed} agree with its printed numbers to {worst:.1e} (tolerance {DOC_TOL:g})."
    shapes = {k: tuple(getattr(trace, k).shape) for k in preset.expected_shapes if hasattr(trace, k)}
    ok = all(shapes[k] == tuple(v) for k, v in preset.expected_shapes.items() if k in shapes)
    return ok, ", ".join(f"{k} {shapes[k]}" for k in shapes) + "."
