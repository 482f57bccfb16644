"""Page controls named by the specs (sentence, d_model, d_k, the batch note), each validated in its callback.

Each draws its widget and, in its callback, validates the value and calls one of :mod:`attention.ui.state`'s
changes, or leaves a message and changes nothing. Number boxes have no browser-side limits: an out-of-range value
reaches the callback,
which refuses it on the page and puts the box back, instead of a widget silently clamping it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from .. import names
from ..shapes import shape_trace
from . import session, state
from .text import esc, quoted


def show_messages(place: str, where=st) -> None:
    """The messages left for ``place`` by the last change or refusal."""
    for kind, text in session.messages(place):
        icon = {"success": ":material/check_circle:", "error": ":material/error:", "warning": ":material/warning:"}.get(
            kind
        )
        getattr(where, kind)(text, icon=icon)


def whole_number(key: str, what: str, lo: int, hi: int, place: str, current: int) -> int | None:
    """The whole number in widget ``key``, or None after leaving a message and putting ``current`` back."""
    value = st.session_state.get(key)
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and float(value).is_integer()
        and lo <= value <= hi
    )
    if ok:
        return int(value)
    state.say(
        place,
        "error",
        f"{what} must be a whole number from {lo} to {hi}; {esc(value)} was not applied and {what} stays {current}.",
    )
    st.session_state[key] = current
    return None


def _bind(key: str, value: object) -> None:
    """Show the session's value in a widget the first time it is drawn under this key."""
    if key not in st.session_state:
        st.session_state[key] = value


# ------------------------------------------------------------------------------------------ sentence


def _on_sentence(key: str) -> None:
    s = session.get()
    text = st.session_state.get(key, "")
    tokens = tuple(text.split())
    if text == " ".join(s.tokens) or tokens == s.tokens:
        return  # unchanged (tokens that themselves contain spaces, from a preset file, are not re-split)
    if not tokens:
        state.say(
            "control.sentence",
            "error",
            "The sentence is empty: attention needs at least one token. "
            "The previous tokens are kept until you type one.",
        )
    elif len(tokens) > names.MAX_TOKENS:
        state.say(
            "control.sentence",
            "error",
            f"{len(tokens):,} tokens is more than the {names.MAX_TOKENS} this dashboard "
            "supports; the previous tokens are kept.",
        )
    elif (long := next((t for t in tokens if len(t) > names.MAX_TOKEN_CHARS), None)) is not None:
        state.say(
            "control.sentence",
            "error",
            f"The token {quoted(long)} is {len(long):,} characters long; a token may have "
            f"at most {names.MAX_TOKEN_CHARS}. The previous tokens are kept.",
        )
    else:
        state.set_tokens(tokens)
        st.session_state[f"tok.sentence.{session.get().version}"] = (
            text  # the box keeps the text if the editors were renewed
        )


def sentence(s: session.Session) -> None:
    c1, c2 = st.columns([3, 1])
    key = f"tok.sentence.{s.version}"
    _bind(key, " ".join(s.tokens))
    c1.text_input(
        "Sentence (tokens are split on spaces)",
        key=key,
        on_change=_on_sentence,
        args=(key,),
        help="Add or remove words to change the number of tokens; existing rows of X are kept.",
    )
    show_messages("control.sentence", c1)
    dm_key = f"tok.dmodel.{s.version}"
    _bind(dm_key, s.dims.d_model)
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
        state.resize(d_model=d)
        st.session_state[f"tok.sentence.{session.get().version}"] = text


# ------------------------------------------------------------------------------------------ d_k


def d_k(s: session.Session) -> None:
    key = f"w.dk.{s.version}.{s.options.projection}"
    _bind(key, s.dims.d_k)
    st.number_input(
        "d_k (width of Q, K and V)",
        key=key,
        step=1,
        on_change=_on_d_k,
        args=(key,),
        help=f"Columns of each W, 1 to {names.MAX_DIM}; values that still fit are kept.",
    )
    show_messages("control.d_k")


def _on_d_k(key: str) -> None:
    s = session.get()
    d = whole_number(key, "d_k", 1, names.MAX_DIM, "control.d_k", s.dims.d_k)
    if d is not None and d != s.dims.d_k:
        state.resize(d_k=d)


# ------------------------------------------------------------------------------------------ batch note


def batch_note(s: session.Session) -> None:
    """For a preset whose X has a batch axis of one: what the dashboard shows, and what np.dot would give."""
    preset = session.preset_for(s)
    if preset.matrices()["X"].ndim != 3:
        return
    d = s.dims
    steps = {step.step: step for step in shape_trace((1, d.n, d.d_model), d.d_k, d.d_v)}
    scores, out = steps["scores = Q·Kᵀ"], steps["output = weights·V"]
    printed = preset.notes.get("output_shape")
    st.info(
        f"This preset's X is a batch of one: shape (1, {d.n}, {d.d_model}). The dashboard shows and edits its single "
        f"item, ({d.n}, {d.d_model}); the engine computes the batch with `@`. `np.dot` on 3-D arrays gives scores of "
        f"shape "
        f"{scores.np_dot} (every query against every key of every batch item) where `@` gives {scores.matmul}, and "
        f"output {out.np_dot} where `@` gives {out.matmul}."
        + (f"\n\n{esc(printed, 600)}" if isinstance(printed, str) else "")
    )


CONTROLS: dict[str, Callable[[session.Session], None]] = {"sentence": sentence, "d_k": d_k, "batch_note": batch_note}


# ------------------------------------------------------------------------------------------ custom mask

MASK_GRID_MAX = 64  # tokens: a grid of checkboxes beyond this is not usable; load a preset file instead


def _on_mask_grid(key: str) -> None:
    s = session.get()
    n = len(s.tokens)
    payload = st.session_state.get(key) or {}
    edited = payload.get("edited_rows") if isinstance(payload, dict) else None
    if not isinstance(edited, dict) or payload.get("added_rows") or payload.get("deleted_rows"):
        state.say("control.mask", "error", "The mask grid sent something other than ticked cells; nothing was changed.")
        state.renew_grids()
        return
    grid = [list(row) for row in s.options.custom_mask]
    labels = s.labels
    for r, cells in edited.items():
        row = int(r) if str(r).isdigit() else -1
        if (
            not 0 <= row < n
            or not isinstance(cells, dict)
            or any(c not in labels or not isinstance(v, bool) for c, v in cells.items())
        ):
            state.say("control.mask", "error", "The mask grid sent a cell it does not have; nothing was changed.")
            state.renew_grids()
            return
        for c, v in cells.items():
            grid[row][labels.index(c)] = v
    state.set_custom_mask(tuple(tuple(r) for r in grid))


def custom_mask(s: session.Session) -> None:
    """A query × key grid of checkboxes for the custom mask (ticked = may attend), when the mask includes it."""
    if "custom" not in s.options.mask.split("+"):
        return
    n, labels = len(s.tokens), s.labels
    if n > MASK_GRID_MAX:
        st.info(f"The custom mask is edited as a grid up to {MASK_GRID_MAX} tokens; with {n}, set it in a preset file.")
        return
    st.markdown("**Custom mask** · tick where a query (row) may attend a key (column); untick to forbid it")
    df = pd.DataFrame(np.array(s.options.custom_mask, dtype=bool), index=labels, columns=labels)
    key = f"mask.grid.{s.version}.{s.grids}.{n}"
    st.data_editor(
        df,
        key=key,
        num_rows="fixed",
        on_change=_on_mask_grid,
        args=(key,),
        column_config={c: st.column_config.CheckboxColumn(c, width="small") for c in labels},
    )
    rows = [labels[i] for i, row in enumerate(s.options.custom_mask) if not any(row)]
    if rows:
        st.caption(
            f"{', '.join(esc(r) for r in rows[:8])} may attend no key: such a row gets weight 0 everywhere and "
            "output 0 (no NaN), as PyTorch's safe softmax does."
        )
    show_messages("control.mask")


CONTROLS["custom_mask"] = custom_mask
