"""What the heads write (attention.model.readout) against transformers: the logit lens, direct logit attribution and
activation patching on the tiny random GPT-2 of tests/helpers/gpt2.py (the ``gpt2`` fixture), and the attribution's
parts adding up on every family.

Oracles: transformers' ``output_hidden_states`` read through its own final norm and ``lm_head`` (the lens); a forward
pre-hook on the attention's output projection that puts the clean run's head output into the corrupted run
(patching); the logit itself (the attribution's parts add up to it, to 1e-9).
"""

from __future__ import annotations

import numpy as np
import pytest

from attention import AttentionError
from attention.model import ablate, attribute, builtin, lens, load, patch, sweep
from attention.model.readout import read_direction
from tests.helpers.examples import TYPES, example_parts


def _close(ours: np.ndarray, theirs: np.ndarray, rel: float = 1e-6) -> None:
    np.testing.assert_allclose(ours, theirs, rtol=rel, atol=rel * float(np.abs(theirs).max()))


def test_the_lens_is_transformers_hidden_states_through_its_final_norm_and_lm_head(gpt2) -> None:
    import torch

    folder, hf = gpt2
    m = load(folder)
    ids = np.random.RandomState(3).randint(0, m.config.vocab_size, 20).tolist()
    run = m.run(ids)
    with torch.no_grad():
        out = hf(torch.tensor([ids]), output_hidden_states=True)
        hidden = out.hidden_states  # L + 1: the embeddings, then after each layer; the last one already normed
        want = [hf.lm_head(hf.transformer.ln_f(h))[0].numpy() for h in hidden[:-1]] + [out.logits[0].numpy()]
    for t in (0, 7, len(ids) - 1):
        got = lens(run, t)
        assert got.shape == (m.config.n_layers + 1, m.config.vocab_size)
        _close(got[-1], run.logits[t], 1e-13)  # the model's own logits (one row's product may round differently)
        for layer in range(m.config.n_layers + 1):
            _close(got[layer], want[layer][t])
    assert not np.allclose(lens(run, 7)[0], lens(run, 7)[-1], atol=1e-3)  # the layers differ: the test means something


def test_the_attribution_adds_up_to_the_logit(gpt2) -> None:
    folder, _ = gpt2
    m = load(folder)
    ids = m.encode("the cat sat on the mat and the dog")
    run = m.run(ids)
    for t, token in ((len(ids) - 1, None), (2, 5), (0, 17)):
        a = attribute(run, t, token)
        want = run.logits[t, a.token]
        assert a.heads.shape == (m.config.n_layers, m.config.n_heads) and a.mlps.shape == (m.config.n_layers,)
        parts = a.heads.sum() + a.mlps.sum() + a.embeddings + a.biases
        assert abs(parts - want) <= 1e-9 * max(1.0, abs(want)), (parts, want)
        assert a.total == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert a.token == 17 and np.abs(a.heads).max() > 1e-3  # the heads write something the test can see


def test_a_last_layer_heads_share_is_what_its_ablation_takes_from_the_logit() -> None:
    """Independent check of one head's share: in the shipped attention-only model (no final norm, no MLP) nothing
    reads the last layer's heads, so zero-ablating one moves the logit by exactly its share."""
    m = builtin("induction")
    ids = [int(i) for i in np.random.RandomState(4).permutation(m.config.vocab_size)[:8]] * 2
    run = m.run(ids)
    t, last = len(ids) - 1, m.config.n_layers - 1
    a = attribute(run, t)
    for h in range(m.config.n_heads):
        moved = run.logits[t, a.token] - m.run(ids, [ablate(last, h, "zero")]).logits[t, a.token]
        assert moved == pytest.approx(a.heads[last, h], rel=1e-9, abs=1e-12)
    assert np.abs(a.heads[last]).max() > 0.1  # the heads write something the test can see
    np.testing.assert_allclose(a.mlps, 0.0, atol=1e-12)  # attention-only: no MLP


def test_the_held_norm_is_the_norms_own_slope_at_the_stream(gpt2) -> None:
    """With the final LayerNorm's σ held, a small step along any direction moves the logit as the true norm does, to
    first order in the step: the finite difference of the real logit against direction · step."""
    folder, _ = gpt2
    m = load(folder)
    ids = m.encode("the dog sat on the log")
    run = m.run(ids)
    x = run.residuals[-1][-1]
    token = int(np.argmax(run.logits[-1]))
    direction, shift, sigma = read_direction(m, x, token)
    assert x @ direction + shift == pytest.approx(run.logits[-1, token], rel=1e-12)
    from attention.model.model import final_logits

    step = np.random.RandomState(0).normal(size=x.shape)
    step -= step @ (x - x.mean()) / ((x - x.mean()) @ (x - x.mean())) * (x - x.mean())  # σ unchanged to first order
    eps = 1e-6
    real = (final_logits(m.config, m.params, x + eps * step)[token] - final_logits(m.config, m.params, x)[token]) / eps
    assert real == pytest.approx(step @ direction, rel=1e-4)
    assert sigma > 0


def test_patching_nothing_is_the_corrupted_run_and_everything_is_the_clean_run(gpt2) -> None:
    folder, _ = gpt2
    m = load(folder)
    clean, corrupt = m.encode("the cat sat on the mat"), m.encode("the dog sat on the log")
    assert len(clean) == len(corrupt) and clean != corrupt
    none = patch(m, clean, corrupt, [])
    _close(none.logits, m.run(corrupt).logits, 1e-12)
    every = [(layer, h) for layer in range(m.config.n_layers) for h in range(m.config.n_heads)]
    full = patch(m, clean, corrupt, every).logits
    want = m.run(clean).logits
    # the stream at a position is its own embedding, what the heads wrote there and its own MLPs: where the two texts
    # have the same token, every head patched gives the clean logits; where they differ, the embedding still differs
    same = np.array(clean) == np.array(corrupt)
    assert same.any() and not same.all()
    _close(full[same], want[same], 1e-12)
    assert not np.allclose(full[~same], want[~same])


def test_one_heads_patch_equals_a_forward_hook_in_transformers(gpt2) -> None:
    import torch

    folder, hf = gpt2
    m = load(folder)
    clean, corrupt = m.encode("the cat sat on the mat"), m.encode("the dog sat on the log")
    dh = m.config.d_head
    for layer, head in ((0, 1), (m.config.n_layers - 1, m.config.n_heads - 1)):
        got = patch(m, clean, corrupt, [(layer, head)]).logits
        proj = hf.transformer.h[layer].attn.c_proj
        seen = {}

        def keep(module: object, args: tuple, seen: dict = seen) -> None:
            seen["x"] = args[0].clone()

        cols = slice(head * dh, (head + 1) * dh)

        def put(module: object, args: tuple, seen: dict = seen, cols: slice = cols) -> tuple:
            x = args[0].clone()
            x[..., cols] = seen["x"][..., cols]
            return (x,)

        with torch.no_grad():
            handle = proj.register_forward_pre_hook(keep)
            hf(torch.tensor([clean]))
            handle.remove()
            handle = proj.register_forward_pre_hook(put)
            want = hf(torch.tensor([corrupt])).logits[0].numpy()
            handle.remove()
        _close(got, want)
        assert not np.allclose(got, m.run(corrupt).logits)  # the patch changed something


def test_bad_positions_tokens_and_pairs_are_named() -> None:
    m = builtin("induction")
    ids = list(range(8))
    run = m.run(ids)
    for call, field in (
        (lambda: lens(run, 8), "position"),
        (lambda: attribute(run, 0, m.config.vocab_size), "token"),
        (lambda: patch(m, ids, ids[:-1], []), "corrupt_ids"),
        (lambda: patch(m, ids, ids, [(5, 0)]), "heads"),
        (lambda: patch(m, ids, ids, ["x"]), "heads"),
    ):
        with pytest.raises(AttentionError) as info:
            call()
        assert info.value.field == field


FAMILIES = {  # the parts that change what a head writes into the stream: every family's examples (the engine's table)
    name: example_parts(name, vocab_size=40, n_ctx=16) for name in TYPES
}
SIZES = dict(vocab_size=40, n_ctx=16, d_model=32, n_layers=3, n_heads=4, d_mlp=48)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_parts_add_up_and_the_lens_ends_at_the_logits_on_every_family(name: str) -> None:
    from attention.model import Config, Model, init_params
    from attention.model.vocab import WordVocab

    cfg = Config(**{**SIZES, **FAMILIES[name]}).validate()
    params = init_params(cfg, seed=1, std=0.3)
    rs = np.random.RandomState(2)
    params = {k: v + rs.normal(0, 0.3, v.shape) if k.endswith(".g") else v for k, v in params.items()}
    m = Model(cfg, params, WordVocab([f"w{i}" for i in range(40)]))
    ids = rs.randint(0, 40, 12).tolist()
    run = m.run(ids)
    for t in (0, 5, 11):
        _close(lens(run, t)[-1], run.logits[t], 1e-12)
        for token in (None, 3):
            a = attribute(run, t, token)
            parts = a.heads.sum() + a.mlps.sum() + a.embeddings + a.biases
            assert abs(parts - a.total) <= 1e-9 * max(1.0, abs(a.total)), (name, t, parts, a.total)
            assert a.total == run.logits[t, a.token]
    assert np.abs(a.heads).max() > 1e-3 and np.abs(a.mlps).max() > 1e-3


def test_a_sweep_restores_everything_where_the_stream_carries_the_changed_token() -> None:
    """On the shipped model: a clean repeat, and a corruption of one token of its first half (the one that follows
    the token at the predicting position). Patching the stream entering layer 1 at the changed position is the clean
    run (restored 1), patching elsewhere in layer 1's input changes nothing (0), and cancelling stops with what was
    done."""
    m = builtin("induction")
    first = [int(i) for i in np.random.RandomState(5).permutation(m.config.vocab_size)[:8]]
    clean = first + first
    corrupt = list(clean)
    corrupt[4] = other = next(i for i in range(m.config.vocab_size) if i not in first)
    at = 8 + 3  # the repeat of first[3]: induction predicts what followed it, first[4] (clean) or `other` (corrupted)
    s = sweep(m, clean, corrupt, position=at, answer=first[4], wrong=other)
    assert s.done and s.heads.shape == (2, m.config.n_heads) and s.streams.shape == (2, len(clean))
    assert s.streams[0, 4] == pytest.approx(1.0, abs=1e-9)
    others = [p for p in range(len(clean)) if p != 4]
    np.testing.assert_allclose(s.streams[0, others], 0.0, atol=1e-9)
    assert np.nanmax(s.heads) > 0.2  # some head carries the difference
    seen: list[int] = []

    def stop_after_three(k: int, total: int) -> bool:
        seen.append(k)
        return k < 3

    stopped = sweep(m, clean, corrupt, position=at, answer=first[4], wrong=other, on_step=stop_after_three)
    assert not stopped.done and seen[-1] == 3 and np.isnan(stopped.streams).all()
    assert np.isfinite(stopped.heads).sum() == 3  # the three patches made before the stop, each kept


def test_a_sweeps_tokens_are_checked_and_a_stream_patched_run_is_not_attributed() -> None:
    from attention.model import patch_stream

    m = builtin("induction")
    ids = [int(i) for i in np.random.RandomState(6).permutation(m.config.vocab_size)[:8]] * 2
    other = list(ids)
    other[2] = next(i for i in range(m.config.vocab_size) if i not in ids)
    for kwargs, field in (
        (dict(answer=10**6), "answer"),
        (dict(answer=-1), "answer"),
        (dict(answer=3, wrong=3), "wrong"),
        (dict(wrong=1.5), "wrong"),
    ):
        with pytest.raises(AttentionError) as info:
            sweep(m, ids, other, position=10, **kwargs)
        assert info.value.field == field, kwargs
    with pytest.raises(AttentionError) as info:  # the same text: nothing differs, nothing to restore
        sweep(m, ids, ids, position=10, answer=ids[3], wrong=other[2])
    assert info.value.field == "corrupt_ids"
    patched = m.run(ids, [patch_stream(1, 15, m.run(other).residuals[1][15])])
    with pytest.raises(AttentionError) as info:
        attribute(patched, 15)
    assert info.value.field == "run"
