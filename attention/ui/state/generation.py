"""The Generate page's state: the Session's ``generation`` record, made in :func:`gen_follow`, changed by callbacks.

The page works on the "Inside a model" pages' model and text (:mod:`.inside`); this module is the one writer of the
generation's record (:class:`attention.ui.core.session.Generation`): the prompt's length, how many tokens were made,
the model and text they were made for."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from ..core import keys
from ..core.session import Generation, get
from .inside import ensure, model, model_id
from .inside import now as inside_now

GEN_PRESS_MAX = 256  # new tokens one press makes at most, for the smallest models
PRESS_WORK = 10**9  # and at most about this many weights read a press (each token reads every weight once)
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


def now() -> Generation:
    """The Generate page's state (made by :func:`gen_follow`)."""
    return get().generation


def _set(**changes: object) -> None:
    s = get()
    s.generation = replace(s.generation, **changes)


def _gen_start(ids: tuple[int, ...], message: str) -> None:
    keep = gen_default_keep(ids, model().config.n_ctx)
    _set(keep=keep, steps=0, made_for=(model_id(), ids), message=("info", message) if message else None)
    st.session_state.pop(keys.GEN_KEEP, None)  # the box starts again from the new prompt's length


def gen_follow() -> None:
    """Make the Generate page's state once, and start the generation again (saying why) when the model or the text
    changed since it began: its tokens were the old text's continuation."""
    ensure()
    ids = inside_now().ids
    s = get()
    if s.generation is None:
        layer = EVERY_LAYER if _every_layer_fits() else 0
        s.generation = Generation(0, 0, ("", ()), None, layer, min(5, press_max()))
        _gen_start(ids, "")
        return
    was_model, was_ids = s.generation.made_for
    if (was_model, was_ids) == (model_id(), ids):
        return
    what = "model" if was_model != model_id() else "text"
    said = f"The {what} changed, so the generation started again from the new {what}'s prompt."
    if now().many > press_max():
        _set(many=press_max())
        st.session_state.pop(keys.GEN_MANY, None)
        said += f" This model makes at most {press_max()} tokens a press, so Generate now makes {press_max()}."
    _gen_start(ids, said)
    if not _layer_exists(now().layer):
        _set(layer=EVERY_LAYER if _every_layer_fits() else 0)
        st.session_state.pop(keys.GEN_LAYER, None)


def _every_layer_fits() -> bool:
    c = model().config
    return c.n_layers * c.n_heads <= 48


def _layer_exists(layer: object) -> bool:
    fits = layer == EVERY_LAYER and _every_layer_fits()
    return fits or (isinstance(layer, int) and 0 <= layer < model().config.n_layers)


def weights_per_token(config: object) -> int:
    """The weights one token is multiplied by: per layer W_q, W_k, W_v, W_o (4 d²) and the MLP (2 d · d_mlp), then
    the unembedding (d · V). A float64 model reads each of them from memory once per token: this is its cost."""
    d, mlp = config.d_model, 0 if config.attention_only else 2 * config.d_model * config.d_mlp
    return config.n_layers * (4 * d * d + mlp) + d * config.vocab_size


def press_max() -> int:
    """The most tokens one press makes for the chosen model: GEN_PRESS_MAX, fewer for a large model (a GPT-2 small
    reads 124 million weights a token: 8 tokens a press, a few seconds here)."""
    return max(1, min(GEN_PRESS_MAX, PRESS_WORK // weights_per_token(model().config)))


def gen_left() -> int:
    """How many more tokens fit in the context after the prompt and the tokens made so far."""
    return model().config.n_ctx - now().keep - now().steps


def on_gen_keep() -> None:
    """The prompt's length was typed: a whole number from 1 to the longest prompt; else a message, nothing changes
    (the box shows the length in force). A new prompt starts the generation again."""
    value, ids = st.session_state.get(keys.GEN_KEEP), inside_now().ids
    most = gen_keep_most(ids, model().config.n_ctx)
    if not (isinstance(value, int) and 1 <= value <= most):
        _set(
            message=(
                "error",
                f"The prompt keeps 1 to {most} tokens of the text; {value!r} is not one of them. Nothing changed.",
            )
        )
        st.session_state[keys.GEN_KEEP] = now().keep
        return
    if value != now().keep:
        _set(keep=value, steps=0, message=None)


def on_found_prompt() -> None:
    """A position found by its token was chosen on the Generate page: the prompt ends there (the text's tokens up to
    and including it, within the longest prompt); a new prompt starts the generation again."""
    value, ids = st.session_state.get(keys.FIND_PICK), inside_now().ids
    most = gen_keep_most(ids, model().config.n_ctx)
    if not (isinstance(value, int) and 0 <= value < most):
        return
    st.session_state[keys.GEN_KEEP] = value + 1  # the box shows it (bound once: set here, not dropped)
    if value + 1 != now().keep:
        _set(keep=value + 1, steps=0, message=None)


def on_gen_many() -> None:
    """How many tokens "Generate" makes: 1 to press_max(); else a message, nothing changes."""
    value, most = st.session_state.get(keys.GEN_MANY), press_max()
    if not (isinstance(value, int) and 1 <= value <= most):
        said = f"Generate makes 1 to {most} tokens a press with this model; {value!r} is not one of them. "
        _set(message=("error", said + "Nothing changed."))
        st.session_state[keys.GEN_MANY] = now().many
        return
    _set(many=value, message=None)


def on_gen_layer() -> None:
    """A layer (or every layer) was chosen for the query and attention rows."""
    value = st.session_state.get(keys.GEN_LAYER)
    if _layer_exists(value):
        _set(layer=value, message=None if _refusal() else now().message)  # a refusal does not outlive a new choice
    else:
        _set(message=("error", f"There is no layer {value!r} to show. Nothing changed."))
        st.session_state[keys.GEN_LAYER] = now().layer


def gen_more(count: int | None) -> None:
    """Generate ``count`` more tokens (None: as many as the box says), at most to the end of the context and at most
    press_max() a press; the message says when fewer were made than asked."""
    refused = _refusal()
    want = now().many if count is None else count
    left = gen_left()
    most = press_max()
    made = min(want, left, most)
    _set(steps=now().steps + made)
    if made < want and made == left:
        _set(
            message=(
                "info",
                (
                    f"Made {made} of the {want} tokens asked: the context of {model().config.n_ctx} is full."
                    if made
                    else f"The context of {model().config.n_ctx} tokens is full: nothing more can be generated. Press "
                    "Start again, or keep fewer tokens of the text in the prompt."
                ),
            )
        )
    elif made < want:
        _set(
            message=(
                "info",
                f"Made {made} tokens (at most {most} a press with this model: each token reads all its "
                f"{weights_per_token(model().config):,} weights); press again for more.",
            )
        )
    else:
        _set(message=None)
    if refused:  # a box's value refused in this same gesture (typed, then a button): said, with what was done
        done = f"This press made {made} token{'s' if made != 1 else ''}, with the numbers in force."
        _set(message=("warning", f"{refused} {done}" + (f" {now().message[1]}" if now().message else "")))


def _refusal() -> str:
    """The refusal the page shows now (a box's value not taken), without its "Nothing changed.", or ""."""
    said = now().message
    return said[1].removesuffix(" Nothing changed.") if said and said[0] == "error" else ""


def gen_to_end() -> None:
    """Generate until the context is full (at most press_max() tokens a press)."""
    gen_more(max(gen_left(), 1))


def gen_again() -> None:
    """Start the generation again from the prompt (the cache holds only the prompt)."""
    _set(steps=0, message=None)
