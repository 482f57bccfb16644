"""Page controls named by the specs (sentence, d_model, d_k, the batch note), each validated in its callback.

Each draws its widget and, in its callback, validates the value and calls one of :mod:`attention.ui.state`'s
changes, or leaves a message and changes nothing. Number boxes have no browser-side limits: an out-of-range value
reaches the callback,
which refuses it on the page and puts the box back, instead of a widget silently clamping it."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from ... import names
from ...shapes import shape_trace
from ..core import keys, session
from ..core.text import esc, quoted
from ..inputs import editors, import_box
from ..state import core as state_core
from ..state import edits as state_edits
from ..state import learning, options
from ..views import cross
from ..widgets import downloads
from ..widgets.common import bind, on_value, show_messages, whole_number
from . import embeddings
from .steps import custom_mask, position_control

# ------------------------------------------------------------------------------------------ sentence


def _on_sentence(key: str) -> None:
    s = session.get()
    text = st.session_state.get(key, "")
    if len(text) > names.MAX_SENTENCE_CHARS:  # measured before it is split
        state_core.say(
            "control.sentence",
            "error",
            f"The sentence is {len(text):,} characters long; it may have at most {names.MAX_SENTENCE_CHARS:,} "
            f"({names.MAX_TOKENS} tokens of up to {names.MAX_TOKEN_CHARS} characters). The previous tokens are kept.",
        )
        return
    tokens = tuple(text.split())
    if text == " ".join(s.tokens) or tokens == s.tokens:
        return  # unchanged (tokens that themselves contain spaces, from a preset file, are not re-split)
    if not tokens:
        state_core.say(
            "control.sentence",
            "error",
            "The sentence is empty: attention needs at least one token. "
            "The previous tokens are kept until you type one.",
        )
    elif len(tokens) > names.MAX_TOKENS:
        state_core.say(
            "control.sentence",
            "error",
            f"{len(tokens):,} tokens is more than the {names.MAX_TOKENS} this dashboard "
            "supports; the previous tokens are kept.",
        )
    elif (long := next((t for t in tokens if len(t) > names.MAX_TOKEN_CHARS), None)) is not None:
        state_core.say(
            "control.sentence",
            "error",
            f"The token {quoted(long)} is {len(long):,} characters long; a token may have "
            f"at most {names.MAX_TOKEN_CHARS}. The previous tokens are kept.",
        )
    else:
        state_edits.set_tokens(tokens)
        if s.embedding[0] != "preset":  # the new words get their own vectors, made the same way
            learning.set_embeddings(*s.embedding)
        bind(keys.tok_sentence(session.get().version), text)  # the box keeps the text if the editors were renewed


def sentence(s: session.Session) -> None:
    c1, c2 = st.columns([3, 1])
    key = keys.tok_sentence(s.version)
    bind(key, " ".join(s.tokens), once=True)
    c1.text_input(
        "Sentence (tokens are split on spaces)",
        key=key,
        on_change=_on_sentence,
        args=(key,),
        help="Add or remove words to change the number of tokens; existing rows of X are kept.",
    )
    show_messages("control.sentence", c1)
    dm_key = keys.tok_d_model(s.version)
    bind(dm_key, s.dims.d_model, once=True)
    c2.number_input(
        "d_model",
        key=dm_key,
        step=1,
        on_change=_on_d_model,
        args=(dm_key,),
        help=f"Columns of X (and rows of each W), 1 to {names.MAX_DIM}. Values that still fit are kept.",
    )
    show_messages("control.d_model", c2)


def _on_d_model(key: str) -> None:
    s = session.get()
    d = whole_number(key, "d_model", 1, names.MAX_DIM, "control.d_model", s.dims.d_model)
    if d is not None and d != s.dims.d_model:
        text = " ".join(s.tokens)
        if not state_edits.resize(d_model=d, place="control.d_model"):
            bind(key, s.dims.d_model)  # refused: the box shows the size in force
            return
        bind(keys.tok_sentence(session.get().version), text)


# ------------------------------------------------------------------------------------------ d_k


def d_k(s: session.Session) -> None:
    """Two boxes side by side: d_k (the width of Q and K) and d_v (the width of V)."""
    c1, c2 = st.columns(2)
    for col, dim, what in ((c1, "d_k", "Q and K"), (c2, "d_v", "V")):
        key = keys.dim_box(dim, s.version, s.options.projection)
        bind(key, getattr(s.dims, dim), once=True)
        col.number_input(
            f"{dim} (width of {what})",
            key=key,
            step=1,
            on_change=_on_width,
            args=(key, dim),
            help=f"Columns of {'W_q and W_k' if dim == 'd_k' else 'W_v'}, 1 to {names.MAX_DIM}; values that still fit "
            "are kept.",
        )
        show_messages(f"control.{dim}", col)


def _on_width(key: str, dim: str) -> None:
    s = session.get()
    current = getattr(s.dims, dim)
    d = whole_number(key, dim, 1, names.MAX_DIM, f"control.{dim}", current)
    if d is not None and d != current and not state_edits.resize(**{dim: d}, place=f"control.{dim}"):
        bind(key, current)  # refused: the box shows the size in force


# ------------------------------------------------------------------------------------------ W_o


def w_o(s: session.Session) -> None:
    """Mix the heads' outputs by W_o (an editable d_v × d_v matrix, the identity at first; a model's head: its rows of
    the model's W_o, d_v × d_model), and its editor."""
    bind(keys.W_O, "W_o" in s.matrices)
    w = s.matrices.get("W_o")
    label = "Mix the heads' outputs by W_o (output = concat · W_o)"
    if s.model_head is not None:
        label = "Apply the head's rows of the model's W_o (output = concat · W_o)"
        why = (
            "This head's rows of the model's W_o (d_head × d_model): the output is what the head adds to the model's "
            "residual stream, and an edit here flows into the model. Unticked, the output is the head's concat; the "
            "model keeps its own W_o."
        )
    elif w is not None and w.shape[0] != w.shape[1]:
        why = f"The preset's W_o ({w.shape[0]} × {w.shape[1]}) turns the heads' concatenated outputs into the output."
    else:
        why = (
            "Multi-head attention ends with an output projection W_o (d_v × d_v) that mixes what the heads "
            "found. It starts as the identity, so nothing changes until you edit it."
        )
    on_change = on_value(lambda v: options.set_w_o(bool(v)), keys.W_O)
    st.checkbox(label, key=keys.W_O, on_change=on_change, help=why)  # ours: labels
    show_messages("control.w_o")
    if "W_o" in s.matrices:
        editors.matrix_editor("W_o", s)
        import_box.matrix_import("W_o", s)
        downloads.matrix("W_o", s, "w_o")


# ------------------------------------------------------------------------------------------ batch note


def batch_note(s: session.Session) -> None:
    """For a preset whose X has a batch axis of one: what the dashboard shows, and what np.dot would give."""
    preset = s.origin.preset
    if preset.matrices()["X"].ndim != 3:
        return
    d = s.dims
    steps = {step.step: step for step in shape_trace((1, d.n, d.d_model), d.d_k, d.d_v)}
    scores, out = steps["scores = Q·Kᵀ"], steps["output = weights·V"]
    printed = preset.notes.get("output_shape")
    box = st.expander(f"This preset's X is a batch of one, shape (1, {d.n}, {d.d_model}): shapes in detail")
    box.markdown(  # folded: the details are for whoever wants them, not a wall of text on the way
        f"This preset's X is a batch of one: shape (1, {d.n}, {d.d_model}). The dashboard shows and edits its single "
        f"item, ({d.n}, {d.d_model}); the engine computes the batch with `@`. `np.dot` on 3-D arrays gives scores "
        f"of shape {scores.np_dot} (every query against every key of every batch item) where `@` gives "
        f"{scores.matmul}, and output {out.np_dot} where `@` gives {out.matmul}."
        + (f"\n\n{esc(printed, 600)}" if isinstance(printed, str) else "")
    )


CONTROLS: dict[str, Callable[[session.Session], None]] = {
    "sentence": sentence,
    "embeddings": embeddings.control,
    "d_k": d_k,
    "w_o": w_o,
    "batch_note": batch_note,
    "custom_mask": custom_mask,
    "positions": position_control,
    "source": cross.source,
}
