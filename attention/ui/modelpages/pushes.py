"""What a head, an MLP or one of its neurons pushes toward, as tokens: the block Every head's cards, Attribution and
the Routes page show (:mod:`attention.model.pushes`).

Each part's write at the chosen position goes through the final norm (its scale held, as Attribution holds it) and
the unembedding: the tokens it raises most are what it promotes, the lowest what it suppresses. An MLP is also taken
apart neuron by neuron, each one's share of the chosen token's logit. Read on the model as trained (no head ablated):
a head's write is split by what it reads, which an ablation replaces.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...errors import AttentionError
from ...model import pushes
from ..core import keys, models, session
from ..core.text import esc
from ..state import inside
from . import readout, runs

SHOWN = 10  # tokens promoted and suppressed written out per part
NEURONS = 10  # an MLP's neurons listed, largest share first


def _run(model_id: str, ids: tuple[int, ...]):  # noqa: ANN202 - a model Run
    m = models.get(model_id)
    with models.LOCK:  # the run cache is not shared safely between threads
        return m.run(list(ids))


@functools.lru_cache(maxsize=32)
def head_pushes(model_id: str, ids: tuple[int, ...], position: int, layer: int, token: int):  # noqa: ANN201
    """Every head of ``layer``'s Push at ``position`` (for ``token``'s share), or why the engine refused."""
    try:
        return pushes.heads(_run(model_id, ids), position, layer, token)
    except AttentionError as e:
        return f"{e}"


@functools.lru_cache(maxsize=32)
def mlp_pushes(model_id: str, ids: tuple[int, ...], position: int, layer: int, token: int):  # noqa: ANN201
    """The MLP of ``layer``: (its Push, its Neurons) at ``position``, or why the engine refused."""
    try:
        run = _run(model_id, ids)
        return pushes.mlp(run, position, layer, token), pushes.neurons(run, position, layer, token, NEURONS)
    except AttentionError as e:
        return f"{e}"


def _where() -> tuple[str, tuple[int, ...], int, int]:
    """(model id, text, position, token followed) now."""
    _, _, token = readout.now()
    i = inside.now()
    return i.model, i.ids, i.position, token


def tokens_line(push: pushes.Push, fmt, k: int = SHOWN) -> str:  # noqa: ANN001 - a str.format
    """ "Promotes ␣fa (+3.2), … · suppresses …", tokens escaped."""
    up = ", ".join(f"“{esc(readout.piece(int(i)), 30)}” ({fmt(push.logits[i])})" for i in push.promoted[:k])
    down = ", ".join(f"“{esc(readout.piece(int(i)), 30)}” ({fmt(push.logits[i])})" for i in push.suppressed[:k])
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
        f"share of “{esc(readout.piece(token), 30)}”: **{fmt(push.share)}**):  \n" + tokens_line(push, fmt)
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
        f"“{esc(readout.piece(token), 30)}”: **{fmt(push.share)}**):  \n" + tokens_line(push, fmt)
    )  # ours: numbers, tokens escaped
    st.markdown(
        f"**Its {len(cells.shares):,} neurons** each write their activation times their row of W_proj: their shares "
        f"of “{esc(readout.piece(token), 30)}” ({fmt(float(cells.shares.sum()))}) plus the output bias's "
        f"({fmt(cells.bias)}) make the MLP's {fmt(cells.total)}. The {len(cells.pushes)} largest:"
    )  # ours: numbers, the token escaped
    rows = [
        {
            "neuron": int(k) + 1,
            "activation": float(cells.activations[k]),
            "share": float(cells.shares[k]),
            "promotes": " ".join(readout.piece(int(i)) for i in p.promoted[:5]),
            "suppresses": " ".join(readout.piece(int(i)) for i in p.suppressed[:5]),
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
