"""What the Logit lens and Attribution pages share: the position and token chosen, and the engine's readings.

The readings of the chosen model's run (:func:`attention.model.lens`, :func:`attention.model.attribute`) are made
once per content.

The position is the one Every head predicts from (``Inside.position``); the token (``Inside.token``) is the model's
prediction there unless the learner typed another. Both are written only by :mod:`attention.ui.state.inside`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...errors import AttentionError
from ...model import Attribution, attribute, lens, pushes
from ...model.config import Config
from ...model.layers import probabilities, ranks
from ..address import url
from ..core import keys, session
from ..core.cache import kept
from ..core.text import esc
from ..state import inside
from ..widgets.common import bind
from . import choose, find, runs

TOP = 5  # the lens's tokens shown per layer
SHOWN = 10  # tokens promoted and suppressed written out per part (what a part pushes toward, below)
NEURONS = 10  # an MLP's neurons listed, largest share first

# How a model turns a stream into logits, in words: the one home of these sentences, so that the Logit lens and
# Attribution say the same of a model, each from its config (whether there is a final norm, which, what is held).
NORMS = {
    "layernorm": "a LayerNorm (minus the mean, divided by the standard deviation, times a gain, plus a bias)",
    "rmsnorm": "an RMSNorm (divided by the root mean square, times a gain)",
}


def unembedding_words(c: Config) -> str:
    """The unembedding, said as this model has it: tied to the token embeddings or a matrix of its own."""
    return "the unembedding (the token embeddings, transposed: tied)" if c.tied else "the unembedding (its own matrix)"


def read_off(c: Config) -> str:
    """How this model reads its logits off the last stream: through its final norm (which kind) and the unembedding,
    or, with no final norm (attention-only), through the unembedding alone."""
    if c.attention_only:
        return f"This model has no final norm: its logits are the last stream times {unembedding_words(c)}."
    norm, out = NORMS[c.norm], unembedding_words(c)
    return f"This model reads its logits off the last stream through a final norm, {norm}, then {out}."


def through(c: Config) -> str:
    """ "through the final norm and the unembedding", or "through the unembedding" when there is no final norm."""
    return "through the unembedding" if c.attention_only else "through the final norm and the unembedding"


def lens_rule(c: Config) -> str:
    """What the lens holds: nothing; each row's stream goes through the model's own read-out, its norm's scale
    computed from that row's stream."""
    if c.attention_only:
        return "Each row's stream is multiplied by the unembedding, as the last one is; with no norm, nothing is held."
    return (
        "Each row's stream goes through the final norm and the unembedding as the last one does: the norm's scale is "
        "computed from that row's own stream (nothing is held)."
    )


def has_biases(c: Config) -> bool:
    """Whether Attribution's "biases" part can be other than 0: W_o's and the MLPs' biases, or a LayerNorm's shift
    (the final norm's β). W_q's, W_k's and W_v's biases act inside the heads and are in the heads' shares."""
    return c.bias or (not c.attention_only and c.norm == "layernorm")


def attribution_rule(c: Config, scale: float) -> str:
    """What Attribution holds to split the logit into parts, and why that makes it a sum: the final norm's scale at
    this position (``scale``), and on a model with post-attention norms, each one's scale at its layer's output."""
    if c.attention_only:
        said = (
            "With no norm, the logit is the last stream times the unembedding, so it splits exactly into what each "
            "part wrote into the stream (its share, below); nothing is held."
        )
    else:
        what = "standard deviation (LayerNorm)" if c.norm == "layernorm" else "root mean square (RMSNorm)"
        said = (
            f"**The final norm's scale is held** at its value at this position: it divides the stream by its {what}, "
            f"here {scale:.6g}. With that number fixed, the norm and the unembedding are a straight line from the "
            "stream to the logit, so the logit splits into what each part wrote into the stream (its share, below). "
            "A part's share is what it adds through that fixed scale, not what the logit would be without it."
        )
    if c.post_norms:
        said += (
            " Each head's output also passes its layer's post-attention norm before it is added: that norm's scale is "
            "held too, at the layer's whole attention output, so the heads of a layer add up to what it wrote."
        )
    return said


@dataclass(frozen=True)
class Lensed:
    """The lens at one position, as the page shows it: ``logits`` (layers + 1, V) each row of
    :func:`attention.model.lens` (row 0 after the embeddings, row l after layer l) and ``probs`` their softmax, both in
    float64 (float32 probabilities underflow to 0 for most of a large vocabulary); ``top`` (layers + 1, TOP) each
    row's most likely tokens; ``prediction`` the model's own (the last row's top token)."""

    logits: np.ndarray
    probs: np.ndarray
    top: np.ndarray
    prediction: int

    def rank(self, token: int) -> np.ndarray:
        """``token``'s rank in each row (1: the top token), read off the logits: (layers + 1,)."""
        return ranks(self.logits, token)


def _run(model_id: str, ids: tuple[int, ...], ablations: tuple[runs.Ablation, ...]):  # noqa: ANN202 - a model Run
    return runs.run(model_id, ids, ablations)


@kept(8)  # a GPT-2 small lens is 13 × 50,257 probabilities (5 MB), SmolLM2's 12 MB
def lensed(model_id: str, ids: tuple[int, ...], ablations: tuple, position: int) -> Lensed:
    """The logit lens of the model's run on ``ids`` (with ``ablations``) at ``position``, as probabilities."""
    logits = lens(_run(model_id, ids, ablations), position).astype(np.float64)  # (L + 1, V)
    probs = probabilities(logits)  # (L + 1, V)
    some = np.argpartition(-logits, TOP - 1, axis=-1)[:, :TOP]  # (L + 1, TOP): the TOP largest, in any order
    top = np.take_along_axis(some, np.argsort(-np.take_along_axis(logits, some, -1), axis=-1, kind="stable"), -1)
    logits.flags.writeable = probs.flags.writeable = False
    return Lensed(logits, probs, top, int(top[-1, 0]))


@kept(64)
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


def fragment_start() -> tuple[Lensed, Attribution | str, int]:
    """What the Logit lens's and Attribution's fragments start with: the whole page again if the model's banner
    went, the address following a choice made in the fragment, the controls and the position's note; then
    :func:`now`."""
    choose.whole_page_if_banner_went()
    url.write(session.get())  # a choice here reruns this part only: the address follows it
    controls()
    st.caption(position_note())  # ours: numbers, the token escaped
    return now()


def piece(token: int) -> str:
    """One token as a person reads it (spaces made visible, other control characters written as \\x0c); user text:
    escape it."""
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in runs.pieces([token])[0])


def controls() -> None:
    """The position (shared with Every head: by number, or found by its token) and the token, with the message of
    a refused value under them."""
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
        find.control(position, inside.on_found)
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


def position_note() -> str:
    """Which position the Logit lens, Attribution and Routes read, and why (escaped Markdown): the one chosen here
    and on Every head (the address's ``at``); Patching reads its own pair's last position, and says so."""
    ids, position, _ = inside.current()
    return (
        f"These pages read **position {position + 1} of {len(ids)}** (“{esc(runs.pieces([ids[position]])[0], 40)}”): "
        "the one chosen here, shared by Every head, the Logit lens, Attribution and Routes. Patching reads the last "
        "position of its own pair of texts instead: the prediction its corruption changes."
    )


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


# ------------------------------------------------------------------ what a part pushes toward, as tokens
# Each part's write at the chosen position through the final norm (its scale held, as Attribution holds it) and the
# unembedding (:mod:`attention.model.pushes`): the tokens it raises most are what it promotes, the lowest what it
# suppresses; an MLP also neuron by neuron. Read on the model as trained (no head ablated): a head's write is split by
# what it reads, which an ablation replaces. Shown on Every head's cards, Attribution and the Routes page.


@kept(32)
def head_pushes(model_id: str, ids: tuple[int, ...], position: int, layer: int, token: int):  # noqa: ANN201
    """Every head of ``layer``'s Push at ``position`` (for ``token``'s share), or why the engine refused."""
    try:
        return pushes.heads(_run(model_id, ids, ()), position, layer, token)
    except AttentionError as e:
        return f"{e}"


@kept(32)
def mlp_pushes(model_id: str, ids: tuple[int, ...], position: int, layer: int, token: int):  # noqa: ANN201
    """The MLP of ``layer``: (its Push, its Neurons) at ``position``, or why the engine refused."""
    try:
        run = _run(model_id, ids, ())
        return pushes.mlp(run, position, layer, token), pushes.neurons(run, position, layer, token, NEURONS)
    except AttentionError as e:
        return f"{e}"


def _where() -> tuple[str, tuple[int, ...], int, int]:
    """(model id, text, position, token followed) now."""
    _, _, token = now()
    i = inside.now()
    return i.model, i.ids, i.position, token


def tokens_line(push: pushes.Push, fmt, k: int = SHOWN) -> str:  # noqa: ANN001 - a str.format
    """ "Promotes ␣fa (+3.2), … · suppresses …", tokens escaped."""
    up = ", ".join(f"“{esc(piece(int(i)), 30)}” ({fmt(push.logits[i])})" for i in push.promoted[:k])
    down = ", ".join(f"“{esc(piece(int(i)), 30)}” ({fmt(push.logits[i])})" for i in push.suppressed[:k])
    return f"**Promotes** {up}  \n**Suppresses** {down}"


def _fmt(values: np.ndarray):  # noqa: ANN202 - a str.format
    return charts.decimals_for(np.asarray(values), session.get().digits).format


def _ablated_note() -> None:
    if inside.now().ablations:
        st.caption("Read on the model with no head ablated: a head's write is split by what it reads.")


def head(layer: int, head_: int) -> None:
    """What one head writes at the chosen position pushes toward: its top promoted and suppressed tokens."""
    model_id, ids, position, token = _where()
    got = head_pushes(model_id, ids, position, layer, token)
    if isinstance(got, str):
        st.caption(esc(got, 300))
        return
    push = got[head_]
    fmt = _fmt(push.logits)
    st.markdown(
        f"At position {position + 1}, {runs.name(layer, head_)} moves each logit by (final norm's scale held; its "
        f"share of “{esc(piece(token), 30)}”: **{fmt(push.share)}**):  \n" + tokens_line(push, fmt)
    )  # ours: numbers, tokens escaped
    _ablated_note()


def head_block(layer: int, head_: int) -> None:
    """Every head's card: the same, in a closed expander drawn only when opened."""
    box = st.expander("What it pushes toward (tokens)", key=keys.inside_head("push", layer, head_), on_change="rerun")
    if box.open:
        with box:
            head(layer, head_)


def mlp(layer: int) -> None:
    """What the MLP of ``layer`` pushes toward, then its neurons, largest share of the chosen token's logit first."""
    model_id, ids, position, token = _where()
    got = mlp_pushes(model_id, ids, position, layer, token)
    if isinstance(got, str):
        st.caption(esc(got, 300))
        return
    push, cells = got
    fmt = _fmt(np.r_[push.logits, cells.shares])
    st.markdown(
        f"At position {position + 1}, the MLP of layer {layer + 1} moves each logit by (its share of "
        f"“{esc(piece(token), 30)}”: **{fmt(push.share)}**):  \n" + tokens_line(push, fmt)
    )  # ours: numbers, tokens escaped
    st.markdown(
        f"**Its {len(cells.shares):,} neurons** each write their activation times their row of W_proj: their shares "
        f"of “{esc(piece(token), 30)}” ({fmt(float(cells.shares.sum()))}) plus the output bias's "
        f"({fmt(cells.bias)}) make the MLP's {fmt(cells.total)}. The {len(cells.pushes)} largest:"
    )  # ours: numbers, the token escaped
    rows = [
        {
            "neuron": int(k) + 1,
            "activation": float(cells.activations[k]),
            "share": float(cells.shares[k]),
            "promotes": " ".join(piece(int(i)) for i in p.promoted[:5]),
            "suppresses": " ".join(piece(int(i)) for i in p.suppressed[:5]),
        }
        for k, p in zip(cells.order, cells.pushes, strict=False)
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    _ablated_note()


def pick_mlp() -> None:
    """Attribution's MLPs: choose one (largest share first is the bars' order) and read it as tokens."""
    L = runs.model().config.n_layers
    chosen = st.selectbox(
        "Read an MLP as tokens", list(range(L)), format_func=lambda k: f"MLP of layer {k + 1}", key=keys.PUSH_MLP
    )
    if isinstance(chosen, int) and 0 <= chosen < L:
        mlp(chosen)
