"""The "Inside a model" pages' state: the Session's ``inside`` record, made in :func:`ensure`, changed by callbacks.

The one writer of :class:`attention.ui.core.session.Inside` (and of "Watch it learn"'s ``training`` record and the
Patching page's ``patching`` record), with
``dataclasses.replace``. The chosen model is held by its id (:mod:`attention.ui.core.models`); the text as that
model's token ids; ablations as (layer, head, "zero" or "mean"), 0-based as the engine counts."""

from __future__ import annotations

import math
from dataclasses import replace

import streamlit as st

from ...errors import AttentionError
from ...model import upload
from ...model.eviction import POLICIES, long_text
from ...model.vocab import WordVocab
from ...names import is_whole
from ..core import jobs, keys, models
from ..core.cache import TraceCache, nothing
from ..core.models import Ablation, HeadRef
from ..core.session import KEY, Inside, KvCache, Patching, Session, Training, get
from ..core.text import esc
from .presets import open_head

# longer typed text is refused before it is split or tokenized: 6 characters a token for the most tokens read (2,048
# tokens of English prose are about 9,700 characters: the project's long text, attention/data/long_text.txt)
MAX_CHARS = 6 * models.MAX_TOKENS  # 12,288
HOWS = ("zero", "mean")
TYPED_LABEL = "Your own words (typed below)"
MAX_TOKEN_CHARS = 100  # a token's text is at most this long here (GPT-2's longest is 128 bytes of spaces)
UNSHOWN = {"␣": " ", "↵": "\n", "⇥": "\t"}  # the marks the pages show for whitespace, read back as it


def now(s: Session | None = None) -> Inside:
    """The model pages' state (made by :func:`ensure`)."""
    return (s or get()).inside


def _set(s: Session | None = None, **changes: object) -> None:
    """Change the model pages' state. A change that leaves no message of its own takes the text's refusal away: the
    page has moved on, and an error must not stand after later actions."""
    s = s or get()
    if s.inside.message and not changes.get("message"):
        st.session_state[keys.INSIDE_BANNER_WENT] = True  # a part of the page rerun alone reruns it all: see went()
    s.inside = replace(s.inside, **{"message": "", **changes})


def banner_went() -> bool:
    """Whether the text's refusal was taken away since the whole page was last drawn (asked once: the answer is
    then forgotten). A fragment rerun alone would leave its banner standing above it: it reruns the whole page."""
    return bool(st.session_state.pop(keys.INSIDE_BANNER_WENT, False))


def _learn(**changes: object) -> None:
    s = get()
    s.training = replace(s.training, **changes)


def ensure(s: Session | None = None) -> None:
    """Create the page's state once per session: the first ready-made sequence, nothing ablated."""
    s = s or get()
    if s.inside is None:
        label, ids = next(iter(models.ready_made(models.BUILTIN).items()))
        s.inside = Inside(models.BUILTIN, label, ids, default_position(models.BUILTIN, ids))


def started() -> bool:
    """Whether the model pages' state exists in this session (made by :func:`ensure` or :func:`restore`)."""
    s = st.session_state.get(KEY)
    return s is not None and s.inside is not None


def start() -> tuple[str, tuple[int, ...]]:
    """Where the model pages start: the shipped model and its first ready-made text."""
    return models.BUILTIN, next(iter(models.ready_made(models.BUILTIN).values()))


def restore(s: Session, model_id: str, ids: tuple[int, ...] | None, ablations: tuple[Ablation, ...]) -> str:
    """Put in ``s`` the model, text (None: the model's first, :func:`models.first_text`) and ablations an address
    names, when the model opens and they fit it; else what is wrong (Markdown, escaped) and nothing changes."""
    try:
        m = models.get(model_id)
        if ids is None:  # the model's first text: a link leaves out a text longer than it holds
            ids = models.first_text(model_id)[1]
        ids = tuple(m.check_ids(list(ids)))
    except AttentionError as exc:
        return esc(exc.message, 300)
    c = m.config
    if not 2 <= len(ids) <= models.longest(m):
        return f"the text has {len(ids)} tokens; the model reads 2 to {models.longest(m)} here"
    bad = [a for a in ablations if not (a[0] < c.n_layers and a[1] < c.n_heads)]
    if bad:
        return f"the model has {c.n_layers} layers of {c.n_heads} heads; there is no {name(*bad[0][:2])}"
    ensure(s)
    label = next((k for k, v in models.ready_made(model_id).items() if v == ids), "")
    _set(s, model=model_id, ablations=ablations)
    _new_text(ids, label, s)
    return ""


def restore_readout(s: Session, position: int | None, token: int | None, threshold: float | None = None) -> str:
    """Put in ``s`` the position (0-based), the token and the Routes page's threshold an address names (None: leave
    it), when they fit the model and text already restored; else what is wrong, and that one is left as it was."""
    i, problems = now(s), []
    if threshold is not None and threshold_problem(threshold):
        problems.append(f"the threshold {threshold} is not a share from {THRESHOLDS[0]} to {THRESHOLDS[1]}")
    elif threshold is not None:
        _set(s, threshold=threshold)
    if position is not None and not 0 <= position < len(i.ids):
        problems.append(f"there is no position {position + 1}: the text has {len(i.ids)} tokens")
    elif position is not None:
        _set(s, position=position)
    vocab = models.get(i.model).config.vocab_size
    if token is not None and not 0 <= token < vocab:
        problems.append(f"there is no token {token}: the model's vocabulary has {vocab:,}")
    elif token is not None:
        _set(s, token=token)
    return "; ".join(problems)


def default_position(model_id: str, ids: tuple[int, ...]) -> int:
    """Where the pages start on a text: the second half's first position on a ready-made repeated text, else the
    last (:func:`attention.ui.core.models.start_position`)."""
    return models.start_position(model_id, ids)


def model_id() -> str:
    """The chosen model's id."""
    return now().model


def model() -> models.Model:
    """The chosen model."""
    return models.get(now().model)


def current() -> tuple[tuple[int, ...], int, tuple[Ablation, ...]]:
    """(token ids, chosen position, ablations) now."""
    i = now()
    return i.ids, i.position, i.ablations


def _new_text(ids: tuple[int, ...], label: str, s: Session | None = None) -> None:
    position = default_position(now(s).model, ids)
    _set(s, ids=ids, sequence=label, position=position, message="", before=None, change="", where=None)
    _set(s, readout_message="")
    st.session_state[keys.INSIDE_POSITION] = position  # set, not dropped: a browser would send its old value back


def on_sequence() -> None:
    """A ready-made sequence was chosen: it becomes the text, and the text box shows its words."""
    label = st.session_state.get(keys.INSIDE_SEQUENCE)
    ids = models.ready_made(model_id()).get(label)
    if ids is None:  # the typed text's entry, or a value no client should send
        return
    _new_text(ids, label)
    st.session_state[keys.INSIDE_TYPED] = model().decode(ids)


def read_text(m: models.Model, text: object, which: str = "text") -> tuple[int, ...]:
    """A model text typed on any model page, read into its ids: not empty, at most MAX_CHARS characters (checked
    before it is split or tokenized), every word known to the model, 2 to the pages' longest tokens. Anything else
    raises an AttentionError whose message names ``which`` text and what is wrong: one wording for every page."""
    size = len(text) if isinstance(text, str) else 0
    if not isinstance(text, str) or not text.strip():
        raise AttentionError(f"The {which} is empty")
    if size > MAX_CHARS:
        raise AttentionError(
            f"The {which} has {size:,} characters; the pages read at most {MAX_CHARS:,} (about "
            f"{models.MAX_TOKENS:,} tokens)"
        )
    try:
        ids = tuple(m.encode(text))
    except AttentionError as e:
        raise AttentionError(f"The {which}: {e}") from None
    problem = length_problem(m, len(ids), which)
    if problem:
        raise AttentionError(problem)
    return ids


def length_problem(m: models.Model, n: int, which: str = "text") -> str:
    """Why an ``n``-token text is not read by the model's pages ("" when it is): under 2, or over the pages' most
    (:func:`attention.ui.core.models.longest`, said with its reason: the model's context, or the pages' cap)."""
    most, unit = models.longest(m), "word" if isinstance(m.vocab, WordVocab) else "token"
    count = f"{n:,} {unit}" + ("" if n == 1 else "s")
    if n < 2:
        return f"The {which} has {count}; the pages need at least 2"
    if n <= most:
        return ""
    n_ctx = m.config.n_ctx
    why = f"its context is {most:,}" if most == n_ctx else f"the model itself reads {n_ctx:,} from Python"
    return f"The {which} has {count}; this model's pages read at most {most:,} ({why})"


def on_typed() -> None:
    """Words were typed: read by :func:`read_text`; else its message, and nothing else changes."""
    try:
        ids = read_text(model(), st.session_state.get(keys.INSIDE_TYPED))
    except AttentionError as e:
        _set(message=f"{e}. Nothing changed.")
        return
    _new_text(ids, "")
    st.session_state[keys.INSIDE_SEQUENCE] = TYPED_LABEL


def on_position() -> None:
    """A position was chosen for the predictions."""
    value = st.session_state.get(keys.INSIDE_POSITION)
    if isinstance(value, int) and 0 <= value < len(now().ids):
        _set(position=value)


def on_how() -> None:
    """Zero or mean ablation for the next head ablated."""
    if st.session_state.get(keys.INSIDE_HOW) in HOWS:
        _set(how=st.session_state[keys.INSIDE_HOW])


def toggle(layer: int, head: int) -> None:
    """Ablate a head (as chosen: zero or mean), or restore it if it is ablated; remember the ablations before."""
    was, how = now().ablations, now().how
    if [a for a in was if a[:2] == (layer, head)]:
        after = tuple(a for a in was if a[:2] != (layer, head))
        change = f"Restoring {name(layer, head)}"
    else:
        after = tuple(sorted((*was, (layer, head, how))))
        change = f"Ablating {name(layer, head)} ({how})"
    _set(before=was, ablations=after, change=change, where=(layer, head))


def restore_all() -> None:
    """Restore every head."""
    was = now().ablations
    if was:
        _set(before=was, ablations=(), change="Restoring every head", where="all")


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
        _set(model_message=f"That model could not be opened: {e}. Nothing changed.")
        return False
    if not models.travels(model_id):
        c, held = m.config, dict(now().held)
        kind = f"Uploaded {named}".strip() if model_id.startswith(models.UPLOAD) else "Trained here"
        held.setdefault(model_id, f"{kind} ({c.n_layers} layers × {c.n_heads} heads, {model_id[-6:]})")
        _set(held=tuple(held.items()))
    _set(model=model_id, model_message="", layer_shown=0, ablations=(), token=None)
    st.session_state.update({keys.INSIDE_LAYER_SHOWN: 0, keys.READOUT_TOKEN: ""})
    _new_text(ids, text_label)  # the widgets are set, not dropped: a browser would send their old values back
    st.session_state.update(
        {keys.INSIDE_MODEL: model_id, keys.INSIDE_TYPED: m.decode(ids), keys.INSIDE_SEQUENCE: text_label or TYPED_LABEL}
    )
    return True


def on_model() -> None:
    """A model was chosen in the chooser; if it fails to open, the chooser goes back to the model in use."""
    chosen = st.session_state.get(keys.INSIDE_MODEL)
    if isinstance(chosen, str) and chosen != now().model and not choose_model(chosen):
        st.session_state[keys.INSIDE_MODEL] = now().model


def on_upload(key: str) -> None:
    """Files or a .zip sent (uploader ``key``): opened by the engine, held, chosen; else a message, nothing changed."""
    sent = st.session_state.get(key) or []
    _set(uploads=now().uploads + 1)  # a new uploader key: the files sent do not linger
    try:
        m = upload.open_files({str(f.name): f.getvalue() for f in sent}) if sent else None
    except AttentionError as e:
        _set(model_message=f"The upload was not opened: {e}. Nothing changed.")
        return
    if m is not None:
        choose_model(models.hold(m, "upload"), " ".join(str(sent[0].name).split())[:40] if len(sent) == 1 else "files")


def on_layer_shown() -> None:
    """The layer whose heads are drawn large (a model with many heads shows one layer at a time)."""
    value = st.session_state.get(keys.INSIDE_LAYER_SHOWN)
    if isinstance(value, int) and 0 <= value < model().config.n_layers:
        _set(layer_shown=value)


def on_across(key: int, query: int) -> None:
    """The key token and the query (-1: the queries after it) whose weight every layer × head shows; a query before
    the key (which it cannot see) becomes the queries after it."""
    n = len(now().ids)
    if isinstance(key, int) and isinstance(query, int) and 0 <= key < n and -1 <= query < n:
        _set(across=(key, query if query >= key else -1))


def on_qk_head(head: object) -> None:
    """The head (layer, head), 0-based, whose queries and keys Every head shows step by step."""
    c = model().config
    if isinstance(head, tuple) and len(head) == 2 and 0 <= head[0] < c.n_layers and 0 <= head[1] < c.n_heads:
        _set(qk_head=(int(head[0]), int(head[1])))


def on_head_shown(head: object) -> None:
    """The head (layer, head), 0-based, whose controls Every head draws below its layer's picture."""
    c = model().config
    if isinstance(head, tuple) and len(head) == 2 and 0 <= head[0] < c.n_layers and 0 <= head[1] < c.n_heads:
        _set(head_shown=(int(head[0]), int(head[1])))


ZOOM_MOST = 64  # rows and columns of a head's weights drawn cell by cell at once
ZOOM_CHARS = 40  # a window's text is read only up to this long


def zoom(n: int) -> tuple[int, int, int, int]:
    """Every head's window of the chosen head on an n-token text: query rows a .. b − 1 and key columns c .. d − 1
    (0-based), as chosen, or the first ZOOM_MOST // 2 of each when none was (or it no longer fits the text)."""
    z = now().zoom
    if z is not None and z[1] <= n and z[3] <= n:
        return z
    first = min(n, ZOOM_MOST // 2)
    return (0, first, 0, first)


def read_span(text: object, n: int, which: str) -> tuple[int, int]:
    """A span of positions typed as "a-b" (or "a–b", "a..b", or one position "a"), counted from 1, into (a − 1, b):
    within 1 .. n, a ≤ b, at most ZOOM_MOST positions. Anything else raises an AttentionError naming ``which``
    positions and what is wrong."""
    raw = text.strip() if isinstance(text, str) else ""
    if len(raw) > ZOOM_CHARS:
        raise AttentionError(f"The {which} positions are {len(raw):,} characters long; write them as 100-163")
    parts = raw.replace("–", "-").replace("..", "-").replace(" ", "").split("-")
    if not 1 <= len(parts) <= 2 or not all(p.isascii() and p.isdigit() and len(p) <= 7 for p in parts):
        raise AttentionError(f"The {which} positions “{raw}” are not two whole numbers such as 100-163")
    a, b = int(parts[0]), int(parts[-1])
    if not 1 <= a <= b <= n:
        raise AttentionError(f"The {which} positions {a}-{b} are not within 1 to {n:,}, the first not after the last")
    if b - a + 1 > ZOOM_MOST:
        raise AttentionError(f"The {which} positions {a}-{b} are {b - a + 1} positions; at most {ZOOM_MOST} are drawn")
    return a - 1, b


def on_zoom(n: int) -> None:
    """The window's query or key positions were typed: both read by :func:`read_span`; else its message, and the
    window stays as it was."""
    try:
        a, b = read_span(st.session_state.get(keys.INSIDE_ZOOM_ROWS), n, "query")
        c, d = read_span(st.session_state.get(keys.INSIDE_ZOOM_KEYS), n, "key")
    except AttentionError as e:
        _set(zoom_message=f"{e}. The window stays as it was.")
        return
    _set(zoom=(a, b, c, d), zoom_message="")


def recover() -> None:
    """When the chosen model can no longer be opened (let go, or its folder gone), open the shipped one and say so."""
    try:
        models.get(now().model)
    except AttentionError as e:
        if choose_model(models.BUILTIN):
            _set(model_message=f"{e}. The shipped model is open instead.")


def on_repeat() -> None:
    """Repeat the text's tokens exactly, so its second half copies the first (what an induction head can use)."""
    ids, m = now().ids, model()
    if 2 * len(ids) > (most := models.longest(m)):
        _set(message=f"Repeated: {2 * len(ids)} tokens; at most {most} are read. Nothing changed.")
        return
    _new_text(ids + ids, "")
    st.session_state.update({keys.INSIDE_TYPED: m.decode(ids + ids), keys.INSIDE_SEQUENCE: TYPED_LABEL})


def open_on_steps(layer: int, head: int) -> None:
    """Open a head of the chosen model, on the current text and with the current ablations, on the step pages."""
    ids, _, ablations = current()
    if open_head(HeadRef(model_id(), ids, layer, head, ablations)):
        _set(opened=(layer, head))


def ensure_learn() -> None:
    """Create the "Watch it learn" state once per session: the first snapshot, no training job."""
    ensure()
    s = get()
    if s.training is None:
        s.training = Training()


def on_snapshot(count: int) -> None:
    """A snapshot was chosen on the slider (1 to ``count``); any other value is refused with a message and nothing
    changes."""
    value = st.session_state.get(keys.WATCH_SNAPSHOT)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= count:
        _set(snapshot=value)
        _learn(learn_message="")
    else:
        _learn(
            learn_message=f"The snapshot {str(value)[:20]!r} is not one of 1 to {count}; still showing snapshot "
            f"{now().snapshot}. Nothing changed."
        )


def start_training(steps: int, hold: int) -> None:
    """Train a model from scratch, live (this session's earlier run, if still running, is cancelled first)."""
    jobs.cancel(_job())
    try:
        job = jobs.train(steps, hold)
    except AttentionError as e:
        _learn(train_message=f"{e}. Nothing started.")
        return
    _learn(job=job.id, train_message="")


def cancel_training() -> None:
    """Stop this session's live training at its next step."""
    jobs.cancel(_job())


def _job() -> str | None:
    """This session's live training job's id (None: none)."""
    s = get()
    return None if s.training is None else s.training.job


def open_model(new_id: str) -> bool:
    """Open a model trained here on "Every head", as the chooser does; False, with a message, if it cannot be."""
    opened = choose_model(new_id)
    _learn(train_message="" if opened else now().model_message)
    return opened


def on_readout_position() -> None:
    """A position was chosen on the Logit lens or Attribution page (the one Every head predicts from too); a value
    outside the text is refused with a message and nothing changes."""
    value, n = st.session_state.get(keys.READOUT_POSITION), len(now().ids)
    if is_whole(value) and 0 <= value < n:
        _set(position=int(value), readout_message="")
        st.session_state[keys.INSIDE_POSITION] = int(value)  # Every head's box shows it too
    else:
        _set(readout_message=f"There is no position {esc(str(value), 20)}: the text has {n} tokens. Nothing changed.")
        st.session_state[keys.READOUT_POSITION] = now().position


MAX_FIND = MAX_TOKEN_CHARS  # the token searched for: at most this many characters (checked before any search)


def on_find() -> None:
    """A token's text was typed to find positions by (any part of a token's text, ␣ for a space; empty: none);
    a longer value is refused with a message, and nothing changes."""
    text = st.session_state.get(keys.FIND_TEXT)
    if not isinstance(text, str) or len(text) > MAX_FIND:
        size = len(text) if isinstance(text, str) else 0
        _set(readout_message=f"The text to find has {size:,} characters; at most {MAX_FIND}. Nothing changed.")
        st.session_state[keys.FIND_TEXT] = now().find
        return
    _set(find=text, readout_message="")


def searched(text: str) -> str:
    """What a search matches: the text with the pages' marks for whitespace read back as it, case folded."""
    return "".join(UNSHOWN.get(ch, ch) for ch in text).casefold()


def on_found() -> None:
    """A position found by its token was chosen for the Logit lens, Attribution and Routes (and Every head): it
    becomes the position, as if chosen by number."""
    value, n = st.session_state.get(keys.FIND_PICK), len(now().ids)
    if is_whole(value) and 0 <= value < n:
        _set(position=int(value), readout_message="")
        st.session_state.update({keys.READOUT_POSITION: int(value), keys.INSIDE_POSITION: int(value)})


def on_token() -> None:
    """A token was typed for the Logit lens and Attribution pages: empty for the model's prediction, else the text of
    one token of the model's vocabulary (␣ for a space); anything else is refused with a message naming it, and
    nothing changes."""
    text = st.session_state.get(keys.READOUT_TOKEN)
    if not isinstance(text, str) or len(text) > MAX_TOKEN_CHARS:
        size = len(text) if isinstance(text, str) else 0
        _set(readout_message=f"The token's text has {size:,} characters; at most {MAX_TOKEN_CHARS}. Nothing changed.")
        return
    if text == "":
        _set(token=None, readout_message="")
        return
    found = token_id(model_id(), "".join(UNSHOWN.get(ch, ch) for ch in text))
    if found is None:
        _set(
            readout_message=f"“{esc(text, 40)}” is not a token of this model's vocabulary: type one token's own text "
            "(a space is ␣, as the pages show it; GPT-2's words start with one, such as ␣the), or leave the box "
            "empty for the model's prediction. Nothing changed."
        )
        return
    _set(token=found, readout_message="")


THRESHOLDS = (0.005, 0.5)  # the Routes page's threshold: below, the graph is everything; above, almost nothing


def threshold_problem(value: object) -> str:
    """Why ``value`` cannot be the Routes page's threshold ("" when it can)."""
    low, high = THRESHOLDS
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        return f"The threshold {esc(str(value), 20)} is not a share from {low} to {high}. Nothing changed."
    return ""


def on_threshold() -> None:
    """The Routes page's threshold was set: a share from 0.005 to 0.5, else a message and nothing changes."""
    value = st.session_state.get(keys.ROUTES_THRESHOLD)
    problem = threshold_problem(value)
    if problem:
        _set(readout_message=problem)
        st.session_state[keys.ROUTES_THRESHOLD] = now().threshold
        return
    _set(threshold=float(value), readout_message="")


def open_route(layer: int, head: int, row: int, source: int) -> None:
    """Open a head of a route's edge on the step pages, its cell (query ``row``, key ``source``) explained."""
    ids, _, ablations = current()
    if open_head(HeadRef(model_id(), ids, layer, head, ablations), cell=(row, source)):
        _set(opened=(layer, head))


def token_id(model_id: str, text: str) -> int | None:
    """The id of the token whose own text is ``text`` in the model's vocabulary (the lowest, if several), else
    None."""
    return _VOCABULARIES.get(model_id, lambda: _vocabulary(model_id)).get(text)


_VOCABULARIES = TraceCache(max_bytes=0, max_entries=8, ttl=math.inf, measure=nothing)  # one per model, read once


def _vocabulary(model_id: str) -> dict[str, int]:
    """Each token's own text -> its id (the first id of a text that several share), read once per model."""
    m = models.get(model_id)
    out: dict[str, int] = {}
    for i, piece in enumerate(m.vocab.pieces(range(min(m.config.vocab_size, len(m.vocab))))):
        out.setdefault(piece, i)
    return out


# ------------------------------------------------------------------ the Patching page (Session.patching)


def pair() -> Patching:
    """The Patching page's state, made on first use and again when another model is chosen (its first ready-made
    pair, the text boxes showing it)."""
    ensure()
    s = get()
    if s.patching is None or s.patching.model != s.inside.model:
        if s.patching is not None:
            jobs.cancel(s.patching.job)
        label, (clean, corrupt) = next(iter(models.pairs(s.inside.model).items()))
        s.patching = Patching(s.inside.model, clean, corrupt, label)
        _show_pair(s.patching)
    return s.patching


def restore_pair(s: Session, clean: tuple[int, ...], corrupt: tuple[int, ...]) -> str:
    """Put in ``s`` the pair an address names, for the model pages' model, when it fits the model (its vocabulary,
    2 to the pages' longest, the same length, not the same tokens); else what is wrong and nothing changes."""
    ensure(s)
    try:
        m = models.get(s.inside.model)
        clean, corrupt = tuple(m.check_ids(list(clean))), tuple(m.check_ids(list(corrupt)))
        pairs = models.pairs(s.inside.model)
    except AttentionError as exc:
        return esc(exc.message, 300)
    most = models.longest(m)
    if len(clean) != len(corrupt) or not 2 <= len(clean) <= most:
        return f"the texts have {len(clean)} and {len(corrupt)} tokens; patching reads two of one length, 2 to {most}"
    if clean == corrupt:
        return "the two texts are the same tokens"
    label = next((k for k, v in pairs.items() if v == (clean, corrupt)), "")
    s.patching = Patching(s.inside.model, clean, corrupt, label)
    return ""


def _patch(**changes: object) -> None:
    s = get()
    s.patching = replace(s.patching, **changes)


def _show_pair(p: Patching) -> None:
    """The text boxes and the pair chooser show the pair (set, not dropped: a browser would send its old values)."""
    m = model()
    st.session_state.update(
        {
            keys.PATCH_CLEAN: m.decode(p.clean),
            keys.PATCH_CORRUPT: m.decode(p.corrupt),
            keys.PATCH_PAIR: p.pair or TYPED_PAIR,
        }
    )


TYPED_PAIR = "Your own texts (typed below)"


def _new_pair(clean: tuple[int, ...], corrupt: tuple[int, ...], label: str) -> None:
    """A new pair: this session's running patching stops, the tokens go back to their defaults."""
    jobs.cancel(pair().job)
    _patch(clean=clean, corrupt=corrupt, pair=label, answer=None, wrong=None, message="", job=None)


def on_pair() -> None:
    """A ready-made pair was chosen: it becomes the pair, and the text boxes show it."""
    label = st.session_state.get(keys.PATCH_PAIR)
    chosen = models.pairs(model_id()).get(label) if isinstance(label, str) else None
    if chosen is None:  # the typed pair's entry, or a value no client should send
        return
    _new_pair(*chosen, label)
    _show_pair(pair())


def on_texts() -> None:
    """Both texts were sent: each is read by the model (a word outside its vocabulary is named), 2 to the pages'
    longest, and they have the same number of tokens; else a message naming what is wrong, and nothing changes."""
    read: list[tuple[int, ...]] = []
    for which, key in (("clean text", keys.PATCH_CLEAN), ("corrupted text", keys.PATCH_CORRUPT)):
        try:
            read.append(read_text(model(), st.session_state.get(key), which))
        except AttentionError as e:
            _patch(message=f"{e}. Nothing changed.")
            return
    clean, corrupt = read
    if len(clean) != len(corrupt):
        _patch(
            message=f"The clean text has {len(clean)} tokens and the corrupted one {len(corrupt)}: patching puts each "
            "position of one run into the same position of the other, so they need the same number. Nothing changed."
        )
        return
    if clean == corrupt:
        _patch(message="The two texts are the same tokens: there is nothing to patch. Change a token of one.")
        return
    _new_pair(clean, corrupt, next((k for k, v in models.pairs(model_id()).items() if v == (clean, corrupt)), ""))
    st.session_state[keys.PATCH_PAIR] = pair().pair or TYPED_PAIR


def on_pair_token(which: str, key: str, other: int) -> None:
    """The answer or the wrong token (``which``) was chosen from widget ``key``; it must be a token of the model and
    differ from the ``other`` one, else a message and nothing changes."""
    value = st.session_state.get(key)
    vocab = model().config.vocab_size
    if not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < vocab):
        _patch(message=f"The {which} token {str(value)[:20]!r} is not a token of the model. Nothing changed.")
        return
    if value == other:
        _patch(message=f"The answer and the wrong token must differ; the {which} token stays as it was.")
        return
    jobs.cancel(pair().job)
    _patch(**{"answer" if which == "answer" else "wrong": value, "message": "", "job": None})


def on_scope() -> None:
    """What the exact patching covers was chosen: "both", "heads" or "streams" (anything else changes nothing)."""
    value = st.session_state.get(keys.PATCH_SCOPE)
    if value in jobs.SCOPES and value != pair().scope:
        _patch(scope=value, message="")


def on_layers() -> None:
    """The layers the exact patching covers were chosen (1-based in the widget; none chosen: every layer)."""
    value = st.session_state.get(keys.PATCH_LAYERS)
    L = model().config.n_layers
    if not isinstance(value, list) or not all(isinstance(v, int) and 1 <= v <= L for v in value):
        _patch(message=f"Choose layers from 1 to {L}. Nothing changed.")
        return
    _patch(layers=tuple(sorted({v - 1 for v in value})) if len(set(value)) < L else (), message="")


def start_patching(answer: int, wrong: int) -> None:
    """Patch the pair exactly within the chosen scope and layers, in the background (a finished result of the same
    pair, tokens and scope is shown at once); a busy server says so and nothing starts."""
    p = pair()
    jobs.cancel(p.job)
    _patch(job=None)  # left, once
    try:
        job = jobs.patch(jobs.PatchRequest.of(p, answer, wrong))
    except AttentionError as e:
        _patch(message=f"{e}. Nothing started.")
        return
    _patch(job=job.id, message="")


def cancel_patching() -> None:
    """Stop this session's patching at its next patch (nothing of it is kept); a sweep other sessions wait on runs on
    for them, and this session no longer follows it."""
    if not jobs.cancel(pair().job):
        _patch(job=None)


# ------------------------------------------------------------------ the KV cache page (Session.kvcache)

KV_TEXTS = {"long": "The shipped long text (up to 2,048 tokens)", "pages": "The text the other model pages read"}
KV_UNITS = {"keys": "keys per head", "share": "a share of the cache"}
MAX_BUDGET_CHARS = 40  # a typed budget is at most this long (checked before it is read)
_KV_LONG = TraceCache(max_bytes=0, max_entries=8, ttl=3600, measure=nothing)  # the long text's ids, by model


def kv_now() -> KvCache:
    """The KV cache page's state, made on first use (the model pages' state too)."""
    ensure()
    s = get()
    if s.kvcache is None:
        s.kvcache = KvCache()
    return s.kvcache


def _kv(**changes: object) -> None:
    s = get()
    s.kvcache = replace(kv_now(), **changes)


def reads_long(model_id: str) -> bool:
    """Whether the model can read the shipped long text (it has a tokenizer, not a word list)."""
    return not isinstance(models.get(model_id).vocab, WordVocab)


def kv_ids() -> tuple[int, ...]:
    """The token ids the page studies: the shipped long text cut to the model's context and
    :data:`~attention.ui.core.jobs.KV_TOKENS`, when chosen and the model reads it; else the model pages' text."""
    chosen = model_id()
    if kv_now().text == "long" and reads_long(chosen):
        return _KV_LONG.get(chosen, lambda: _long_ids(chosen))
    return current()[0]


def _long_ids(model_id: str) -> tuple[int, ...]:
    m = models.get(model_id)
    return tuple(m.encode(long_text())[: min(jobs.KV_TOKENS, m.config.n_ctx)])


def on_kv_text() -> None:
    """The text to study was chosen (one of :data:`KV_TEXTS`; anything else is ignored)."""
    value = st.session_state.get(keys.KV_TEXT)
    if value in KV_TEXTS:
        _kv(text=value, extra=None)


def on_kv_policy() -> None:
    """A policy was chosen (one of the engine's; anything else is ignored): redrawn from the study, not recomputed."""
    value = st.session_state.get(keys.KV_POLICY)
    if value in POLICIES:
        _kv(policy=value)


def on_kv_unit() -> None:
    """The budget's unit was chosen: the budget goes back to the curve's default, said in that unit."""
    value = st.session_state.get(keys.KV_UNIT)
    if value in KV_UNITS:
        _kv(unit=value, budget="", message="")
        st.session_state[keys.KV_BUDGET] = ""


def read_budget(typed: object, unit: str, p: int) -> int:
    """A typed budget as a number of keys (1 to p, the prefix's keys): a whole number of keys, or a share of the
    cache (0 < share ≤ 1, or a percentage like "25%"); an AttentionError naming what is wrong."""
    text = str(typed).strip()
    if len(text) > MAX_BUDGET_CHARS:
        raise AttentionError(f"the budget is {len(text):,} characters long; type a number", field="budget")
    if unit == "keys":
        if not text.isdigit() or not 1 <= int(text) <= p:
            raise AttentionError(f"the budget {text[:20]!r} is not a whole number of keys from 1 to {p:,}",
                                 field="budget")
        return int(text)
    percent = text.endswith("%")
    try:
        share = float(text.rstrip("%").strip()) / (100 if percent else 1)
    except ValueError:
        share = float("nan")
    if not 0 < share <= 1:  # NaN fails too
        raise AttentionError(f"the share {text[:20]!r} is not a number above 0 and at most 1 (or 100%)",
                             field="budget")
    return max(1, round(share * p))


def on_kv_budget(p: int) -> None:
    """A budget was typed (Enter): kept when it reads as a budget for a prefix of p keys; else its box says why and
    the budget in force stays."""
    typed = st.session_state.get(keys.KV_BUDGET, "")
    if not str(typed).strip():
        _kv(budget="", message="", extra=None)
        return
    try:
        read_budget(typed, kv_now().unit, p)
    except AttentionError as e:
        _kv(message=f"{e}. The budget in force is unchanged.")
        return
    _kv(budget=str(typed).strip(), message="", extra=None)


def kv_budget(p: int, budgets: tuple[int, ...]) -> int:
    """The budget in force, in keys: the one typed, else the curve's middle one. A number of keys typed for a longer
    text (more than this text's p) is not in force here: the curve's middle one is, and the page says so."""
    k = kv_now()
    middle = budgets[(len(budgets) - 1) // 2]
    if not k.budget:
        return middle
    try:
        return read_budget(k.budget, k.unit, p)
    except AttentionError as e:
        _kv(budget="", message=f"{e} on this text, so the curve's middle budget, {middle:,} keys, is shown")
        return middle


def start_kv(model_id: str, ids: tuple[int, ...]) -> None:
    """Study the text in the background (a finished study of the same model and text is shown at once)."""
    jobs.cancel(kv_now().job)
    try:
        job = jobs.kv_study(model_id, ids, reads_long(model_id))
    except AttentionError as e:
        _kv(job=None, message=f"{e}. Nothing started.")
        return
    _kv(job=job.id, message="")


def start_kv_extra(model_id: str, ids: tuple[int, ...], budget: int) -> None:
    """Measure every policy at one budget off the curve, in the background."""
    jobs.cancel(kv_now().extra)
    try:
        job = jobs.kv_budget(model_id, ids, budget)
    except AttentionError as e:
        _kv(extra=None, message=f"{e}. Nothing started.")
        return
    _kv(extra=job.id, message="")


def cancel_kv() -> None:
    """Stop this session's study and extra budget at their next layer (nothing of them is kept)."""
    k = kv_now()
    jobs.cancel(k.job)
    jobs.cancel(k.extra)
    _kv(job=None, extra=None)
