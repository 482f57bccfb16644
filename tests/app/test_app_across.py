"""One token across layers (First token page, under AppTest): every layer × head's weight on a chosen key token, from
one query or averaged over the queries after it, against loops over the engine's own weights; a choice the text
cannot hold is never shown."""

from __future__ import annotations

import numpy as np

from attention.model import builtin
from attention.ui.core import keys
from tests.helpers.apptest import app, no_exception, put_inside, select, session
from tests.helpers.drawn import subtitle_of, title_of

ENGINE = builtin("induction")  # a model of its own, not the page's


def _loop(weights: np.ndarray, key: int, query: int | None) -> np.ndarray:
    """Each head's weight on ``key``: at ``query``, or the mean over the queries after it, by loops: (L, H)."""
    L, H, n, _ = weights.shape
    out = np.zeros((L, H))
    for layer in range(L):
        for head in range(H):
            rows = [query] if query is not None else list(range(key + 1, n))
            out[layer, head] = sum(float(weights[layer, head, i, key]) for i in rows) / len(rows)
    return out


def _title(at) -> dict:
    chart = at.get("vega_lite_chart")[0]
    return {"text": title_of(chart), "subtitle": subtitle_of(chart)}


def _grid(at) -> np.ndarray:
    return at.dataframe[0].value.to_numpy()


def test_a_key_and_a_query_show_every_heads_weight_on_that_key() -> None:
    at = app("first_token")
    no_exception(at)
    ids = list(session(at).inside.ids)
    weights = ENGINE.run(ids).weights
    at = select(at, keys.ACROSS_KEY, 5)  # token 6, averaged over the queries after it
    no_exception(at)
    assert session(at).inside.across == (5, -1)
    np.testing.assert_allclose(_grid(at), np.round(_loop(weights, 5, None), 3), atol=1e-12)
    assert _title(at) == {"text": "Mean weight on token 6", "subtitle": f"queries 7–{len(ids)}, every layer × head"}
    at = select(at, keys.ACROSS_QUERY, 17)  # from query 18 only
    no_exception(at)
    assert session(at).inside.across == (5, 17)
    np.testing.assert_allclose(_grid(at), np.round(_loop(weights, 5, 17), 3), atol=1e-12)
    assert _title(at)["subtitle"].startswith("from query 18 (")
    at = select(at, keys.ACROSS_KEY, 20)  # a key after the query: the query falls back to the queries after it
    no_exception(at)
    assert session(at).inside.across == (20, -1)
    np.testing.assert_allclose(_grid(at), np.round(_loop(weights, 20, None), 3), atol=1e-12)


def test_the_default_is_token_1s_share_and_a_stale_choice_is_kept_within_the_text() -> None:
    at = app("first_token")
    ids = list(session(at).inside.ids)
    share = ENGINE.run(ids).weights[:, :, 1:, 0].mean(-1)
    np.testing.assert_allclose(_grid(at), np.round(share, 3), atol=1e-12)
    put_inside(at, across=(len(ids) + 5, 99))  # a choice made on a longer text
    at = at.run()
    no_exception(at)
    np.testing.assert_allclose(_grid(at), np.round(share, 3), atol=1e-12)
