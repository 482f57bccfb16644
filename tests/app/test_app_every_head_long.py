"""Every head on a long text (AppTest): each head is one picture reduced by blocks, each block its largest weight
(a loop over the blocks of the model's own run is the oracle), the page says by how much; a zoom draws the chosen
head's cells themselves in a window, rows and columns named by their position and token; a bad window is named and
nothing changes."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from attention.model import Config, Model, init_params
from attention.model.vocab import WordVocab
from attention.ui.core import keys, models
from attention.ui.state import inside
from tests.helpers.apptest import app, head_plots, no_exception, put_inside, select, session, shown, texts

N, BLOCK = 300, 3  # 300 tokens: pictures of 100 × 100 blocks of 3
CFG = Config(vocab_size=40, n_ctx=320, d_model=16, n_layers=2, n_heads=2, d_mlp=32, positions="rotary")
IDS = tuple(int(i) for i in np.random.RandomState(5).randint(0, 40, size=N))


def _model() -> Model:
    return Model(CFG, init_params(CFG, 4, std=0.5), WordVocab([f"w{i}" for i in range(40)]), name="made here")


def _opened():
    at = app("every_head")
    put_inside(at, model=models.hold(_model(), "trained"), ids=IDS, sequence="", position=5)
    at = at.run()
    no_exception(at)
    return at


def _zoom_chart(at) -> tuple[dict, dict]:
    (chart,) = [c for c in at.get("vega_lite_chart") if c.proto.spec and "queries " in c.proto.spec]
    return json.loads(chart.proto.spec), pa.ipc.open_stream(chart.proto.data.data).read_pandas()


def test_a_long_texts_heads_are_pictures_of_blocks_each_its_largest_weight() -> None:
    at = _opened()
    weights = _model().run(list(IDS)).weights  # (L, H, n, n): the oracle's own run
    plots = head_plots(at)
    assert len(plots) == CFG.n_layers * CFG.n_heads
    b = -(-N // BLOCK)
    for k, (title, subtitle, values) in enumerate(plots):
        layer, head = divmod(k, CFG.n_heads)
        assert title == f"layer {layer + 1} · head {head + 1}" and values.shape == (b, b)
        assert "each cell is the largest weight of a 3 × 3 block" in subtitle
        want = np.full((b, b), np.nan)
        for i in range(b):
            for j in range(b):
                cells = [weights[layer, head, q, key] for q in range(i * BLOCK, min(N, (i + 1) * BLOCK))
                         for key in range(j * BLOCK, min(N, (j + 1) * BLOCK)) if key <= q]  # fmt: skip
                want[i, j] = max(cells) if cells else np.nan
        np.testing.assert_allclose(values, want, rtol=1e-12, atol=0)  # NaN where every key of a block is masked
    said = " ".join(texts(at.caption))
    assert f"Each head's {N} × {N} weights are drawn reduced to {b} × {b}: each cell is the largest weight of a 3 × 3" \
        " block" in said  # fmt: skip


def test_the_zoom_draws_the_chosen_heads_cells_named_by_their_tokens() -> None:
    at = _opened()
    at = select(at, keys.INSIDE_HEAD_SHOWN, (1, 1))
    at.text_input(key=keys.INSIDE_ZOOM_ROWS).set_value("101-140").run()
    at = at.text_input(key=keys.INSIDE_ZOOM_KEYS).set_value("90–129").run()  # an en dash reads as a hyphen
    no_exception(at)
    assert session(at).inside.zoom == (100, 140, 89, 129) and not session(at).inside.zoom_message
    spec, cells = _zoom_chart(at)
    words = [f"w{i}" for i in IDS]
    assert spec["layer"][0]["encoding"]["y"]["sort"] == [f"{k + 1} {words[k]}" for k in range(100, 140)]
    assert spec["layer"][0]["encoding"]["x"]["sort"] == [f"{k + 1} {words[k]}" for k in range(89, 129)]
    weights = _model().run(list(IDS)).weights[1, 1]  # (n, n)
    for row in cells.itertuples():
        q, key = row.row - 1, row.col - 1
        assert row.query == f"{q + 1} {words[q]}" and row.key == f"{key + 1} {words[key]}"
        assert bool(row.masked) == (key > q)
        if key <= q:  # float64 model: the same steps, to rounding
            assert abs(row.value - weights[q, key]) <= 1e-12, (q, key)
    assert len(cells) == 40 * 40
    assert any(f"Rows 101–140: {words[100]} … {words[139]}" in c for c in texts(at.caption))


def test_a_bad_window_is_named_and_nothing_changes() -> None:
    at = _opened()
    at.text_input(key=keys.INSIDE_ZOOM_ROWS).set_value("11-40").run()
    at = at.text_input(key=keys.INSIDE_ZOOM_KEYS).set_value("1-30").run()
    assert session(at).inside.zoom == (10, 40, 0, 30)
    for rows, want in (
        ("abc", "The query positions “abc” are not two whole numbers such as 100-163"),
        ("1-100", "The query positions 1-100 are 100 positions; at most 64 are drawn"),
        ("250-301", f"The query positions 250-301 are not within 1 to {N}"),
        ("9" * 50, "The query positions are 50 characters long"),
    ):
        at = at.text_input(key=keys.INSIDE_ZOOM_ROWS).set_value(rows).run()
        no_exception(at)
        (error,) = [e for e in texts(at.error) if "positions" in e]
        assert want in error and "The window stays as it was." in error, error
        assert session(at).inside.zoom == (10, 40, 0, 30)  # the window drawn is the last good one
        spec, _ = _zoom_chart(at)
        assert spec["title"]["text"].endswith("queries 11–40 × keys 1–30")
        assert at.text_input(key=keys.INSIDE_ZOOM_ROWS).value == rows  # kept as typed, to be corrected
    at = at.text_input(key=keys.INSIDE_ZOOM_ROWS).set_value("21-30").run()
    assert session(at).inside.zoom == (20, 30, 0, 30) and not [e for e in at.error if "positions" in e.value]
    assert inside.ZOOM_MOST == 64 and shown("1") == "1"


def test_every_heads_files_too_large_to_make_are_said_not_made(monkeypatch) -> None:
    """Every head's weights as files at 2,046 tokens on SmolLM2 would be 1.1 billion numbers (9 GB as float64): past
    the bound the page says what they would hold and how to read a head in Python, and offers no button."""
    from attention.ui.widgets import downloads

    monkeypatch.setattr(downloads, "HEADS_MOST", 2 * 2 * N * N - 1)  # this text's 360,000 weights: one too many
    at = _opened()
    said = [c for c in texts(at.markdown) if "these files would hold" in c]
    assert said and f"{2 * 2 * N * N:,} weights" in said[0] and "run.head(layer, head)" in said[0], said
    assert not [b for b in at.get("download_button") if "every head" in str(b.proto.label).lower()]
    monkeypatch.setattr(downloads, "HEADS_MOST", 2 * 2 * N * N)  # at the bound: offered
    at = _opened()
    assert [b for b in at.get("download_button") if "every head" in str(b.proto.label).lower()]


def _measured_bytes(layers: int, heads: int, d: int, d_heads: int, vocab: int, n: int, item: int) -> int:
    """What a measurement holds, counted from a model's sizes: the streams entering each layer and the last
    ((layers + 1) × n × d), the heads' outputs (layers × n × heads·d_head), the logits (n × V), the losses by
    position (n − 1, float64), every head's picture (blocks of charts.panel_block(n) a side) and its mean weight on
    each key over the queries after it (layers × heads × n, float64)."""
    from attention import charts

    b = -(-n // charts.panel_block(n))
    pictures, after = layers * heads * b * b, layers * heads * n
    return item * ((layers + 1) * n * d + layers * n * d_heads + n * vocab + pictures) + 8 * (n - 1 + after)


def test_two_measurements_of_the_longest_text_fit_the_run_bound() -> None:
    """With an ablation Every head reads two measurements on every run (the ablated and the one without); at 2,048
    tokens on SmolLM2-135M (30 layers, 9 heads of 64, d 576, 49,152 tokens, float32) both must stay kept, or each
    rerun makes one again (a forward of seconds). The count is checked against a measurement made here."""
    from attention.ui.core.models import MAX_TOKENS
    from attention.ui.modelpages import runs

    made = runs.measured(IDS, (), _model().run(list(IDS)))
    assert runs._bytes(made) == _measured_bytes(2, 2, 16, 16, 40, N, 8)  # float64, 300 tokens
    smol = _measured_bytes(30, 9, 576, 576, 49_152, MAX_TOKENS, 4)
    assert smol > 600 * 1024**2 and 2 * smol <= runs.RUNS_BYTES, (smol, runs.RUNS_BYTES)


@pytest.mark.parametrize("rows", [3, 12, 300])  # query rows a block (a multiple of the picture's block, 3)
def test_each_heads_mean_weight_on_each_key_after_it_is_the_naive_loops(monkeypatch, rows: int) -> None:
    """The First token page's w(j) = mean over the queries after key j of A[i, j] (the last key: its own row's),
    summed block by block of query rows, against loops over the model's own weights."""
    from attention.ui.modelpages import runs

    monkeypatch.setattr(runs, "CHUNK_CELLS", CFG.n_heads * N * rows)
    run = _model().run(list(IDS))
    after = runs.measured(IDS, (), run).after  # (L, H, n)
    weights = run.weights  # (L, H, n, n): the oracle's
    for layer in range(CFG.n_layers):
        for head in range(CFG.n_heads):
            for j in (0, 1, 2, 150, N - 2, N - 1):
                below = [weights[layer, head, i, j] for i in range(j + 1, N)]
                want = sum(below) / len(below) if below else weights[layer, head, j, j]
                assert after[layer, head, j] == pytest.approx(want, rel=1e-12, abs=1e-15), (layer, head, j)
