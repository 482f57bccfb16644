"""The "First token" page: how much attention every head puts on token 1, and why (the attention sink), measured.

For head (l, h) and a text of n tokens, its share on the first token is the mean over the queries t = 2 .. n of its
weight A[t, 1] (query 1 can only see itself): the first-token score of :mod:`attention.model.roles`. The page also
measures the value vectors of the head that puts the most there: ‖v_j‖ for each token j (the head's value, d_head
numbers) and ‖v_j W_o,h‖ (what it writes into the stream), token 1's beside the others'.

Every head's weight on any one token, from one query or averaged over the queries after it, generalises the grid:

    w_lh(j) = 1/(n − 1 − j) · Σ_{i = j+1}^{n−1} A_lh[i, j]            (L, H)

is the first-token score at j = 0 (the page's default choice), and A_lh[i, j] for one query i ≥ j.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...model import roles
from ...names import token_labels
from ..core import keys, models, session
from ..core.cache import TraceCache, kept
from ..core.text import esc
from ..modelpages import choose, runs
from ..state import inside
from ..widgets.common import bind, vega_chart
from . import every_head, overview

STRONG = 0.5  # a head is said to park its weight on token 1 when its mean share there is at least this
SMALL = 0.5  # token 1's value is said to be small when its norm is below this fraction of the others' median


def body(s: session.Session) -> None:
    """Choose a model and a text; every head's share on token 1, the strongest sink's rows and its value vectors."""
    choose.chooser()
    every_head.choose_text()
    sinks()


@st.fragment
def sinks() -> None:
    """Every head's share on token 1, then the head with the most, its rows, and what its output is made of."""
    choose.whole_page_if_banner_went()
    ids, _, ablations = inside.current()
    now = measured(inside.model_id(), ids, ablations)
    share = now.scores["first-token sink"]  # (L, H): mean over t ≥ 1 of A[t, 0]
    L, H = share.shape
    chance = roles.uniform_scores(ids)["first-token sink"]
    tokens = runs.pieces(ids)
    layer, head = (int(k) for k in np.unravel_index(np.argmax(share), share.shape))
    many = int((share >= STRONG).sum())
    st.markdown(
        "**The rule behind it.** Each row of a head's weights is a softmax over the tokens the query may see: the "
        "numbers are positive and **must add up to 1**. A head has no way to say *nothing here*: when the token it "
        "looks for is absent, its weight still has to go somewhere. Token 1 is the one key every query can see (the "
        "causal mask hides the later ones), so trained models often learn to park the spare weight there, and to "
        "give token 1 a small value so that parking it adds little. That is an **attention sink**."
    )
    if ablations:
        st.caption("Measured with the heads ablated on the Every head page: " + runs_names(ablations) + ".")
    st.markdown(
        f"**On your text** ({len(ids)} tokens, token 1 is “{esc(tokens[0], 40)}”): the head with the most weight "
        f"on token 1 is **{runs.name(layer, head)}**, a mean of **{share[layer, head]:.2f}** over queries 2 to "
        f"{len(ids)}; a head spreading its weight evenly would put {chance:.2f} there. "
        + (
            f"{many} of the {L * H} heads put at least {STRONG} there."
            if many
            else f"No head puts {STRONG} or more there: on this model and text the sink is weak{doing(now.roles)}"
        )
    )
    st.markdown(
        "**Every head's weight on one token.** Token 1 with the mean over the queries after it is the share above; "
        "choose another key token, or one query, to follow any token across the layers."
    )
    across(now.after, lambda query: query_rows(inside.model_id(), ids, ablations, query), tokens, keys.SINK_GRID)
    strongest(ids, ablations, layer, head, tokens)


@dataclass(frozen=True)
class Sinks:
    """What the page shows of a run, from Every head's measurement of it (:func:`runs.measure`: a layer at a time in
    blocks of query rows, no layer's n × n weights kept):
    ``scores`` each kind's (layers, heads) (:func:`attention.model.roles.head_scores`), ``roles`` (layers, heads),
    ``after`` (layers, heads, n) each head's mean weight on key j over the queries after it (the module's
    w_lh(j), for every key at once)."""

    scores: dict[str, np.ndarray]
    roles: np.ndarray
    after: np.ndarray


_ROWS = TraceCache(max_bytes=64 << 20, max_entries=32, ttl=3600, measure=lambda a: int(a.nbytes))


def measured(model_id: str, ids: tuple[int, ...], ablations: tuple) -> Sinks:
    """The run's :class:`Sinks`: the Every head page's measurement of it (:func:`runs.measure`, made once per
    content, a layer at a time in blocks of query rows), so opening one page after the other measures nothing
    again."""
    now = runs.measure(ids, ablations, model_id)
    return Sinks(now.scores, now.roles, now.after)


def query_rows(model_id: str, ids: tuple[int, ...], ablations: tuple, query: int) -> np.ndarray:
    """Every head's weights from one query: (layers, heads, n), made for that row only, once per content."""

    def made() -> np.ndarray:
        run = runs.run(model_id, ids, ablations)
        return np.stack([run.traces.rows(layer, [query])[:, 0] for layer in range(len(run.traces))])

    return _ROWS.get(("rows", model_id, ids, ablations, query), made)


def strongest(ids: tuple[int, ...], ablations: tuple, layer: int, head: int, tokens: list[str]) -> None:
    """The head with the most weight on token 1: its weights, each row's share on token 1, its value vectors."""
    A = runs.run(inside.model_id(), ids, ablations).head(layer, head).weights  # (n, n): this head's only
    labels = token_labels(tokens)
    n = len(ids)
    st.subheader(f"Inside {runs.name(layer, head)}")
    left, right = st.columns([3, 2], gap="medium")
    with left:
        style = charts.HEAD.but(
            title=runs.name(layer, head),
            subtitle="its weights; column 1 is token 1",
            row_height=every_head.row_height(n),
        )
        spec = charts.heatmap(A, labels, labels, style, runs.allowed(layer, n))
        vega_chart(spec, width="stretch", key=keys.SINK_HEAD)
    seen = np.array([bool(to) for to in roles.induction_targets(ids)])  # (n,): the token occurred before
    found, nothing = seen[1:], ~seen[1:]  # queries 2 .. n with and without an earlier copy of their token
    if found.any() and nothing.any():
        st.markdown(
            f"**Where it parks its weight.** On the queries whose token has not occurred before (nothing for a copying "
            f"head to find; {int(nothing.sum())} of them) it puts a mean **{A[1:, 0][nothing].mean():.2f}** on token "
            f"1; on the queries whose token did occur before ({int(found.sum())}), "
            f"**{A[1:, 0][found].mean():.2f}**."
        )
    v, vo = value_norms(runs.model_id(), ids, ablations, layer, head)
    others = np.median(v[1:]), np.median(vo[1:])
    with right:
        rows = {
            "query": labels,
            "on token 1": np.round(A[:, 0], 3),
            "most elsewhere": np.round(np.r_[0.0, (A[1:, 1:]).max(axis=-1)], 3),
            "‖v‖": np.round(v, 3),
        }
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=300)
    small = v[0] < SMALL * others[0]
    st.markdown(
        f"**What it adds.** The head's output at a row is the weighted sum of the value vectors, Σ_j A[t, j] v_j. "
        f"Token 1's value vector has norm **{v[0]:.2f}**; the other tokens' median is **{others[0]:.2f}** "
        f"({v[0] / others[0]:.2f} times as long). Through W_o, what it writes into the stream: **{vo[0]:.2f}** against "
        f"a median of **{others[1]:.2f}**. "
        + (
            "So token 1's value is small: a row that parks its weight there adds little to the stream. That is the "
            "sink doing its job: a way to attend and change almost nothing."
            if small
            else "Token 1's value is not small here: each row adds its weight on token 1 times token 1's value to the "
            "stream. On this model token 1 is not a place to attend and change nothing (a model learns that only "
            "when it helps: the attention-sink paper, StreamingLLM, found it in Llama-2, MPT, Falcon and Pythia)."
        )
    )


def doing(found: np.ndarray) -> str:
    """What the heads do instead, in words, from their roles measured on the text (layers, heads) of str: the heads
    that find tokens, counted by role (induction from layer 2 on: a first-layer head cannot be one, see Every head),
    or that no head has a clear role (a random model's spread-out rows)."""
    finders = [
        ("previous-token", int((found == "previous-token").sum())),
        ("induction", int((found[1:] == "induction").sum())),
    ]
    named = " and ".join(f"{k} {r} head{'s' if k != 1 else ''}" for r, k in finders if k)
    if named:
        return f"; its heads find tokens instead: {named} (the Every head page names them)."
    return (
        f", and no head has a clear role either (none scores {roles.ROLE_MIN} or more as previous-token, induction "
        "or first-token sink): their weights are spread over the tokens they see, as an untrained model's are."
    )


def runs_names(ablations: tuple) -> str:
    return ", ".join(f"{runs.name(layer, head)} ({how})" for layer, head, how in ablations)


@kept(32)
def value_norms(
    model_id: str, ids: tuple[int, ...], ablations: tuple, layer: int, head: int
) -> tuple[np.ndarray, np.ndarray]:
    """(‖v_j‖, ‖v_j W_o,h‖) for every token j (n,) each: the head's value vectors (bias included) and what they
    write into the stream through the head's rows of W_o."""
    m = models.get(model_id)
    V = runs.run(model_id, ids, ablations).head(layer, head).V  # (n, d_head)
    dh = m.config.d_head
    W_o = m.layer_weights(layer)[3][head * dh : (head + 1) * dh]  # (d_head, d)
    return np.linalg.norm(V, axis=-1), np.linalg.norm(V @ W_o, axis=-1)  # (n,), (n,)


# One token across layers: every head's weight on a chosen key token

AFTER = -1  # the query choice "the queries after the key", averaged


def chosen(n: int) -> tuple[int, int]:
    """The key and query chosen (0-based; query AFTER for the mean), kept within an n-token text."""
    key, query = inside.now().across
    key = key if 0 <= key < n else 0
    return key, query if key <= query < n else AFTER


def titles(key: int, query: int, n: int, tokens: list[str]) -> tuple[str, str]:
    """The grid's title and subtitle: "Mean weight on token 1", "queries 2–24, every layer × head"."""
    if query == AFTER:
        first, last = (key + 2, n) if key < n - 1 else (n, n)
        span = f"query {n}" if first == last else f"queries {first}–{last}"
        return f"Mean weight on token {key + 1}", f"{span}, every layer × head"
    return f"Weight on token {key + 1}", f"from query {query + 1} ({tokens[query][:20]}), every layer × head"


def choose_key(n: int, tokens: list[str]) -> tuple[int, int]:
    """A key token and a query (the queries after it, or one that can see it); the choice (0-based)."""
    key, query = chosen(n)
    left, right = st.columns(2, gap="medium")
    bind(keys.ACROSS_KEY, key)
    left.selectbox(
        "Key token (the one attended to)",
        list(range(n)),
        format_func=lambda k: f"{k + 1}: {tokens[k]}",
        key=keys.ACROSS_KEY,
        on_change=lambda: inside.on_across(st.session_state[keys.ACROSS_KEY], chosen(n)[1]),
    )
    bind(keys.ACROSS_QUERY, query)
    right.selectbox(
        "Query (the token attending)",
        [AFTER, *range(key, n)],
        format_func=lambda i: "the mean over the queries after it" if i == AFTER else f"{i + 1}: {tokens[i]}",
        key=keys.ACROSS_QUERY,
        on_change=lambda: inside.on_across(chosen(n)[0], st.session_state[keys.ACROSS_QUERY]),
    )
    return key, query


def across(
    after: np.ndarray, rows_of: Callable[[int], np.ndarray], tokens: list[str], grid_key: str
) -> np.ndarray:
    """Choose a key and a query; every layer × head's weight on that key as a heatmap and a table: the mean over the
    queries after it from ``after`` (L, H, n), or one query's from ``rows_of(query)`` (L, H, n). The values (L, H)."""
    n = after.shape[-1]
    key, query = choose_key(n, tokens)
    values = after[:, :, key] if query == AFTER else rows_of(query)[:, :, key]  # (L, H)
    L, H = values.shape
    left, right = st.columns([3, 2], gap="medium")
    with left:
        vega_chart(overview.grid_spec(values, *titles(key, query, n, tokens)), width="stretch", key=grid_key)
    with right:
        table = pd.DataFrame(
            np.round(values, 3), index=[f"layer {k + 1}" for k in range(L)], columns=[f"head {k + 1}" for k in range(H)]
        )
        st.dataframe(table, width="stretch")
    return values
