"""Attention's family against PyTorch and naive loops: grouped-query heads, the sliding window, ALiBi, cross-attention,
and FlashAttention's tiled online softmax against the full softmax path; their gradients by finite differences."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch  # a test oracle (requirements-dev.txt): if missing, these tests fail rather than skip

import attention
from attention import AttentionError, Options, flash, kvcache, masks, positions
from attention.backward import backward

F = torch.nn.functional

RTOL = 1e-12  # float64 throughout: torch and numpy differ only in summation order


def close(a: np.ndarray, b: np.ndarray, rtol: float = RTOL) -> bool:
    """Equal to ``rtol`` relative to the largest magnitude of b (elementwise relative error is meaningless at 0)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    scale = max(float(np.abs(b).max(initial=0.0)), 1e-300)
    return float(np.abs(a - b).max(initial=0.0)) <= rtol * scale


def t64(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))


def rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.normal(size=shape)


def naive_gqa(X, W_q, W_k, W_v, h, g, scale, allowed=None, bias=None, X_kv=None):
    """One query, one key, one head at a time: plain Python loops over the formula."""
    X_kv = X if X_kv is None else X_kv
    n, s = X.shape[0], X_kv.shape[0]
    dh, dv = W_q.shape[1] // h, W_v.shape[1] // g
    out = np.zeros((n, h * dv))
    for i in range(h):
        b = i // (h // g)  # the key/value block head i reads
        Wq, Wk, Wv = W_q[:, i * dh : (i + 1) * dh], W_k[:, b * dh : (b + 1) * dh], W_v[:, b * dv : (b + 1) * dv]
        for q in range(n):
            qv = X[q] @ Wq
            z = []
            for k in range(s):
                if allowed is not None and not allowed[q, k]:
                    z.append(-math.inf)
                    continue
                z.append(
                    sum(qv[c] * (X_kv[k] @ Wk)[c] for c in range(dh)) * scale + (0 if bias is None else bias[i][q, k])
                )
            top = max(z)
            if top == -math.inf:
                continue  # fully masked: output 0
            e = [math.exp(v - top) for v in z]
            for k in range(s):
                out[q, i * dv : (i + 1) * dv] += e[k] / sum(e) * (X_kv[k] @ Wv)
    return out


# ---------------------------------------------------------------- grouped-query and multi-query heads


@pytest.mark.parametrize(("h", "g"), [(4, 4), (4, 2), (4, 1), (6, 3), (6, 2), (6, 1), (8, 4)])
@pytest.mark.parametrize("mask", ["none", "causal"])
def test_grouped_query_heads_match_torch_sdpa_enable_gqa_and_naive_loops(h: int, g: int, mask: str) -> None:
    rng = np.random.default_rng(h * 10 + g)
    n, d_model, dh, dv = 5, 6, 2, 3
    X, W_q, W_k, W_v = (
        rand(rng, n, d_model),
        rand(rng, d_model, h * dh),
        rand(rng, d_model, g * dh),
        rand(rng, d_model, g * dv),
    )
    t = attention.self_attention(X, W_q, W_k, W_v, heads=h, kv_heads=g, mask=mask)
    assert t.K.shape == (n, g * dh) and t.V.shape == (n, g * dv) and t.weights.shape == (h, n, n)
    q = t64(X @ W_q).reshape(1, n, h, dh).transpose(1, 2)  # (1, h, n, dh)
    k = t64(X @ W_k).reshape(1, n, g, dh).transpose(1, 2)  # (1, g, n, dh)
    v = t64(X @ W_v).reshape(1, n, g, dv).transpose(1, 2)  # (1, g, n, dv)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=mask == "causal", enable_gqa=True)  # (1, h, n, dv)
    assert close(t.output, ref.transpose(1, 2).reshape(n, h * dv).numpy())
    allowed = masks.causal(n) if mask == "causal" else None
    assert close(t.output, naive_gqa(X, W_q, W_k, W_v, h, g, 1 / math.sqrt(dh), allowed))


@pytest.mark.parametrize(("old", "new"), [(1, 2), (1, 3), (1, 6), (2, 6), (3, 6), (2, 3)])
def test_growing_key_value_heads_keeps_the_output_exactly_when_the_new_count_is_a_multiple(old: int, new: int) -> None:
    """regroup copies blocks only when new % old == 0; 6 heads from 2 to 3 key/value heads mixes blocks."""
    from attention.heads import regroup

    rng = np.random.default_rng(5)
    h = 6
    X, W_q, W_k, W_v = rand(rng, 5, 4), rand(rng, 4, 12), rand(rng, 4, 2 * old), rand(rng, 4, 2 * old)
    before = attention.self_attention(X, W_q, W_k, W_v, heads=h, kv_heads=old)
    W_k2, W_v2 = regroup(W_k, h, old, new), regroup(W_v, h, old, new)
    after = attention.self_attention(X, W_q, W_k2, W_v2, heads=h, kv_heads=new)
    # the naive form: head i reads old block i // (h / old) before, new block i // (h / new) after
    blocks = [W_k[:, 2 * (i // (h // old)) : 2 * (i // (h // old)) + 2] for i in range(h)]
    for b in range(new):
        group = blocks[b * (h // new) : (b + 1) * (h // new)]
        assert np.allclose(W_k2[:, 2 * b : 2 * b + 2], sum(group) / len(group))
    if new % old == 0:
        assert np.array_equal(after.output, before.output)
    else:
        assert np.abs(after.output - before.output).max() > 1e-3


def test_a_grouped_head_is_the_head_with_its_shared_block_and_mqa_equals_mha_with_copied_blocks() -> None:
    rng = np.random.default_rng(1)
    X, W_q, W_k, W_v = rand(rng, 4, 6), rand(rng, 6, 8), rand(rng, 6, 2), rand(rng, 6, 3)
    t = attention.self_attention(X, W_q, W_k, W_v, heads=4, kv_heads=1)
    copied = attention.self_attention(X, W_q, np.tile(W_k, 4), np.tile(W_v, 4), heads=4)  # MHA with 4 equal blocks
    assert np.array_equal(t.output, copied.output) and np.array_equal(t.weights, copied.weights)
    for i in range(4):
        one = t.head(i)
        assert np.array_equal(one.K, t.K) and np.array_equal(one.W_v, W_v) and one.options.kv_heads is None
        single = attention.self_attention(X, W_q[:, 2 * i : 2 * i + 2], W_k, W_v)
        assert np.array_equal(one.weights, single.weights) and np.array_equal(one.output, single.output)


@pytest.mark.parametrize(
    ("changes", "pattern"),
    [
        ({"heads": 4, "kv_heads": 3}, r"^kv_heads must divide heads = 4 .*one of 1, 2, 4; got 3$"),
        ({"heads": 4, "kv_heads": 0}, r"^kv_heads must be a whole number from 1 to 256 that divides heads"),
        ({"heads": 4, "kv_heads": 8}, r"^kv_heads must divide heads = 4"),
        ({"heads": 4, "kv_heads": 10**400}, r"^kv_heads must be a whole number .*got a whole number of about 400"),
        ({"heads": 4, "kv_heads": "2"}, r"^kv_heads must be a whole number .*got '2'$"),
        ({"heads": 4, "kv_heads": 2.0}, r"^kv_heads must be a whole number .*got 2\.0$"),
        ({"mask": "window", "window": None}, r"^window must be a whole number of tokens from 1 to 2048 .*got None$"),
        ({"mask": "window", "window": 0}, r"^window must be a whole number of tokens from 1 to 2048"),
        ({"window": -3}, r"^window must be a whole number of tokens from 1 to 2048 .*got -3$"),
        ({"window": 10**30}, r"^window must be a whole number of tokens .*got 1000000000000000000000000000000$"),
        ({"window": "three"}, r"^window must be a whole number .*got 'three'$"),
        ({"positions": "alibi!"}, r"^positions must be one of none, sinusoidal, learned, rotary, alibi; got"),
    ],
)
def test_bad_family_options_end_in_clear_messages(changes: dict, pattern: str) -> None:
    with pytest.raises(AttentionError, match=pattern):
        Options(**changes).validate()
    field = "kv_heads" if "kv_heads" in changes else "window" if "window" in pattern[:10] else "positions"
    with pytest.raises(AttentionError, match=pattern.replace("^", r"^options\.")) as exc:
        Options.from_dict(changes)
    assert exc.value.field == field


def test_wrong_key_value_widths_name_the_matrix() -> None:
    rng = np.random.default_rng(2)
    X, W_q = rand(rng, 4, 6), rand(rng, 6, 8)
    with pytest.raises(
        AttentionError, match=r"W_k gives keys of width 4 but 1 key/value head\(s\) .* need width 2"
    ) as e:
        attention.self_attention(X, W_q, rand(rng, 6, 4), rand(rng, 6, 3), heads=4, kv_heads=1)
    assert e.value.matrix == "W_k"
    with pytest.raises(AttentionError, match=r"W_v gives width 3, which does not divide into 2 key/value heads"):
        attention.self_attention(X, W_q, rand(rng, 6, 4), rand(rng, 6, 3), heads=4, kv_heads=2)


# ---------------------------------------------------------------- the sliding window


@pytest.mark.parametrize("w", [1, 2, 3, 7, 50])
def test_window_mask_is_the_explicit_boolean_mask(w: int) -> None:
    n = 7
    explicit = np.array([[i - w + 1 <= j <= i for j in range(n)] for i in range(n)])
    assert np.array_equal(masks.window(n, w), explicit)
    assert np.array_equal(masks.window(3, w, 5), np.array([[i - w + 1 <= j <= i for j in range(5)] for i in range(3)]))
    if w >= n:
        assert np.array_equal(masks.window(n, w), masks.causal(n))


@pytest.mark.parametrize("kind", [k for k in masks.KINDS if "window" in k])
def test_window_combines_with_padding_and_custom_and_matches_torch(kind: str) -> None:
    rng = np.random.default_rng(3)
    n, w = 6, 3
    pad = (False, False, True, False, False, True)
    grid = rng.random((n, n)) > 0.3
    o = Options(mask=kind, window=w, padding=pad, custom_mask=tuple(map(tuple, grid.tolist())), heads=2)
    X, W_q, W_k, W_v = rand(rng, n, 4), rand(rng, 4, 4), rand(rng, 4, 4), rand(rng, 4, 4)
    t = attention.self_attention(X, W_q, W_k, W_v, options=o)
    explicit = np.array([[i - w + 1 <= j <= i for j in range(n)] for i in range(n)])
    if "causal" in kind:
        explicit &= np.tril(np.ones((n, n), bool))
    if "padding" in kind:
        explicit &= ~np.array(pad)[None, :]
    if "custom" in kind:
        explicit &= grid
    assert np.array_equal(t.allowed, explicit)
    q = t64(X @ W_q).reshape(1, n, 2, 2).transpose(1, 2)
    k = t64(X @ W_k).reshape(1, n, 2, 2).transpose(1, 2)
    v = t64(X @ W_v).reshape(1, n, 2, 2).transpose(1, 2)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(explicit)).transpose(1, 2).reshape(n, 4)
    live = explicit.any(axis=1)  # torch gives NaN on fully masked rows; the engine gives 0 (its documented choice)
    assert close(t.output[live], ref.numpy()[live])
    assert np.array_equal(t.output[~live], np.zeros((int((~live).sum()), 4)))


# ---------------------------------------------------------------- ALiBi


def reference_slopes(n: int) -> list[float]:
    """The ALiBi paper's reference code (ofirpress/attention_with_linear_biases), written out independently."""

    def power_of_2(k: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(k) - 3)))
        return [start * start**i for i in range(k)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + reference_slopes(2 * closest)[0::2][: n - closest]


@pytest.mark.parametrize("h", range(1, 17))
def test_alibi_slopes_are_the_papers(h: int) -> None:
    assert np.allclose(positions.alibi_slopes(h), reference_slopes(h), rtol=1e-15, atol=0)
    if h & (h - 1) == 0:
        assert np.allclose(positions.alibi_slopes(h), [2 ** (-8 * k / h) for k in range(1, h + 1)], rtol=1e-15)
    assert positions.alibi_slopes(8).tolist() == [2.0**-k for k in range(1, 9)]
    assert positions.alibi_slopes(6).tolist() == [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3]


@pytest.mark.parametrize("mask", ["none", "causal", "causal+window"])
@pytest.mark.parametrize(("h", "g"), [(1, 1), (4, 4), (6, 2)])
def test_alibi_matches_the_formula_and_torch_with_an_explicit_float_mask(mask: str, h: int, g: int) -> None:
    rng = np.random.default_rng(4 + h)
    n, dh = 6, 2
    X, W_q, W_k, W_v = rand(rng, n, 5), rand(rng, 5, h * dh), rand(rng, 5, g * dh), rand(rng, 5, g * 2)
    t = attention.self_attention(X, W_q, W_k, W_v, heads=h, kv_heads=g, positions="alibi", mask=mask, window=2)
    slopes = reference_slopes(h)
    bias = np.array([[[-m * (i - j) for j in range(n)] for i in range(n)] for m in slopes])  # (h, n, n)
    scaled = t.scaled if h > 1 else t.scaled[None]
    scores = t.scores if h > 1 else t.scores[None]
    live = np.isfinite(scaled)
    assert np.allclose(scaled[live], (scores * t.scale + bias)[live], rtol=1e-14, atol=1e-14)
    float_mask = bias.copy()
    if t.allowed is not None:
        float_mask[:, ~t.allowed] = -np.inf
    q = t64(X @ W_q).reshape(1, n, h, dh).transpose(1, 2)
    k = t64(X @ W_k).reshape(1, n, g, dh).transpose(1, 2)
    v = t64(X @ W_v).reshape(1, n, g, 2).transpose(1, 2)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=t64(float_mask)[None], enable_gqa=True)
    assert close(t.output, ref.transpose(1, 2).reshape(n, h * 2).numpy())
    assert close(t.output, naive_gqa(X, W_q, W_k, W_v, h, g, 1 / math.sqrt(dh), t.allowed, bias))


# ---------------------------------------------------------------- cross-attention


@pytest.mark.parametrize("h", [1, 2, 4])
@pytest.mark.parametrize("mask", ["none", "causal", "padding"])
def test_cross_attention_matches_torch_multihead_attention(h: int, mask: str) -> None:
    rng = np.random.default_rng(5 + h)
    L, S, E = 3, 5, 8
    X_q, X_kv = rand(rng, L, E), rand(rng, S, E)
    mha = torch.nn.MultiheadAttention(E, h, bias=False, batch_first=True, dtype=torch.float64)
    W = mha.in_proj_weight.detach().numpy()  # (3E, E): rows of W_q, W_k, W_v (torch computes x @ W.T)
    W_q, W_k, W_v, W_o = W[:E].T, W[E : 2 * E].T, W[2 * E :].T, mha.out_proj.weight.detach().numpy().T
    pad = (False, True, False, False, True)
    o = Options(heads=h, mask=mask, padding=pad if mask == "padding" else ())
    t = attention.cross_attention(X_q, X_kv, W_q, W_k, W_v, o, W_o=W_o, tokens=["a", "b", "c"])
    kw = {}
    if mask == "causal":
        kw["attn_mask"] = torch.from_numpy(~masks.causal(L, S))  # MultiheadAttention: True = NOT allowed
    if mask == "padding":
        kw["key_padding_mask"] = torch.tensor([pad])
    out, w = mha(t64(X_q)[None], t64(X_kv)[None], t64(X_kv)[None], average_attn_weights=False, **kw)
    assert t.weights.shape == ((h, L, S) if h > 1 else (L, S)) and t.output.shape == (L, E)
    assert close(t.output, out[0].detach().numpy())
    assert close(t.weights, w[0].detach().numpy().reshape(t.weights.shape))
    assert t.X_kv is not None and t.X_kv.shape == (S, E) and t.head(h - 1).K.shape == (S, E // h)


def test_cross_attention_with_grouped_heads_alibi_window_and_rotary_matches_naive_loops() -> None:
    rng = np.random.default_rng(6)
    L, S = 4, 6
    X_q, X_kv = rand(rng, L, 4), rand(rng, S, 4)
    W_q, W_k, W_v = rand(rng, 4, 4), rand(rng, 4, 2), rand(rng, 4, 2)
    t = attention.cross_attention(
        X_q, X_kv, W_q, W_k, W_v, heads=2, kv_heads=1, positions="alibi", mask="window", window=2
    )
    bias = np.array([positions.alibi_bias(m, L, S) for m in reference_slopes(2)])
    allowed = np.array([[i - 1 <= j <= i for j in range(S)] for i in range(L)])
    assert close(t.output, naive_gqa(X_q, W_q, W_k, W_v, 2, 1, 1 / math.sqrt(2), allowed, bias, X_kv))
    W_k4 = rand(rng, 4, 4)
    r = attention.cross_attention(X_q, X_kv, W_q, W_k4, W_v, positions="rotary")
    q, k = positions.rotary(X_q @ W_q), positions.rotary(X_kv @ W_k4)
    assert close(r.scores, q @ k.T) and r.scores.shape == (L, S)


def test_cross_attention_refuses_what_does_not_fit() -> None:
    rng = np.random.default_rng(7)
    X_q, W = rand(rng, 3, 4), rand(rng, 4, 4)
    with pytest.raises(AttentionError, match=r"X_kv has shape \(5, 3\) but X_q has \(3, 4\)"):
        attention.cross_attention(X_q, rand(rng, 5, 3), W, W, W)
    with pytest.raises(AttentionError, match="cannot use learned positions"):
        attention.cross_attention(X_q, rand(rng, 5, 4), W, W, W, positions="learned")
    with pytest.raises(AttentionError, match=r"padding flags list 3 tokens but X_kv has 5; .*one flag per key"):
        attention.cross_attention(X_q, rand(rng, 5, 4), W, W, W, mask="padding", padding=(False,) * 3)
    with pytest.raises(AttentionError, match=r"give the custom mask as attn_mask of shape \(3, 5\)"):
        attention.cross_attention(X_q, rand(rng, 5, 4), W, W, W, mask="custom", custom_mask=((True,) * 3,) * 3)
    grid = np.ones((3, 5), bool)
    grid[0] = False
    t = attention.cross_attention(X_q, rand(rng, 5, 4), W, W, W, attn_mask=grid)
    assert t.fully_masked == (0,) and np.array_equal(t.output[0], np.zeros(4))
    with pytest.raises(AttentionError, match="the backward pass covers self-attention"):
        backward(t, d_output=np.ones(t.output.shape))


# ---------------------------------------------------------------- FlashAttention, tile by tile


@pytest.mark.parametrize("kind", masks.KINDS)
@pytest.mark.parametrize(("bq", "bk"), [(1, 1), (2, 3), (3, 2), (4, 4), (7, 7), (16, 5)])
def test_tiled_output_equals_the_full_softmax_for_every_mask_and_tile_size(kind: str, bq: int, bk: int) -> None:
    rng = np.random.default_rng(abs(hash((kind, bq, bk))) % 2**32)
    n = 7
    grid = rng.random((n, n)) > 0.45
    grid[2] = False  # a row the custom mask forbids entirely
    pad = tuple(bool(v) for v in rng.random(n) > 0.6)
    o = Options(mask=kind, window=2, padding=pad, custom_mask=tuple(map(tuple, grid.tolist())), temperature=0.7)
    X, W_q, W_k, W_v = rand(rng, n, 5) * 3, rand(rng, 5, 4), rand(rng, 5, 4), rand(rng, 5, 3)
    t = attention.self_attention(X, W_q, W_k, W_v, options=o)
    f = flash.from_trace(t, bq, bk)
    assert close(f.output, t.output)
    for r in t.fully_masked:
        assert np.array_equal(f.output[r], np.zeros(3))  # what the full path gives: weights 0, output 0
    assert f.grid == (math.ceil(n / bq), math.ceil(n / bk)) and len(f.tiles) == f.grid[0] * f.grid[1]
    live = np.isfinite(f.m)
    assert np.allclose(f.m[live], t.scaled.max(axis=-1)[live] / 0.7, rtol=1e-14)
    z = np.where(np.isfinite(t.scaled), t.scaled / 0.7 - np.where(live, f.m, 0)[:, None], -np.inf)
    assert np.allclose(f.l, np.exp(z).sum(axis=-1), rtol=1e-13)


@pytest.mark.parametrize(("h", "g", "pos"), [(4, 2, "alibi"), (4, 1, "rotary"), (2, 2, "sinusoidal")])
def test_tiled_heads_grouped_and_alibi_equal_the_full_path(h: int, g: int, pos: str) -> None:
    rng = np.random.default_rng(8)
    n = 9
    X, W_q, W_k, W_v = rand(rng, 2, n, 6), rand(rng, 6, 2 * h), rand(rng, 6, 2 * g), rand(rng, 6, 2 * g)
    t = attention.self_attention(X, W_q, W_k, W_v, heads=h, kv_heads=g, positions=pos, mask="causal+window", window=4)
    f = flash.from_trace(t, 4, 3)
    assert f.output.shape == t.concat.shape and close(f.output, t.concat)


def test_one_head_tiled_alone_is_that_heads_part_of_the_full_path_and_keeps_what_kept_numbers_counts() -> None:
    rng = np.random.default_rng(8)
    n, h, g = 9, 4, 2
    X, W_q, W_k, W_v = rand(rng, 2, n, 6), rand(rng, 6, 2 * h), rand(rng, 6, 2 * g), rand(rng, 6, 3 * g)
    o = Options(heads=h, kv_heads=g, positions="alibi", mask="causal+window", window=4)
    t = attention.self_attention(X, W_q, W_k, W_v, options=o)
    every = flash.from_trace(t, 4, 3)
    for i in range(h):
        one = flash.from_trace(t, 4, 3, head=i)
        assert one.output.shape == (2, n, 3) and close(one.output, t.concat[..., 3 * i : 3 * i + 3])
        for a, b in zip(one.tiles, every.tiles, strict=True):
            assert np.allclose(a.partial, b.partial[:, i], rtol=1e-13) and np.array_equal(a.m_new, b.m_new[:, i])
        naive = sum(
            a.size for x in one.tiles for a in (x.scores, x.p, x.acc, x.partial, x.m_old, x.m_new, x.rescale, x.l)
        )
        assert flash.kept_numbers(n, n, 3, 4, 3) * 2 == naive  # a batch of two
    for bad in (-1, h, 1.0, True, "0"):
        with pytest.raises(AttentionError, match="head must be a whole number from 0 to 3"):
            flash.from_trace(t, 4, 3, head=bad)  # type: ignore[arg-type]


def test_each_tile_keeps_the_online_softmax_invariants() -> None:
    rng = np.random.default_rng(9)
    n = 10
    t = attention.self_attention(rand(rng, n, 4) * 4, rand(rng, 4, 4), rand(rng, 4, 4), rand(rng, 4, 2), mask="causal")
    f = flash.from_trace(t, 4, 3)
    order = [(x.q_block, x.k_block) for x in f.tiles]
    assert order == [(qb, kb) for qb in range(3) for kb in range(4)]  # query blocks outer, key blocks inner
    for x in f.tiles:
        r0, r1 = x.rows
        c0, c1 = x.cols
        seen = t.scaled[r0:r1, :c1]  # everything this row block has seen after the tile
        m = seen.max(axis=-1)
        assert np.array_equal(x.m_new, np.maximum(x.m_old, x.scores.max(axis=-1)))
        assert np.allclose(x.m_new[np.isfinite(m)], m[np.isfinite(m)])
        ok = np.isfinite(x.m_old) & np.isfinite(x.m_new)
        assert np.allclose(x.rescale[ok], np.exp(x.m_old - x.m_new)[ok]) and (x.rescale <= 1).all()
        partial = (
            attention.self_attention(t.X[:c1], t.W_q, t.W_k, t.W_v, mask="causal").output[r0:r1] if c1 >= r1 else None
        )  # with every key up to the row block's last, the causal partial is final
        if partial is not None:
            assert np.allclose(x.partial, partial)
        assert x.last == (c1 == n)


def test_tile_sizes_are_checked_and_memory_is_counted() -> None:
    t = attention.self_attention(np.eye(3), np.eye(3), np.eye(3), np.eye(3))
    for bad in (0, -1, 2.5, True, "4", 10**9):
        with pytest.raises(AttentionError, match="block_q must be a whole number from 1 to 2048"):
            flash.from_trace(t, bad)  # type: ignore[arg-type]
    m = flash.memory(2048, 64, 128, 128)
    assert m["full_numbers"] == 2048**2 and m["full_bytes"] == 2048**2 * 8
    assert m["tile_numbers"] == 2 * 128 * 128 + 128 * 64 + 2 * 128 * 64 + 128 * 64 + 2 * 128


@pytest.mark.parametrize(("layers", "h", "g", "d_k", "d_v", "b"), [(32, 32, 8, 4096, 2048, 2), (3, 4, 2, 8, 12, 4)])
def test_kv_cache_counts_keys_d_k_per_head_and_values_d_v_per_head(layers, h, g, d_k, d_v, b) -> None:
    naive = 0
    for _layer in range(layers):
        for _kv_head in range(g):
            naive += (d_k // h) * b + (d_v // h) * b  # one key and one value vector
    assert kvcache.bytes_per_token(layers, g, d_k // h, b, d_v // h) == naive
    c = kvcache.compare(layers, h, g, d_k // h, 10, b, d_v // h)
    assert c["this"].bytes_per_token == naive and c["this"].total_bytes == 10 * naive
    assert c["MQA"].bytes_per_token == naive // g and c["MHA"].bytes_per_token == naive * h // g


def test_kv_cache_bytes_per_token() -> None:
    # a 7B-class model: 32 layers, 32 heads of 128, float16: 2 * 32 * 32 * 128 * 2 = 512 KiB per token
    assert kvcache.bytes_per_token(32, 32, 128) == 524_288
    c = kvcache.compare(layers=32, heads=32, kv_heads=8, d_head=128, tokens=4096)
    assert (c["MHA"].bytes_per_token, c["this"].bytes_per_token, c["MQA"].bytes_per_token) == (524_288, 131_072, 16_384)
    assert c["this"].total_bytes == 131_072 * 4096 and kvcache.readable(c["this"].total_bytes) == "512.0 MiB"
    for bad in ({"kv_heads": 3}, {"kv_heads": 0}, {"layers": -1}, {"d_head": "64"}, {"tokens": 10**30}):
        with pytest.raises(AttentionError):
            kvcache.compare(**{"layers": 2, "heads": 4, "kv_heads": 2, "d_head": 8, **bad})


# ---------------------------------------------------------------- the backward pass


@pytest.mark.parametrize(
    "opts",
    [
        Options(heads=4, kv_heads=2),
        Options(heads=4, kv_heads=1, positions="alibi", mask="window", window=2),
        Options(heads=2, kv_heads=1, positions="rotary", mask="causal"),
    ],
    ids=["gqa", "mqa-alibi-window", "mqa-rotary"],
)
def test_backward_with_grouped_heads_alibi_and_window_matches_finite_differences(opts: Options) -> None:
    rng = np.random.default_rng(10)
    g, dh = opts.kv, 4 // opts.heads
    inputs = {"X": rand(rng, 4, 3), "W_q": rand(rng, 3, 4), "W_k": rand(rng, 3, g * dh), "W_v": rand(rng, 3, 2 * g)}
    inputs["W_o"] = rand(rng, 2 * opts.heads, 3)
    t = attention.self_attention(**inputs, options=opts)
    d_out, d_w = rand(rng, *t.output.shape), rand(rng, *t.weights.shape)

    def loss(mats: dict) -> float:
        u = attention.self_attention(**mats, options=opts)
        return float(np.sum(d_out * u.output) + np.sum(d_w * u.weights))

    grads = backward(t, d_output=d_out, d_weights=d_w)
    for name, value in inputs.items():
        fd = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            plus, minus = dict(inputs), dict(inputs)
            plus[name], minus[name] = value.copy(), value.copy()
            plus[name][idx] += 1e-6
            minus[name][idx] -= 1e-6
            fd[idx] = (loss(plus) - loss(minus)) / 2e-6
        assert grads[name].shape == value.shape
        assert np.allclose(grads[name], fd, rtol=1e-5, atol=1e-7), name


# ---------------------------------------------------------------- the options travel in preset files


@pytest.mark.parametrize(
    "opts",
    [
        Options(heads=4, kv_heads=2, mask="causal+window", window=2, positions="alibi"),
        Options(heads=4, kv_heads=1, projection="x_wt", positions="rotary"),
        Options(heads=2, kv_heads=2, mask="window", window=5),
        Options(window=7),  # a window kept while the mask has none
    ],
)
def test_family_options_round_trip_through_a_preset_file_bit_for_bit(opts: Options) -> None:
    rng = np.random.default_rng(11)
    h, g = opts.heads, opts.kv
    m = {"X": rand(rng, 5, 4), "W_q": rand(rng, 4, 8), "W_k": rand(rng, 4, 8 // h * g), "W_v": rand(rng, 4, 2 * g)}
    if opts.projection == "x_wt":
        m = {k: (v.T if k != "X" else v) for k, v in m.items()}
    p = attention.from_state(["a", "b", "c", "d", "e"], m, opts)
    q = attention.parse_preset(p.to_json(), "family.json")
    assert q.options == opts
    a, b = p.compute(), q.compute()
    for name in ("K", "V", "scaled", "weights", "output"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert Options.from_dict(json.loads(json.dumps(opts.to_dict()))) == opts


@pytest.mark.parametrize(
    ("changes", "where", "pattern"),
    [
        ({"heads": 2, "kv_heads": 3}, "options.kv_heads", "must divide heads = 2"),
        ({"kv_heads": "one"}, "options.kv_heads", "must be a whole number from 1 to 256"),
        ({"mask": "window", "window": 0}, "options.window", "must be a whole number of tokens from 1 to 2048"),
        ({"window": 1e300}, "options.window", "must be a whole number of tokens"),
        ({"positions": "ALiBi"}, "options.positions", "must be one of none, sinusoidal, learned, rotary, alibi"),
    ],
)
def test_bad_family_values_in_a_preset_file_name_the_field(changes: dict, where: str, pattern: str) -> None:
    p = attention.from_state(["a", "b"], attention.blank(2, 2).matrices(), Options())
    d = json.loads(p.to_json())
    d["options"].update(changes)
    with pytest.raises(AttentionError, match=f"field '{where}'.*{pattern}"):
        attention.parse_preset(json.dumps(d), "bad.json")


def test_a_cell_explained_under_grouped_heads_and_alibi_adds_up_to_the_traces_numbers() -> None:
    from attention.explain import explain_cell

    rng = np.random.default_rng(12)
    X, W_q, W_k, W_v = rand(rng, 5, 4), rand(rng, 4, 8), rand(rng, 4, 4), rand(rng, 4, 4)
    t = attention.self_attention(X, W_q, W_k, W_v, heads=4, kv_heads=2, positions="alibi", mask="causal")
    for head in range(4):
        for i in range(5):
            for j in range(i + 1):
                e = explain_cell(t, i, j, head)
                assert np.isclose(e.products.sum(), t.scores[head, i, j], rtol=1e-13)
                assert np.array_equal(e.k, t.K[j, (head // 2) * 2 : (head // 2) * 2 + 2])
                assert e.bias == -positions.alibi_slopes(4)[head] * (i - j)
                assert np.isclose(e.score * e.scale + e.bias, e.scaled, rtol=1e-13, atol=1e-15)
                assert np.isclose(np.exp(e.shifted[j]) / e.row_sum, e.weight, rtol=1e-12)


@pytest.mark.parametrize(("hq", "hkv"), [(4, 1), (4, 2), (6, 3), (2, 2)])
def test_numpy_sdpa_enable_gqa_matches_torch(hq: int, hkv: int) -> None:
    rng = np.random.default_rng(13)
    q, k, v = rand(rng, 2, hq, 5, 3), rand(rng, 2, hkv, 7, 3), rand(rng, 2, hkv, 7, 4)
    mask = rng.random((5, 7)) > 0.3
    out, w = attention.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    ref = F.scaled_dot_product_attention(t64(q), t64(k), t64(v), attn_mask=torch.from_numpy(mask), enable_gqa=True)
    live = mask.any(axis=1)
    assert close(out[..., live, :], ref.numpy()[..., live, :])
    if hq != hkv:
        with pytest.raises(AttentionError, match="enable_gqa the"):
            attention.scaled_dot_product_attention(
                q, rand(rng, 2, hq - 1, 7, 3), rand(rng, 2, hq - 1, 7, 4), enable_gqa=True
            )


@pytest.mark.parametrize(("h", "g"), [(1, 1), (4, 4), (4, 2), (4, 1), (6, 3), (8, 2)])
def test_kv_block_is_the_block_of_consecutive_query_heads_each_key_value_head_serves(h: int, g: int) -> None:
    """The oracle: the key/value heads' indices, each repeated h / g times, as torch's repeat_interleave does for
    grouped-query attention."""
    from attention.heads import kv_block

    assert [kv_block(i, h, g) for i in range(h)] == np.repeat(np.arange(g), h // g).tolist()
