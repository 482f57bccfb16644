"""The trace of a state, computed once per content and shared by every page and session (bounded caches).

Reads the session, never changes it: :func:`current_trace` for what the pages show, :func:`base_trace` for the
unedited preset (the "what moved" highlights) and :func:`document_match` for the check against the documents.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import numpy as np

from ... import names
from ...errors import AttentionError
from ...trace import Options, Trace, cross_attention, self_attention
from .cache import TraceCache, kept, return_large_frees_to_the_os
from .session import Session, derived, preset_and_base
from .source import cross_options, source_rows


def matrix_digest(m: np.ndarray) -> str:
    """A short fingerprint of a matrix: its shape, its dtype and every bit of its numbers (so -0.0 is not 0.0)."""
    a = np.ascontiguousarray(m)
    return hashlib.blake2b(repr((a.shape, a.dtype.str)).encode() + a.tobytes(), digest_size=16).hexdigest()


def content_key(tokens: tuple[str, ...], matrices: Mapping[str, np.ndarray], options: Options) -> str:
    """A hash of everything a trace depends on (Streamlit's own hashing samples large arrays, so a
    one-cell edit in a big matrix could be missed; this reads every byte)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr((tokens, options)).encode())
    for name in names.inputs_of(matrices):
        h.update(f"{name}:{matrix_digest(matrices[name])}".encode())
    return h.hexdigest()


return_large_frees_to_the_os()
TRACES = TraceCache(max_bytes=256 * 2**20, max_entries=8, ttl=1800)  # two n = 2048 traces at most


def compute(
    tokens: tuple[str, ...], matrices: Mapping[str, np.ndarray], options: Options, key: str | None = None
) -> Trace:
    """The trace for this content, cached by content so an edit recomputes once and every page reuses
    it (raises AttentionError on bad input; errors are not cached). ``key``: the content's :func:`content_key`, when
    the caller already has it."""

    def run() -> Trace:
        m = matrices
        trace = self_attention(
            m["X"], m["W_q"], m["W_k"], m["W_v"], W_o=m.get("W_o"), P=m.get("P"), tokens=tokens, options=options
        )
        for a in trace.arrays().values():
            a.setflags(write=False)
        return trace

    n = matrices["X"].shape[-2]
    key = key or content_key(tokens, matrices, options)
    return TRACES.get(key, run, expected_bytes=3 * n * n * 8)  # scores, scaled, weights


def compute_cross(
    tokens: tuple[str, ...], source: tuple[str, ...], matrices: Mapping[str, np.ndarray], X_kv: np.ndarray, o: Options
) -> Trace:
    """Cross-attention of ``tokens`` (queries) over ``source`` (keys and values, rows X_kv), cached by content as
    :func:`compute` is (raises AttentionError on bad input)."""

    def run() -> Trace:
        m = matrices
        trace = cross_attention(
            m["X"], X_kv, m["W_q"], m["W_k"], m["W_v"], o, W_o=m.get("W_o"), tokens=tokens, tokens_kv=source
        )
        for a in trace.arrays().values():
            a.setflags(write=False)
        return trace

    kv = hashlib.blake2b(repr((source, X_kv.shape)).encode() + np.ascontiguousarray(X_kv).tobytes(), digest_size=20)
    key = f"cross {content_key(tokens, matrices, o)} {kv.hexdigest()}"
    return TRACES.get(key, run, expected_bytes=3 * len(tokens) * len(source) * 8)


def session_trace(s: Session) -> Trace:
    """The trace every page shows: self-attention, or cross-attention over the source sentence when the Tokens
    page has one (options that cannot apply left out, see :mod:`attention.ui.core.source`). Raises AttentionError."""
    if s.source:
        X_kv = source_rows(s, s.source)  # (S, d_model)
        return compute_cross(s.tokens, s.source, s.matrices, X_kv, cross_options(s.options))
    key = derived(s, "trace_key", lambda: content_key(s.tokens, s.matrices, s.options))  # hashed once per state
    return compute(s.tokens, s.matrices, s.options, key)


def current_trace(s: Session) -> Trace | AttentionError:
    """The trace of the session's current state, or the error that stops it."""
    try:
        return session_trace(s)
    except AttentionError as exc:
        return exc


def base_trace(s: Session) -> Trace | None:
    """The unedited preset's trace (for the 'what moved' view), or None if it cannot be computed or the state is
    cross-attention (a source sentence: nothing of the preset's to compare cell by cell)."""
    if s.source:
        return None
    preset, base = s.origin.preset, s.origin.base
    key = derived(s, "base_key", lambda: content_key(preset.tokens, base, preset.options))
    try:
        return compute(preset.tokens, base, preset.options, key)
    except AttentionError:
        return None


DOC_TOL = 1e-8


@kept(16, ttl=3600)
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


ROUNDING = 1e-12  # relative: differences below this are floating-point rounding, not a change


def changes(
    cur: np.ndarray, base: np.ndarray, flipped: np.ndarray | None = None, rows_per_chunk: int = 256
) -> tuple[np.ndarray, np.ndarray, float | None]:
    """Cells whose value changed beyond rounding, cells masked on one side only (−∞ against a number, or a cell of
    ``flipped``: masked in one trace and not the other where masking shows as a 0, as in the weights), and the
    largest change among the first kind; a block of rows at a time (no full-size temporaries at n = 2048)."""
    value = np.zeros(cur.shape, dtype=bool)
    masked = np.zeros(cur.shape, dtype=bool)
    best = None
    with np.errstate(invalid="ignore", over="ignore"):
        for r in range(0, cur.shape[0], rows_per_chunk):
            rows = slice(r, r + rows_per_chunk)
            c, b = cur[rows], base[rows]
            both = np.isfinite(c) & np.isfinite(b)
            flip = np.zeros(c.shape, dtype=bool) if flipped is None else flipped[rows]
            d = np.where(both, np.abs(c - b), 0.0)
            value[rows] = both & ~flip & (d > ROUNDING * np.maximum(1.0, np.abs(b)))
            masked[rows] = (np.isfinite(c) != np.isfinite(b)) | flip
            moved = d[value[rows]]
            if moved.size:
                best = float(moved.max()) if best is None else max(best, float(moved.max()))
    return value, masked, best


def mask_flips(trace: Trace, base: Trace, shape: tuple[int, int]) -> np.ndarray:
    """Cells (of a shown ``shape``: n × n, or heads stacked h·n × n) that one trace masks and the other does not."""
    n = trace.weights.shape[-1]

    def allowed(t: Trace) -> np.ndarray:
        a = np.ones((n, n), dtype=bool) if t.allowed is None else np.asarray(names.squeeze_batch(t.allowed), bool)
        return np.broadcast_to(a.reshape(-1, n, n)[0], (n, n))  # (n, n): every head shares the mask

    flips = allowed(trace) != allowed(base)  # (n, n)
    return np.tile(flips, (shape[0] // n, 1)) if shape[0] % n == 0 and shape[1] == n else np.zeros(shape, bool)


def same_numbers(s: Session, trace: Trace) -> bool:
    """True when the state gives the unedited preset's numbers, up to rounding: same tokens and, for every array
    of the trace, the same shape, the same masked cells and no value moved beyond :data:`ROUNDING`. A changed
    softmax stabiliser or a projection switch (which transposes W) is then not an edit. Computed once per state."""
    return derived(s, "same_numbers", lambda: _same_numbers(s, trace))


def _same_numbers(s: Session, trace: Trace) -> bool:
    preset = s.origin.preset
    base = base_trace(s)
    if base is None or s.tokens != preset.tokens:
        return False
    for name in ("Q", "K", "V", "scores", "scaled", "weights", "output"):
        cur, was = getattr(trace, name), getattr(base, name)
        if cur.shape != was.shape:
            return False
        value, masked, _ = changes(cur.reshape(-1, cur.shape[-1]), was.reshape(-1, was.shape[-1]))
        if value.any() or masked.any():
            return False
    return True
