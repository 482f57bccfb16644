"""Changes from the Learn page and the embeddings choice: settings, a finished run, its weights put in, a new X."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ... import rng
from ...io import vectors
from ...learn import GAINS
from ...names import WEIGHTS
from ..core.compute import content_key
from ..core.learned import Learned, held, learnable
from ..core.session import get, identical
from . import reshapes
from .challenges import refuse_any_locked, refuse_locked, refused_while_playing
from .core import arrived_whole, say, touch


def set_learn(**changes: object) -> None:
    """Change the Learn page's settings (already checked by the widget's callback); the matrices stay as they are."""
    s = get()
    s.learn = replace(s.learn, **changes)


def store_learned(run: Learned) -> None:
    """Keep a finished training run in the session (it survives page switches); the matrices stay as they are."""
    s = get()
    s.learned = run
    touch(s)


def use_learned() -> None:
    """Put the last run's trained matrices into the state, if the state is still the one it started from: every step
    page then shows the learned numbers (as changes from the preset; "Reset to preset" undoes it)."""
    s = get()
    run = s.learned
    if run is None:
        return
    if refused_while_playing("learn.use"):
        return
    names = [k for k in run.settings.learn if k in learnable(s.matrices, s.options)]
    trained = {k: run.result.matrices[k] for k in names}
    if all(identical(held(k, s.matrices, s.options), v) for k, v in trained.items()):
        say("learn.use", "info", "The learned numbers are already in use.")
        return
    if refuse_any_locked([k for k in names if k not in GAINS], "learn.use"):
        return
    if run.tokens != s.tokens or run.start != content_key(s.tokens, s.matrices, s.options):
        say(
            "learn.use",
            "error",
            "The tokens, matrices or options changed since this run, so its weights no longer belong to this "
            "state; nothing was changed. Train again.",
        )
        return
    for k, v in trained.items():
        if k in GAINS:  # QK-norm's gains are options of the pass
            s.options = s.options.replace(**{k: tuple(float(g) for g in v)})
        else:
            s.matrices[k] = np.array(v, dtype=np.float64)
    arrived_whole("trained weights (Use these weights)")
    s.version += 1
    touch(s)
    say(
        "learn.use",
        "success",
        f"{', '.join(names)} now hold the learned numbers: every step page shows them (highlighted as changes from "
        "the preset), and every download and export carries them. “Reset to preset” in the sidebar undoes this.",
    )


def use_identity() -> None:
    """W_q = W_k = I (d_k becomes d_model; the heads go back to one if they no longer divide it), so each score is
    the plain dot product of two rows of X; W_v is kept. Refused, with a message, when a challenge locks them."""
    s = get()
    if any(refuse_locked(k, "control.embeddings") for k in ("W_q", "W_k")):
        return
    d_model = s.dims.d_model
    note = reshapes.resize(s, d_k=d_model)
    for k in ("W_q", "W_k"):
        s.matrices[k] = np.eye(d_model)  # (d_model, d_k = d_model): X·I = X, either projection
    s.version += 1
    touch(s)
    say("control.embeddings", "success", "W_q = W_k = I: every score is now the dot product of two rows of X.")
    if note:
        say("sidebar.heads", "warning", note)  # ours: numbers only


def embedding_matrix(kind: str, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
    """X (n, width) for the session's tokens made the ``kind`` way (see :func:`set_embeddings`), and for GloVe which
    rows were found in the table (None otherwise)."""
    s = get()
    n, d_model = len(s.tokens), s.dims.d_model
    if kind == "glove":
        return vectors.lookup(list(s.tokens), seed)  # (n, 50), (n,)
    if kind == "onehot":
        return np.eye(n), None  # (n, n)
    if kind == "random":
        return np.random.RandomState(seed).randn(n, d_model) / np.sqrt(d_model), None  # (n, d_model)
    base = s.origin.base["X"]  # (n₀, d₀): the preset's own rows, moved on as the shuffles moved them
    rolled = np.roll(base, s.rolled, axis=0) if base.shape[0] == n else base
    return rng.fill_new_cells(rolled, (n, base.shape[1]), s.seed or 0, stream=0), None


def set_embeddings(kind: str, seed: int = 0) -> None:
    """Make X a new way: the preset's own rows, random (standard normal / √d_model, from ``seed``), GloVe 50-d word
    vectors (words lower-cased; a word not in the table gets a seeded stand-in row), or one-hot (the identity, n × n).
    X's width changes with it and the weights are resized, keeping every value that still fits."""
    s = get()
    X, _ = embedding_matrix(kind, seed)
    touched = ("X", *(WEIGHTS if X.shape[1] != s.dims.d_model else ()))
    if refuse_any_locked(touched, "control.embeddings"):
        return
    note = reshapes.resize(s, d_model=X.shape[1])
    s.matrices["X"] = X
    if kind != "preset":
        s.rolled = 0  # X is no longer the preset's rows moved on
    s.embedding = (kind, seed)
    s.version += 1
    touch(s)
    if note:
        say("sidebar.heads", "warning", note)  # ours: numbers only
