"""Every change to the session, as named functions called from widget callbacks: the one writer of the state.

The ``Session`` (:mod:`attention.ui.session`) changes only through the functions below (``load_preset``,
``edit_cells``, ``resize``, ``set_option`` ...), and those are called only from widget callbacks
(``on_change`` / ``on_click``), which Streamlit runs before the script: so every page, the sidebar included,
draws from the state as it is after the change, and no run changes state half-way or needs ``st.rerun()``.
A change that is refused leaves the session exactly as it was and leaves a message (:func:`say`) that the
page shows next to the control that caused it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np
import streamlit as st

from .. import names, rng
from ..errors import AttentionError
from ..io.presets import Preset
from .session import (
    FACTOR_RANGE,
    FILE,
    KEY,
    Pinned,
    Session,
    get,
    is_unedited,
    matrices_2d,
    new_session,
    preset_and_base,
    preset_label,
    valid_heads,
)


def ensure(initial: Callable[[], tuple[Session, list[str]]]) -> Session:
    """Create the session once, from ``initial()`` (the URL's state and notes on what it could not
    restore), and return it: the one guarded initialiser."""
    if KEY not in st.session_state:
        session, notices = initial()
        st.session_state[KEY] = session
        for i, note in enumerate(notices):
            say(f"page.notice.{i}", "warning", note)
    return st.session_state[KEY]


def say(place: str, kind: str, text: str) -> None:
    """Leave a message ("success", "info", "warning" or "error") for the page to show at ``place``
    (e.g. ``"edit.X"``, ``"import.W_q"``, ``"sidebar.preset"``) until the state next changes.
    ``text`` is Markdown: user text in it must go through :mod:`attention.ui.text`."""
    s = get()
    s.messages[place] = (s.epoch, kind, text)


def _touch(s: Session) -> None:
    """Record that the state changed (older messages and held imports no longer apply)."""
    s.epoch += 1
    s.messages.clear()
    s.held.clear()


def pin() -> None:
    """Snapshot the whole current state as A (replacing an earlier pin)."""
    s = get()
    label = f"{preset_label(s.preset_id)}" + ("" if is_unedited(s) else ", edited")
    s.pin = Pinned(s.tokens, {k: v.copy() for k, v in s.matrices.items()}, s.options, label)
    _touch(s)


def swap_pin() -> None:
    """Make A the current state and the current state A."""
    s = get()
    if s.pin is None:
        return
    now = Pinned(s.tokens, dict(s.matrices), s.options, "the state before the swap")
    s.tokens, s.matrices, s.options = s.pin.tokens, {k: v.copy() for k, v in s.pin.matrices.items()}, s.pin.options
    s.pin = now
    s.version += 1
    _touch(s)


def set_heads(h: int) -> None:
    """Split attention into ``h`` heads (h must divide d_k and d_v; the control offers only those)."""
    s = get()
    if h not in valid_heads(s):
        say(
            "sidebar.heads",
            "error",
            f"{h} heads do not divide d_k = {s.dims.d_k} and d_v = {s.dims.d_v}; "
            f"choose one of {', '.join(map(str, valid_heads(s)))}.",
        )
        return
    s.head = min(s.head, h - 1)
    set_option(heads=h)


def set_view(cell: tuple[int, int] | None = None, head: int | None = None, digits: int | None | str = "keep") -> None:
    """Display-only settings: the explained (query, key) cell and its head, and the digits numbers are shown with
    (None: every digit). Values out of range are ignored; nothing computed changes."""
    s = get()
    if cell is not None and all(0 <= c < len(s.tokens) for c in cell):
        s.cell = cell
    if head is not None and 0 <= head < s.options.heads:
        s.head = head
    if digits != "keep":
        s.digits = digits  # type: ignore[assignment]


def clear_pin() -> None:
    s = get()
    s.pin = None
    _touch(s)


def renew_grids() -> None:
    """Give every grid a fresh widget: a payload that was refused must not stay in the grid's widget state (Streamlit
    would apply it to the table on the next run). The matrices are not touched."""
    get().grids += 1


def hold_import(name: str, held: tuple[np.ndarray, str] | None) -> None:
    """Keep (or drop, with None) an import whose shape differs, so a button can apply it with a resize."""
    s = get()
    if held is None:
        s.held.pop(name, None)
    else:
        s.held[name] = held


def _replace_session(new: Session) -> None:
    """A new state; the pin, the display digits and the explained cell are kept across presets."""
    old = get()
    new.version, new.epoch, new.pin, new.digits = old.version + 1, old.epoch + 1, old.pin, old.digits
    new.cell = old.cell if max(old.cell) < len(new.tokens) else (0, 0)
    st.session_state[KEY] = new


def load_preset(preset_id: str, seed: int | None = None, blank_shape: tuple[int, int, int] | None = None) -> None:
    """Replace the state with a preset; every editor gets a fresh key, so no pending edit of the old matrices
    is re-applied to the new ones."""
    _replace_session(new_session(preset_id, seed, blank_shape or get().blank_shape))


def reset() -> None:
    s = get()
    if s.preset_id == FILE and s.loaded is not None:
        apply_preset(s.loaded)
    else:
        load_preset(s.preset_id, s.seed, s.blank_shape)


def set_seed(seed: int) -> None:
    """Redraw only what the preset draws at random; the user's edits to fixed parts are kept."""
    s = get()
    if s.preset_id == FILE:
        return
    preset, fresh = preset_and_base(s.preset_id, seed, s.blank_shape)
    if not preset.is_random:
        return
    s.seed = preset.seed
    for i, name in enumerate(preset.random.names):
        # the fresh draw, fitted to the current shape (the user may have resized): cells beyond the
        # preset's shape are new draws too, so nothing keeps a value from the old seed
        s.matrices[name] = rng.fill_new_cells(fresh[name], s.matrices[name].shape, preset.seed + 101 + i)
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
    """Choose the mask; padding flags and a custom grid (all allowed at first) are sized to the tokens."""
    s = get()
    n = len(s.tokens)
    pad = s.options.padding if len(s.options.padding) == n else (False,) * n
    grid = s.options.custom_mask if len(s.options.custom_mask) == n else ((True,) * n,) * n
    s.options = replace(s.options, mask=kind, padding=pad, custom_mask=grid if "custom" in kind.split("+") else ())
    _touch(s)


def shuffle_tokens() -> None:
    """Reorder the tokens (see :meth:`Session.shuffle`)."""
    s = get()
    s.shuffle()
    s.version += 1
    _touch(s)


def set_custom_mask(grid: tuple[tuple[bool, ...], ...]) -> None:
    """The custom mask's grid (query × key, True = may attend), already checked to be n × n."""
    set_option(custom_mask=grid)


def set_projection(projection: str) -> None:
    """Switch X·W / X·Wᵀ, transposing W_q, W_k, W_v so Q, K and V stay exactly the same."""
    s = get()
    if projection == s.options.projection:
        return
    s.project(projection)
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
    if preset.matrices()["X"].ndim == 3 and preset.matrices()["X"].shape[0] != 1:
        raise AttentionError(
            f"its X holds a batch of {preset.matrices()['X'].shape[0]}; the dashboard shows one sentence "
            "(a batch of one). Nothing was changed."
        )
    matrices = matrices_2d(preset)
    n, d_model = matrices["X"].shape
    if n > names.MAX_TOKENS or d_model > names.MAX_DIM:
        raise AttentionError(
            f"it has {n} tokens × {d_model} dimensions; the dashboard supports up to "
            f"{names.MAX_TOKENS} × {names.MAX_DIM}. Nothing was changed."
        )
    lo, hi = FACTOR_RANGE
    for what, v in (("temperature", preset.options.temperature), ("scale", preset.options.scale)):
        if v is not None and not lo <= v <= hi:
            raise AttentionError(
                f"it asks for {what} {v:g}; the dashboard accepts {lo:g} to {hi:g}. Nothing was changed."
            )
    preset.compute()  # raises AttentionError when the file's numbers cannot be computed; nothing is changed then
    s = get()
    _replace_session(
        Session(
            preset_id=FILE,
            seed=preset.seed,
            blank_shape=s.blank_shape,
            tokens=tuple(preset.tokens),
            matrices=matrices,
            options=preset.options,
            loaded=preset,
        )
    )


def resize(tokens: tuple[str, ...] | None = None, d_model: int | None = None, d_k: int | None = None) -> None:
    """Change the number of tokens, d_model or d_k, keeping existing values where they still fit."""
    s = get()
    s.resize(tokens, d_model, d_k)
    s.version += 1
    _touch(s)
