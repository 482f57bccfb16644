"""The "Inside a model" pages' state: their own keys (``inside.*``), made in :func:`ensure`, changed by callbacks.

The chosen model is held by its id (:mod:`attention.ui.core.models`); the text as that model's token ids; ablations
as (layer, head, "zero" or "mean"), 0-based as the engine counts."""

from __future__ import annotations

import streamlit as st

from ...errors import AttentionError
from ...model import upload
from ...model.vocab import WordVocab
from ..core import keys, models, training
from ..core.models import HeadRef
from ..core.text import esc
from .presets import open_head

PREFIX = "inside."
MODEL = PREFIX + "model"
SEQUENCE, IDS, POSITION, ABLATIONS, HOW = (PREFIX + k for k in ("sequence", "ids", "position", "ablations", "how"))
BEFORE, CHANGE, WHERE, MESSAGE = (PREFIX + k for k in ("before", "change", "where", "message"))
OPENED = PREFIX + "opened"  # the (layer, head) last opened on the step pages from these pages, for its link
MAX_CHARS = 400  # longer typed text is refused before it is split (24 words of the vocabulary are at most 72)
HOWS = ("zero", "mean")
Ablation = tuple[int, int, str]  # (layer, head, "zero" or "mean"), 0-based as the engine counts
TYPED_LABEL = "Your own words (typed below)"
HELD, MODEL_MESSAGE, LAYER_SHOWN, UPLOADS = (PREFIX + k for k in ("held", "model_message", "layer_shown", "uploads"))
# "Watch it learn": the snapshot shown (1-based, as the slider counts), a live training job's id, their messages
SNAPSHOT, JOB = PREFIX + "snapshot", PREFIX + "job"
LEARN_MESSAGE, TRAIN_MESSAGE = PREFIX + "learn_message", PREFIX + "train_message"


def ensure() -> None:
    """Create the page's state once per session: the first ready-made sequence, nothing ablated."""
    for key, value in ((HELD, ()), (MODEL_MESSAGE, ""), (LAYER_SHOWN, 0), (UPLOADS, 0)):
        st.session_state.setdefault(key, value)
    if IDS in st.session_state:
        return
    label, ids = next(iter(models.ready_made(models.BUILTIN).items()))
    st.session_state.update({MODEL: models.BUILTIN, SEQUENCE: label, IDS: ids, POSITION: default_position(ids)})
    st.session_state.update({ABLATIONS: (), HOW: "zero", BEFORE: None, CHANGE: "", WHERE: None, MESSAGE: ""})


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
    if not 2 <= len(ids) <= models.longest(m):
        return f"the text has {len(ids)} tokens; the model reads 2 to {models.longest(m)} here"
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
    st.session_state[keys.INSIDE_POSITION] = default_position(
        ids
    )  # set, not dropped: a browser would send its old value back


def on_sequence() -> None:
    """A ready-made sequence was chosen: it becomes the text, and the text box shows its words."""
    label = st.session_state.get(keys.INSIDE_SEQUENCE)
    ids = models.ready_made(model_id()).get(label)
    if ids is None:  # the typed text's entry, or a value no client should send
        return
    _new_text(ids, label)
    st.session_state[keys.INSIDE_TYPED] = model().decode(ids)


def on_typed() -> None:
    """Words were typed: each must be in the model's vocabulary, 2 to n_ctx of them; else a message naming the word,
    and nothing else changes."""
    text = st.session_state.get(keys.INSIDE_TYPED)
    m = model()
    words = "words" if isinstance(m.vocab, WordVocab) else "tokens"
    most = models.longest(m)
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        size = len(text) if isinstance(text, str) else 0
        st.session_state[MESSAGE] = f"The text has {size:,} characters; at most {MAX_CHARS} are read. Nothing changed."
        return
    try:
        ids = tuple(m.encode(text))
    except AttentionError as e:
        st.session_state[MESSAGE] = f"{e}. Nothing changed."
        return
    if not 2 <= len(ids) <= most:
        cap = (
            f" here (it reads up to {m.config.n_ctx}; longer texts make the charts slow)"
            if most < m.config.n_ctx
            else ""
        )
        st.session_state[MESSAGE] = (
            f"The text has {len(ids)} {words}; the model reads 2 to {most}{cap}. Nothing changed."
        )
        return
    _new_text(ids, "")
    st.session_state[keys.INSIDE_SEQUENCE] = TYPED_LABEL


def on_position() -> None:
    """A position was chosen for the predictions."""
    value = st.session_state.get(keys.INSIDE_POSITION)
    if isinstance(value, int) and 0 <= value < len(st.session_state[IDS]):
        st.session_state[POSITION] = value


def on_how() -> None:
    """Zero or mean ablation for the next head ablated."""
    if st.session_state.get(keys.INSIDE_HOW) in HOWS:
        st.session_state[HOW] = st.session_state[keys.INSIDE_HOW]


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


def choose_model(model_id: str, named: str = "") -> bool:
    """Open a model on its first text, nothing ablated (else a message, nothing changed); a learner's stays listed."""
    ensure()
    try:
        m = models.get(model_id)
        text_label, ids = models.first_text(model_id)
    except AttentionError as e:
        st.session_state[MODEL_MESSAGE] = f"That model could not be opened: {e}. Nothing changed."
        return False
    if not models.travels(model_id):
        c, held = m.config, dict(st.session_state[HELD])
        kind = f"Uploaded {named}".strip() if model_id.startswith(models.UPLOAD) else "Trained here"
        held.setdefault(model_id, f"{kind} ({c.n_layers} layers × {c.n_heads} heads, {model_id[-6:]})")
        st.session_state[HELD] = tuple(held.items())
    st.session_state.update(
        {MODEL: model_id, MODEL_MESSAGE: "", LAYER_SHOWN: 0, ABLATIONS: (), keys.INSIDE_LAYER_SHOWN: 0}
    )
    _new_text(ids, text_label)  # the widgets are set, not dropped: a browser would send their old values back
    st.session_state.update(
        {keys.INSIDE_MODEL: model_id, keys.INSIDE_TYPED: m.decode(ids), keys.INSIDE_SEQUENCE: text_label or TYPED_LABEL}
    )
    return True


def on_model() -> None:
    """A model was chosen in the chooser; if it fails to open, the chooser goes back to the model in use."""
    chosen = st.session_state.get(keys.INSIDE_MODEL)
    if isinstance(chosen, str) and chosen != st.session_state[MODEL] and not choose_model(chosen):
        st.session_state[keys.INSIDE_MODEL] = st.session_state[MODEL]


def on_upload(key: str) -> None:
    """Files or a .zip sent (uploader ``key``): opened by the engine, held, chosen; else a message, nothing changed."""
    sent = st.session_state.get(key) or []
    st.session_state[UPLOADS] += 1  # a new uploader key: the files sent do not linger
    try:
        m = upload.open_files({str(f.name): f.getvalue() for f in sent}) if sent else None
    except AttentionError as e:
        st.session_state[MODEL_MESSAGE] = f"The upload was not opened: {e}. Nothing changed."
        return
    if m is not None:
        choose_model(models.hold(m, "upload"), " ".join(str(sent[0].name).split())[:40] if len(sent) == 1 else "files")


def on_layer_shown() -> None:
    """The layer whose heads are drawn large (a model with many heads shows one layer at a time)."""
    value = st.session_state.get(keys.INSIDE_LAYER_SHOWN)
    if isinstance(value, int) and 0 <= value < model().config.n_layers:
        st.session_state[LAYER_SHOWN] = value


def recover() -> None:
    """When the chosen model can no longer be opened (let go, or its folder gone), open the shipped one and say so."""
    try:
        models.get(st.session_state[MODEL])
    except AttentionError as e:
        if choose_model(models.BUILTIN):
            st.session_state[MODEL_MESSAGE] = f"{e}. The shipped model is open instead."


def on_repeat() -> None:
    """Repeat the text's tokens exactly, so its second half copies the first (what an induction head can use)."""
    ids, m = st.session_state[IDS], model()
    if 2 * len(ids) > (most := models.longest(m)):
        st.session_state[MESSAGE] = f"Repeated: {2 * len(ids)} tokens; at most {most} are read. Nothing changed."
        return
    _new_text(ids + ids, "")
    st.session_state.update({keys.INSIDE_TYPED: m.decode(ids + ids), keys.INSIDE_SEQUENCE: TYPED_LABEL})


def open_on_steps(layer: int, head: int) -> None:
    """Open a head of the chosen model, on the current text and with the current ablations, on the step pages."""
    ids, _, ablations = current()
    if open_head(HeadRef(model_id(), ids, layer, head, ablations)):
        st.session_state[OPENED] = (layer, head)


def ensure_learn() -> None:
    """Create the "Watch it learn" keys once per session: the first snapshot, no training job."""
    if SNAPSHOT not in st.session_state:
        st.session_state.update({SNAPSHOT: 1, JOB: None, LEARN_MESSAGE: "", TRAIN_MESSAGE: ""})


def on_snapshot(count: int) -> None:
    """A snapshot was chosen on the slider (1 to ``count``); any other value is refused with a message and nothing
    changes."""
    value = st.session_state.get(keys.WATCH_SNAPSHOT)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= count:
        st.session_state.update({SNAPSHOT: value, LEARN_MESSAGE: ""})
    else:
        st.session_state[LEARN_MESSAGE] = (
            f"The snapshot {str(value)[:20]!r} is not one of 1 to {count}; still showing snapshot "
            f"{st.session_state[SNAPSHOT]}. Nothing changed."
        )


def start_training(steps: int, hold: int) -> None:
    """Train a model from scratch, live (this session's earlier run, if still running, is cancelled first)."""
    training.cancel(st.session_state.get(JOB))
    try:
        job = training.start(steps, hold)
    except AttentionError as e:
        st.session_state[TRAIN_MESSAGE] = f"{e}. Nothing started."
        return
    st.session_state.update({JOB: job.id, TRAIN_MESSAGE: ""})


def cancel_training() -> None:
    """Stop this session's live training at its next step."""
    training.cancel(st.session_state.get(JOB))


def open_model(new_id: str) -> bool:
    """Open a model trained here on "Every head", as the chooser does; False, with a message, if it cannot be."""
    opened = choose_model(new_id)
    st.session_state[TRAIN_MESSAGE] = "" if opened else st.session_state[MODEL_MESSAGE]
    return opened
