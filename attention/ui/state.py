"""The session's source of truth: preset, seed, options, tokens, matrices and editor versions.

Everything a page shows is derived from one ``Session`` object kept in ``st.session_state``; widgets
write into it through callbacks, so state survives page switches (Streamlit drops the state of
widgets that are not drawn on the current page). ``ensure()`` is the one guarded initialiser, called
by every page, so any page works when opened directly by URL or under AppTest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import streamlit as st

from .. import presets as presets_mod
from ..errors import AttentionError
from ..presets import Preset
from ..trace import Options, Trace, self_attention
from .cache import TraceCache, return_large_frees_to_the_os

KEY = "attention_session"
BLANK = "blank"
DEFAULT_PRESET = "she_likes_coffee"
MATRICES = ("X", "W_q", "W_k", "W_v")
DEFAULT_BLANK = (8, 16, 16)  # n tokens, d_model, d_k
MAX_TOKENS = 2048  # the dashboard's supported sizes (the engine and preset files allow more)
MAX_DIM = 256


@dataclass
class Session:
    """One user's dashboard state. ``matrices`` are 2-D (a batch of one is shown as its single item)."""

    preset_id: str
    seed: int | None
    blank_shape: tuple[int, int, int]
    tokens: tuple[str, ...]
    matrices: dict[str, np.ndarray]
    options: Options
    version: int = 0
    notices: list[str] = field(default_factory=list)


@st.cache_resource(max_entries=16, ttl=3600, show_spinner=False)
def _preset_and_base(preset_id: str, seed: int | None, blank_shape: tuple[int, int, int]) -> tuple[Preset, dict[str, np.ndarray]]:
    """Load a preset and its X, W_q, W_k, W_v as read-only 2-D arrays (a batch of one is dropped)."""
    if preset_id == BLANK:
        n, d_model, d_k = blank_shape
        preset = presets_mod.blank(n, d_model, d_k, seed=0 if seed is None else seed)
    else:
        preset = presets_mod.load_preset(preset_id, seed)
    base = matrices_2d(preset)
    for m in base.values():
        m.setflags(write=False)
    return preset, base


def matrices_2d(preset: Preset) -> dict[str, np.ndarray]:
    """A preset's X, W_q, W_k, W_v as the dashboard holds them: 2-D (a leading batch of one dropped)."""
    return {name: (m[0] if m.ndim == 3 else m) for name, m in preset.matrices().items()}


def _preset(preset_id: str, seed: int | None, blank_shape: tuple[int, int, int]) -> Preset:
    return _preset_and_base(preset_id, seed, blank_shape)[0]


def preset_for(s: Session) -> Preset:
    """The unedited preset the session started from (with the session's seed)."""
    return _preset(s.preset_id, s.seed, s.blank_shape)


def base_for(s: Session) -> dict[str, np.ndarray]:
    """The unedited preset's matrices (2-D, read-only)."""
    return _preset_and_base(s.preset_id, s.seed, s.blank_shape)[1]


def new_session(preset_id: str = DEFAULT_PRESET, seed: int | None = None, blank_shape: tuple[int, int, int] = DEFAULT_BLANK) -> Session:
    preset, base = _preset_and_base(preset_id, seed, blank_shape)
    return Session(preset_id=preset_id, seed=preset.seed, blank_shape=blank_shape, tokens=preset.tokens,
                   matrices=dict(base), options=preset.options)


def ensure() -> Session:
    """Create the session once (from the URL's preset and seed if given) and return it."""
    if KEY not in st.session_state:
        st.session_state[KEY] = _from_query_params()
    return st.session_state[KEY]


def get() -> Session:
    return st.session_state[KEY]


def _from_query_params() -> Session:
    qp = st.query_params
    pid = qp.get("preset", DEFAULT_PRESET)
    notices = []
    if pid not in (*presets_mod.PRESET_IDS, BLANK):
        notices.append(f"The link asked for preset {pid!r}, which does not exist; showing {DEFAULT_PRESET!r} instead.")
        pid = DEFAULT_PRESET
    seed = None
    if "seed" in qp:
        try:
            seed = int(qp["seed"])
            if not 0 <= seed <= presets_mod.MAX_SEED:
                raise ValueError
        except ValueError:
            notices.append(f"The link's seed {qp['seed']!r} is not a whole number from 0 to {presets_mod.MAX_SEED}; using the preset's own seed.")
            seed = None
    blank_shape = DEFAULT_BLANK
    if pid == BLANK and "size" in qp:
        try:
            n, d_model, d_k = (int(v) for v in qp["size"].split("x"))
            if not (1 <= n <= MAX_TOKENS and 1 <= d_model <= MAX_DIM and 1 <= d_k <= MAX_DIM):
                raise ValueError
            blank_shape = (n, d_model, d_k)
        except (ValueError, AttentionError):
            notices.append(f"The link's size {qp['size']!r} is not n x d_model x d_k with n ≤ {MAX_TOKENS} and d ≤ {MAX_DIM}; "
                           f"using {DEFAULT_BLANK}.")
    s = new_session(pid, seed, blank_shape)
    s.notices = notices
    from .io_panel import restore_link_edits

    restore_link_edits(s)
    return s


def url_params(s: Session) -> dict[str, str]:
    """The query parameters that reproduce the session's preset: preset, seed, and size for blank."""
    want = {"preset": s.preset_id}
    if s.seed is not None:
        want["seed"] = str(s.seed)
    if s.preset_id == BLANK:
        want["size"] = "x".join(str(v) for v in s.blank_shape)
    return want


def sync_query_params(s: Session) -> None:
    """Write preset and seed (and blank size) into the URL so a link reproduces the view."""
    want = url_params(s)
    current = st.query_params.to_dict()
    for k in ("preset", "seed", "size"):
        if k in want and current.get(k) != want[k]:
            st.query_params[k] = want[k]
        elif k not in want and k in current:
            del st.query_params[k]


def load(preset_id: str, seed: int | None = None, blank_shape: tuple[int, int, int] | None = None) -> None:
    """Replace the state with a preset; bumping the version gives every editor a fresh key, so no
    pending edit of the old matrices is re-applied to the new ones."""
    old = get()
    s = new_session(preset_id, seed, blank_shape or old.blank_shape)
    s.version = old.version + 1
    st.session_state[KEY] = s


def reset() -> None:
    s = get()
    load(s.preset_id, s.seed, s.blank_shape)


def set_seed(seed: int) -> None:
    """Redraw only what the preset draws at random; the user's edits to fixed parts are kept."""
    s = get()
    preset, fresh = _preset_and_base(s.preset_id, seed, s.blank_shape)
    if not preset.is_random:
        return
    s.seed = preset.seed
    for i, name in enumerate(preset.random.names):
        # the fresh draw, fitted to the current shape (the user may have resized): cells beyond the
        # preset's shape are new draws too, so nothing keeps a value from the old seed
        s.matrices[name] = fill_new_cells(fresh[name], s.matrices[name].shape, preset.seed + 101 + i)
    s.version += 1


def set_matrix(name: str, value: np.ndarray) -> None:
    s = get()
    s.matrices[name] = value


def is_unedited(s: Session) -> bool:
    """True when tokens, matrices and options are exactly the preset's."""
    preset, base = _preset_and_base(s.preset_id, s.seed, s.blank_shape)
    return (s.tokens == preset.tokens and s.options == preset.options
            and all(s.matrices[n].shape == base[n].shape and np.array_equal(s.matrices[n], base[n]) for n in MATRICES))


def d_k_of(s: Session) -> int:
    """The width of Q and K under the session's projection (W_q is d_model × d_k, or d_k × d_model)."""
    return int(s.matrices["W_q"].shape[1 if s.options.projection == "x_w" else 0])


def set_projection(projection: str) -> None:
    """Switch X·W / X·Wᵀ, transposing W_q, W_k, W_v so Q, K and V stay exactly the same."""
    s = get()
    if projection == s.options.projection:
        return
    for name in ("W_q", "W_k", "W_v"):
        s.matrices[name] = np.ascontiguousarray(s.matrices[name].T)
    s.options = s.options.replace(projection=projection)
    s.version += 1


def export_preset(s: Session) -> Preset:
    """What downloads describe: the unedited preset itself, or the current state as fixed matrices."""
    if is_unedited(s):
        return preset_for(s)
    return presets_mod.from_state(s.tokens, s.matrices, s.options, id=f"{s.preset_id}_edited", title="Edited " + s.preset_id,
                                  description="Saved from the dashboard.")


def fill_new_cells(old: np.ndarray, shape: tuple[int, int], seed: int) -> np.ndarray:
    """Resize ``old`` to ``shape``, keeping every value that still fits; new cells are drawn
    uniformly on [0, 1) from ``seed`` (the same seed always gives the same new cells)."""
    new = np.random.RandomState(seed).rand(*shape)
    r, c = min(old.shape[0], shape[0]), min(old.shape[1], shape[1])
    new[:r, :c] = old[:r, :c]
    return new


def resize(tokens: tuple[str, ...] | None = None, d_model: int | None = None, d_k: int | None = None) -> None:
    """Change the number of tokens, d_model or d_k, keeping existing values where they still fit."""
    s = get()
    seed = s.seed or 0
    n = len(tokens) if tokens is not None else s.matrices["X"].shape[0]
    dm = d_model if d_model is not None else s.matrices["X"].shape[1]
    x_w = s.options.projection == "x_w"
    dk = d_k if d_k is not None else d_k_of(s)
    s.matrices["X"] = fill_new_cells(s.matrices["X"], (n, dm), seed)
    for i, name in enumerate(("W_q", "W_k", "W_v")):
        shape = (dm, dk) if x_w else (dk, dm)
        s.matrices[name] = fill_new_cells(s.matrices[name], shape, seed + 1 + i)  # each W its own new cells
    if tokens is not None:
        s.tokens = tokens
        if len(s.options.padding) != n:
            pad = tuple(s.options.padding[:n]) + (False,) * max(0, n - len(s.options.padding))
            s.options = s.options.replace(padding=pad)
    s.version += 1


def content_key(tokens: tuple[str, ...], matrices: dict[str, np.ndarray], options: Options) -> str:
    """A hash of everything a trace depends on (Streamlit's own hashing samples large arrays, so a
    one-cell edit in a big matrix could be missed; this reads every byte)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr((tokens, options)).encode())
    for name in MATRICES:
        m = np.ascontiguousarray(matrices[name])
        h.update(f"{name}{m.shape}".encode())
        h.update(m.tobytes())
    return h.hexdigest()


return_large_frees_to_the_os()
TRACES = TraceCache(max_bytes=256 * 2**20, max_entries=8, ttl=1800)  # two n = 2048 traces at most


def compute(tokens: tuple[str, ...], matrices: dict[str, np.ndarray], options: Options) -> Trace:
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
    preset, base = _preset_and_base(s.preset_id, s.seed, s.blank_shape)
    try:
        return compute(preset.tokens, base, preset.options)
    except AttentionError:
        return None


DOC_TOL = 1e-8


@st.cache_resource(max_entries=16, ttl=3600, show_spinner=False)
def document_match(preset_id: str, seed: int | None, blank_shape: tuple[int, int, int]) -> tuple[bool, str]:
    """Does the engine, run on the unedited preset, give the numbers (or shapes) its document prints?"""
    preset = _preset(preset_id, seed, blank_shape)
    trace = preset.compute()
    if preset.expected:
        worst = max(float(np.max(np.abs(getattr(trace, k).reshape(v.shape) - v))) for k, v in preset.expected.items())
        names = ", ".join(preset.expected)
        return worst <= DOC_TOL, f"{names} agree with its printed numbers to {worst:.1e} (tolerance {DOC_TOL:g})."
    shapes = {k: tuple(getattr(trace, k).shape) for k in preset.expected_shapes if hasattr(trace, k)}
    ok = all(shapes[k] == tuple(v) for k, v in preset.expected_shapes.items() if k in shapes)
    listed = ", ".join(f"{k} {shapes[k]}" for k in shapes)
    return ok, f"{listed}. {preset.notes.get('seed', '')}"
