"""Heatmap helpers: block pooling against a naive loop, colour scales, the path chosen by size."""

from __future__ import annotations

import numpy as np
import pytest

from attention import charts


def _naive_pool(a: np.ndarray, f: int, pool: str) -> np.ndarray:
    rows, cols = -(-a.shape[0] // f), -(-a.shape[1] // f)
    out = np.full((rows, cols), np.nan)
    for i in range(rows):
        for j in range(cols):
            block = a[i * f : (i + 1) * f, j * f : (j + 1) * f]
            block = block[np.isfinite(block)]
            if block.size:
                extreme = block[np.argmax(np.abs(block))]  # the value farthest from 0, its sign kept
                out[i, j] = {"max": block.max(), "mean": block.mean(), "extreme": extreme}[pool]
    return out


@pytest.mark.parametrize("pool", ["max", "mean", "extreme"])
@pytest.mark.parametrize("shape,factor", [((10, 7), 3), ((64, 64), 8), ((5, 5), 5), ((9, 4), 2)])
def test_pool_blocks_matches_a_naive_loop(pool: str, shape: tuple[int, int], factor: int) -> None:
    a = np.random.RandomState(sum(shape)).randn(*shape)
    np.testing.assert_allclose(charts.pool_blocks(a, factor, pool), _naive_pool(a, factor, pool))
    a[:factor, :factor] = -np.inf  # a fully masked block stays NaN (grey)
    a[-1, -1] = np.nan
    np.testing.assert_allclose(charts.pool_blocks(a, factor, pool), _naive_pool(a, factor, pool))


def test_pool_blocks_reduces_a_stack_of_heads_each_by_the_naive_loop() -> None:
    """A layer's heads (H, n, n) at once, as Every head reduces a long text: each head's blocks are its own loop's,
    a masked cell (NaN) left out and a wholly masked block NaN."""
    rs = np.random.RandomState(7)
    a = rs.random_sample((3, 37, 37))
    a[np.broadcast_to(np.triu(np.ones((37, 37), bool), 1), a.shape)] = np.nan  # causal: future keys masked
    got = charts.pool_blocks(a, 5, "max")  # (3, 8, 8)
    assert got.shape == (3, 8, 8)
    for k in range(3):
        np.testing.assert_array_equal(got[k], _naive_pool(a[k], 5, "max"))
    assert charts.panel_block(128) == 1 and charts.panel_block(129) == 2 and charts.panel_block(2046) == 16
    assert charts.block_labels(35, 16) == ["1–16", "17–32", "33–35"]


def test_a_few_rows_over_many_keys_keep_their_rows_and_pool_only_the_keys() -> None:
    """Generate's chart at 2,047 cached keys: one weight row per head (9 rows) over the keys. Only the key axis is
    pooled (blocks of 1 × 64, each its max against a loop over each row's slices); the rows keep the heads' names."""
    rs = np.random.RandomState(11)
    w = rs.random_sample((9, 2047))
    w /= w.sum(axis=1, keepdims=True)
    heads = [f"layer 1 · head {h + 1}" for h in range(9)]
    keys = [f"k{j}" for j in range(2047)]
    spec = charts.heatmap(w, heads, keys, charts.Style(kind="weights", title="t", row_title="head", col_title="key"))
    cells = next(iter(spec["datasets"].values()))
    f = -(-2047 // charts.BLOCK_GRID)  # 64
    assert spec["title"]["subtitle"] == f"blocks of 1×{f}: each its max"
    assert len(cells) == 9 * -(-2047 // f)
    rows = sorted({c["query"] for c in cells})
    assert rows == sorted(heads)
    naive = [[w[i, j * f : (j + 1) * f].max() for j in range(-(-2047 // f))] for i in range(9)]
    np.testing.assert_array_equal(charts.pool_blocks(w, (1, f), "max"), np.array(naive))


def test_colour_scales_fit_each_step() -> None:
    assert charts.colour_for("weights", np.array([[0.2, 0.8]])).domain == (0.0, 1.0)
    # signed values: diverging, centred at 0 and symmetric, so white is 0 whatever the range
    assert charts.colour_for("scores", np.array([[-3.0, -np.inf, 5.0]])).domain == (-5.0, 0.0, 5.0)
    assert charts.colour_for("scores", np.array([[2.0, 4.0]])).domain == (-4.0, 0.0, 4.0)
    assert charts.colour_for("diff", np.array([[0.5, -0.25]])).colours == charts.DIVERGING


def test_small_matrices_draw_every_cell_and_large_ones_draw_blocks() -> None:
    small = charts.heatmap(np.eye(3), list("abc"), list("abc"), charts.Style(kind="weights", title="t"))
    assert len(small["data"]["values"]) == 9
    n = 1000
    labels = [str(i) for i in range(n)]
    big = charts.heatmap(np.full((n, n), 1 / n), labels, labels, charts.Style(kind="weights", title="t"))
    data = big["datasets"]
    cells = len(data[next(iter(data))])
    assert cells <= charts.BLOCK_GRID**2
    assert "blocks of" in big["title"]["subtitle"]


def test_the_reading_matches_a_naive_loop_and_marks_fully_masked_rows() -> None:
    import attention

    rs = np.random.RandomState(3)
    t = attention.self_attention(
        rs.randn(7, 4),
        rs.randn(4, 4),
        rs.randn(4, 4),
        rs.randn(4, 4),
        mask="padding",
        padding=(False, True, False, False, False, False, False),
    )
    r = t.reading
    for i, row in enumerate(t.weights):
        order = sorted(range(7), key=lambda j: (-row[j], j))  # a full sort, ties to the first key, as argmax
        assert (r.top[i], r.second[i]) == (order[0], order[1])
        assert r.top_weight[i] == row[order[0]] and r.second_weight[i] == row[order[1]]
        assert r.entropy[i] == pytest.approx(-sum(p * np.log2(p) for p in row if p > 0), rel=1e-12)
    assert not r.fully_masked.any() and (r.top != 1).all()  # nobody attends the padding token
    assert t.reading is r  # computed once per trace
    all_pad = attention.self_attention(
        rs.randn(3, 4), rs.randn(4, 4), rs.randn(4, 4), rs.randn(4, 4), mask="padding", padding=(True, True, True)
    )
    assert all_pad.reading.fully_masked.all()


def test_a_heads_habit_is_read_from_its_weights() -> None:
    from attention.reading import habit, read

    n = 5
    prev = np.eye(n, k=-1) * 0.9 + 0.1 / n  # row i puts most weight on i - 1 (row 0 spreads out)
    prev[0] = 1 / n
    h = habit(read(prev))
    assert (h.kind, h.rows, h.of) == ("previous", n - 1, n)  # row 0's top is key 0 (a tie broken to the first)
    one = np.full((n, n), 0.05)
    one[:, 3] = 0.8
    assert (habit(read(one)).kind, habit(read(one)).key, habit(read(one)).rows) == ("key", 3, n)
    assert habit(read(np.full((n, n), 1 / n))).kind == "spread"
    stack = np.stack([prev, one])  # per head
    assert [habit(read(stack), k).kind for k in range(2)] == ["previous", "key"]
    masked = read(np.eye(n), allowed=np.eye(n, dtype=bool))  # every row has one key to choose from
    assert habit(masked).kind == "none"
