"""What the Logit lens and Attribution pages share: the position and token chosen, and the engine's readings.

The readings of the chosen model's run (:func:`attention.model.lens`, :func:`attention.model.attribute`) are made
once per content.

The position is the one Every head predicts from (``Inside.position``); the token (``Inside.token``) is the model's
prediction there unless the learner typed another. Both are written only by :mod:`attention.ui.state.inside`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import streamlit as st

from ... import charts
from ...errors import AttentionError
from ...model import Attribution, attribute, lens
from ...model.interventions import ablate
from ...model.layers import log_softmax
from ..core import keys, models, session
from ..core.text import esc
from ..state import inside
from ..widgets.common import bind
from . import runs

TOP = 5  # the lens's tokens shown per layer


@dataclass(frozen=True)
class Lensed:
    """The lens at one position, as the page shows it: ``probs`` (layers + 1, V) the softmax of each row of
    :func:`attention.model.lens` (row 0 after the embeddings, row l after layer l); ``top`` (layers + 1, TOP) each
    row's most likely tokens; ``prediction`` the model's own (the last row's top token)."""

    probs: np.ndarray
    top: np.ndarray
    prediction: int


def _run(model_id: str, ids: tuple[int, ...], ablations: tuple[runs.Ablation, ...]):  # noqa: ANN202 - a model Run
    m = models.get(model_id)
    with models.LOCK:  # the model's run cache holds the layers: a second reading of the same text runs nothing again
        return m.run(list(ids), [ablate(layer, head, how) for layer, head, how in ablations])


@functools.lru_cache(maxsize=8)  # a GPT-2 small lens is 13 × 50,257 probabilities (5 MB), SmolLM2's 12 MB
def lensed(model_id: str, ids: tuple[int, ...], ablations: tuple, position: int) -> Lensed:
    """The logit lens of the model's run on ``ids`` (with ``ablations``) at ``position``, as probabilities."""
    logits = lens(_run(model_id, ids, ablations), position)  # (L + 1, V)
    probs = np.exp(log_softmax(logits))  # (L + 1, V)
    some = np.argpartition(-probs, TOP - 1, axis=-1)[:, :TOP]  # (L + 1, TOP): the TOP largest, in any order
    top = np.take_along_axis(some, np.argsort(-np.take_along_axis(probs, some, -1), axis=-1, kind="stable"), -1)
    probs.flags.writeable = False
    return Lensed(probs, top, int(top[-1, 0]))


@functools.lru_cache(maxsize=64)
def attributed(model_id: str, ids: tuple[int, ...], ablations: tuple, position: int, token: int) -> Attribution | str:
    """Each part's direct share of ``token``'s logit at ``position`` (:func:`attention.model.attribute`), or why the
    engine refuses it (a run with patched streams, which no part of the model wrote)."""
    try:
        return attribute(_run(model_id, ids, ablations), position, token)
    except AttentionError as e:
        return f"{e}"


def now() -> tuple[Lensed, Attribution | str, int]:
    """The lens and the attribution at the chosen position, for the chosen token (the prediction by default), and
    that token."""
    i = inside.now()
    seen = lensed(i.model, i.ids, i.ablations, i.position)
    token = seen.prediction if i.token is None or i.token >= seen.probs.shape[1] else i.token
    return seen, attributed(i.model, i.ids, i.ablations, i.position, token), token


def piece(token: int) -> str:
    """One token as a person reads it (spaces made visible, other control characters written as \\x0c); user text:
    escape it."""
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in runs.pieces([token])[0])


def controls() -> None:
    """The position (shared with Every head) and the token, with the message of a refused value under them."""
    ids, position, _ = inside.current()
    tokens = runs.pieces(ids)
    left, right = st.columns(2, gap="medium")
    with left:
        bind(keys.READOUT_POSITION, position)
        st.selectbox(
            "Position (its stream predicts the token after it)",
            list(range(len(ids))),
            format_func=lambda t: f"{t + 1}: {tokens[t]}",
            key=keys.READOUT_POSITION,
            on_change=inside.on_readout_position,
        )
    with right:
        token = inside.now().token
        bind(keys.READOUT_TOKEN, "" if token is None else piece(token), once=True)
        st.text_input(
            "Token to follow (its text; empty: the model's prediction), then press Enter",
            key=keys.READOUT_TOKEN,
            on_change=inside.on_token,  # no max_chars: the browser would drop a longer paste without a word
            help="One token of the model's vocabulary, as the pages show it (␣ is a space); at most "
            f"{inside.MAX_TOKEN_CHARS} characters.",
        )
    if inside.now().readout_message:
        st.error(inside.now().readout_message)  # ours: built by state.inside, user text escaped there


def where(position: int, token: int) -> str:
    """ "position 13 (“A”), token “B”", escaped, for the pages' sentences."""
    ids = inside.now().ids
    return f"position {position + 1} (“{esc(runs.pieces([ids[position]])[0], 40)}”), token “{esc(piece(token), 40)}”"


def share_line(layer: int, head: int) -> str:
    """A head's card on Every head: its share of the prediction's logit (or the chosen token's) at the position
    chosen, as the Attribution page shows it (escaped Markdown)."""
    _, att, token = now()
    if isinstance(att, str):
        return ""
    fmt = charts.decimals_for(att.heads, session.get().digits).format
    return (
        f"Share of the logit of “{esc(piece(token), 40)}” at position {att.position + 1}: "
        f"**{fmt(att.heads[layer, head])}** (the Attribution page takes it apart)"
    )
