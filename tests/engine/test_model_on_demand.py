"""A run keeps each layer's input and its heads' outputs; every head's arrays are made when read. What is read equals
what the full pass computes, on every family's parts, and the run holds what it is asked to.

The full pass here is a run with a hook (a hook may change any activation, so such a run keeps every trace as the
pass made them, in one block of rows); the other side is a run without hooks whose attention ran in blocks of one
query row (BLOCK_CELLS made tiny) and whose traces, heads and rows are remade on demand from the layer's input.
Both compute in float64 from the same parameters; the blocks multiply the same rows by the same keys, and softmax
sums a row over the keys up to its last visible one instead of all (the rest are exact zeros): values of order 1 to
10 agree to ~1e-14; the bound, 1e-11 of the largest value, is a thousand times that, and a wrong layer, head,
position or intervention moves them by far more.
"""

from __future__ import annotations

import numpy as np
import pytest

from attention.errors import AttentionError
from attention.model import Config, Model, ablate, atp, flow, init_params, layertraces, readout, replace_matrix
from attention.model import attend as attend_module
from attention.model.interventions import hook_names
from attention.model.vocab import WordVocab
from tests.helpers.examples import TYPES, example_parts

REL = 1e-11
N = 23


def _model(name: str) -> Model:
    cfg = Config(**example_parts(name, vocab_size=30, n_ctx=32)).validate()
    params = init_params(cfg, seed=1, std=0.35)
    rs = np.random.RandomState(2)
    moved = {k: v + rs.normal(0, 0.3, v.shape) if k.endswith(".g") or k.rsplit(".", 1)[-1].startswith("b") else v
             for k, v in params.items()}
    return Model(cfg, moved, WordVocab([f"w{i}" for i in range(30)]))


def _close(ours: np.ndarray, theirs: np.ndarray) -> None:
    assert ours.shape == theirs.shape
    finite = np.isfinite(theirs)
    np.testing.assert_array_equal(np.isfinite(ours), finite)  # the masked cells are −inf on both sides
    largest = float(np.abs(theirs[finite]).max(initial=1.0))
    np.testing.assert_allclose(np.where(finite, ours, 0), np.where(finite, theirs, 0), rtol=0, atol=REL * largest)


def _ivs(m: Model) -> list:
    c = m.config
    shape = (c.d_model + int(c.has_qkv_bias), c.d_head)
    return [ablate(0, 1, "mean"), replace_matrix(1, 2, "W_q", np.random.RandomState(5).normal(0, 0.3, shape))]


NOTHING = {"blocks.0.attn.hook_z": lambda value, name: None}  # a hook within a layer that changes nothing: all kept


@pytest.mark.parametrize("with_ivs", [False, True], ids=["plain", "interventions"])
@pytest.mark.parametrize("name", sorted(TYPES))
def test_every_activation_read_on_demand_equals_the_full_pass(name: str, with_ivs: bool, monkeypatch) -> None:
    full_model, m = _model(name), _model(name)
    ids = list(np.random.RandomState(3).randint(0, 30, N))
    ivs = _ivs(m) if with_ivs else []
    full = full_model.run(ids, ivs, hooks=NOTHING)  # every trace as the pass made it, one block
    monkeypatch.setattr(attend_module, "BLOCK_CELLS", 1)  # the lean pass and its remakes: one query row a block
    run = m.run(ids, ivs)
    assert full.traces.eager is not None and run.traces.eager is None
    _close(run.logits, full.logits)
    for layer in range(m.config.n_layers):
        for head in range(m.config.n_heads):  # one head made alone, before its layer is made
            for key, value in run.head(layer, head).arrays().items():
                _close(value, getattr(full.traces[layer].head(head), key))
        _close(run.traces.rows(layer, [0, N - 1]), full.weights[layer][:, [0, N - 1]])
        for key, value in run.traces[layer].arrays().items():
            _close(value, getattr(full.traces[layer], key))
    for hook in hook_names(m.config):
        _close(run.cache[hook], full.cache[hook])
    _close(run.weights, full.weights)


def test_a_run_holds_its_streams_and_heads_outputs_not_the_squares() -> None:
    m = _model(sorted(TYPES)[0])
    c = m.config
    run = m.run(list(range(1, 21)))
    n, width = 20, np.dtype(m.dtype).itemsize
    want = (c.n_layers + 1) * n * c.d_model + c.n_layers * n * c.n_heads * c.d_head + n * c.vocab_size
    assert m.cache_bytes == want * width  # streams, concatenations, logits: no n × n array
    assert run.head(1, 2).weights.shape == (n, n)


@pytest.mark.parametrize("name", sorted(TYPES))
def test_a_hook_on_the_streams_entering_keeps_no_squares_and_its_traces_are_its_own(name: str) -> None:
    """A hook on a stream entering a layer (as the patching estimate's path runs use) changes what the traces are
    made from, not how: the run keeps no n × n array, its heads read on demand equal a run that keeps every array,
    and never an unhooked run's traces of the same text (read first, so the memo holds them)."""
    m, ids = _model(name), [3, 1, 4, 1, 5, 9, 2]
    plain = m.run(ids)
    before = plain.head(1, 0).weights.copy()  # the unhooked run's head, now in the model's memo
    shift = {"blocks.1.hook_resid_pre": lambda value, name: value[..., ::-1, :]}  # the streams in reverse order
    streamed, kept = m.run(ids, hooks=shift), m.run(ids, hooks={**shift, **NOTHING})
    assert streamed.traces.eager is None and kept.traces.eager is not None
    for h in range(m.config.n_heads):
        _close(streamed.head(1, h).weights, kept.head(1, h).weights)
    _close(streamed.logits, kept.logits)
    assert np.abs(streamed.head(1, 0).weights - before).max() > 1e-6  # the hook moved it: not the memo's


@pytest.mark.parametrize("names_filter", ["blocks.1.attn.hook_pattern", ["blocks.0.hook_resid_post",
                                          "blocks.1.attn.hook_z"], lambda name: name.endswith("hook_resid_pre"),
                                          ["blocks.1.mlp.hook_post", "ln_final.hook_normalized"]])
def test_names_filter_keeps_exactly_the_activations_asked_for(names_filter) -> None:
    m = _model(sorted(TYPES)[0])
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    every = m.run(ids).cache
    run = m.run(ids, names_filter=names_filter)
    if callable(names_filter):
        want = [name for name in hook_names(m.config) if names_filter(name)]
    else:
        want = [names_filter] if isinstance(names_filter, str) else names_filter
    assert list(run.cache) == want and len(run.cache) == len(want)
    assert set(run.cache._made) == set(want)  # made with the run: what it holds
    for name in want:
        _close(run.cache[name], every[name])
    with pytest.raises(KeyError):
        run.cache["blocks.0.hook_resid_mid" if "ln_final.hook_normalized" in want else "ln_final.hook_normalized"]
    with pytest.raises(AttentionError, match="no activation 'blocks.9.hook_z'"):
        m.run(ids, names_filter=["blocks.9.hook_z"])


def test_hooks_as_a_list_of_pairs_run_in_order_as_the_dict_does() -> None:
    m = _model(sorted(TYPES)[0])
    ids = [3, 1, 4, 1, 5]
    seen: list[str] = []
    pairs = [("blocks.0.hook_resid_post", lambda v, n: seen.append("a") or v * 2.0),
             ("blocks.1.hook_resid_pre", lambda v, n: seen.append("b")),
             ("blocks.0.hook_resid_post", lambda v, n: seen.append("c") or v + 1.0)]
    listed = m.run(ids, hooks=pairs)
    as_dict = m.run(ids, hooks={"blocks.0.hook_resid_post": [pairs[0][1], pairs[2][1]],
                                "blocks.1.hook_resid_pre": pairs[1][1]})
    assert seen == ["a", "c", "b"] * 2
    _close(listed.logits, as_dict.logits)
    np.testing.assert_array_equal(listed.cache["blocks.0.hook_resid_post"],
                                  m.run(ids).cache["blocks.0.hook_resid_post"] * 2.0 + 1.0)
    with pytest.raises(AttentionError, match="pairs"):
        m.run(ids, hooks=[("blocks.0.hook_resid_post",)])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_hook_returning_nan_or_infinity_is_named(bad: float) -> None:
    m = _model(sorted(TYPES)[0])

    def spoil(value: np.ndarray, name: str) -> np.ndarray:
        out = value.copy()
        out[2, 1] = bad
        return out

    with pytest.raises(AttentionError, match=rf"hook on blocks.1.attn.hook_z returned {bad} at \(2, 1, 0\)"):
        m.run([3, 1, 4, 1, 5], hooks={"blocks.1.attn.hook_z": spoil})


def test_a_hook_may_mask_a_score_with_minus_infinity_but_not_plus() -> None:
    """The scores hold −inf at a masked key, as the pass makes them: a hook that masks one more key is a mask, and the
    weights it gives are the softmax over the keys left, written out by hand; +inf there is refused by name."""
    m, ids = _model(sorted(TYPES)[0]), [3, 1, 4, 1, 5]

    def mask_first(value: np.ndarray, name: str) -> np.ndarray:
        out = value.copy()
        out[..., 2:, 0] = -np.inf  # rows 2.. may no longer see key 0
        return out

    run = m.run(ids, hooks={"blocks.0.attn.hook_attn_scores": mask_first})
    plain = m.run(ids).head(0, 0).scaled  # (n, n): the unhooked scaled scores
    row = np.exp(plain[3, 1:4] - plain[3, 1:4].max())
    np.testing.assert_allclose(run.head(0, 0).weights[3], np.r_[0.0, row / row.sum(), 0.0], rtol=1e-12, atol=1e-15)

    def spoil(value: np.ndarray, name: str) -> np.ndarray:
        out = value.copy()
        out[..., 1, 0] = np.inf
        return out

    with pytest.raises(AttentionError, match=r"hook on blocks.0.attn.hook_attn_scores returned inf at"):
        m.run(ids, hooks={"blocks.0.attn.hook_attn_scores": spoil})

    def mask_a_row(value: np.ndarray, name: str) -> np.ndarray:
        out = value.copy()
        out[..., 3, :] = -np.inf  # row 3 may attend nothing: no softmax (it was "values too large for float32")
        return out

    with pytest.raises(AttentionError, match=r"hook_attn_scores returned -inf at \(0, 3, 0\).*not on a whole row"):
        m.run(ids, hooks={"blocks.0.attn.hook_attn_scores": mask_a_row})


@pytest.mark.parametrize("name", sorted(TYPES))
def test_a_hooked_padded_batch_row_reads_its_weights_as_the_single_run(name: str) -> None:
    """A run with hooks keeps every trace; a text of its padded batch reads its weights, whole or by rows, as its own
    run does (the row's Traces keeps the row's streams, which the reading of rows consults)."""
    m = _model(name)
    texts = [[3, 4, 5, 6, 7], [7, 8, 9]]
    row, single = m.run(texts, hooks=NOTHING).row(1), m.run(texts[1])
    _close(row.weights, single.weights)
    _close(row.traces.rows(0, [2]), single.traces.rows(0, [2]))


@pytest.mark.parametrize("name", sorted(TYPES))
def test_a_padded_batch_row_is_the_single_run_at_its_own_positions(name: str) -> None:
    m = _model(name)
    rs = np.random.RandomState(4)
    texts = [rs.randint(3, 30, n).tolist() for n in (9, 4, 7)]
    batch = m.run(texts)
    assert batch.lengths == (9, 4, 7) and batch.logits.shape == (3, 9, 30)
    for b, ids in enumerate(texts):
        row, single = batch.row(b), m.run(ids)
        assert row.ids == tuple(ids) and row.logits.shape == (len(ids), 30)
        _close(row.logits, single.logits)
        for layer in range(m.config.n_layers):
            _close(row.residuals[layer], single.residuals[layer])
            _close(row.head(layer, 1).weights, single.head(layer, 1).weights)
        _close(row.cache["blocks.1.attn.hook_pattern"], single.cache["blocks.1.attn.hook_pattern"])
    hooked = m.run(texts, hooks={"blocks.1.attn.hook_z": lambda v, n: None}).row(1)  # a run keeping its traces
    _close(hooked.traces[1].weights, m.run(texts[1]).traces[1].weights)


def test_a_padded_batchs_hooked_activations_are_each_texts_own() -> None:
    cfg = Config(vocab_size=30, n_ctx=32, d_model=16, n_layers=2, n_heads=2, d_mlp=24).validate()  # GPT-2's parts
    m = Model(cfg, init_params(cfg, seed=3, std=0.35), WordVocab([f"w{i}" for i in range(30)]))
    texts = [[3, 1, 4, 1, 5, 9, 2], [6, 5, 3]]
    names = ["hook_pos_embed", "blocks.1.attn.hook_pattern", "blocks.0.mlp.hook_post"]
    seen = {name: (lambda v, n: None) for name in names}
    batch = m.run(texts, hooks=seen)
    assert batch.cache["hook_pos_embed"].shape == (2, 7, m.config.d_model)
    for b, ids in enumerate(texts):
        row, single = batch.row(b), m.run(ids)
        for name in names:
            _close(row.cache[name], single.cache[name])


READERS = {
    "lens": lambda m, run, other: readout.lens(run, N - 1),
    "attribution": lambda m, run, other: readout.attribute(run, N - 1),
    "routes": lambda m, run, other: flow.routes(run, N - 1),
    "patch": lambda m, run, other: readout.patch(m, run.ids, other, [(0, 1), (1, 0)]).logits,
    "sweep": lambda m, run, other: readout.sweep(m, run.ids, other, answer=1, wrong=2,
                                                      only=[("head", 1, 1), ("stream", 0, 20)]),
    "estimate": lambda m, run, other: atp.estimate(m, run.ids, other, answer=1, wrong=2),
    "activations": lambda m, run, other: [run.cache[h] for h in hook_names(m.config) if "hook_attn_scores" not in h
                                          and "hook_pattern" not in h],
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("name", sorted(TYPES))
def test_readers_of_cheap_arrays_never_make_a_layers_squares(name: str, reader: str, monkeypatch) -> None:
    """The lens, attribution, routes, patching, the sweep, the estimate and every activation but the scores and the
    pattern read a run's streams, its heads' outputs, q, K, V and chosen rows of weights: never a whole layer's
    n × n arrays of every head (the memory of 3 · H · n² numbers a layer at long texts)."""
    m = _model(name)
    rs = np.random.RandomState(3)
    ids = list(rs.randint(0, 30, N))
    other = ids[:20] + [(ids[20] + 1) % 30] + ids[21:]  # one token changed, near the end: a corrupted text
    run = m.run(ids)

    def refused(self, layer):  # noqa: ANN001, ANN202
        raise AssertionError(f"{reader} made layer {layer}'s whole trace")

    monkeypatch.setattr(layertraces.Traces, "__getitem__", refused)
    READERS[reader](m, run, other)
    assert not any(len(key) == 2 for key in m._memo._items)  # no layer's trace was made and kept
