"""How each field of the session is declared: its part, and whether it survives, travels and reruns a page.

Per field: whether it survives a preset change, whether it travels in a link, and which rerun depends on it.
Everything that needs such a list derives it from these declarations.

A field is declared with :func:`declare` (a ``dataclasses.field`` carrying a :class:`Decl`), in
:class:`attention.ui.core.session.Session`. From the declarations:

- :func:`survivors`: the fields a new preset keeps (``state.core.replace_session``);
- :func:`fingerprint`: what the page outside a step page's body (``PAGE``), or the body beside its results
  (``BODY``), was drawn from (``app.frame.drawn_from`` / ``body_drawn_from``): a change of it reruns that part;
- :func:`content`: what values derived from the whole state depend on (``session.derived``: the link, "unedited");
- ``travels``: the fields a link carries; each has its records in :mod:`attention.ui.address.params`, the one table
  of the address's parameters.

The state as a whole has a kind too, its origin's (``session.Origin.kind``): a listed preset, a blank, a preset file
or a model's head. Each :class:`Kind` answers whether such a state travels in a link, its label, and whether the seed
applies; the code asks the kind, never the preset id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from ...io import presets as presets_mod
from . import models
from .cache import kept

# the parts of the state
NUMBERS = "numbers"  # the preset, its tokens and matrices: what the engine computes from, with the options
OPTIONS = "options"
VIEW = "view"  # how the state is shown: digits, the explained cell and head, open tabs, the pin
LABS = "labs"  # the running challenge, the tour, the Learn page
MODEL = "model"  # a model's head opened on the step pages, and the model pages' own state
GENERATION = "generation"  # the Generate page's state
BOOKKEEPING = "bookkeeping"  # counters, messages and caches: what the writer keeps about changes, not content
PARTS = (NUMBERS, OPTIONS, VIEW, LABS, MODEL, GENERATION, BOOKKEEPING)

PAGE, BODY = "page", "body"  # a change reruns the whole page / a step page's body (the body follows the page too)


def same(value: Any) -> Hashable:
    """A field compared by its value (it is immutable and cheap to compare)."""
    return value


def identity(value: Any) -> Hashable:
    """A field compared by identity: it holds arrays, and every change puts a new object in."""
    return id(value)


# how the session's fields enter the fingerprints, and what of them survives
def arrays(matrices: dict[str, Any]) -> tuple:
    """Each matrix by identity (a change of numbers always puts a new array in: the writer never writes into one)."""
    return tuple((k, id(v), v.shape) for k, v in matrices.items())


def shapes(matrices: dict[str, Any]) -> tuple:
    return tuple((k, v.shape) for k, v in matrices.items())


def said(messages: dict[str, tuple[int, str, str, str]]) -> tuple:
    return tuple(sorted((p, m[0]) for p, m in messages.items()))


# the places messages are left at (attention.ui.state.core.say), by their first word (or whole, where a place differs
# from its first word's): which rerun of a step page draws them again. The body's: its editors, import boxes,
# controls and the sidebar's share tools; the rest (the sidebar's controls, the page's notices) are outside it
PLACES = {
    "edit": BODY,
    "import": BODY,
    "control": BODY,
    "cross": BODY,
    "kv": BODY,
    "sidebar.preset_file": BODY,
    "sidebar": PAGE,
    "page": PAGE,
    "challenge": PAGE,
    "board": PAGE,
    "learn": PAGE,
    "flash": PAGE,
}


def rerun_of(place: str) -> str:
    """Which rerun draws the messages at ``place`` again (a place not declared: the whole page's)."""
    return PLACES.get(place, PLACES.get(place.split(".")[0], PAGE))


def said_outside(messages: dict[str, tuple[int, str, str, str]]) -> tuple:
    """The messages the page shows outside a step page's body (their places declared PAGE), as :func:`said`."""
    return said({p: m for p, m in messages.items() if rerun_of(p) == PAGE})


# the lazy views, tables and tab sets a step page draws in its results column (widgets.open_expander's places, by
# their start): opening one reruns that column alone, which draws it; the body beside it does not depend on them
IN_RESULTS = ("view.", "table.", "softmax_steps")


def items(tabs: dict[str, str]) -> tuple:
    """The open tabs and expanders the body of a step page draws outside its results column."""
    return tuple((place, label) for place, label in tabs.items() if not place.startswith(IN_RESULTS))


def randomness(origin: Any) -> tuple:
    if origin is None:
        return ()
    preset = origin.preset
    return (preset.is_random, tuple(preset.random.names) if preset.is_random else ())


def cell_if_it_fits(old: Any, new: Any) -> tuple[int, int]:
    return old.cell if max(old.cell) < len(new.tokens) else (0, 0)


def learned_if_same_tokens(old: Any, new: Any) -> Any:
    """The last run of the Learn page, while the tokens are the same (so after "Reset to preset" it can be used)."""
    return old.learned if old.learned and old.learned.tokens == new.tokens else None


@dataclass(frozen=True)
class Decl:
    """One field's declaration.

    ``survives``: True, the old value is kept when a new preset replaces the state; or a function (old state, new
    state) giving the value kept. ``rerun``: PAGE, BODY or None, which part of a step page must be drawn again when
    it changes. ``key``: how it enters :func:`content` (by value, or by identity for what holds arrays); ``shown``:
    how it enters :func:`fingerprint`, when the page shows less of it than its content (a matrix's shape only).
    """

    part: str
    survives: bool | Callable[[Any, Any], Any] = False
    travels: bool = False
    rerun: str | None = None
    key: Callable[[Any], Hashable] = same
    shown: Callable[[Any], Hashable] | None = None


def declare(
    part: str,
    *,
    default: Any = dataclasses.MISSING,
    factory: Any = dataclasses.MISSING,
    cache: bool = False,
    **how: Any,
) -> Any:
    """A dataclass field of ``part``, declared as :class:`Decl` says (``survives``, ``travels``, ``rerun``...);
    ``cache``: not state at all (left out of the dataclass's repr and equality)."""
    if part not in PARTS:
        raise ValueError(f"no part {part!r}; the parts are {', '.join(PARTS)}")
    meta = {"decl": Decl(part, **how)}
    return dataclasses.field(default=default, default_factory=factory, metadata=meta, repr=not cache, compare=not cache)


def declared(state: Any) -> tuple[tuple[str, Decl], ...]:
    """Each declared field of ``state``'s class, in order, with its declaration."""
    return _declared(type(state))


@kept(64)  # one entry per state class
def _declared(cls: type) -> tuple[tuple[str, Decl], ...]:
    return tuple((f.name, f.metadata["decl"]) for f in dataclasses.fields(cls) if "decl" in f.metadata)


def survivors(state: Any) -> tuple[tuple[str, Decl], ...]:
    """The fields a new preset keeps from the state it replaces."""
    return tuple((name, d) for name, d in declared(state) if d.survives)


def carry(old: Any, new: Any) -> None:
    """Keep in ``new`` what its declarations say survives from ``old``."""
    for name, d in survivors(old):
        setattr(new, name, d.survives(old, new) if callable(d.survives) else getattr(old, name))


def fingerprint(state: Any, rerun: str) -> tuple:
    """What a ``rerun`` (PAGE or BODY) part of a step page depends on: each field declared for it (a body also
    depends on everything the page depends on), as it is shown."""
    wanted = (PAGE,) if rerun == PAGE else (PAGE, BODY)
    return tuple((name, (d.shown or d.key)(getattr(state, name))) for name, d in declared(state) if d.rerun in wanted)


def content(state: Any) -> tuple:
    """What a value derived from the whole state depends on, cheap to compare: every field that travels, that the
    whole page shows, or that holds the numbers, each by its ``key``."""
    return tuple(
        (name, d.key(getattr(state, name)))
        for name, d in declared(state)
        if d.travels or d.rerun == PAGE or d.part == NUMBERS
    )


# --- the kinds of a state's origin ---
@dataclass(frozen=True)
class Kind:
    """One kind of starting point of a state (see the module's docstring).

    ``id``: the preset id it is written as (None: a listed preset's own id).

    ``seeded``: whether the seed applies (a file or a model keeps its own numbers; ``keeps`` says so). ``offered``:
    always among the sidebar's presets (a file or a model's head is listed only while in force). ``without_preset``:
    what a link carries when the preset cannot travel: "edits" (against the default preset) or "nothing".
    """

    id: str | None
    seeded: bool = True
    offered: bool = True
    keeps: str = ""
    without_preset: str = "edits"
    documented: bool = True  # its numbers can be the ones a tutorial prints
    drawn: bool = False  # every number is drawn from the seed
    _travels: Callable[[Any], bool] = lambda s: True
    _label: Callable[[str, Any], str] = lambda preset_id, s: presets_mod.preset_label(preset_id)

    def travels(self, s: Any) -> bool:
        """Whether a link can name this state's starting point (``s``: the Session)."""
        return self._travels(s)

    def label(self, preset_id: str, s: Any = None) -> str:
        """The preset's name in lists (``s``: the Session, for a file's title or a model's name; None: generic)."""
        return self._label(preset_id, s)


def _file_label(preset_id: str, s: Any) -> str:
    return f"From a file: {s.loaded.title}" if s is not None and s.loaded is not None else "From a file"


def _model_label(preset_id: str, s: Any) -> str:
    """The model, not the head: another head is chosen on the page (the sidebar stays)."""
    if s is None or s.origin is None or s.model_head is None:
        return "A model's head"
    return f"Inside a model: {s.origin.preset.title.removesuffix(': ' + s.model_head.name)}"


LISTED = Kind(None)
BLANK_KIND = Kind("blank", drawn=True, _label=lambda preset_id, s: "Blank n × d (random)")
FILE_KIND = Kind(
    "file",
    seeded=False,
    offered=False,
    keeps="a state loaded from a file keeps the file's numbers",
    documented=False,
    _travels=lambda s: False,
    _label=_file_label,
)
MODEL_KIND = Kind(
    "model",
    seeded=False,
    offered=False,
    keeps="a model's head keeps the model's numbers",
    without_preset="nothing",
    _travels=lambda s: models.travels(s.model_head.model_id),
    _label=_model_label,
)
KINDS = (LISTED, BLANK_KIND, FILE_KIND, MODEL_KIND)
_BY_ID = {k.id: k for k in KINDS if k.id is not None}


def kind_of(preset_id: str) -> Kind:
    """The kind a preset id names (any id not special is a listed preset)."""
    return _BY_ID.get(preset_id, LISTED)
