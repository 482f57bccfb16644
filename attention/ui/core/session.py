"""The session's state as data, and what derives from it without changing it: its origin, labels, "unedited".

One ``Session`` per user lives in ``st.session_state`` under :data:`KEY`. This module only reads it; every
change, the reshapes included, goes through :mod:`attention.ui.state`. The unedited starting point (``origin``)
is kept on the session, set by the writer when the preset, seed or size changes; what derives from the whole
state (is it unedited? its address) is computed once per state and remembered (:func:`derived`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import streamlit as st

from ... import heads, names
from ...io import presets as presets_mod
from ...io.presets import Preset
from ...labs.challenges import Challenge
from ...trace import Options
from . import parts
from .cache import kept
from .learned import Learned, LearnSettings
from .models import Ablation, HeadRef, head_preset
from .parts import (
    BODY,
    BOOKKEEPING,
    LABS,
    NUMBERS,
    OPTIONS,
    PAGE,
    VIEW,
    arrays,
    cell_if_it_fits,
    declare,
    identity,
    items,
    learned_if_same_tokens,
    randomness,
    said,
    shapes,
)
from .parts import GENERATION as GENERATION_PART
from .parts import MODEL as MODEL_PART

KEY = "attention_session"
BLANK = parts.BLANK_KIND.id
MODEL = parts.MODEL_KIND.id  # the preset_id of a model's head opened on the step pages (Session.model_head)
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


@dataclass(frozen=True, eq=False)
class Origin:
    """The unedited starting point of a state: the preset (listed, blank or loaded from a file) and its X, W_q, W_k,
    W_v as read-only 2-D arrays (a batch of one dropped), and its kind (what a link, the label and the seed make of
    it). Made once when the preset, seed or size changes."""

    preset: Preset
    base: dict[str, np.ndarray]
    kind: parts.Kind = parts.LISTED


@dataclass(frozen=True)
class Generation:
    """The Generate page's state (its writer: :mod:`attention.ui.state.generation`): the prompt's length (``keep``),
    the tokens made since (``steps``), the (model id, token ids) they were made for, the page's message ((kind, text)
    or None), the layer shown (-1: every layer) and how many tokens a press makes."""

    keep: int
    steps: int
    made_for: tuple[str, tuple[int, ...]]
    message: tuple[str, str] | None
    layer: int
    many: int


@dataclass(frozen=True)
class Inside:
    """The "Inside a model" pages' state (its writer: :mod:`attention.ui.state.inside`): the chosen model's id, the
    text (its ready-made label, "" when typed, and its token ids), the position predicted from, the ablations and how
    the next head is ablated; the last change of ablations (those ``before`` it, what it was, ``where``: a (layer,
    head) or "all"); the text's and the chooser's messages; the head last opened on the step pages; the models held
    for this session (id, label); the layer drawn large; the uploader's count; the snapshot shown on "Watch it learn"
    (1-based); the token whose logit the Logit lens and Attribution pages follow (None: the model's prediction) and
    their message; the key token and query whose weight every head shows on First token; the head whose q and k
    Every head shows step by step; the Routes page's threshold; the head whose controls Every head draws; the window
    of its weights Every head draws cell by cell (query rows a .. b − 1, key columns c .. d − 1, 0-based; None: the
    first ones) and why a window typed was refused; the text searched for among the tokens to choose a position
    (:mod:`attention.ui.modelpages.find`)."""

    model: str
    sequence: str
    ids: tuple[int, ...]
    position: int
    ablations: tuple[Ablation, ...] = ()
    how: str = "zero"
    before: tuple[Ablation, ...] | None = None
    change: str = ""
    where: tuple[int, int] | str | None = None
    message: str = ""
    opened: tuple[int, int] | None = None
    held: tuple[tuple[str, str], ...] = ()
    model_message: str = ""
    layer_shown: int = 0
    uploads: int = 0
    snapshot: int = 1
    token: int | None = None
    readout_message: str = ""
    across: tuple[int, int] = (0, -1)  # one token across layers: (key, query), 0-based; query -1 the queries after it
    qk_head: tuple[int, int] = (0, 0)  # the head whose q and k are shown step by step (a QK-norm model), 0-based
    head_shown: tuple[int, int] = (0, 0)  # Every head's chosen head (layer, head), 0-based: its controls are drawn
    zoom: tuple[int, int, int, int] | None = None  # Every head's window of the chosen head: (a, b, c, d), 0-based
    zoom_message: str = ""
    threshold: float = 0.04  # the Routes page's: an edge is kept when its share of its update is above it
    find: str = ""  # the token searched for to choose a position (Logit lens, Attribution, Routes, Generate)


@dataclass(frozen=True)
class Training:
    """ "Watch it learn"'s bookkeeping: this session's live training job's id (None: none), and the messages of its
    snapshot slider and its training."""

    job: str | None = None
    learn_message: str = ""
    train_message: str = ""


@dataclass(frozen=True)
class Patching:
    """The Patching page's state (its writer: :mod:`attention.ui.state.inside`): the model the pair is for, the
    clean and corrupted texts as its token ids (same length), the ready-made pair's label ("" when typed), the
    answer and wrong tokens chosen (None: the clean and the corrupted prediction at the last position), what the
    exact patching covers (``scope`` "both", "heads" or "streams"; ``layers`` the 0-based layers, () for every
    one), this session's latest patching job's id (None: none), and the page's message."""

    model: str
    clean: tuple[int, ...]
    corrupt: tuple[int, ...]
    pair: str = ""
    answer: int | None = None
    wrong: int | None = None
    job: str | None = None
    message: str = ""
    scope: str = "both"
    layers: tuple[int, ...] = ()


@dataclass(frozen=True)
class KvCache:
    """The KV cache page's state (its writer: :mod:`attention.ui.state.inside`): which text it studies (``text``
    "long", the shipped long text, or "pages", the text the other model pages read), the eviction ``policy``, the
    budget as typed (``budget``: a number of keys, or a share of the cache when ``unit`` is "share"), the budget
    box's message, and this session's latest jobs' ids (the study, and one budget off the curve)."""

    text: str = "long"
    policy: str = "sinks"
    budget: str = ""
    unit: str = "keys"
    message: str = ""
    job: str | None = None
    extra: str | None = None


T = TypeVar("T")


@dataclass(frozen=True)
class Member:
    """A student of a class: its code, the display name and the secret token (kept in this browser session)."""

    code: str
    name: str
    token: str
    from_cookie: bool = False  # found in this browser's cookie, not joined in this session: the page asks "not you?"


@dataclass
class Session:
    """One user's dashboard state. ``matrices`` are 2-D (a batch of one is shown as its single item).

    ``version`` changes whenever the matrices change other than by a grid edit (a preset, a resize, an
    import...), so an edit typed over the numbers before is refused, not applied to new ones; another head of the
    same model keeps it and moves ``sheet`` instead. ``grids`` renews widgets that must show a kept value again.
    ``messages`` holds what the last change or refusal had to say, by place (see :func:`say`).
    """

    # --- the numbers: the preset, its tokens and matrices (with the options, what the engine computes from) ---
    preset_id: str = declare(NUMBERS, travels=True, rerun=PAGE)
    seed: int | None = declare(NUMBERS, travels=True, rerun=PAGE)
    blank_shape: tuple[int, int, int] = declare(NUMBERS, travels=True, rerun=PAGE)
    tokens: tuple[str, ...] = declare(NUMBERS, travels=True, rerun=PAGE)
    matrices: dict[str, np.ndarray] = declare(NUMBERS, travels=True, rerun=PAGE, key=arrays, shown=shapes)
    # --- the options ---
    options: Options = declare(OPTIONS, travels=True, rerun=PAGE)
    # --- bookkeeping and more numbers ---
    version: int = declare(NUMBERS, default=0, rerun=PAGE)  # see the class's docstring
    epoch: int = declare(BOOKKEEPING, default=0, rerun=BODY)  # every change adds 1; messages are shown until then
    # place: epoch, kind, text, page (see attention.ui.state.core.say); the page shows those outside the body
    messages: dict[str, tuple[int, str, str, str]] = declare(BOOKKEEPING, factory=dict, rerun=BODY, shown=said)
    held: dict[str, tuple[np.ndarray, str]] = declare(BOOKKEEPING, factory=dict)  # an import of another shape
    # --- the view ---
    pin: Pinned | None = declare(VIEW, default=None, survives=True, rerun=PAGE, key=identity)  # the state pinned as A
    # significant digits shown in tables, editors and heatmaps (None: full precision)
    digits: int | None = declare(VIEW, default=4, survives=True, travels=True, rerun=PAGE)
    # the preset file this state was loaded from (its origin's kind is then parts.FILE_KIND)
    loaded: Preset | None = declare(NUMBERS, default=None, key=identity)
    cell: tuple[int, int] = declare(VIEW, default=(0, 0), survives=cell_if_it_fits)  # the (query, key) explained
    head: int = declare(VIEW, default=0)  # ... in this head
    # open tab of each lazy tab set; expanders open (display); a step page's lazy views ("view.<name>", "table.<name>",
    # "downloads") are drawn only while open (parts.IN_RESULTS: those that rerun the results column alone)
    tabs: dict[str, str] = declare(VIEW, factory=dict, survives=True, rerun=BODY, shown=items)
    # how many places the tokens (and X's rows) were moved on by shuffles since the preset
    rolled: int = declare(NUMBERS, default=0, travels=True)
    # renews every grid's widget: after a refused value, or another head opened while a grid holds an edit
    grids: int = declare(BOOKKEEPING, default=0, rerun=BODY)
    # by matrix grid's key: the page load and the last sequence number of the edits it sent that were applied (or
    # refused); the grid's data echoes it, and the page stops showing those values as pending (widgets.matrix_grid)
    edit_echo: dict[str, tuple[str, int]] = declare(BOOKKEEPING, factory=dict)
    # moves when the numbers are replaced without a new version (another head of the same model): an edit typed
    # over the numbers before is refused, not applied to others (widgets.matrix_grid's ``ver``)
    sheet: int = declare(BOOKKEEPING, default=0)
    # --- labs: the challenge being played and the overview's guided path (see attention.ui.state.challenges) ---
    # while set, edits of the matrices it locks are refused
    challenge: Challenge | None = declare(LABS, default=None, travels=True, rerun=PAGE, key=identity)
    # how the running challenge's numbers arrived whole ("a link", "an imported matrix", "trained weights", ...), or
    # "" while they were reached by this session's own edits since the challenge started here: only then is a solve
    # handed in to a class board (attention.ui.state.board.hand_in). Start or Restart makes it "" again
    arrived: str = declare(LABS, default="")
    tour_dismissed: bool = declare(LABS, default=False, survives=True)  # the overview's "Start here" was put away
    # the challenge form (Challenges page): the condition type its fields were last filled for, and whether the
    # example's hint was taken out of it (labpages.challenge_form)
    form_kind: str = declare(LABS, default="cell", survives=True)
    # a challenge link's text (``challenge=`` in the address: attention.ui.address.params.BAR), offered on the
    # Challenges page with its Start button until another page load
    offered: str | None = declare(LABS, default=None, survives=True)
    # the class this browser joined, as whom (attention.ui.state.board; restored from the address bar or the cookie
    # by attention.ui.address.membership, never in a shared link)
    member: Member | None = declare(LABS, default=None, survives=True)
    form_hint_cleared: bool = declare(LABS, default=False, survives=True)
    # ---- learning and embeddings (Learn and Tokens pages): settings, the last run, how X was made: (kind, seed)
    learn: LearnSettings = declare(LABS, factory=LearnSettings, survives=True)
    learned: Learned | None = declare(LABS, default=None, survives=learned_if_same_tokens)
    embedding: tuple[str, int] = declare(NUMBERS, default=("preset", 0))
    # the Tokens page's source sentence: cross-attention's keys and values (empty: none)
    source: tuple[str, ...] = declare(NUMBERS, default=(), travels=True, rerun=PAGE)
    # the unedited starting point, set with the preset, seed or size (by new_session and the writer); None only for a
    # bare Session built by hand. The page shows whether it is random (not which head of a model: another head of
    # the same model on the same text reruns a step page's body only)
    origin: Origin | None = declare(NUMBERS, default=None, key=identity, rerun=PAGE, shown=randomness)
    # --- the model: the model's head this state was opened from (its origin's kind is then MODEL); its edits of
    # W_q, W_k, W_v flow back ---
    model_head: HeadRef | None = declare(MODEL_PART, default=None, travels=True)
    # --- the model pages' own state (attention.ui.state.inside; None until a model page first opens) ---
    inside: Inside | None = declare(MODEL_PART, default=None, survives=True)
    training: Training | None = declare(BOOKKEEPING, default=None, survives=True)  # "Watch it learn"'s job
    patching: Patching | None = declare(MODEL_PART, default=None, survives=True)  # the Patching page's pair and job
    kvcache: KvCache | None = declare(MODEL_PART, default=None, survives=True)  # the KV cache page's choices and jobs
    # --- the Generate page's state (attention.ui.state.generation; None until that page first opens) ---
    generation: Generation | None = declare(GENERATION_PART, default=None, survives=True)
    # the fingerprints of what the last runs drew (attention.ui.app.frame: drawn_from, body_drawn_from) and whether
    # this run is a whole one: a fragment reruns the whole page when they no longer match; derived, not state (kept
    # across a new preset as the widget state they replace was)
    drawn: tuple | None = declare(BOOKKEEPING, default=None, cache=True, survives=True)
    body_drawn: tuple | None = declare(BOOKKEEPING, default=None, cache=True, survives=True)
    whole_run: bool = declare(BOOKKEEPING, default=False, cache=True, survives=True)
    # values derived from the whole state, each with the state it was derived from (see derived); not state
    memo: dict[str, tuple[tuple, Any]] = declare(BOOKKEEPING, factory=dict, cache=True)

    @property
    def dims(self) -> names.Dims:
        return names.dims_of(self.matrices, self.options.projection, self.options.heads, self.options.kv)

    @property
    def labels(self) -> list[str]:
        """The tokens as unique labels for axes, tables and CSVs."""
        return names.token_labels(self.tokens)

    def shapes(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """Each matrix's name and shape, in the state's order."""
        return tuple((k, v.shape) for k, v in self.matrices.items())

    def axis_labels(self, name: str, shape: tuple[int, ...]) -> tuple[list[str], list[str]]:
        return names.axis_labels(name, shape, self.tokens, self.options.projection, self.source, self.dims.d_v)


def valid_heads(s: Session) -> list[int]:
    """The numbers of heads this state can be split into: the common divisors of d_k and d_v."""
    return heads.divisors(math.gcd(s.dims.d_k, s.dims.d_v))


def get() -> Session:
    return st.session_state[KEY]


@kept(16, ttl=3600)
def preset_and_base(
    preset_id: str, seed: int | None, blank_shape: tuple[int, int, int]
) -> tuple[Preset, dict[str, np.ndarray]]:
    """Load a preset and its X, W_q, W_k, W_v as read-only 2-D arrays (a batch of one is dropped)."""
    if parts.kind_of(preset_id) is parts.BLANK_KIND:
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
    return parts.kind_of(preset_id).label(preset_id, s)


def file_origin(preset: Preset) -> Origin:
    """The origin of a state loaded from a preset file: the file's preset and its matrices, read-only and 2-D."""
    return Origin(preset, _read_only(matrices_2d(preset)), parts.FILE_KIND)


def _read_only(matrices: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    for m in matrices.values():
        m.setflags(write=False)
    return matrices


def new_session(
    preset_id: str = DEFAULT_PRESET, seed: int | None = None, blank_shape: tuple[int, int, int] = DEFAULT_BLANK
) -> Session:
    """A state at a listed preset (or a blank of ``blank_shape``) with ``seed``, unedited; its origin set."""
    preset, base = preset_and_base(preset_id, seed, blank_shape)
    return Session(
        preset_id=preset_id,
        seed=preset.seed,
        blank_shape=blank_shape,
        tokens=preset.tokens,
        matrices={k: np.array(v) for k, v in base.items()},
        options=preset.options,
        origin=Origin(preset, base, parts.kind_of(preset_id)),
    )


def head_session(ref: HeadRef) -> Session:
    """A state at a model's head (:func:`attention.ui.core.models.head_preset`), unedited; raises AttentionError."""
    preset = head_preset(ref)
    base = _read_only(matrices_2d(preset))
    return Session(
        preset_id=MODEL,
        seed=None,
        blank_shape=DEFAULT_BLANK,
        tokens=preset.tokens,
        matrices={k: np.array(v) for k, v in base.items()},
        options=preset.options,
        origin=Origin(preset, base, parts.MODEL_KIND),
        model_head=ref,
    )


def _state_of(s: Session) -> tuple:
    """What a derived value depends on, cheap to compare: ``epoch``, which moves with every change of content (so an
    array freed and another made at its address cannot pass for it), and what the fields' declarations name
    (:func:`attention.ui.core.parts.content`)."""
    return (s.epoch, *parts.content(s))


def derived(s: Session, name: str, make: Callable[[], T]) -> T:
    """``make()``, computed once per state: kept on the session (``memo``) with the state it was derived from, and
    made again only when that state changed. For what several parts of one run need (is it unedited? its address)."""
    now = _state_of(s)
    kept = s.memo.get(name)
    if kept is not None and kept[0] == now:
        return kept[1]
    value = make()
    s.memo[name] = (now, value)
    return value


def identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape and the same numbers, bit for bit in sign: -0.0 (an edit a person can make) is not 0.0."""
    return a.shape == b.shape and np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))


def is_unedited(s: Session) -> bool:
    """True when tokens, matrices and options are exactly the preset's (computed once per state)."""
    return derived(s, "unedited", lambda: _unedited(s))


def _unedited(s: Session) -> bool:
    preset, base = s.origin.preset, s.origin.base
    return (
        (s.tokens, s.source) == (preset.tokens, preset.source_tokens)  # a new source sentence is an edit
        and s.options == preset.options
        and names.inputs_of(s.matrices) == names.inputs_of(base)
        and all(identical(s.matrices[n], base[n]) for n in names.inputs_of(base))
    )


def export_preset(s: Session) -> Preset:
    """What downloads describe: the unedited preset itself, or the current state as fixed matrices (made once per
    state)."""
    if is_unedited(s):
        return s.origin.preset
    return derived(s, "export", lambda: _edited_preset(s))


def _edited_preset(s: Session) -> Preset:
    return presets_mod.from_state(
        s.tokens,
        s.matrices,
        s.options,
        id=f"{s.preset_id}_edited",
        title="Edited " + s.preset_id,
        description="Saved from the dashboard.",
        source_tokens=s.source,
    )
