"""The session's state as data, and what derives from it without changing it: the preset, labels.

One ``Session`` per user lives in ``st.session_state`` under :data:`KEY`. This module only reads it; every
change goes through :mod:`attention.ui.state`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import streamlit as st

from ... import heads, names, positions, rng
from ...io import presets as presets_mod
from ...io.presets import Preset
from ...labs.challenges import Challenge
from ...trace import Options
from .learned import Learned, LearnSettings

KEY = "attention_session"
BLANK = "blank"
FILE = "file"  # the preset_id of a state loaded from a preset file
DEFAULT_PRESET = "she_likes_coffee"
DEFAULT_BLANK = (8, 16, 16)  # n tokens, d_model, d_k
DIGIT_CHOICES = (3, 4, 6, 8, None)  # significant digits shown (None: every digit); the control and links offer these
FACTOR_RANGE = (1e-6, 1e6)  # scale and temperature: what the controls accept, and what a loaded preset file may ask for


@dataclass(frozen=True)
class Pinned:
    """A snapshot of a whole state ("A"), to compare the current one with."""

    tokens: tuple[str, ...]
    matrices: dict[str, np.ndarray]
    options: Options
    label: str


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
    messages: dict[str, tuple[int, str, str, str]] = field(default_factory=dict)  # place: epoch, kind, text, page
    held: dict[str, tuple[np.ndarray, str]] = field(default_factory=dict)  # an import of another shape, per matrix
    pin: Pinned | None = None  # the state pinned as A, if any
    digits: int | None = 4  # significant digits shown in tables, editors and heatmaps (None: full precision)
    loaded: Preset | None = None  # the preset file this state was loaded from (preset_id is then FILE)
    cell: tuple[int, int] = (0, 0)  # the (query, key) cell being explained
    head: int = 0  # ... in this head
    tabs: dict[str, str] = field(default_factory=dict)  # open tab of each lazy tab set; expanders open (display)
    rolled: int = 0  # how many places the tokens (and X's rows) were moved on by shuffles since the preset
    grids: int = 0  # renews every grid's widget after a refused grid payload (not data: the matrices stay as they are)
    # --- labs: the challenge being played and the overview's guided path (see attention.ui.state.challenges) ---
    challenge: Challenge | None = None  # while set, edits of the matrices it locks are refused
    tour_dismissed: bool = False  # the overview's "Start here" was put away (kept across presets)
    # --- end of labs ---
    # ---- learning and embeddings (Learn and Tokens pages): settings, the last run, how X was made: (kind, seed)
    learn: LearnSettings = field(default_factory=LearnSettings)
    learned: Learned | None = None
    embedding: tuple[str, int] = ("preset", 0)
    source: tuple[str, ...] = ()  # the Tokens page's source sentence: cross-attention's keys and values (empty: none)

    @property
    def dims(self) -> names.Dims:
        return names.dims_of(self.matrices, self.options.projection, self.options.heads, self.options.kv)

    @property
    def labels(self) -> list[str]:
        """The tokens as unique labels for axes, tables and CSVs."""
        return names.token_labels(self.tokens)

    def axis_labels(self, name: str, shape: tuple[int, ...]) -> tuple[list[str], list[str]]:
        return names.axis_labels(name, shape, self.tokens, self.options.projection, self.source)

    # The two reshapes a state can undergo, used by the one writer (attention.ui.state) on the live session and by
    # attention.ui.address.url on a session it rebuilds from an address (so a link reproduces a resize exactly).

    def shuffle(self) -> None:
        """Move every token one place on (the last to the front); each keeps its row of X, its padding flag and its
        row and column of a custom mask, so without positions the outputs only move with their tokens."""
        order = np.roll(np.arange(len(self.tokens)), 1)
        self.rolled = (self.rolled + 1) % len(self.tokens)
        self.tokens = tuple(self.tokens[i] for i in order)
        self.matrices["X"] = self.matrices["X"][order].copy()
        o = self.options
        grid = tuple(tuple(o.custom_mask[i][j] for j in order) for i in order) if o.custom_mask else ()
        self.options = replace(o, padding=tuple(o.padding[i] for i in order) if o.padding else (), custom_mask=grid)

    def use_positions(self, kind: str) -> str:
        """Switch the positions; "learned" brings an editable P (n × d_model) that starts as the sinusoidal code,
        and leaving "learned" drops P. Returns a note saying so ("" when there is nothing to say)."""
        note = ""
        if kind == "learned" and "P" not in self.matrices:
            self.matrices["P"] = positions.sinusoidal(*self.matrices["X"].shape[-2:])  # (n, d_model)
            note = "P starts as the sinusoidal code: edit any cell on the Tokens page to change what is added to X."
        elif kind != "learned" and "P" in self.matrices:
            edited = not np.array_equal(self.matrices["P"], positions.sinusoidal(*self.matrices["P"].shape))
            del self.matrices["P"]
            note = "P was dropped (positions are no longer learned)" + (", with your edits to it." if edited else ".")
        self.options = replace(self.options, positions=kind)
        return note

    def use_w_o(self, on: bool) -> str:
        """Mix the heads' outputs by W_o (d_v × d_v), starting as the identity so nothing changes until it is
        edited; or drop W_o. Returns a note saying so."""
        if on and "W_o" not in self.matrices:
            self.matrices["W_o"] = np.eye(self.dims.d_v)  # (d_v, d_v)
            return "W_o starts as the identity (the output is unchanged): edit any cell to mix the heads' outputs."
        if not on and "W_o" in self.matrices:
            edited = not np.array_equal(self.matrices["W_o"], np.eye(self.matrices["W_o"].shape[0]))
            del self.matrices["W_o"]
            return "W_o was dropped: the output is the heads' outputs side by side" + (
                ", and your edits to W_o are gone." if edited else "."
            )
        return ""

    def use_kv_heads(self, g: int) -> None:
        """g key/value heads (g divides the heads): W_k and W_v regrouped by :func:`attention.heads.regroup`."""
        o = self.options
        for name in ("W_k", "W_v"):
            self.matrices[name] = heads.regroup(self.matrices[name], o.heads, o.kv, g, o.projection)
        self.options = replace(o, kv_heads=None if g == o.heads else g)

    def project(self, projection: str) -> None:
        """Switch X·W / X·Wᵀ: W_q, W_k, W_v transposed, so Q, K and V stay exactly the same."""
        for name in names.WEIGHTS:
            self.matrices[name] = np.ascontiguousarray(self.matrices[name].T)
        self.options = replace(self.options, projection=projection)

    def resize(
        self,
        tokens: tuple[str, ...] | None = None,
        d_model: int | None = None,
        d_k: int | None = None,
        d_v: int | None = None,
    ) -> str:
        """New sizes, keeping every value that still fits; new cells are drawn from the seed, each a function of
        its place only (the same sizes always give the same numbers). W_v keeps its d_v unless ``d_v`` is given.
        Returns a note when the heads no longer divide d_k and d_v and go back to one head ("" otherwise)."""
        if self.options.kv != self.options.heads:  # first one key/value block per head again (copies: no change)
            self.use_kv_heads(self.options.heads)
        seed, dims = self.seed or 0, self.dims
        n = len(tokens) if tokens is not None else dims.n
        dm = d_model if d_model is not None else dims.d_model
        dk = d_k if d_k is not None else dims.d_k
        dv = d_v if d_v is not None else dims.d_v
        self.matrices["X"] = rng.fill_new_cells(self.matrices["X"], (n, dm), seed, stream=0)
        for i, name in enumerate(names.WEIGHTS):  # each W its own new cells; W_v keeps d_v
            out = dv if name == "W_v" else dk
            self.matrices[name] = rng.fill_new_cells(
                self.matrices[name], names.weight_shape(dm, out, self.options.projection), seed, stream=1 + i
            )
        if "W_o" in self.matrices:  # (d_v, d_v)
            self.matrices["W_o"] = rng.fill_new_cells(self.matrices["W_o"], (dv, dv), seed, stream=4)
        if "P" in self.matrices:  # (n, d_model): one row per position
            self.matrices["P"] = rng.fill_new_cells(self.matrices["P"], (n, dm), seed, stream=5)
        note = ""
        if dk % self.options.heads or dv % self.options.heads:
            note = f"{self.options.heads} heads do not divide d_k = {dk} and d_v = {dv}: back to one head."
            self.options, self.head = replace(self.options, heads=1), 0
        if n != dims.n:
            self.rolled = 0  # no longer a pure reordering of the preset's rows (a link carries X as edits)
        if tokens is not None:
            self.tokens = tokens
            if len(self.options.padding) != n:
                pad = tuple(self.options.padding[:n]) + (False,) * max(0, n - len(self.options.padding))
                self.options = replace(self.options, padding=pad)
            grid = self.options.custom_mask
            if grid and len(grid) != n:  # kept where it fits; new tokens may attend and be attended
                grid = tuple(
                    tuple(grid[i][j] if i < len(grid) and j < len(grid) else True for j in range(n)) for i in range(n)
                )
                self.options = replace(self.options, custom_mask=grid)
        return note


def valid_heads(s: Session) -> list[int]:
    """The numbers of heads this state can be split into: the common divisors of d_k and d_v."""
    d = s.dims
    return [h for h in range(1, min(d.d_k, d.d_v) + 1) if d.d_k % h == 0 and d.d_v % h == 0]


def get() -> Session:
    return st.session_state[KEY]


@st.cache_resource(max_entries=16, ttl=3600, show_spinner=False)
def preset_and_base(
    preset_id: str, seed: int | None, blank_shape: tuple[int, int, int]
) -> tuple[Preset, dict[str, np.ndarray]]:
    """Load a preset and its X, W_q, W_k, W_v as read-only 2-D arrays (a batch of one is dropped)."""
    if preset_id == BLANK:
        n, d_model, d_k = blank_shape
        preset = presets_mod.blank(n, d_model, d_k, seed=0 if seed is None else seed)
    else:
        preset = presets_mod.load_preset(preset_id, seed)
    return preset, _read_only(matrices_2d(preset))


def matrices_2d(preset: Preset) -> dict[str, np.ndarray]:
    """A preset's X, W_q, W_k, W_v as the dashboard holds them: 2-D (a leading batch of one dropped)."""
    return {name: np.array(names.squeeze_batch(m)) for name, m in preset.matrices().items()}


def preset_label(preset_id: str, s: Session | None = None) -> str:
    """A preset's name in lists: its file's label, "Blank n × d (random)", or the title of a loaded file."""
    if preset_id == FILE:
        return f"From a file: {s.loaded.title}" if s is not None and s.loaded is not None else "From a file"
    return "Blank n × d (random)" if preset_id == BLANK else presets_mod.preset_label(preset_id)


def origin(s: Session) -> tuple[Preset, dict[str, np.ndarray]]:
    """The unedited preset the session started from (a loaded file, or a listed preset and seed), matrices 2-D."""
    if s.preset_id == FILE and s.loaded is not None:
        return s.loaded, _read_only(matrices_2d(s.loaded))
    return preset_and_base(s.preset_id, s.seed, s.blank_shape)


def _read_only(matrices: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    for m in matrices.values():
        m.setflags(write=False)
    return matrices


def preset_for(s: Session) -> Preset:
    return origin(s)[0]


def base_for(s: Session) -> dict[str, np.ndarray]:
    return origin(s)[1]


def new_session(
    preset_id: str = DEFAULT_PRESET, seed: int | None = None, blank_shape: tuple[int, int, int] = DEFAULT_BLANK
) -> Session:
    preset, base = preset_and_base(preset_id, seed, blank_shape)
    return Session(
        preset_id=preset_id,
        seed=preset.seed,
        blank_shape=blank_shape,
        tokens=preset.tokens,
        matrices={k: np.array(v) for k, v in base.items()},
        options=preset.options,
    )


def identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape and the same numbers, bit for bit in sign: -0.0 (an edit a person can make) is not 0.0."""
    return a.shape == b.shape and np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))


def is_unedited(s: Session) -> bool:
    """True when tokens, matrices and options are exactly the preset's."""
    preset, base = origin(s)
    return (
        (s.tokens, s.source) == (preset.tokens, preset.source_tokens)  # a new source sentence is an edit
        and s.options == preset.options
        and names.inputs_of(s.matrices) == names.inputs_of(base)
        and all(identical(s.matrices[n], base[n]) for n in names.inputs_of(base))
    )


def export_preset(s: Session) -> Preset:
    """What downloads describe: the unedited preset itself, or the current state as fixed matrices."""
    if is_unedited(s):
        return preset_for(s)
    return presets_mod.from_state(
        s.tokens,
        s.matrices,
        s.options,
        id=f"{s.preset_id}_edited",
        title="Edited " + s.preset_id,
        description="Saved from the dashboard.",
        source_tokens=s.source,
    )

