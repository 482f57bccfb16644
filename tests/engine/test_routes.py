"""Information-flow routes (:mod:`attention.model.flow`) and what parts push toward (:mod:`attention.model.pushes`),
against direct implementations written here with loops over heads, positions and neurons, on every family's parts
(a tiny Llama with grouped heads among them) and on the shipped model.

Bounds: every number here is a float64 sum of a few hundred products of values of order 1 (the tiny models' weights
are drawn with std 0.3), about 1e-15 relative per step, so 1e-9 is 10⁴ times the rounding; a share is a ratio of L1
norms of order 1 to 100, held to the same 1e-9. A real mistake (a head read from the wrong group, the post-norm
not held, a part left out) moves a value by far more than the bound, as the last tests show."""

from __future__ import annotations

import numpy as np
import pytest

from attention.errors import AttentionError
from attention.model import Config, Model, ablate, attribute, builtin, flow, init_params, sweep
from attention.model import pushes as push
from attention.model.vocab import WordVocab
from tests.helpers.examples import TYPES, example_parts

TOL = 1e-9
FAMILIES = {  # each family's parts that change how an update splits, once
    "gpt-2: LayerNorm, biases, learned positions": {},
    "llama: RMSNorm, gated MLP, grouped heads, RoPE": dict(
        norm="rmsnorm", mlp="gated", activation="silu", n_kv_heads=2, positions="rotary", bias=False, tied=False
    ),
    "qwen2: q/k/v biases only": dict(
        norm="rmsnorm", mlp="gated", activation="silu", bias=False, qkv_bias=True, positions="rotary", n_kv_heads=2
    ),
    "gemma 3: post-norms, QK-norm, sliding layers": dict(
        norm="rmsnorm",
        norm_offset=1.0,
        post_norms=True,
        qk_norm=True,
        mlp="gated",
        n_kv_heads=1,
        positions="rotary",
        bias=False,
        head_dim=12,
        layer_types=("sliding", "full", "sliding"),
        sliding_window=3,
    ),
    "gpt-neox: parallel residual, partial rotation": dict(
        parallel_residual=True, positions="rotary", rotary_dims=4, rotary_layout="halves"
    ),
    "attention only": dict(attention_only=True, positions="sinusoidal"),
}
FAMILIES |= {name: example_parts(name, vocab_size=40, n_ctx=16) for name in TYPES}  # every family's examples
SIZES = dict(vocab_size=40, n_ctx=16, d_model=32, n_layers=3, n_heads=4, d_mlp=48)  # where a part gives none
IDS = [3, 17, 5, 9, 3, 17, 22, 8, 5]


def _model(parts: dict) -> Model:
    cfg = Config(**{**SIZES, **parts}).validate()
    params = init_params(cfg, seed=1, std=0.3)
    rs = np.random.RandomState(2)
    params = {
        k: v + rs.normal(0, 0.3, v.shape) if k.endswith((".g", ".b")) or "b_" in k else v for k, v in params.items()
    }
    return Model(cfg, params, WordVocab([f"w{i}" for i in range(40)]))


# ---------------------------------------------------------------- the direct implementation


def _norm(c: Config, p: dict, name: str, x: np.ndarray) -> np.ndarray:
    """One row's norm, written out: (d,) -> (d,)."""
    if c.norm == "layernorm":
        mu = sum(x) / len(x)
        var = sum((v - mu) ** 2 for v in x) / len(x)
        return (x - mu) / np.sqrt(var + c.ln_eps) * p[name + ".g"] + p[name + ".b"]
    return x / np.sqrt(sum(v * v for v in x) / len(x) + c.ln_eps) * (c.norm_offset + p[name + ".g"])


def _mlp(c: Config, p: dict, layer: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The MLP on one row, neuron by neuron: (its write (d,), each neuron's write (d_mlp, d), the bias's (d,))."""
    f, act = f"{layer}.", flow_activation(c)
    h = _norm(c, p, f + "ln2", x) if c.pre_norms else x  # OLMo-2: no norm before its MLP
    rows, b = [], p[f + "b_proj"] if c.bias else np.zeros(c.d_model)
    for k in range(c.d_mlp):
        pre = sum(h[i] * p[f + "W_fc"][i, k] for i in range(c.d_model)) + (p[f + "b_fc"][k] if c.bias else 0.0)
        if c.mlp == "gated":
            gate = sum(h[i] * p[f + "W_gate"][i, k] for i in range(c.d_model))
            a = act(gate) * pre
        else:
            a = act(pre)
        rows.append(a * p[f + "W_proj"][k])
    rows = np.array(rows)
    if c.post_norms:
        out = rows.sum(axis=0) + b
        scale = (c.norm_offset + p[f + "ln_post_mlp.g"]) / np.sqrt(np.mean(out * out) + c.ln_eps)
        rows, b = rows * scale, b * scale
    return rows.sum(axis=0) + b, rows, b


def flow_activation(c: Config):  # noqa: ANN201 - a function of a float
    from attention.model.layers import ACTIVATION

    return lambda v: float(ACTIVATION[c.activation](np.array([v]))[0])


def _value(c: Config, p: dict, layer: int, x: np.ndarray, s: int, g: int) -> np.ndarray:
    """Source s's value for key/value head g: N₁(x_s) W_v (+ b_v), that head's columns: (dₕ,)."""
    h = x[s] if c.attention_only or not c.pre_norms else _norm(c, p, f"{layer}.ln1", x[s])
    cols = slice(g * c.d_head, (g + 1) * c.d_head)
    v = h @ p[f"{layer}.W_v"][:, cols]
    return v + p[f"{layer}.b_v"][cols] if c.has_qkv_bias else v


def _naive_layer(m: Model, run, layer: int, t: int) -> list[dict]:
    """Layer ``layer``'s sums at row t, part by part with loops: each a dict of parts (name -> (d,)) and its y."""
    c, p = m.config, m.params
    x, H, G = run.residuals[layer], c.n_heads, c.kv_heads
    A = run.weights[layer]  # (H, n, n): the softmax, checked against transformers elsewhere
    parts = {"residual": x[t]}
    for h in range(H):
        W_o = p[f"{layer}.W_o"][h * c.d_head : (h + 1) * c.d_head]
        for s in range(t + 1):
            parts[("head", h, s)] = A[h, t, s] * (_value(c, p, layer, x, s, h // (H // G)) @ W_o)
    if c.bias:
        parts["bias"] = p[f"{layer}.b_o"].copy()
    if c.post_norms:  # held at the whole attention output
        a = sum(v for k, v in parts.items() if k != "residual")
        scale = (c.norm_offset + p[f"{layer}.ln_post_attn.g"]) / np.sqrt(np.mean(a * a) + c.ln_eps)
        parts = {k: v if k == "residual" else v * scale for k, v in parts.items()}
    mid = sum(parts.values())
    if c.attention_only:
        return [dict(parts=parts, y=mid)]
    if c.parallel_residual:
        parts["mlp"] = _mlp(c, p, layer, x[t])[0]
        return [dict(parts=parts, y=sum(parts.values()))]
    second = {"residual": mid, "mlp": _mlp(c, p, layer, mid)[0]}
    return [dict(parts=parts, y=mid), dict(parts=second, y=sum(second.values()))]


def _naive_shares(parts: dict, y: np.ndarray) -> dict:
    near = {
        k: max(0.0, sum(abs(v) for v in y) - sum(abs(a - b) for a, b in zip(y, z, strict=True)))
        for k, z in parts.items()
    }
    whole = sum(near.values())
    return {k: v / whole for k, v in near.items()}


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize("family", FAMILIES)
def test_each_update_splits_into_parts_that_add_up_to_it(family: str) -> None:
    m = _model(FAMILIES[family])
    run = m.run(IDS)
    for layer in range(m.config.n_layers):
        made = flow.updates(run, layer)
        assert made[-1].y is not None
        np.testing.assert_allclose(made[-1].y, run.residuals[layer + 1], atol=TOL)  # the last sum is the next stream
        for u in made:
            np.testing.assert_allclose(u.total(), u.y, rtol=0, atol=TOL)  # the parts add up to the update
        for t in (0, 4, len(IDS) - 1):
            naive = _naive_layer(m, run, layer, t)
            assert len(naive) == len(made)
            np.testing.assert_allclose(naive[-1]["y"], run.residuals[layer + 1][t], atol=TOL)  # the loops agree
            for u, n in zip(made, naive, strict=True):
                np.testing.assert_allclose(u.y[t], n["y"], atol=TOL)
                np.testing.assert_allclose(u.residual[t], n["parts"]["residual"], atol=TOL)
                if u.heads is not None:
                    for h in range(m.config.n_heads):
                        for s in range(t + 1):
                            np.testing.assert_allclose(u.heads[h, t, s], n["parts"][("head", h, s)], atol=TOL)
                        assert not u.heads[h, t, t + 1 :].any()  # a causal head writes nothing from later sources
                if u.mlp is not None:
                    np.testing.assert_allclose(u.mlp[t], n["parts"]["mlp"], atol=TOL)


@pytest.mark.parametrize("family", FAMILIES)
def test_shares_are_the_proximities_normalised_over_each_sum(family: str) -> None:
    m = _model(FAMILIES[family])
    run = m.run(IDS)
    t = len(IDS) - 1
    for layer in range(m.config.n_layers):
        for u, n in zip(flow.updates(run, layer, [t]), _naive_layer(m, run, layer, t), strict=True):
            got, want = u.shares(), _naive_shares(n["parts"], n["y"])
            assert got["residual"][0] == pytest.approx(want["residual"], abs=TOL)
            for key, share in want.items():
                if isinstance(key, tuple):
                    assert got["heads"][key[1], 0, key[2]] == pytest.approx(share, abs=TOL)
                elif key != "residual":
                    assert got[key][0] == pytest.approx(share, abs=TOL)
            total = sum(float(v.sum()) for v in got.values())
            assert total == pytest.approx(1.0, abs=TOL)


def _naive_routes(m: Model, run, t: int, threshold: float) -> dict:
    """The walk from the top, with the loops' shares: {(kind, layer, head, source, target, below): share}."""
    names = flow.levels(run)
    each = 1 if m.config.attention_only or m.config.parallel_residual else 2
    reached, out = {len(names) - 1: {t}}, {}
    for layer in range(m.config.n_layers - 1, -1, -1):
        for stage in range(each - 1, -1, -1):
            above = layer * each + stage + 1
            for row in sorted(reached.get(above, ())):
                sums = _naive_layer(m, run, layer, row)
                shares = _naive_shares(sums[stage]["parts"], sums[stage]["y"])
                for key, share in shares.items():
                    if share > threshold and key != "bias":
                        kind, head, source = (key[0], key[1], key[2]) if isinstance(key, tuple) else (key, -1, row)
                        out[(kind, layer, head, source, row, above - 1)] = share
                        reached.setdefault(above - 1, set()).add(source)
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_routes_keep_what_the_walk_from_the_top_keeps(family: str) -> None:
    m = _model(FAMILIES[family])
    run = m.run(IDS)
    for t, threshold in ((len(IDS) - 1, 0.05), (4, 0.02)):
        got = flow.routes(run, t, threshold)
        want = _naive_routes(m, run, t, threshold)
        edges = {(e.kind, e.layer, e.head, e.source, e.target, e.below): e.share for e in got.edges}
        assert edges.keys() == want.keys()
        for key, share in want.items():
            assert edges[key] == pytest.approx(share, abs=TOL)
        assert all(e.above == e.below + 1 for e in got.edges)
        assert [e.share for e in got.edges] == sorted((e.share for e in got.edges), reverse=True)


def test_routes_in_small_chunks_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    m = _model(FAMILIES["llama: RMSNorm, gated MLP, grouped heads, RoPE"])
    run = m.run(IDS)
    whole = flow.routes(run, -1, 0.01)
    monkeypatch.setattr(flow, "CHUNK", 1)  # one row at a time
    assert [(e.kind, e.layer, e.head, e.source, e.target) for e in flow.routes(run, -1, 0.01).edges] == [
        (e.kind, e.layer, e.head, e.source, e.target) for e in whole.edges
    ]


def test_the_strongest_route_of_heads_is_the_one_patching_names() -> None:
    """On the shipped model's repeated text, the last token's prediction (the token after its earlier copy) comes
    through the previous-token head into the induction head; both named by patching, not copied from the output."""
    m = builtin("induction")
    words = [10, 2, 6, 15, 28, 4, 3, 14, 22, 12, 29, 0]
    clean = words + words
    corrupt = list(clean)
    corrupt[len(words) - 1] = next(i for i in range(m.config.vocab_size) if i not in clean)
    named = sweep(m, clean, corrupt, -1).heads  # (layers, heads): what each head restores
    previous, induction = (0, int(np.argmax(named[0]))), (1, int(np.argmax(named[1])))
    found = flow.routes(m.run(clean), -1, 0.05)
    of_heads = [path for _, path in found.strongest(20) if all(e.kind == "head" for e in path)]
    first = of_heads[0]
    assert [(e.layer, e.head) for e in first] == [previous, induction]
    assert [e.source for e in first] == [len(words) - 1, len(words)]  # the earlier copy, then the token after it
    assert first[-1].target == len(clean) - 1
    top = found.strongest(1)[0][1]
    assert top[-1].kind == "head" and (top[-1].layer, top[-1].head) == induction  # the top's strongest way in


def test_routes_refuse_what_they_cannot_split() -> None:
    m = builtin("induction")
    run = m.run(IDS)
    for bad in (-0.1, 1.0, "0.1", float("nan")):
        with pytest.raises(AttentionError, match="threshold"):
            flow.routes(run, -1, bad)
    with pytest.raises(AttentionError, match="position"):
        flow.routes(run, 99, 0.1)
    with pytest.raises(AttentionError, match="ablations"):
        flow.routes(m.run(IDS, [ablate(0, 1, "zero")]), -1, 0.1)


# ---------------------------------------------------------------- what parts push toward


def _held_by_hand(m: Model, run, t: int, w: np.ndarray) -> np.ndarray:
    c, p = m.config, m.params
    W_U = p["W_E"].T if c.tied else p["W_U"]
    x = run.residuals[-1][t]
    if c.attention_only:
        return w @ W_U
    if c.norm == "layernorm":
        sigma = np.sqrt(np.mean((x - x.mean()) ** 2) + c.ln_eps)
        return ((w - w.mean()) / sigma * p["ln_f.g"]) @ W_U
    return (w / np.sqrt(np.mean(x * x) + c.ln_eps) * (c.norm_offset + p["ln_f.g"])) @ W_U


@pytest.mark.parametrize("family", FAMILIES)
def test_each_head_and_mlp_projected_through_the_held_unembedding(family: str) -> None:
    m = _model(FAMILIES[family])
    run = m.run(IDS)
    t, token = 6, 11
    att = attribute(run, t, token)
    for layer in range(m.config.n_layers):
        naive = _naive_layer(m, run, layer, t)[0]["parts"]
        for h, got in enumerate(push.heads(run, t, layer, token)):
            w = sum(v for k, v in naive.items() if isinstance(k, tuple) and k[1] == h)  # the head's write at t
            want = _held_by_hand(m, run, t, w)
            np.testing.assert_allclose(got.logits, want, atol=TOL)
            assert got.share == pytest.approx(att.heads[layer, h], abs=TOL)
            assert list(got.promoted) == list(np.argsort(-want, kind="stable")[: push.TOP])
            assert list(got.suppressed) == list(np.argsort(want, kind="stable")[: push.TOP])
        if m.config.attention_only:
            with pytest.raises(AttentionError, match="no MLPs"):
                push.mlp(run, t, layer, token)
            continue
        got = push.mlp(run, t, layer, token)
        assert got.share == pytest.approx(att.mlps[layer], abs=TOL)
        x_in = run.residuals[layer][t] if m.config.parallel_residual else _naive_layer(m, run, layer, t)[0]["y"]
        np.testing.assert_allclose(
            got.logits, _held_by_hand(m, run, t, _mlp(m.config, m.params, layer, x_in)[0]), atol=TOL
        )


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "attention only"])
def test_neurons_and_the_bias_add_up_to_the_mlps_share(family: str) -> None:
    m = _model(FAMILIES[family])
    run = m.run(IDS)
    t, token = len(IDS) - 1, 7
    att = attribute(run, t, token)
    for layer in range(m.config.n_layers):
        got = push.neurons(run, t, layer, token, top=3)
        assert got.shares.sum() + got.bias == pytest.approx(att.mlps[layer], abs=TOL)
        assert got.total == pytest.approx(att.mlps[layer], abs=TOL)
        x_in = run.residuals[layer][t] if m.config.parallel_residual else _naive_layer(m, run, layer, t)[0]["y"]
        _, rows, b = _mlp(m.config, m.params, layer, x_in)
        by_hand = np.array([_held_by_hand(m, run, t, r)[token] for r in rows])
        np.testing.assert_allclose(got.shares, by_hand, atol=TOL)
        assert list(got.order[:3]) == list(np.argsort(-by_hand, kind="stable")[:3])
        for k, neuron in zip(got.order[:3], got.pushes, strict=True):
            np.testing.assert_allclose(neuron.logits, _held_by_hand(m, run, t, rows[k]), atol=TOL)


def test_a_wrong_split_is_caught() -> None:
    """The bounds catch real mistakes: a head's write read from the next group, or Gemma's post-norm not held."""
    m = _model(FAMILIES["llama: RMSNorm, gated MLP, grouped heads, RoPE"])
    run = m.run(IDS)
    t = len(IDS) - 1
    u = flow.updates(run, 1, [t])[0]
    naive = _naive_layer(m, run, 1, t)[0]["parts"]
    wrong_group = u.heads[1, 0, 2]  # head 1 reads group 0; head 2 reads group 1
    assert np.abs(wrong_group - naive[("head", 2, 2)]).max() > 1e3 * TOL
    g = _model(FAMILIES["gemma 3: post-norms, QK-norm, sliding layers"])
    grun = g.run(IDS)
    gu = flow.updates(grun, 0, [t])[0]
    unheld = gu.heads.sum(axis=(0, 2))[0] / (g.config.norm_offset + g.params["0.ln_post_attn.g"])
    assert np.abs(gu.residual[0] + unheld - gu.y[0]).max() > 1e3 * TOL
