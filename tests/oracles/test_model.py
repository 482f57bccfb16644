"""The transformer in numpy (attention.model) against an independent oracle, and its promises.

A tiny random GPT-2 (2 layers, 4 heads, d = 64) is made here with transformers, saved as model hubs publish it
(save_pretrained with safetensors) beside a small BPE tokenizer trained here with tokenizers; our model opened from
that folder matches torch in float64: the logits and every layer's attention weights. Generation with the key/value
cache matches a full forward pass at every step; an intervention on layer l leaves every earlier layer as it was and
undoing it restores the logits bit for bit; each bad checkpoint ends in a message naming the file and the field.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from attention import AttentionError, steps
from attention.model import Config, Model, ablate, builtin, init_params, load, replace_matrix
from attention.model import checkpoint as ckpt
from attention.model.vocab import WordVocab
from tests.helpers.gpt2 import N_CTX

TEXTS = [
    "the cat sat on the mat",
    "a",
    "attention is all you need, said the paper; the heads agreed.",
]


def _torch_run(model: object, ids: list[int]) -> tuple[np.ndarray, list[np.ndarray]]:
    import torch

    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)  # type: ignore[operator]
    return out.logits[0].numpy(), [a[0].numpy() for a in out.attentions]


def _close(ours: np.ndarray, theirs: np.ndarray, rel: float = 1e-6) -> None:
    scale = float(np.abs(theirs).max())
    np.testing.assert_allclose(ours, theirs, rtol=rel, atol=rel * scale)


def test_a_gpt2_checkpoint_matches_torch_logits_and_every_attention_weight(gpt2: tuple[Path, object]) -> None:
    folder, torch_model = gpt2
    m = load(folder)
    assert (m.config.n_layers, m.config.n_heads, m.config.d_model, m.config.n_ctx) == (2, 4, 64, N_CTX)
    rs = np.random.RandomState(1)
    cases = [m.encode(t) for t in TEXTS] + [rs.randint(0, m.config.vocab_size, N_CTX).tolist()]
    assert len(cases[1]) == 1 and len(cases[-1]) == N_CTX  # a single token and the full context
    for ids in cases:
        run = m.run(ids)
        logits, attentions = _torch_run(torch_model, ids)
        assert run.logits.shape == (len(ids), m.config.vocab_size)
        assert run.weights.shape == (2, 4, len(ids), len(ids))
        _close(run.logits, logits)
        for layer in range(2):
            _close(run.weights[layer], attentions[layer])
    assert np.std(run.weights) > 0.05  # the heads are far from uniform: the comparison means something


def test_every_head_is_a_trace_of_the_attention_steps(gpt2: tuple[Path, object]) -> None:
    m = load(gpt2[0])
    ids = m.encode(TEXTS[0])
    run = m.run(ids)
    n, dh = len(ids), m.config.d_head
    for layer in range(2):
        for h in range(4):
            t = run.head(layer, h)
            assert t.X.shape == (n, 65)  # LN₁(x) with the bias column of ones
            np.testing.assert_array_equal(t.X[:, -1], 1.0)
            # an independent naive computation of the head from its own trace's X and weights
            Q, K, V = t.X @ t.W_q, t.X @ t.W_k, t.X @ t.W_v
            S = np.array([[Q[i] @ K[j] / np.sqrt(dh) if j <= i else -np.inf for j in range(n)] for i in range(n)])
            A = np.exp(S - S.max(axis=1, keepdims=True))
            A /= A.sum(axis=1, keepdims=True)
            np.testing.assert_allclose(t.weights, A, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(t.output, A @ V, rtol=1e-10, atol=1e-13)
    assert run.tokens == tuple(m.pieces(ids)) and "".join(run.tokens) == TEXTS[0]


def test_vocab_and_merges_read_like_tokenizer_json(gpt2: tuple[Path, object], tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    folder = tmp_path / "vm"
    shutil.copytree(gpt2[0], folder)
    (folder / "tokenizer.json").unlink()
    original = Tokenizer.from_file(str(gpt2[0] / "tokenizer.json"))
    model = original.model
    model.save(str(folder))  # vocab.json and merges.txt
    a, b = load(gpt2[0]), load(folder)
    for text in TEXTS:
        assert a.encode(text) == b.encode(text) == original.encode(text).ids
        assert b.decode(b.encode(text)) == text


def test_generation_with_the_cache_equals_a_full_forward_at_every_step(gpt2: tuple[Path, object]) -> None:
    m = load(gpt2[0])
    prompt = m.encode("the cat")
    g = m.generate_cached(prompt, 8)
    assert g.tokens[: len(prompt)] == prompt and len(g.tokens) == len(prompt) + 8
    assert m.generate(prompt, 8) == g.tokens
    for s in range(8):
        full = m.run(g.tokens[: len(prompt) + s]).logits[-1]
        np.testing.assert_allclose(g.logits[s], full, rtol=1e-10, atol=1e-12)
        assert g.tokens[len(prompt) + s] == int(np.argmax(full))
    K, V = g.cache[0]
    assert K.shape == V.shape == (4, len(prompt) + 7, 16)  # every position fed so far: the last token is not fed
    assert g.cache_lengths == tuple(range(len(prompt), len(prompt) + 8))
    with pytest.raises(AttentionError, match="context"):
        m.generate(prompt, N_CTX)


@pytest.mark.parametrize("positions", ["rotary", "sinusoidal", "none"])
def test_generation_with_the_cache_for_every_kind_of_position(positions: str) -> None:
    cfg = Config(vocab_size=20, n_ctx=16, d_model=16, n_layers=2, n_heads=2, d_mlp=32, positions=positions)
    m = Model(cfg, init_params(cfg, 3, std=0.5), WordVocab([f"w{i}" for i in range(20)]))
    g = m.generate_cached([1, 2, 3], 10)
    for s in range(10):
        np.testing.assert_allclose(g.logits[s], m.run(g.tokens[: 3 + s]).logits[-1], rtol=1e-10, atol=1e-12)


def test_step_by_step_through_the_cache_equals_torch_at_every_position(gpt2: tuple[Path, object]) -> None:
    """Each Step's attention rows are torch's weights on the whole text, row by row; its logits torch's logits."""
    m, torch_model = load(gpt2[0]), gpt2[1]
    ids = m.encode("the cat sat on the mat and the dog sat")
    P = 3
    walk, cache = m.step_through(ids, P)
    logits, attentions = _torch_run(torch_model, ids)
    assert [s.position for s in walk] == list(range(P - 1, len(ids)))
    for s in walk:
        t = s.position
        assert s.token == ids[t] and s.cache_length == t + 1
        _close(s.logits, logits[t], rel=1e-9)
        for layer in range(2):
            assert s.weights[layer].shape == (4, t + 1) and s.queries[layer].shape == (4, 16)
            np.testing.assert_allclose(s.weights[layer], attentions[layer][:, t, : t + 1], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(s.weights[layer].sum(-1), 1.0)
    assert all(K.shape == V.shape == (4, len(ids), 16) for K, V in cache)


@pytest.mark.parametrize("positions", ["learned", "rotary", "sinusoidal", "none"])
def test_each_cached_step_is_the_last_row_of_a_full_forward(positions: str) -> None:
    """A step's query, attention row and logits equal those of Model.run on the whole text at that position (causal:
    the whole text's row t is the prefix's last row); the cache is the run's K and V; feed leaves its input alone."""
    cfg = Config(vocab_size=20, n_ctx=10, d_model=16, n_layers=2, n_heads=4, d_mlp=32, positions=positions)
    params = init_params(cfg, 5, std=0.6)
    m = Model(cfg, params, WordVocab([f"w{i}" for i in range(20)]))
    ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    run = m.run(ids)
    walk, cache = m.step_through(ids, 4)
    for s in walk:
        t = s.position
        np.testing.assert_allclose(s.logits, run.logits[t], rtol=1e-10, atol=1e-12)
        for layer, trace in enumerate(run.traces):
            Q = trace.Q.reshape(10, 4, 4).transpose(1, 0, 2)  # (H, n, d_head): head h is columns 4h .. 4h + 3
            np.testing.assert_allclose(s.queries[layer], Q[:, t], rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(s.weights[layer], run.weights[layer, :, t, : t + 1], rtol=1e-10, atol=1e-12)
            prefix = m.run(ids[: t + 1]).weights[layer, :, -1]  # the last row of a forward on the text so far
            np.testing.assert_allclose(s.weights[layer], prefix, rtol=1e-10, atol=1e-12)
    for layer, (K, V) in enumerate(cache):
        np.testing.assert_allclose(K, run.traces[layer].K.reshape(10, 4, 4).transpose(1, 0, 2), atol=1e-12)
        np.testing.assert_allclose(V, run.traces[layer].V.reshape(10, 4, 4).transpose(1, 0, 2), atol=1e-12)
    held = sum(K.nbytes + V.nbytes for K, V in cache)
    assert held == 2 * 2 * 4 * 4 * 10 * 8  # layers × (K and V) × heads × d_head × tokens × 8 bytes (float64)
    first, small = m.prefill(ids[:3])
    _, bigger = m.feed(ids[3], small)
    assert small[0][0].shape == (4, 3, 4) and bigger[0][0].shape == (4, 4, 4)  # the cache given is unchanged


def test_step_through_refuses_bad_lengths_and_a_full_context() -> None:
    m = builtin("induction")
    ids = list(range(24))
    for bad in (0, 25, 2.5, "3"):
        with pytest.raises(AttentionError, match="prompt_length"):
            m.step_through(ids[:5], bad)
    _, cache = m.step_through(ids, 24)
    with pytest.raises(AttentionError, match="context of 24"):
        m.feed(1, cache)
    with pytest.raises(AttentionError, match="outside the vocabulary"):
        m.feed(32, cache[:1])


def _random_model(attention_only: bool = False) -> Model:
    cfg = Config(vocab_size=30, n_ctx=12, d_model=24, n_layers=3, n_heads=3, d_mlp=48, attention_only=attention_only)
    params = init_params(cfg, 7, std=0.4)
    rs = np.random.RandomState(8)
    params = {
        k: v + rs.normal(0, 0.2, v.shape) if k.rsplit(".", 1)[-1].startswith(("b", "g")) else v
        for k, v in params.items()
    }
    return Model(cfg, params, WordVocab([f"w{i}" for i in range(30)]))


@pytest.mark.parametrize(
    "make",
    [
        lambda c: ablate(1, 2, "zero"),
        lambda c: ablate(1, 0, "mean"),
        lambda c: replace_matrix(1, 1, "W_k", np.random.RandomState(0).randn(c.d_model + 1, c.d_head)),
        lambda c: replace_matrix(1, 1, "W_o", np.random.RandomState(0).randn(c.d_head, c.d_model)),
    ],
    ids=["zero", "mean", "W_k", "W_o"],
)
def test_an_intervention_on_a_layer_changes_nothing_before_it_and_undoing_it_restores_every_bit(make) -> None:
    m = _random_model()
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    clean = m.run(ids)
    # copies made now: the cache hands later runs these very arrays, so comparing with them would prove nothing
    clean_logits, clean_weights = clean.logits.copy(), clean.weights.copy()
    clean_residuals = [r.copy() for r in clean.residuals]
    iv = make(m.config)
    changed = m.run(ids, [iv])
    assert changed.recomputed_from == 1  # layer 0 came from the cache
    uncached = Model(m.config, dict(m.params), m.vocab).run(ids, [iv])  # the intervention computed from scratch
    assert uncached.recomputed_from == 0
    for layer in range(2):  # the streams entering layers 0 and 1 are as they were without it
        np.testing.assert_array_equal(uncached.residuals[layer], clean_residuals[layer])
    np.testing.assert_array_equal(uncached.weights[0], clean_weights[0])
    np.testing.assert_array_equal(changed.logits, uncached.logits)  # reusing layer 0 from the cache changes no bit
    assert not np.array_equal(changed.logits, clean_logits)
    undone = m.run(ids)
    assert undone.recomputed_from == 3  # all from the cache
    np.testing.assert_array_equal(undone.logits, clean_logits)  # what the clean run gave before the intervention
    never = Model(m.config, dict(m.params), m.vocab).run(ids)  # a model that never saw the intervention
    np.testing.assert_array_equal(undone.logits, never.logits)
    m.clear_cache()  # and computed afresh, the same bits
    np.testing.assert_array_equal(m.run(ids).logits, clean_logits)
    np.testing.assert_array_equal(m.run(ids, [iv]).logits, uncached.logits)


def test_interventions_do_what_they_say() -> None:
    m = _random_model()
    c, ids = m.config, [3, 1, 4, 1, 5, 9, 2, 6]
    clean = m.run(ids)
    dh = c.d_head
    zero = m.run(ids, [ablate(2, 1)])
    np.testing.assert_array_equal(zero.traces[2].concat[:, dh : 2 * dh], 0.0)
    W_o = m.layer_weights(2)[3]
    np.testing.assert_allclose(  # zeroing the head's output = zeroing its rows of W_o
        zero.logits, m.run(ids, [replace_matrix(2, 1, "W_o", np.zeros((dh, c.d_model)))]).logits, rtol=1e-12, atol=1e-12
    )
    mean = m.run(ids, [ablate(2, 1, "mean")])
    block = mean.traces[2].concat[:, dh : 2 * dh]
    head = clean.traces[2].concat[:, dh : 2 * dh]  # (n, d_head): the head's own outputs
    causal_mean = np.array([head[: t + 1].mean(0) for t in range(len(ids))])  # position t: the mean over 0 .. t
    np.testing.assert_allclose(block, causal_mean, rtol=1e-12, atol=1e-15)
    same = m.run(ids, [replace_matrix(2, 0, "W_q", m.layer_weights(2)[0][:, :dh])])
    np.testing.assert_array_equal(same.logits, clean.logits)
    new_q = np.random.RandomState(1).randn(c.d_model + 1, dh)
    t = m.run(ids, [replace_matrix(2, 0, "W_q", new_q)]).head(2, 0)
    np.testing.assert_array_equal(t.W_q, new_q)
    S = (t.X @ new_q) @ (t.X @ t.W_k).T / np.sqrt(dh)
    S[np.triu_indices(len(ids), 1)] = -np.inf
    np.testing.assert_allclose(t.weights, steps.softmax(S), rtol=1e-12, atol=1e-15)
    assert W_o.shape == (c.d_model, c.d_model)
    for bad, match in [
        (ablate(3, 0), "no layer 3"),
        (ablate(0, 3), "no head 3"),
        (replace_matrix(0, 0, "W_q", np.ones((2, 2))), r"W_q in layer 0 is \(25, 8\)"),
    ]:
        with pytest.raises(AttentionError, match=match):
            m.run(ids, [bad])
    with pytest.raises(AttentionError, match="'zero' or 'mean'"):
        ablate(0, 0, "half")


@pytest.mark.parametrize(
    "make",
    [
        lambda c: [],
        lambda c: [ablate(1, 0)],
        lambda c: [ablate(1, 0, "mean")],
        lambda c: [ablate(0, 2, "mean"), ablate(2, 1, "mean")],
        lambda c: [replace_matrix(1, 1, "W_q", np.random.RandomState(0).randn(c.d_model + 1, c.d_head))],
        lambda c: [replace_matrix(1, 1, "W_k", np.random.RandomState(1).randn(c.d_model + 1, c.d_head))],
        lambda c: [replace_matrix(1, 1, "W_v", np.random.RandomState(2).randn(c.d_model + 1, c.d_head))],
        lambda c: [replace_matrix(1, 1, "W_o", np.random.RandomState(3).randn(c.d_head, c.d_model))],
    ],
    ids=["none", "zero", "mean", "two means", "W_q", "W_k", "W_v", "W_o"],
)
def test_a_later_token_never_changes_an_earlier_position_under_any_intervention(make) -> None:
    m = _random_model()
    ivs = make(m.config)
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    base = m.run(ids, ivs)
    for t in range(1, len(ids)):
        for new in (0, 17, 29):
            other = [*ids[:t], new, *ids[t + 1 :]]
            if other == ids:
                continue
            changed = m.run(other, ivs)
            np.testing.assert_array_equal(changed.logits[:t], base.logits[:t], err_msg=f"token {t} -> {new}")
            for layer in range(m.config.n_layers + 1):
                np.testing.assert_array_equal(changed.residuals[layer][:t], base.residuals[layer][:t])
        longer = m.run(ids[: t + 1], ivs)  # and a prefix alone gives the same numbers as inside the whole
        np.testing.assert_allclose(longer.logits, base.logits[: t + 1], rtol=1e-12, atol=1e-12)


def test_token_ids_are_checked() -> None:
    m = _random_model()
    for bad, match in [
        ([], "non-empty"),
        ([1, 30], "token 2 has id 30"),
        ([0] * 13, "context of 12"),
        ("abc", "non-empty"),
        ([1.5], "whole numbers"),
    ]:
        with pytest.raises(AttentionError, match=match):
            m.run(bad)
    with pytest.raises(AttentionError, match="'w99', is not in the vocabulary"):
        m.encode("w1 w99")


# ---------------------------------------------------------------- bad checkpoints


def _copy(gpt2: tuple[Path, object], tmp_path: Path) -> Path:
    folder = tmp_path / "ck"
    shutil.copytree(gpt2[0], folder)
    return folder


def _edit_config(folder: Path, **changes: object) -> None:
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))


def _message(folder: Path) -> AttentionError:
    with pytest.raises(AttentionError) as info:
        load(folder)
    return info.value


def test_pickled_weights_are_refused_saying_why(gpt2: tuple[Path, object], tmp_path: Path) -> None:
    folder = _copy(gpt2, tmp_path)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    err = _message(folder)
    assert "pytorch_model.bin" in err.message and "unpickling" in err.message and "safetensors" in err.message
    with pytest.raises(AttentionError, match="model.pt: pickled weights are never opened"):
        (folder / "model.pt").write_bytes(b"\x80\x04not really")
        load(folder / "model.pt")


@pytest.mark.parametrize(
    "break_it, words, field",
    [
        (lambda f: (f / "config.json").unlink(), ["no config.json"], "config.json"),
        (lambda f: (f / "model.safetensors").unlink(), ["no model.safetensors"], "model.safetensors"),
        (lambda f: (f / "tokenizer.json").unlink(), ["no tokenizer", "tokenizer.json"], "tokenizer.json"),
        (
            lambda f: (f / "model.safetensors").write_bytes(b"\x00" * 64),
            ["model.safetensors", "safetensors file"],
            "model.safetensors",
        ),
        (lambda f: (f / "config.json").write_text("{oops"), ["config.json is not valid JSON"], "config.json"),
        (lambda f: (f / "tokenizer.json").write_text("{}"), ["tokenizer.json could not be read"], "tokenizer.json"),
        (
            lambda f: _edit_config(f, model_type="bert", architectures=["BertForMaskedLM"]),
            ["config.json", "model_type", "'bert'", "the families that open are gpt2, llama, mistral"],
            "model_type",
        ),
        (
            lambda f: _edit_config(f, n_positions=16),
            ["model.safetensors", "wpe.weight", "[40, 64]", "n_positions = 16", "[16, 64]"],
            "wpe.weight",
        ),
        (lambda f: _edit_config(f, n_layer=3), ["no tensor", "h.2.ln_1.weight"], "h.2.ln_1.weight"),
        (lambda f: _edit_config(f, n_layer=1), ["h.1.", "n_layer = 1"], None),
        (lambda f: _edit_config(f, n_head=5), ["config.json", "n_embd = 64", "5 heads"], "n_head"),
        (lambda f: _edit_config(f, n_embd="64"), ["config.json: n_embd must be a whole number"], "n_embd"),
        (
            lambda f: _edit_config(f, activation_function="mish"),
            ["activation_function", "'mish'"],
            "activation_function",
        ),
        (lambda f: _edit_config(f, vocab_size=10), ["wte.weight", "vocab_size = 10"], "wte.weight"),
    ],
    ids=[
        "no-config",
        "no-weights",
        "no-tokenizer",
        "not-safetensors",
        "bad-json",
        "bad-tokenizer",
        "bert",
        "shape",
        "missing-layer",
        "extra-layer",
        "heads",
        "type",
        "activation",
        "vocab",
    ],
)
def test_a_bad_checkpoint_is_named_by_file_and_field(gpt2, tmp_path: Path, break_it, words, field) -> None:
    folder = _copy(gpt2, tmp_path)
    break_it(folder)
    err = _message(folder)
    for w in words:
        assert w in err.message, (w, err.message)
    if field:
        assert err.field == field


def test_nan_or_infinite_weights_are_named(gpt2: tuple[Path, object], tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    folder = _copy(gpt2, tmp_path)
    tensors = load_file(str(folder / "model.safetensors"))
    for value in (np.nan, np.inf):
        broken = dict(tensors)
        w = broken["transformer.h.1.attn.c_attn.weight"].copy()
        w[2, 5] = value
        broken["transformer.h.1.attn.c_attn.weight"] = w
        save_file(broken, str(folder / "model.safetensors"))
        err = _message(folder)
        assert "h.1.attn.c_attn.weight at [2, 5]" in err.message and "finite" in err.message
        assert str(value) in err.message


def test_a_folder_over_the_size_bound_is_refused_before_reading(gpt2, tmp_path, monkeypatch) -> None:
    folder = _copy(gpt2, tmp_path)
    monkeypatch.setattr(ckpt, "MAX_FOLDER_BYTES", 1024)
    err = _message(folder)
    assert "'ck' holds more than 1,024 bytes" in err.message and err.field == "path"
    assert ckpt.MAX_FOLDER_BYTES == 1024 and ckpt.load.__module__ == ckpt.__name__
    monkeypatch.setattr(ckpt, "MAX_FOLDER_BYTES", 2**40)
    monkeypatch.setattr(ckpt, "MAX_FILES", 2)
    assert "more than 2 files" in _message(folder).message


def test_a_path_that_is_not_a_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(AttentionError, match="no folder 'nowhere'"):
        load(tmp_path / "nowhere")
    (tmp_path / "weights.h5").write_bytes(b"x")
    with pytest.raises(AttentionError, match=r"weights.h5 is a file; give a .gguf file or the checkpoint's folder"):
        load(tmp_path / "weights.h5")


# ---------------------------------------------------------------- the shipped model


def test_the_builtin_induction_model_runs_and_continues_a_repeat() -> None:
    m = builtin("induction")
    words = m.vocab.words
    seq = [words[i] for i in (5, 17, 2, 29, 11, 8, 21, 0, 14, 26, 3, 19)]
    ids = m.encode(" ".join(seq + seq[:4]))
    run = m.run(ids)
    assert run.logits.shape == (16, m.config.vocab_size)
    assert run.weights.shape == (m.config.n_layers, m.config.n_heads, 16, 16)
    np.testing.assert_allclose(run.weights.sum(-1), 1.0)
    out = m.generate(ids, 8)
    assert out[:16] == ids and m.pieces(out[16:]) == seq[4:12]  # it continues the repeat
    with pytest.raises(AttentionError, match="no built-in model 'gpt5'"):
        builtin("gpt5")


def test_the_run_cache_stays_within_its_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    from attention.model import runcache

    m = _random_model()
    clean = m.run([1, 2, 3]).logits
    monkeypatch.setattr(runcache, "CACHE_BYTES", 4000)
    for k in range(20):
        m.run([1, 2, 3, k % 30, 4])
        assert m.cache_bytes == sum(a.nbytes for a in _held_by_cache(m))
        assert m.cache_bytes <= 4000 or len(m._cache) == 1
        assert len(m._cache) <= runcache.CACHE_RUNS * 4
    np.testing.assert_array_equal(m.run([1, 2, 3]).logits, clean)  # recomputed when evicted, the same bits


def _held_by_cache(m: Model) -> list[np.ndarray]:
    """Every distinct array the run cache holds, found by walking its entries (the model's own weights, which it
    holds anyway, are not the cache's)."""
    weights = {id(w) for layer in range(m.config.n_layers) for w in m.layer_weights(layer)}
    found: dict[int, np.ndarray] = {}
    for residuals, concats, logits in m._cache.values():
        arrays = [*residuals, logits, *concats]  # a run's traces are made from these when read
        found.update({id(a): a for a in arrays if isinstance(a, np.ndarray) and id(a) not in weights})
    return list(found.values())


def test_the_run_cache_counts_every_byte_it_holds() -> None:
    m = _random_model()
    c = m.config
    for ids, ivs in [
        ([1, 2, 3], []),
        ([1, 2, 3], [ablate(1, 0, "mean")]),  # shares layer 0 with the run before
        ([4, 5, 6, 7, 8], [replace_matrix(2, 1, "W_o", np.ones((c.d_head, c.d_model)))]),
        ([1, 2, 3], []),  # all from the cache
    ]:
        m.run(ids, ivs)
        held = _held_by_cache(m)
        assert m.cache_bytes == sum(a.nbytes for a in held) > 0
    m.clear_cache()
    assert m.cache_bytes == 0 and _held_by_cache(m) == []


def test_cached_streams_logits_and_traces_cannot_be_changed_by_a_caller() -> None:
    m = _random_model()
    c = m.config
    ivs = [ablate(0, 1, "mean"), replace_matrix(1, 0, "W_v", np.ones((c.d_model + 1, c.d_head)))]
    for run in (m.run([1, 2, 3]), m.run([1, 2, 3], ivs)):
        traced = [getattr(t, f.name) for t in run.traces for f in dataclasses.fields(t)]
        heads = [run.head(layer, 1).Q for layer in range(c.n_layers)]  # a head's view of the layer's arrays
        arrays = [a for a in (*run.residuals, run.logits, *traced, *heads) if isinstance(a, np.ndarray)]
        assert len(arrays) > c.n_layers * 12  # Q, K, V, scores, scaled, weights, concat, output ... of each
        for a in arrays:
            with pytest.raises(ValueError, match="read-only"):
                a[(0,) * a.ndim] = 1
    np.testing.assert_array_equal(m.run([1, 2, 3]).logits, Model(c, dict(m.params), m.vocab).run([1, 2, 3]).logits)
