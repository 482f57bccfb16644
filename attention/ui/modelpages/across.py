"""One token across layers: every layer × head's weight on a chosen key token, from a chosen query.

For a text of n tokens, head (l, h)'s weight on key j is A_lh[i, j] for a chosen query i ≥ j (a query before j cannot
see it), or the mean over the queries after it,

    w_lh(j) = 1/(n − 1 − j) · Σ_{i = j+1}^{n−1} A_lh[i, j]            (L, H)

which for j = 0 (token 1) is the first-token score of :mod:`attention.model.roles`: the First token page's grid is
this view at its default choice. Drawn as one layers × heads heatmap (:func:`overview.grid_spec`) and a table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ..core import keys
from ..state import inside
from ..widgets.common import bind, vega_chart
from . import overview

AFTER = -1  # the query choice "the queries after the key", averaged


def weights_on(weights: np.ndarray, key: int, query: int = AFTER) -> np.ndarray:
    """Every head's weight on ``key`` (L, H) from ``weights`` (L, H, n, n): at ``query`` (≥ key), or averaged over
    the queries after the key (its own row when it is the last token)."""
    n = weights.shape[-1]
    if query != AFTER:
        return weights[:, :, query, key]  # (L, H)
    rows = slice(key + 1, n) if key < n - 1 else slice(key, n)
    return weights[:, :, rows, key].mean(axis=-1)  # (L, H)


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


def choose(n: int, tokens: list[str]) -> tuple[int, int]:
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


def view(weights: np.ndarray, tokens: list[str], grid_key: str) -> np.ndarray:
    """Choose a key and a query; every layer × head's weight on that key as a heatmap and a table. The values (L, H)."""
    n = weights.shape[-1]
    key, query = choose(n, tokens)
    values = weights_on(weights, key, query)  # (L, H)
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
