"""The session's state and every change to it: the one writer of ``st.session_state``'s attention session.

Everything a page shows is derived from one ``Session`` kept in ``st.session_state``. It changes only
through the named functions below (``load_preset``, ``edit_cells``, ``resize``, ``set_option`` ...), and
those are called only from widget callbacks (``on_change`` / ``on_click``), which Streamlit runs before the
script: so every page, the sidebar included, draws from the state as it is after the change, and no run
changes state half-way or needs ``st.rerun()``. A change that is refused leaves the session exactly as
it was and leaves a message (:func:`say`) that the page shows next to the control that caused it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import streamlit as st

from .. import names
from ..errors import AttentionError
from ..io import presets as presets_mod
from ..io.presets import Preset
from ..trace import Options, Trace, self_attention
from .cache import TraceCache, return_large_frees_to_the_os

KEY = "attention_session"
BLANK = "blank"
DEFAULT_PRESET = "she_likes_coffee"
DEFAULT_BLANK = (8, 16, 16)  # n tokens, d_model, d_k
FACTOR_RANGE = (1e-6, 1e6)  # scale and temperature: what the controls accept, and what a loaded preset file may ask for


@dataclass
class Session:
    """One user's dashboard state. ``matrices`` are 2-D (a batch of one is shown as its single item).

    ``version`` changes whenever the matrices change other than by a grid edit (a preset, a resize, an
    import...), so every editor gets a fresh key and no pending grid edit is re-applied to new numbers.
    ``messages`` holds what the last change or refusal had to say, by place (see :func:`say`).
    """

    preset_id: str
    seed: int | None
    blank_shape: tuple[int, int, int]
    tokens: tuple[str, ...]
    matrices: dict[str, np.ndarray]
    options: Options
    version: int = 0
    epoch: int = 0  # every change adds 1; a message is shown while nothing has changed since it was left
    messages: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    held: dict[str, tuple[np.ndarray, str]] = field(default_factory=dict)  # an import of another shape, per matrix

    @property
    def dims(self) -> names.Dims:
        return names.dims_of(self.matrices, self.options.projection, self.options.heads)

    @property
    def labels(self) -> list[str]:
        """The tokens as unique labels for axes, tables and CSVs."""
        return names.token_labels(self.tokens)

    def axis_labels(self, name: str, shape: tuple[int, ...]) -> tuple[list[str], list[str]]:
        return names.axis_labels(name, shape, self.tokens, self.options.projection)


# ----------------------------------------------------------------------------------------- reading


def ensure(initial: Callable[[], tuple[Session, list[str]]]) -> Session:
    """Create the session once, from ``initial()`` (the URL's state and notes on what it could not
    restore), and return it: the one guarded initialiser."""
    if KEY not in st.session_state:
        session, notices = initial()
        st.session_state[KEY] = session
        for i, note in enumerate(notices):
            say(f"page.notice.{i}", "warning", note)
    return st.session_state[KEY]


def get() -> Session:
    return st.session_state[KEY]


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
    return {name: np.array(names.squeeze_batch(m)) for name, m in preset.matrices().items()}


def preset_for(s: Session) -> Preset:
    """The unedited preset the session started from (with the session's seed)."""
    return _preset_and_base(s.preset_id, s.seed, s.blank_shape)[0]


def base_for(s: Session) -> dict[str, np.ndarray]:
    """The unedited preset's matrices (2-D, read-only)."""
    return _preset_and_base(s.preset_id, s.seed, s.blank_shape)[1]


def new_session(preset_id: str = DEFAULT_PRESET, seed: int | None = None,
                blank_shape: tuple[int, int, int] = DEFAULT_BLANK) -> Session:
    preset, base = _preset_and_base(preset_id, seed, blank_shape)
    return Session(preset_id=preset_id, seed=preset.seed, blank_shape=blank_shape, tokens=preset.tokens,
                   matrices={k: np.array(v) for k, v in base.items()}, options=preset.options)


def is_unedited(s: Session) -> bool:
    """True when tokens, matrices and options are exactly the preset's."""
    preset, base = _preset_and_base(s.preset_id, s.seed, s.blank_shape)
    return (s.tokens == preset.tokens and s.options == preset.options
            and all(s.matrices[n].shape == base[n].shape and np.array_equal(s.matrices[n], base[n]) for n in names.INPUTS))


def export_preset(s: Session) -> Preset:
    """What downloads describe: the unedited preset itself, or the current state as fixed matrices."""
    if is_unedited(s):
        return preset_for(s)
    return presets_mod.from_state(s.tokens, s.matrices, s.options, id=f"{s.preset_id}_edited",
                                  title="Edited " + s.preset_id, description="Saved from the dashboard.")


# ----------------------------------------------------------------------------------------- messages


def say(place: str, kind: str, text: str) -> None:
    """Leave a message ("success", "info", "warning" or "error") for the page to show at ``place``
    (e.g. ``"edit.X"``, ``"import.W_q"``, ``"sidebar.preset"``) until the state next changes.
    ``text`` is Markdown: user text in it must go through :mod:`attention.ui.text`."""
    s = get()
    s.messages[place] = (s.epoch, kind, text)


def messages(prefix: str) -> list[tuple[str, str]]:
    """(kind, text) of the messages still current at places starting with ``prefix``, oldest first."""
    s = get()
    return [(kind, text) for place, (epoch, kind, text) in s.messages.items() if place.startswith(prefix) and epoch == s.epoch]


def _touch(s: Session) -> None:
    """Record that the state changed (older messages and held imports no longer apply)."""
    s.epoch += 1
    s.messages.clear()
    s.held.clear()


def hold_import(name: str, held: tuple[np.ndarray, str] | None) -> None:
    """Keep (or drop, with None) an import whose shape differs, so a button can apply it with a resize."""
    s = get()
    if held is None:
        s.held.pop(name, None)
    else:
        s.held[name] = held


# ----------------------------------------------------------------------------------------- changes


def _replace_session(new: Session) -> None:
    old = get()
    new.version, new.epoch = old.version + 1, old.epoch + 1
    st.session_state[KEY] = new


def load_preset(preset_id: str, seed: int | None = None, blank_shape: tuple[int, int, int] | None = None) -> None:
    """Replace the state with a preset; every editor gets a fresh key, so no pending edit of the old matrices
    is re-applied to the new ones."""
    _replace_session(new_session(preset_id, seed, blank_shape or get().blank_shape))


def reset() -> None:
    s = get()
    load_preset(s.preset_id, s.seed, s.blank_shape)


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
    _touch(s)


def edit_cells(name: str, values: Mapping[tuple[int, int], float]) -> bool:
    """Set cells of one input matrix: ``{(row, col): value}`` (already checked to be finite). Grid edits do
    not change ``version``: the editor that sent them keeps its key. Returns whether anything changed."""
    s = get()
    m = s.matrices[name]
    changed = {rc: v for rc, v in values.items() if m[rc] != v or np.signbit(m[rc]) != np.signbit(v)}
    if not changed:
        return False
    new = m.copy()
    for (r, c), v in changed.items():
        new[r, c] = v
    s.matrices[name] = new
    _touch(s)
    return True


def set_tokens(tokens: tuple[str, ...]) -> None:
    """New tokens; with a different count, X (and the padding flags) are resized, keeping what still fits."""
    s = get()
    if len(tokens) == len(s.tokens):
        s.tokens = tokens
        _touch(s)
    else:
        resize(tokens=tokens)


def set_option(**changes: object) -> None:
    """Change options (softmax, scale, temperature, mask, padding...); the matrices stay as they are."""
    s = get()
    new = replace(s.options, **changes)
    if new != s.options:
        s.options = new
        _touch(s)


def set_mask(kind: str) -> None:
    s = get()
    pad = s.options.padding if len(s.options.padding) == len(s.tokens) else (False,) * len(s.tokens)
    s.options = replace(s.options, mask=kind, padding=pad)
    _touch(s)


def set_projection(projection: str) -> None:
    """Switch X·W / X·Wᵀ, transposing W_q, W_k, W_v so Q, K and V stay exactly the same."""
    s = get()
    if projection == s.options.projection:
        return
    for name in names.WEIGHTS:
        s.matrices[name] = np.ascontiguousarray(s.matrices[name].T)
    s.options = replace(s.options, projection=projection)
    s.version += 1
    _touch(s)


def replace_matrix(name: str, value: np.ndarray) -> None:
    """A whole input matrix replaced (an import), same shape as before."""
    s = get()
    s.matrices[name] = np.array(value, dtype=np.float64)
    s.version += 1
    _touch(s)


def resize_and_replace(name: str, value: np.ndarray, n: int | None, d_model: int, d_k: int | None) -> None:
    """An import of another shape: resize everything to fit it, then put it in."""
    s = get()
    if n is not None and n != len(s.tokens):
        tokens = tuple(s.tokens[:n]) + tuple(f"t{i + 1}" for i in range(len(s.tokens), n))
        resize(tokens=tokens, d_model=d_model)
    else:
        resize(d_model=d_model, d_k=d_k)
    replace_matrix(name, value)


def apply_preset(preset: Preset) -> None:
    """Put a loaded preset file's tokens, matrices (2-D) and options into the session, after checking the
    dashboard can show it (raises AttentionError, changing nothing, if not)."""
    if preset.options.heads != 1:
        raise AttentionError(f"it asks for {preset.options.heads} heads; the dashboard shows single-head attention "
                             "(export it as code to run the heads). Nothing was changed.")
    if preset.matrices()["X"].ndim == 3 and preset.matrices()["X"].shape[0] != 1:
        raise AttentionError(f"its X holds a batch of {preset.matrices()['X'].shape[0]}; the dashboard shows one sentence "
                             "(a batch of one). Nothing was changed.")
    matrices = matrices_2d(preset)
    n, d_model = matrices["X"].shape
    if n > names.MAX_TOKENS or d_model > names.MAX_DIM:
        raise AttentionError(f"it has {n} tokens × {d_model} dimensions; the dashboard supports up to "
                             f"{names.MAX_TOKENS} × {names.MAX_DIM}. Nothing was changed.")
    lo, hi = FACTOR_RANGE
    for what, v in (("temperature", preset.options.temperature), ("scale", preset.options.scale)):
        if v is not None and not lo <= v <= hi:
            raise AttentionError(f"it asks for {what} {v:g}; the dashboard accepts {lo:g} to {hi:g}. Nothing was changed.")
    preset.compute()  # raises AttentionError when the file's numbers cannot be computed; nothing is changed then
    s = get()
    s.tokens = tuple(preset.tokens)
    s.matrices = matrices
    s.options = preset.options
    s.version += 1
    _touch(s)


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
    dims = s.dims
    n = len(tokens) if tokens is not None else dims.n
    dm = d_model if d_model is not None else dims.d_model
    dk = d_k if d_k is not None else dims.d_k
    s.matrices["X"] = fill_new_cells(s.matrices["X"], (n, dm), seed)
    for i, name in enumerate(names.WEIGHTS):
        shape = names.weight_shape(dm, dk, s.options.projection)
        s.matrices[name] = fill_new_cells(s.matrices[name], shape, seed + 1 + i)  # each W its own new cells
    if tokens is not None:
        s.tokens = tokens
        if len(s.options.padding) != n:
            pad = tuple(s.options.padding[:n]) + (False,) * max(0, n - len(s.options.padding))
            s.options = replace(s.options, padding=pad)
    s.version += 1
    _touch(s)


def restore_edits(decoded: Mapping[str, np.ndarray]) -> None:
    """Edits carried by a link (already decoded and checked against the preset's shapes)."""
    s = get()
    for name, arr in decoded.items():
        s.matrices[name] = np.array(arr, dtype=np.float64)
    s.version += 1
    _touch(s)


# ----------------------------------------------------------------------------------------- computing


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
    preset, base = _preset_and_base(s.preset_id, s.seed, s.blank_shape)
    try:
        return compute(preset.tokens, base, preset.options)
    except AttentionError:
        return None


DOC_TOL = 1e-8


@st.cache_resource(max_entries=16, ttl=3600, show_spinner=False)
def document_match(preset_id: str, seed: int | None, blank_shape: tuple[int, int, int]) -> tuple[bool, str]:
    """Does the engine, run on the unedited preset, give the numbers (or shapes) its document prints?"""
    preset = _preset_and_base(preset_id, seed, blank_shape)[0]
    trace = preset.compute()
    if preset.expected:
        worst = max(float(np.max(np.abs(getattr(trace, k).reshape(v.shape) - v))) for k, v in preset.expected.items())
        listed = ", ".join(preset.expected)
        return worst <= DOC_TOL, f"{listed} agree with its printed numbers to {worst:.1e} (tolerance {DOC_TOL:g})."
    shapes = {k: tuple(getattr(trace, k).shape) for k in preset.expected_shapes if hasattr(trace, k)}
    ok = all(shapes[k] == tuple(v) for k, v in preset.expected_shapes.items() if k in shapes)
    return ok, ", ".join(f"{k} {shapes[k]}" for k in shapes) + "."
