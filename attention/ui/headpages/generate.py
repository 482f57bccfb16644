"""The "Generate" page: greedy generation step by step through the KV cache, and what the cache holds."""

from __future__ import annotations

import streamlit as st

from ... import kvcache
from ..core import keys, session
from ..core.text import esc
from ..modelpages import choose, find, runs, walks
from ..state import generation as gen
from ..state import inside
from ..widgets.common import bind
from . import every_head, genviews

BYTES = ((8, "float64", "what this engine keeps"), (4, "float32", ""), (2, "float16 / bfloat16", "as most servers"))


def body(s: session.Session) -> None:
    """Choose the text, keep part of it as the prompt, then generate one token at a time."""
    choose.chooser()  # the model (a change starts the generation again)
    gen.gen_follow()
    every_head.choose_text()
    ablated = inside.current()[2]
    if ablated:
        names = ", ".join(runs.name(layer, head) for layer, head, _ in ablated)
        st.caption(f"Ablated on Every head: {names}. Generation here runs the whole model, nothing ablated.")
    generating()


@st.fragment
def generating() -> None:
    """The prompt, the buttons, and the last step: a press reruns only this part of the page."""
    choose.whole_page_if_banner_went()
    ids = inside.current()[0]
    keep, steps = gen.now().keep, gen.now().steps
    controls(ids)
    said = gen.now().message
    if said:
        {"error": st.error, "warning": st.warning}.get(said[0], st.info)(esc(said[1], 600))
    w = walks.walk(inside.model_id(), tuple(ids[:keep]), steps)
    show_tokens(w, ids)
    left, right = st.columns([1, 1], gap="medium")
    with left:
        genviews.next_tokens(w)
    with right:
        cache_bytes(w)
    genviews.query_and_row(w)
    genviews.cache_rows(w)
    genviews.history(w)


def controls(ids: tuple[int, ...]) -> None:
    """The prompt's length, Next token, Generate N, Generate to the end, Start again."""
    n_ctx = runs.model().config.n_ctx
    most = gen.gen_keep_most(ids, n_ctx)
    left = gen.gen_left()
    a, b, c = st.columns([2, 2, 1], gap="medium")
    with a:
        bind(keys.GEN_KEEP, gen.now().keep, once=True)
        st.number_input(
            f"Prompt: the first tokens of the text (1 to {most}), then press Enter",
            step=1,
            key=keys.GEN_KEEP,
            on_change=gen.on_gen_keep,
            help="The prompt runs through the model in one forward pass; its keys and values fill the cache. "
            "Every token generated after it runs alone, attending the cache.",
        )
        find.control(gen.now().keep - 1, gen.on_found_prompt, "the prompt's last token")
    with b:
        bind(keys.GEN_MANY, gen.now().many, once=True)
        st.number_input(
            f"Tokens to generate (1 to {gen.press_max()})",
            step=1,
            key=keys.GEN_MANY,
            on_change=gen.on_gen_many,
        )
    with c:
        st.markdown(f"**{left}** more token{'s' if left != 1 else ''} fit in the context of {n_ctx}.")
    full = left <= 0  # nothing more fits: the buttons that make tokens are off, and the page says why
    buttons = st.columns([1, 1, 1.3, 1], gap="small")
    buttons[0].button(
        "Next token",
        key=keys.GEN_NEXT,
        on_click=gen.gen_more,
        args=(1,),
        type="primary",
        width="stretch",
        disabled=full,
    )
    buttons[1].button(
        f"Generate {gen.now().many}",
        key=keys.GEN_MORE,
        on_click=gen.gen_more,
        args=(None,),
        width="stretch",
        disabled=full,
    )
    buttons[2].button(
        "Generate to the end", key=keys.GEN_END, on_click=gen.gen_to_end, width="stretch", disabled=full
    )
    buttons[3].button("Start again", key=keys.GEN_AGAIN, on_click=gen.gen_again, width="stretch")
    if full:
        st.caption(
            f"The context of {n_ctx} tokens is full: the prompt and the tokens made fill it, so Next token and "
            "Generate are off. Press Start again, or keep fewer tokens of the text in the prompt."
        )


def show_tokens(w: walks.Walk, ids: tuple[int, ...]) -> None:
    """The prompt and the tokens made so far (each marked against the text's own next tokens, where it has them),
    and how many of them match: on a repeated text, how much of the repeat the model completed."""
    pieces = runs.pieces(list(w.tokens))
    P = len(w.prompt)
    made = []
    for k, (token, piece) in enumerate(zip(w.tokens[P:], pieces[P:], strict=True)):
        t = P + k
        mark = "" if t >= len(ids) else (" ✓" if token == ids[t] else " ✗")
        made.append(f"**{t + 1} {esc(piece)}**{mark}")
    prompt = " · ".join(f"{k + 1} {esc(p)}" for k, p in enumerate(pieces[:P]))
    st.markdown(f"**Prompt ({P} tokens):** {prompt}")  # ours: tokens escaped
    st.markdown(
        f"**Generated ({w.steps}):** " + (" · ".join(made) if made else "nothing yet: press *Next token*.")
    )  # ours: tokens escaped
    st.caption(completion(w, ids))


def completion(w: walks.Walk, ids: tuple[int, ...]) -> str:
    """How many generated tokens equal the text's own tokens at the same positions (✓ above), in words."""
    P = len(w.prompt)
    n, half = len(ids), len(ids) // 2
    compared = min(w.steps, n - P)
    right = sum(a == b for a, b in zip(w.tokens[P : P + compared], ids[P : P + compared], strict=True))
    repeated = n >= 8 and ids[:half] == ids[half : 2 * half] and half < P
    if compared <= 0:
        return (
            "Marks: ✓ where a generated token equals the text's own token at that position, ✗ where it differs."
            if n > P
            else "The prompt is the whole text: there is nothing of the text to compare the new tokens with."
        )
    what = (
        f"of the {n - P} repeated tokens after the prompt, the model completed {right} of the {compared} made so "
        "far correctly (it copies the first half: an induction head at work)"
        if repeated
        else f"{right} of the {compared} generated tokens so far equal the text's own next tokens"
    )
    return f"Compared with the text: {what}. ✓ the same token as the text, ✗ a different one."


def cache_bytes(w: walks.Walk) -> None:
    """What the cache holds now, counted from its arrays, and the formula at other widths and at the full context."""
    m = runs.model()
    c = m.config
    t = len(w.tokens)
    st.subheader("The cache's size")
    grouped = c.kv_heads != c.n_heads
    st.markdown(
        "Per token the cache keeps, in every layer, one key and one value per "
        + (f"key/value head ({c.n_heads} query heads share {c.kv_heads}): " if grouped else "head: ")
        + f"{c.n_layers} layers × 2 × {c.kv_heads} heads × {c.d_head} numbers = "
        f"{2 * c.n_layers * c.kv_heads * c.d_head:,} numbers. It holds **{t}** token{'s' if t != 1 else ''} now."
    )
    rows = []
    for size, name, note in BYTES:
        now, full = walks.cache_bytes(m, t, size), walks.cache_bytes(m, c.n_ctx, size)
        rows.append(
            f"| {name}{f' ({note})' if note else ''} | {kvcache.readable(now)} ({now:,} B) | {kvcache.readable(full)} |"
        )
    st.markdown(
        f"| numbers kept as | now ({t} tokens) | at the full context ({c.n_ctx}) |\n|---|---|---|\n" + "\n".join(rows)
    )  # ours: numbers only
    st.caption(
        f"This model computes in {m.dtype} ({m.dtype.itemsize} bytes a number): its cache's arrays hold "
        f"{w.cache_bytes:,} bytes, "
        "counted from the arrays themselves. A served model usually keeps them in float16 or bfloat16 (2 bytes)."
    )
