"""Every family that opens, against transformers: a tiny random model of each, made here and saved as model hubs
publish it (save_pretrained with safetensors, once as float32 and once as bfloat16), opened by attention.model.load.

Every example of every family's record (attention.model.families.FAMILIES) is made, so a family added there is
tested here. Covered features: grouped key/value heads (Llama, Mistral, Qwen2, Gemma 3, OLMo-2; multi-query Qwen3),
llama3 RoPE scaling (Llama) and linear scaling (Qwen2, Gemma 3's global layers), a sliding window shorter than the
text (Mistral on every layer, Qwen2 from max_window_layers, Gemma 3's local layers with their own RoPE base), biases
on q, k and v only (Qwen2), QK-norm per head and a head width other than d_model / heads (Qwen3, Gemma 3), QK-norm
across all heads and post-norms with no pre-norms (OLMo-2), Gemma's (1 + w) norms, post-norms, √d_model embedding
scale and query_pre_attn_scalar, partial rotary and the parallel residual (GPT-NeoX, also sequential).

The oracle in float64 (tests/helpers/oracle.py): transformers computes a few steps in float32 on purpose even in a
float64 model (RMSNorm's mean square, the RoPE angles and frequencies, the eager softmax), which would leave float32
rounding (~1e-7) in the oracle. While it runs, ``torch.float32``, ``torch.float`` and ``Tensor.float`` are pointed at
float64 and the rotary frequencies are recomputed, so the oracle is float64 throughout: then ours and it agree to
~1e-15, and the issue's 1e-6 is a wide margin. Float32 compute is held to a bound derived from float32's unit roundoff.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch  # a test oracle (requirements-dev.txt): if missing, these tests fail rather than skip

from attention.model import Model, ablate, load, replace_matrix, tensornames
from attention.model.weightfiles import WeightFile
from tests.helpers.families import FAMILIES, N_CTX, TYPES, VOCAB, Made, tiny_config
from tests.helpers.oracle import float64_oracle, refresh_rotary

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is made here: the hub is never asked

LENGTHS = (1, N_CTX // 2 + 3, N_CTX)  # one token, a middle length, the full context


def _ids(n: int, seed: int = 0) -> list[int]:
    return np.random.RandomState(seed).randint(3, VOCAB, n).tolist()


def _close(ours: np.ndarray, theirs: np.ndarray, rel: float) -> None:
    """Equal to ``rel`` relative to the largest magnitude of the oracle's array (elementwise relative error is
    meaningless near 0)."""
    scale = float(np.abs(theirs).max())
    np.testing.assert_allclose(ours, theirs, rtol=rel, atol=rel * scale)


# ---------------------------------------------------------------- float64 against transformers


@pytest.mark.parametrize("stored", ["float32", "bfloat16"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_logits_and_every_layers_attention_weights_match_transformers_in_float64(made, family, stored) -> None:
    m, oracle = load(made(family).folders[stored], dtype=np.float64), made(family)
    if stored == "bfloat16":  # the oracle made from the bfloat16 file: its weights widened exactly, as ours
        oracle = _oracle_of(made(family).folders["bfloat16"])
    c = m.config
    assert m.dtype == np.float64 and (c.n_layers, c.n_heads, c.vocab_size, c.n_ctx) == (2, 4, VOCAB, N_CTX)
    for n in LENGTHS:
        ids = _ids(n, seed=n)
        run = m.run(ids)
        logits, attentions = oracle.oracle(ids)
        assert run.logits.shape == (n, VOCAB) and run.weights.shape == (2, 4, n, n)
        _close(run.logits, logits, 1e-6)
        for layer in range(2):
            _close(run.weights[layer], attentions[layer], 1e-6)
    assert np.std(run.weights) > 0.05  # the heads are far from uniform: the comparison means something


def _oracle_of(folder: Path) -> Made:
    from transformers import AutoModelForCausalLM

    made = Made.__new__(Made)
    made.torch = AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager", dtype=torch.float64)
    made.torch.eval()
    refresh_rotary(made.torch)
    return made


SLIDING = [name for name in sorted(FAMILIES) if "sliding" in tiny_config(name).layer_types]  # from their configs


@pytest.mark.parametrize("family", SLIDING)
def test_a_sliding_layer_sees_only_its_window_and_the_trace_says_so(made, family) -> None:
    m = load(made(family).folders["float32"], dtype=np.float64)
    run, c = m.run(_ids(N_CTX)), m.config
    assert c.layer_types == tiny_config(family).layer_types and 0 < c.sliding_window < N_CTX
    i, j = np.indices((N_CTX, N_CTX))
    for layer in range(c.n_layers):
        A, t, window = run.weights[layer], run.traces[layer], c.sliding_window  # A: (H, n, n)
        if c.layer_type(layer) == "full":
            assert t.options.mask == ("causal",) and np.all(A[:, j <= i] > 0)
            continue
        assert np.all(A[:, i - j >= window] == 0) and np.all(A[:, (i - j < window) & (j <= i)] > 0)
        assert t.options.mask == ("causal", "window") and t.options.window == window


# ---------------------------------------------------------------- float32 compute, bfloat16 files


def float32_bound(m: object, n: int) -> float:
    """How far float32 compute may stray from float64, relative to the largest value: γ_K = K·u/(1 − K·u), the
    classic bound on a chain of dot products (Higham, ch. 3), with u = 2⁻²⁴ float32's unit roundoff and K the sum of
    the inner lengths along the deepest path (per layer: the norm and q/k/v over d_model, scores over d_head, the
    mixing over n keys, W_o over H·d_head, the MLP over d_model and d_mlp; then the final norm and W_U over d_model),
    doubled for the norms' and the softmax's own roundings."""
    c = m.config  # type: ignore[attr-defined]
    per_layer = 2 * c.d_model + c.d_head + n + c.n_heads * c.d_head + 2 * c.d_model + c.d_mlp
    K = 2 * (c.n_layers * per_layer + 2 * c.d_model)
    u = 2.0**-24
    return K * u / (1 - K * u)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_float32_compute_matches_the_float64_oracle_within_float32s_own_bound(made, family) -> None:
    m = load(made(family).folders["float32"], dtype=np.float32)
    ids = _ids(N_CTX, seed=7)
    run = m.run(ids)
    logits, attentions = made(family).oracle(ids)
    assert (
        run.logits.dtype == np.float32 and run.traces[0].Q.dtype == np.float32 and m.params["W_E"].dtype == np.float32
    )
    bound = float32_bound(m, N_CTX)  # about 1e-4 here
    _close(run.logits, logits, bound)
    for layer in range(2):
        _close(run.weights[layer], attentions[layer], bound)
    # and the bound still catches a real mistake: the RoPE base θ 1% off
    off = Model(m.config.replace(rope_theta=1.01 * m.config.rope_theta), m.params, m.vocab, dtype=np.float32)
    assert np.abs(off.run(ids).logits - logits).max() > 2 * bound * np.abs(logits).max()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_bfloat16_file_loads_to_exactly_the_float32_weights_torch_makes_from_it(made, family) -> None:
    from safetensors.torch import load_file

    path = made(family).folders["bfloat16"] / "model.safetensors"
    theirs = load_file(str(path))  # torch's bfloat16 tensors
    ours = WeightFile(path)
    assert {t.dtype for t in theirs.values()} == {torch.bfloat16} and set(ours.tensors) == set(theirs)
    for name, tensor in theirs.items():
        np.testing.assert_array_equal(ours.read(name, np.dtype(np.float32)), tensor.float().numpy(), err_msg=name)
    m = load(made(family).folders["bfloat16"], dtype=np.float32)
    kind = TYPES[family]  # every parameter from its tensor, named and cut by the family's own layout, as load reads it
    stored = {tensornames.canonical(kind, name): tensor for name, tensor in theirs.items()}
    sources = tensornames.sources(kind, m.config)
    assert sources.keys() == m.params.keys()
    for ours, source in sources.items():
        np.testing.assert_array_equal(m.params[ours], source.take(stored[source.name].float().numpy()), err_msg=ours)


# ---------------------------------------------------------------- the cache, interventions on grouped heads


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_greedy_generation_with_the_cache_equals_a_full_forward_at_every_step_and_transformers(made, family) -> None:
    m = load(made(family).folders["float32"], dtype=np.float64)
    prompt, steps = _ids(3, seed=11), 12  # the window (4 to 6) is passed: the cache keeps keys the mask hides
    g = m.generate_cached(prompt, steps)
    for s in range(steps):
        full = m.run(g.tokens[: len(prompt) + s]).logits[-1]
        np.testing.assert_allclose(g.logits[s], full, rtol=1e-10, atol=1e-10 * np.abs(full).max())
        assert g.tokens[len(prompt) + s] == int(np.argmax(full))
    K, V = g.cache[0]
    assert K.shape == V.shape == (m.config.kv_heads, len(prompt) + steps - 1, m.config.d_head)
    with torch.no_grad(), float64_oracle():
        theirs = made(family).torch.generate(  # ours never stops at an end token: theirs runs every step too
            torch.tensor([prompt]), max_new_tokens=steps, do_sample=False, eos_token_id=None
        )
    assert g.tokens == theirs[0].tolist()


def test_ablating_one_query_head_of_a_group_leaves_its_group_mates_untouched(made) -> None:
    m = load(made("llama").folders["float32"], dtype=np.float64)  # 4 query heads, 2 key/value heads: {0, 1}, {2, 3}
    ids, dh = _ids(12, seed=3), m.config.d_head
    clean = m.run(ids)
    t = m.run(ids, [ablate(1, 0)]).traces[1]
    np.testing.assert_array_equal(t.concat[:, :dh], 0.0)  # head 0's output is gone
    np.testing.assert_array_equal(t.concat[:, dh:], clean.traces[1].concat[:, dh:])  # head 1 (its group) and 2, 3 not
    np.testing.assert_array_equal(t.weights, clean.traces[1].weights)
    np.testing.assert_array_equal(t.K, clean.traces[1].K)  # the shared keys and values are as they were
    np.testing.assert_array_equal(t.V, clean.traces[1].V)
    assert not np.array_equal(m.run(ids, [ablate(1, 0)]).logits, clean.logits)


def test_replacing_a_shared_W_k_block_changes_every_query_head_of_that_group(made) -> None:
    m = load(made("llama").folders["float32"], dtype=np.float64)
    ids, dh = _ids(12, seed=4), m.config.d_head
    clean = m.run(ids).traces[1]
    new = np.random.RandomState(5).randn(m.config.d_model, dh)
    t = m.run(ids, [replace_matrix(1, 1, "W_k", new)]).traces[1]  # head 1 reads key/value head 0, as head 0 does
    for h in (0, 1):  # the group of key/value head 0: both query heads see the new keys
        assert not np.allclose(t.weights[h], clean.weights[h])
        np.testing.assert_array_equal(t.head(h).W_k, new)
    for h in (2, 3):  # the other group is untouched
        np.testing.assert_array_equal(t.weights[h], clean.weights[h])
    np.testing.assert_array_equal(t.K[:, dh:], clean.K[:, dh:])  # key/value head 1's keys


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_head_is_a_trace_with_its_groups_keys_and_values(made, family) -> None:
    """Run.head(l, h) recomputed by hand from its own trace: scores from its Q and its group's K, the scale, the
    causal (and window) mask, softmax, its weights times its group's V."""
    m = load(made(family).folders["float32"], dtype=np.float64)
    ids = _ids(N_CTX, seed=9)
    run = m.run(ids)
    G = m.config.kv_heads
    for layer in range(2):
        for h in range(4):
            t = run.head(layer, h)
            assert t.K.shape == (N_CTX, m.config.d_head) and t.options.heads == 1
            S = t.Q @ t.K.T * t.scale
            S[~t.allowed] = -np.inf
            A = np.exp(S - S.max(axis=1, keepdims=True))
            A /= A.sum(axis=1, keepdims=True)
            np.testing.assert_allclose(t.weights, A, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(t.output, A @ t.V, rtol=1e-10, atol=1e-12)
            group = h // (4 // G)
            np.testing.assert_array_equal(t.K, run.traces[layer].K[:, group * m.config.d_head :][:, : m.config.d_head])
