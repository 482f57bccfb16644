"""The "Inside a model" pages' state: their own keys (``inside.*``), made in :func:`ensure`, changed by callbacks.

The chosen model is held by its id (:mod:`attention.ui.core.models`); the text as that model's token ids; ablations
as (layer, head, "zero" or "mean"), 0-based as the engine counts."""

from __future__ import annotations

import streamlit as st

from ...errors import AttentionError
from ..core import models
from ..core.models import HeadRef
from ..core.text import esc
from .presets import open_head

PREFIX = "inside."
MODEL = PREFIX + "model"
SEQUENCE, IDS, POSITION, ABLATIONS, HOW = (PREFIX + k for k in ("sequence", "ids", "position", "ablations", "how"))
BEFORE, CHANGE, WHERE, MESSAGE = (PREFIX + k for k in ("before", "change", "where", "message"))
OPENED = PREFIX + "opened"  # the (layer, head) last opened on the step pages from these pages, for its link
W_SEQUENCE, W_TYPED, W_POSITION, W_HOW = (PREFIX + "w." + k for k in ("sequence", "typed", "position", "how"))
MAX_CHARS = 400  # longer typed text is refused before it is split (24 words of the vocabulary are at most 72)
HOWS = ("zero", "mean")
Ablation = tuple[int, int, str]  # (layer, head, "zero" or "mean"), 0-based as the engine counts
TYPED_LABEL = "Your own words (typed below)"


def ensure() -> None:
    """Create the page's state once per session: the first ready-made sequence, nothing ablated."""
    if IDS in st.session_state:
        return
    label, ids = next(iter(models.ready_made(models.BUILTIN).items()))
    st.session_state.update(
        {
            MODEL: models.BUILTIN,
            SEQUENCE: label,
            IDS: ids,
            POSITION: default_position(ids),
            ABLATIONS: (),
            HOW: "zero",
            BEFORE: None,
            CHANGE: "",
            WHERE: None,
            MESSAGE: "",
        }
    )


def started() -> bool:
    """Whether the model pages' state exists in this session (made by :func:`ensure` or :func:`restore`)."""
    return IDS in st.session_state


def start() -> tuple[str, tuple[int, ...]]:
    """Where the model pages start: the shipped model and its first ready-made text."""
    return models.BUILTIN, next(iter(models.ready_made(models.BUILTIN).values()))


def restore(model_id: str, ids: tuple[int, ...] | None, ablations: tuple[Ablation, ...]) -> str:
    """The model, text (None: the model's first ready-made one) and ablations an address names, when the model opens
    and they fit it; else what is wrong (Markdown, escaped) and nothing changes."""
    try:
        m = models.get(model_id)
        if ids is None:
            ids = next(iter(models.ready_made(model_id).values()), None)
        if ids is None:
            return "the link names no text for that model"
        ids = tuple(m.check_ids(list(ids)))
    except AttentionError as exc:
        return esc(exc.message, 300)
    c = m.config
    if not 2 <= len(ids) <= c.n_ctx:
        return f"the text has {len(ids)} tokens; the model reads 2 to {c.n_ctx}"
    bad = [a for a in ablations if not (a[0] < c.n_layers and a[1] < c.n_heads)]
    if bad:
        return f"the model has {c.n_layers} layers of {c.n_heads} heads; there is no {name(*bad[0][:2])}"
    ensure()
    label = next((k for k, v in models.ready_made(model_id).items() if v == ids), "")
    st.session_state.update({MODEL: model_id, ABLATIONS: ablations})
    _new_text(ids, label)
    return ""


def default_position(ids: tuple[int, ...]) -> int:
    """The first position of the second half: its next token is the first one an induction head can copy."""
    return min(len(ids) // 2, len(ids) - 1)


def model_id() -> str:
    """The chosen model's id."""
    return st.session_state[MODEL]


def model() -> models.Model:
    """The chosen model."""
    return models.get(st.session_state[MODEL])


def current() -> tuple[tuple[int, ...], int, tuple[Ablation, ...]]:
    """(token ids, chosen position, ablations) now."""
    return st.session_state[IDS], st.session_state[POSITION], st.session_state[ABLATIONS]


def _new_text(ids: tuple[int, ...], label: str) -> None:
    st.session_state.update({IDS: ids, SEQUENCE: label, POSITION: default_position(ids), MESSAGE: ""})
    st.session_state.update({BEFORE: None, CHANGE: "", WHERE: None})
    st.session_state.pop(W_POSITION, None)  # the position box starts again from the new text's default


def on_sequence() -> None:
    """A ready-made sequence was chosen: it becomes the text, and the text box shows its words."""
    label = st.session_state.get(W_SEQUENCE)
    ids = models.ready_made(model_id()).get(label)
    if ids is None:  # the typed text's entry, or a value no client should send
        return
    _new_text(ids, label)
    st.session_state[W_TYPED] = model().decode(ids)


def on_typed() -> None:
    """Words were typed: each must be in the model's vocabulary, 2 to n_ctx of them; else a message naming the word,
    and nothing else changes."""
    text = st.session_state.get(W_TYPED)
    m = model()
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        size = len(text) if isinstance(text, str) else 0
        st.session_state[MESSAGE] = f"The text has {size:,} characters; at most {MAX_CHARS} are read. Nothing changed."
        return
    try:
        ids = tuple(m.encode(text))
    except AttentionError as e:
        st.session_state[MESSAGE] = f"{e}. Nothing changed."
        return
    if not 2 <= len(ids) <= m.config.n_ctx:
        st.session_state[MESSAGE] = (
            f"The text has {len(ids)} words; the model reads 2 to {m.config.n_ctx}. Nothing changed."
        )
        return
    _new_text(ids, "")
    st.session_state[W_SEQUENCE] = TYPED_LABEL


def on_position() -> None:
    """A position was chosen for the predictions."""
    value = st.session_state.get(W_POSITION)
    if isinstance(value, int) and 0 <= value < len(st.session_state[IDS]):
        st.session_state[POSITION] = value


def on_how() -> None:
    """Zero or mean ablation for the next head ablated."""
    if st.session_state.get(W_HOW) in HOWS:
        st.session_state[HOW] = st.session_state[W_HOW]


def toggle(layer: int, head: int) -> None:
    """Ablate a head (as chosen: zero or mean), or restore it if it is ablated; remember the ablations before."""
    now = st.session_state[ABLATIONS]
    was = [a for a in now if a[:2] == (layer, head)]
    if was:
        after = tuple(a for a in now if a[:2] != (layer, head))
        change = f"Restoring {name(layer, head)}"
    else:
        how = st.session_state[HOW]
        after = tuple(sorted((*now, (layer, head, how))))
        change = f"Ablating {name(layer, head)} ({how})"
    st.session_state.update({BEFORE: now, ABLATIONS: after, CHANGE: change, WHERE: (layer, head)})


def restore_all() -> None:
    """Restore every head."""
    now = st.session_state[ABLATIONS]
    if now:
        st.session_state.update({BEFORE: now, ABLATIONS: (), CHANGE: "Restoring every head", WHERE: "all"})


def name(layer: int, head: int) -> str:
    """A head as a person counts: "layer 1 · head 2" (the engine counts from 0)."""
    return f"layer {layer + 1} · head {head + 1}"


def open_on_steps(layer: int, head: int) -> None:
    """Open a head of the chosen model, on the current text and with the current ablations, on the step pages."""
    ids, _, ablations = current()
    if open_head(HeadRef(model_id(), ids, layer, head, ablations)):
        st.session_state[OPENED] = (layer, head)


# ------------------------------------------------------------------ the Generate page (issue 23 §5)

GEN_KEEP, GEN_STEPS, GEN_FOR, GEN_MESSAGE, GEN_LAYER, GEN_MANY = (
    PREFIX + "gen." + k for k in ("keep", "steps", "for", "message", "layer", "many")
)
W_GEN_KEEP, W_GEN_LAYER, W_GEN_MANY = (PREFIX + "w.gen." + k for k in ("keep", "layer", "many"))
GEN_PRESS_MAX = 256  # new tokens one press makes at most (a GPT-2's context of 1,024 takes a few presses)
EVERY_LAYER = -1  # the layer choice that shows every layer's heads


def gen_default_keep(ids: tuple[int, ...], n_ctx: int) -> int:
    """How many of the text's tokens the prompt keeps at first: a repeated text's first half and 3 of its repeat
    (so the model can complete it), else the whole text when the context has room after it, else its first half."""
    n, half = len(ids), len(ids) // 2
    if n >= 8 and ids[:half] == ids[half : 2 * half]:
        return min(half + 3, n - 1)
    return n if n < n_ctx else max(1, half)


def gen_keep_most(ids: tuple[int, ...], n_ctx: int) -> int:
    """The longest prompt: the whole text, leaving at least one position of the context to generate into."""
    return max(1, min(len(ids), n_ctx - 1))


def _gen_start(ids: tuple[int, ...], message: str) -> None:
    keep = gen_default_keep(ids, model().config.n_ctx)
    st.session_state.update(
        {GEN_KEEP: keep, GEN_STEPS: 0, GEN_FOR: (model_id(), ids), GEN_MESSAGE: ("info", message) if message else None}
    )
    st.session_state.pop(W_GEN_KEEP, None)  # the box starts again from the new prompt's length


def gen_follow() -> None:
    """Make the Generate page's state once, and start the generation again (saying why) when the model or the text
    changed since it began: its tokens were the old text's continuation."""
    ensure()
    ids = st.session_state[IDS]
    if GEN_FOR not in st.session_state:
        st.session_state.update({GEN_LAYER: EVERY_LAYER if _every_layer_fits() else 0, GEN_MANY: 5})
        _gen_start(ids, "")
        return
    was_model, was_ids = st.session_state[GEN_FOR]
    if (was_model, was_ids) == (model_id(), ids):
        return
    what = "model" if was_model != model_id() else "text"
    _gen_start(ids, f"The {what} changed, so the generation started again from the new {what}'s prompt.")
    if not _layer_exists(st.session_state[GEN_LAYER]):
        st.session_state[GEN_LAYER] = EVERY_LAYER if _every_layer_fits() else 0
        st.session_state.pop(W_GEN_LAYER, None)


def _every_layer_fits() -> bool:
    c = model().config
    return c.n_layers * c.n_heads <= 48


def _layer_exists(layer: object) -> bool:
    fits = layer == EVERY_LAYER and _every_layer_fits()
    return fits or (isinstance(layer, int) and 0 <= layer < model().config.n_layers)


def gen_left() -> int:
    """How many more tokens fit in the context after the prompt and the tokens made so far."""
    return model().config.n_ctx - st.session_state[GEN_KEEP] - st.session_state[GEN_STEPS]


def on_gen_keep() -> None:
    """The prompt's length was typed: a whole number from 1 to the longest prompt; else a message, nothing changes
    (the box shows the length in force). A new prompt starts the generation again."""
    value, ids = st.session_state.get(W_GEN_KEEP), st.session_state[IDS]
    most = gen_keep_most(ids, model().config.n_ctx)
    if not (isinstance(value, int) and 1 <= value <= most):
        st.session_state[GEN_MESSAGE] = (
            "error",
            f"The prompt keeps 1 to {most} tokens of the text; {value!r} is not one of them. Nothing changed.",
        )
        st.session_state[W_GEN_KEEP] = st.session_state[GEN_KEEP]
        return
    if value != st.session_state[GEN_KEEP]:
        st.session_state.update({GEN_KEEP: value, GEN_STEPS: 0, GEN_MESSAGE: None})


def on_gen_many() -> None:
    """How many tokens "Generate" makes: 1 to GEN_PRESS_MAX; else a message, nothing changes."""
    value = st.session_state.get(W_GEN_MANY)
    if not (isinstance(value, int) and 1 <= value <= GEN_PRESS_MAX):
        st.session_state[GEN_MESSAGE] = (
            "error",
            f"Generate makes 1 to {GEN_PRESS_MAX} tokens a press; {value!r} is not one of them. Nothing changed.",
        )
        st.session_state[W_GEN_MANY] = st.session_state[GEN_MANY]
        return
    st.session_state.update({GEN_MANY: value, GEN_MESSAGE: None})


def on_gen_layer() -> None:
    """A layer (or every layer) was chosen for the query and attention rows."""
    value = st.session_state.get(W_GEN_LAYER)
    if _layer_exists(value):
        st.session_state[GEN_LAYER] = value
    else:
        st.session_state[GEN_MESSAGE] = ("error", f"There is no layer {value!r} to show. Nothing changed.")
        st.session_state[W_GEN_LAYER] = st.session_state[GEN_LAYER]


def gen_more(count: int | None) -> None:
    """Generate ``count`` more tokens (None: as many as the box says), at most to the end of the context and at most
    GEN_PRESS_MAX a press; the message says when fewer were made than asked."""
    want = st.session_state[GEN_MANY] if count is None else count
    left = gen_left()
    made = min(want, left, GEN_PRESS_MAX)
    st.session_state[GEN_STEPS] += made
    if made < want and made == left:
        st.session_state[GEN_MESSAGE] = (
            "info",
            (
                f"Made {made} of the {want} tokens asked: the context of {model().config.n_ctx} is full."
                if made
                else f"The context of {model().config.n_ctx} tokens is full: nothing more can be generated. Press "
                "Start again, or keep fewer tokens of the text in the prompt."
            ),
        )
    elif made < want:
        st.session_state[GEN_MESSAGE] = (
            "info",
            f"Made {made} tokens (at most {GEN_PRESS_MAX} a press); press again for more.",
        )
    else:
        st.session_state[GEN_MESSAGE] = None


def gen_to_end() -> None:
    """Generate until the context is full (at most GEN_PRESS_MAX tokens a press)."""
    gen_more(max(gen_left(), 1))


def gen_again() -> None:
    """Start the generation again from the prompt (the cache holds only the prompt)."""
    st.session_state.update({GEN_STEPS: 0, GEN_MESSAGE: None})
