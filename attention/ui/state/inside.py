"""The "Inside a model" pages' state: their own keys (``inside.*``), made in :func:`ensure`, changed by callbacks.

The chosen model is held by its id (:mod:`attention.ui.core.models`); the text as that model's token ids; ablations
as (layer, head, "zero" or "mean"), 0-based as the engine counts."""

from __future__ import annotations

import streamlit as st

from ...errors import AttentionError
from ...model import upload
from ...model.vocab import WordVocab
from ..core import models

PREFIX = "inside."
MODEL = PREFIX + "model"
SEQUENCE, IDS, POSITION, ABLATIONS, HOW = (PREFIX + k for k in ("sequence", "ids", "position", "ablations", "how"))
BEFORE, CHANGE, WHERE, MESSAGE = (PREFIX + k for k in ("before", "change", "where", "message"))
W_SEQUENCE, W_TYPED, W_POSITION, W_HOW = (PREFIX + "w." + k for k in ("sequence", "typed", "position", "how"))
MAX_CHARS = 400  # longer typed text is refused before it is split (24 words of the vocabulary are at most 72)
HOWS = ("zero", "mean")
Ablation = tuple[int, int, str]  # (layer, head, "zero" or "mean"), 0-based as the engine counts
TYPED_LABEL = "Your own words (typed below)"
HELD, MODEL_MESSAGE, LAYER_SHOWN, UPLOADS = (PREFIX + k for k in ("held", "model_message", "layer_shown", "uploads"))
W_MODEL, W_LAYER_SHOWN = PREFIX + "w.model", PREFIX + "w.layer_shown"
MAX_TOKENS = 64  # a tokenizer's text is cut off here for page speed (every head's heatmap is n × n)
DEFAULT_TEXT = "The cat sat on the mat."  # a model without ready-made texts starts on this, its tokens repeated


def ensure() -> None:
    """Create the page's state once per session: the first ready-made sequence, nothing ablated."""
    for key, value in ((HELD, ()), (MODEL_MESSAGE, ""), (LAYER_SHOWN, 0), (UPLOADS, 0)):
        st.session_state.setdefault(key, value)
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
    st.session_state[W_POSITION] = default_position(ids)  # set, not dropped: a browser would send its old value back


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
    words = "words" if isinstance(m.vocab, WordVocab) else "tokens"
    most = longest(m)
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
        cap = "" if most == m.config.n_ctx else f" on this page (the model reads up to {m.config.n_ctx}; longer texts"
        cap += " make every head's chart slow)" if cap else ""
        st.session_state[MESSAGE] = (
            f"The text has {len(ids)} {words}; the model reads 2 to {most}{cap}. Nothing changed."
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


# ------------------------------------------------------------ the model chooser and a tokenizer's text


def longest(m: models.Model) -> int:
    """The most tokens a page reads for this model: its context for a word list, else at most MAX_TOKENS."""
    return m.config.n_ctx if isinstance(m.vocab, WordVocab) else min(m.config.n_ctx, MAX_TOKENS)


def first_text(model_id: str, m: models.Model) -> tuple[str, tuple[int, ...]]:
    """(label, token ids) a model starts on: its first ready-made text, else DEFAULT_TEXT's tokens twice ("" label)."""
    made = models.ready_made(model_id)
    if made:
        return next(iter(made.items()))
    most = longest(m)
    if most < 2:
        raise AttentionError(f"the model reads at most {most} token; these pages need 2", field="n_positions")
    if isinstance(m.vocab, WordVocab):  # another word list: its first words, repeated
        ids = tuple(range(min(len(m.vocab), most // 2, 12)))
    else:
        ids = tuple(m.encode(DEFAULT_TEXT))[: most // 2]
    return "", (ids + ids if ids else (0, 0))


def choose_model(model_id: str, label: str | None = None) -> bool:
    """Open a model (an id of :mod:`attention.ui.core.models`) and start it on its first text, nothing ablated; a
    model that fails to open changes nothing and leaves a message naming what is wrong. A learner's model (uploaded
    or trained) is listed in the chooser for the rest of the session, as ``label``. Whether it opened."""
    ensure()
    try:
        m = models.get(model_id)
        text_label, ids = first_text(model_id, m)
    except AttentionError as e:
        st.session_state[MODEL_MESSAGE] = f"That model could not be opened: {e}. Nothing changed."
        return False
    if not models.travels(model_id):
        c = m.config
        kind = "Uploaded" if model_id.startswith(models.UPLOAD) else "Trained here"
        label = label or dict(st.session_state[HELD]).get(model_id)
        label = label or f"{kind} ({c.n_layers} layers × {c.n_heads} heads, {model_id[-6:]})"
        held = tuple(h for h in st.session_state[HELD] if h[0] != model_id)
        st.session_state[HELD] = (*held, (model_id, label))
    st.session_state.update({MODEL: model_id, MODEL_MESSAGE: "", LAYER_SHOWN: 0, ABLATIONS: ()})
    _new_text(ids, text_label)
    # the widgets show the new model's state (set, not dropped: a browser would send their old values back)
    st.session_state.update(
        {W_MODEL: model_id, W_TYPED: m.decode(ids), W_SEQUENCE: text_label or TYPED_LABEL, W_LAYER_SHOWN: 0}
    )
    return True


def on_model() -> None:
    """A model was chosen in the chooser; if it fails to open, the chooser goes back to the model in use."""
    chosen = st.session_state.get(W_MODEL)
    if not isinstance(chosen, str) or chosen == st.session_state[MODEL]:
        return
    if not choose_model(chosen):
        st.session_state[W_MODEL] = st.session_state[MODEL]


def upload_key() -> str:
    """The uploader's key: a new one after each upload is handled, so the files sent do not linger."""
    return f"{PREFIX}w.upload.{st.session_state[UPLOADS]}"


def on_upload() -> None:
    """Files (or a .zip) were sent: bounded before reading, opened by the engine (which refuses pickles and checks
    every tensor), held for this session and chosen; on any problem a message naming it, and nothing changes."""
    sent = st.session_state.get(upload_key()) or []
    st.session_state[UPLOADS] += 1  # the uploader starts empty next run
    if not sent:
        return
    size = sum(int(getattr(f, "size", 0)) for f in sent)
    try:
        if size > upload.MAX_BYTES:
            raise AttentionError(
                f"the files hold {size:,} bytes; at most {upload.MAX_BYTES:,} ({upload.MAX_BYTES // 1024**2} MB) "
                "are read",
                field="upload",
            )
        m = upload.open_files({str(f.name): f.getvalue() for f in sent})
        model_id = models.hold(m, "upload")
    except AttentionError as e:
        st.session_state[MODEL_MESSAGE] = f"The upload was not opened: {e}. Nothing changed."
        return
    c = m.config
    named = " ".join(str(sent[0].name).split())[:40] if len(sent) == 1 else f"{len(sent)} files"
    choose_model(model_id, f"Uploaded: {named} ({c.n_layers} layers × {c.n_heads} heads, {model_id[-6:]})")


def on_layer_shown() -> None:
    """The layer whose heads are drawn large (a model with many heads shows one layer at a time)."""
    value = st.session_state.get(W_LAYER_SHOWN)
    if isinstance(value, int) and 0 <= value < model().config.n_layers:
        st.session_state[LAYER_SHOWN] = value


def recover() -> None:
    """When the chosen model can no longer be opened (a learner's model let go, a server folder gone), open the
    shipped one instead and say so."""
    try:
        models.get(st.session_state[MODEL])
    except AttentionError as e:
        if st.session_state[MODEL] != models.BUILTIN and choose_model(models.BUILTIN):
            st.session_state[MODEL_MESSAGE] = f"{e}. The shipped model is open instead."


def on_repeat() -> None:
    """Repeat the text's tokens exactly, so its second half copies the first (what an induction head can use)."""
    ids, m = st.session_state[IDS], model()
    if 2 * len(ids) > longest(m):
        st.session_state[MESSAGE] = (
            f"Repeated, the text would have {2 * len(ids)} tokens; this page reads at most {longest(m)}. "
            "Nothing changed."
        )
        return
    _new_text(ids + ids, "")
    st.session_state.update({W_TYPED: m.decode(ids + ids), W_SEQUENCE: TYPED_LABEL})
