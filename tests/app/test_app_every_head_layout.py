"""Every head on a model with a sliding-window layer and on a wide model (AppTest): each head's heatmap marks masked
exactly the keys the model's layer cannot see (causal, and the window on a sliding layer), counted by a loop; a wide
model draws one layer's heads, as many a row as keep each cell readable."""

from __future__ import annotations

import json

import pyarrow as pa

from attention.model import Config, Model, init_params
from attention.model.vocab import WordVocab
from attention.ui.core import models
from attention.ui.headpages import overview
from tests.helpers.apptest import app, no_exception, put_inside, session

WINDOW = 3


def _held(config: Config, seed: int = 4) -> str:
    words = WordVocab([f"w{i}" for i in range(config.vocab_size)])
    return models.hold(Model(config, init_params(config, seed, std=0.5), words, name="made here"), "trained")


def _masked(chart) -> set[tuple[int, int]]:
    """The (row, col) cells a heatmap sent as masked, 0-based."""
    cells = pa.ipc.open_stream(chart.proto.data.data).read_pandas()
    hit = cells[cells["masked"]]
    return {(int(r) - 1, int(c) - 1) for r, c in zip(hit["row"], hit["col"], strict=True)}


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
    charts = at.get("vega_lite_chart")
    assert len(charts) == 4, len(charts)
    for k, chart in enumerate(charts):
        layer = k // 2
        w = WINDOW if layer == 0 else 0
        want = {(i, j) for i in range(n) for j in range(n) if j > i or (w and i - j >= w)}
        assert _masked(chart) == want, (k, sorted(want ^ _masked(chart))[:5])
        subtitle = chart.proto.spec
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
    assert len(charts) == 3 + 9, len(charts)
    heads = [json.loads(c.proto.spec) for c in charts[3:]]
    assert [h["title"]["text"] for h in heads] == [f"layer 1 · head {k}" for k in range(1, 10)]
    assert all(h["height"] >= 30 * overview.ROW_PX + 190 for h in heads)  # rows as tall as the cells are wide
