"""Every head on a model with a sliding-window layer and on a wide model (AppTest): each head's heatmap marks masked
exactly the keys the model's layer cannot see (causal, and the window on a sliding layer), counted by a loop; a wide
model draws one layer's heads, as many a row as keep each cell readable."""

from __future__ import annotations

import json

import numpy as np

from attention.model import Config, Model, init_params
from attention.model.vocab import WordVocab
from attention.ui.core import models
from attention.ui.headpages import overview
from tests.helpers.apptest import app, head_plots, layer_charts, no_exception, put_inside, session

WINDOW = 3


def _held(config: Config, seed: int = 4) -> str:
    words = WordVocab([f"w{i}" for i in range(config.vocab_size)])
    return models.hold(Model(config, init_params(config, seed, std=0.5), words, name="made here"), "trained")


def _masked(values: np.ndarray) -> set[tuple[int, int]]:
    """The (row, col) cells a head's heatmap sent as masked (NaN in :func:`head_plots`), 0-based."""
    return {(int(r), int(c)) for r, c in zip(*np.nonzero(np.isnan(values)), strict=True)}


def test_a_sliding_layers_heatmaps_mark_the_window_and_a_full_layers_only_the_future() -> None:
    cfg = Config(
        vocab_size=16, n_ctx=16, d_model=16, n_layers=2, n_heads=2, d_mlp=32, positions="rotary",
        layer_types=("sliding", "full"), sliding_window=WINDOW,
    )  # fmt: skip
    at = app("every_head")
    put_inside(at, model=_held(cfg), ids=tuple(range(1, 11)), sequence="", position=5)
    at = at.run()
    no_exception(at)
    n = len(session(at).inside.ids)
    plots = head_plots(at)
    assert len(at.get("vega_lite_chart")) == len(layer_charts(at)) == 2 and len(plots) == 4  # a chart a layer
    for k, (_, subtitle, values) in enumerate(plots):
        layer = k // 2
        w = WINDOW if layer == 0 else 0
        want = {(i, j) for i in range(n) for j in range(n) if j > i or (w and i - j >= w)}
        assert _masked(values) == want, (k, sorted(want ^ _masked(values))[:5])
        assert (f"window {WINDOW}" in subtitle) == (layer == 0)


def test_a_wide_models_layer_draws_its_heads_with_readable_cells() -> None:
    """A 30 × 9-head model (SmolLM2's shape, narrow) on 30 tokens: three score grids, then one layer's 9 heads, two
    a row (a head's 30 columns in half the main column leave cells of 10 px or more)."""
    cfg = Config(
        vocab_size=40, n_ctx=64, d_model=36, n_layers=30, n_heads=9, n_kv_heads=3, d_mlp=32, positions="rotary"
    )
    at = app("every_head")
    put_inside(at, model=_held(cfg), ids=tuple(range(1, 31)), sequence="", position=5)
    at = at.run()
    no_exception(at)
    assert overview.per_row(30) == 2 and overview.per_row(8) == 4 and overview.per_row(256) >= 1
    charts = at.get("vega_lite_chart")
    assert len(charts) == 3 + 1, len(charts)  # the three score grids, then the layer's heads as one chart
    (spec,) = [json.loads(c.proto.spec) for c in layer_charts(at)]
    plots = [p for row in spec["vconcat"] for p in row["hconcat"]]
    assert [title for title, _, _ in head_plots(at)] == [f"layer 1 · head {k}" for k in range(1, 10)]
    assert [len(row["hconcat"]) for row in spec["vconcat"]] == [2, 2, 2, 2, 1]  # two a row
    assert spec["resolve"]["scale"]["color"] == "shared"  # one colour scale
    assert all(h["width"] >= 30 * 10 and h["height"] >= 30 * 10 for h in plots)  # cells of 10 px or more
    assert all(h["height"] == 30 * min(overview.ROW_PX, h["width"] // 30) for h in plots)  # near-square
    assert len(head_plots(at)) == 9


def test_a_long_text_is_one_picture_a_head_of_blocks_by_their_maximum() -> None:
    """2,048 tokens: each head's picture holds 128 × 128 blocks of 16 tokens, each its largest weight (a loop over
    the blocks is the oracle), so a sink on the first token and a stripe one token wide stay visible (a block's mean
    would dilute the stripe 16 times); a block whose every key is masked is sent no cell."""
    from attention import charts

    n, H, f = 2048, 3, 16
    weights = np.full((H, n, n), 1e-4)
    weights[:, :, 0] = 0.9  # a sink: every row's first key
    weights[1, 1000, 700] = 0.8  # one sharp cell
    allowed = np.tril(np.ones((n, n), bool))
    style = charts.HEAD.but(panels=tuple((f"head {k + 1}", "") for k in range(H)), columns=2, image=True)
    spec = charts.heatmap(weights, [str(k) for k in range(n)], [str(k) for k in range(n)], style, allowed)
    plots = [p for row in spec["vconcat"] for p in row["hconcat"]]
    pictures = spec["datasets"][charts.PICTURES]  # a picture a head, each plot's own row
    assert len(plots) == H and [p["layer"][0]["transform"] for p in plots] == [
        [{"filter": f"datum.panel == {k}"}] for k in range(H)
    ]
    assert [r["panel"] for r in pictures] == list(range(H))
    assert all(r["url"].startswith("data:image/png") for r in pictures)
    cells = [r for r in spec["datasets"][charts.CELLS] if r["head"] == "head 2"]
    assert len(cells) == 128 * 129 // 2  # the blocks with a key to see: on and below the diagonal
    block = {(r["row"], r["col"]): r["value"] for r in cells}
    for i in range(128):
        for j in range(128):
            live = allowed[i * f : (i + 1) * f, j * f : (j + 1) * f]
            want = weights[1, i * f : (i + 1) * f, j * f : (j + 1) * f][live].max() if live.any() else None
            assert block.get((i + 1, j + 1)) == want, (i, j)
    assert block[(1000 // f + 1, 700 // f + 1)] == 0.8 and block[(128, 1)] == 0.9
    assert "each cell is the largest weight of a 16 × 16 block" in pictures[1]["subtitle"]
