"""QK-norm as options of one pass (issue 40 §4, the engine's part): q_norm and k_norm, the gains of an RMSNorm of each
head's q and k applied between X·W and the rotation, recompute every QK-norm head of a model from its X, its blocks of
W and its options; their backward pass matches torch autograd; presets carry them and leave them out when unset.

Bounds (float64): a head recomputed from its X and W blocks does the model's arithmetic in another order, a few
units in the last place (~1e-15 relative), so 1e-12 as the other families' heads (test_model_heads_on_steps.py); a
gain 1% off moves the weights by more than 1e-6. The gradients: torch and numpy sum in other orders, ~1e-15 relative
per step over a few dozen steps; 1e-10 is wide and a real slip (a term of the norm's backward left out) is far off.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch  # a test oracle (requirements-dev.txt): if missing, these tests fail rather than skip

import attention
from attention import AttentionError, Options
from attention.backward import backward
from attention.model import Model, init_params
from attention.model.vocab import WordVocab
from tests.helpers.examples import TYPES, tiny_config

PER_HEAD = [name for name in TYPES if tiny_config(name).qk_norm and tiny_config(name).qk_norm_scope == "head"]
N = 8


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(got) - np.asarray(want))) / np.max(np.abs(want)))


def _model(name: str) -> Model:
    c = tiny_config(name)
    params = init_params(c, 1, std=0.5)
    rs = np.random.RandomState(101)
    for key, value in params.items():
        if key.endswith(".g"):  # gains away from 1, so a gain left out would show
            params[key] = value + rs.normal(0.0, 0.3, value.shape)
    return Model(c, params, WordVocab([f"w{i}" for i in range(c.vocab_size)]), name="tiny")


def _with_gains(m: Model, layer: int, options: Options) -> Options:
    c, p = m.config, m.params
    return options.replace(
        q_norm=tuple(float(g) for g in c.norm_offset + p[f"{layer}.q_norm.g"]),
        k_norm=tuple(float(g) for g in c.norm_offset + p[f"{layer}.k_norm.g"]),
        qk_norm_eps=c.ln_eps,
    )


@pytest.mark.parametrize("family", PER_HEAD)
def test_every_qk_norm_head_recomputes_from_its_x_w_and_gains(family: str) -> None:
    m = _model(family)
    run = m.run(np.random.RandomState(7).randint(0, m.config.vocab_size, N).tolist())
    for layer in range(m.config.n_layers):
        for head in range(m.config.n_heads):
            t = run.head(layer, head)
            o = t.options  # the model's head records its layer's gains
            assert o == _with_gains(m, layer, o.replace(q_norm=(), k_norm=(), qk_norm_eps=1e-6)) and o.q_norm
            again = attention.self_attention(t.X, t.W_q, t.W_k, t.W_v, options=o)
            assert _relative(again.weights, t.weights) < 1e-12, (family, layer, head)
            assert _relative(again.output, t.output) < 1e-12
            assert _relative(again.Q_raw, t.Q_raw) < 1e-12 and _relative(again.K, t.K) < 1e-12
            off = o.replace(q_norm=tuple(1.01 * g for g in o.q_norm))  # one gain vector 1% off
            assert _relative(attention.self_attention(t.X, t.W_q, t.W_k, t.W_v, options=off).weights, t.weights) > 1e-6
    assert PER_HEAD


@pytest.mark.parametrize("family", PER_HEAD)
def test_a_head_run_with_replaced_gains_records_and_recomputes_them(family: str) -> None:
    from attention.model import replace_gains

    m = _model(family)
    ids = np.random.RandomState(9).randint(0, m.config.vocab_size, N).tolist()
    new = np.random.RandomState(10).normal(1.0, 0.5, m.config.d_head)
    run = m.run(ids, [replace_gains(1, "q_norm", new)])
    t = run.head(1, 2)
    np.testing.assert_allclose(np.array(t.options.q_norm), new, rtol=1e-15)  # as applied: offset + (new − offset)
    again = attention.self_attention(t.X, t.W_q, t.W_k, t.W_v, options=t.options)
    assert _relative(again.weights, t.weights) < 1e-12
    assert run.head(0, 2).options == m.run(ids).head(0, 2).options  # the other layer keeps its own
    assert _relative(t.weights, m.run(ids).head(1, 2).weights) > 1e-6


def _torch_pass(X, W_q, W_k, W_v, W_o, gq, gk, o: Options, dh: int):  # noqa: ANN001, ANN202 - torch tensors
    """The same pass written directly in torch: heads, QK-norm, the halves rotation, causal softmax, W_o."""
    n, h, g = X.shape[0], o.heads, o.kv
    q = (X @ W_q).reshape(n, h, dh).transpose(0, 1)  # (h, n, dh)
    k = (X @ W_k).reshape(n, g, dh).transpose(0, 1)  # (g, n, dh)
    v = (X @ W_v).reshape(n, g, dh).transpose(0, 1)

    def norm(x, gains):  # noqa: ANN001, ANN202
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + o.qk_norm_eps) * gains

    omega = torch.tensor(o.frequencies(dh))  # (r/2,)
    theta = torch.arange(n, dtype=torch.float64)[:, None] * omega[None, :]
    cos, sin, r = torch.cos(theta), torch.sin(theta), 2 * len(omega)

    def turn(x):  # noqa: ANN001, ANN202 - pairs (i, i + r/2) of the first r columns
        a, b, rest = x[..., : r // 2], x[..., r // 2 : r], x[..., r:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos, rest], dim=-1)

    q, k = turn(norm(q, gq)), turn(norm(k, gk))
    k, v = k.repeat_interleave(h // g, dim=0), v.repeat_interleave(h // g, dim=0)
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
    A = torch.softmax((q @ k.transpose(-1, -2) / dh**0.5).masked_fill(~causal, float("-inf")), dim=-1)
    return (A @ v).transpose(0, 1).reshape(n, h * dh) @ W_o, A


def test_the_backward_pass_through_qk_norm_matches_torch_autograd() -> None:
    rs = np.random.RandomState(4)
    n, d, h, g, dh = 7, 10, 4, 2, 6
    o = Options(
        heads=h, kv_heads=g, mask="causal", positions="rotary", rotary_layout="halves", rotary_dims=4,
        rope_theta=300.0, q_norm=tuple(rs.normal(1, 0.3, dh)), k_norm=tuple(rs.normal(1, 0.3, dh)), qk_norm_eps=1e-5,
    )  # fmt: skip
    arrays = dict(X=rs.normal(size=(n, d)), W_q=rs.normal(size=(d, h * dh)), W_k=rs.normal(size=(d, g * dh)),
                  W_v=rs.normal(size=(d, g * dh)), W_o=rs.normal(size=(h * dh, d)))  # fmt: skip
    t = attention.self_attention(arrays["X"], arrays["W_q"], arrays["W_k"], arrays["W_v"], options=o, W_o=arrays["W_o"])
    G_O, G_A = rs.normal(size=t.output.shape), rs.normal(size=t.weights.shape)
    ours = backward(t, G_O, G_A)

    theirs = {k: torch.tensor(v, requires_grad=True) for k, v in arrays.items()}
    gq, gk = (torch.tensor(np.array(x), requires_grad=True) for x in (o.q_norm, o.k_norm))
    out, A = _torch_pass(*theirs.values(), gq, gk, o, dh)
    assert _relative(A.detach().numpy(), t.weights) < 1e-12 and _relative(out.detach().numpy(), t.output) < 1e-12
    ((out * torch.tensor(G_O)).sum() + (A * torch.tensor(G_A)).sum()).backward()
    for name, tensor in (*theirs.items(), ("q_norm", gq), ("k_norm", gk)):
        assert _relative(ours[name], tensor.grad.numpy()) < 1e-10, name
    # the bound catches a real slip: the norm's backward without its second term (the row's own RMS moving)
    bw = sys.modules["attention.backward"]  # the module (the package's name "backward" is the function)

    def first_term_only(x, gains, eps, d_y):  # noqa: ANN001, ANN202
        r = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
        return d_y * gains / r, (d_y * x / r).reshape(-1, x.shape[-1]).sum(axis=0)

    original = bw.rms_norm_backward
    try:
        bw.rms_norm_backward = first_term_only
        slipped = backward(t, G_O, G_A)
    finally:
        bw.rms_norm_backward = original
    assert _relative(slipped["W_q"], theirs["W_q"].grad.numpy()) > 1e-3
    assert _relative(slipped["q_norm"], gq.grad.numpy()) < 1e-10  # the gains' gradient has no such term


def test_the_gains_travel_in_a_preset_and_json_and_are_checked_by_name() -> None:
    p = attention.blank(4, 4, 4, seed=2)
    o = Options(heads=2, positions="rotary", q_norm=(1.5, 0.5), k_norm=(0.25, 2.0), qk_norm_eps=1e-5)
    saved = attention.from_state(p.tokens, p.matrices(), o)
    again = attention.parse_preset(saved.to_json(), "again.json")
    assert again.options == o and Options.from_dict(o.to_dict()) == o
    np.testing.assert_array_equal(again.compute().weights, saved.compute().weights)
    plain = attention.from_state(p.tokens, p.matrices(), Options(heads=2)).to_json()
    assert not any(name in plain for name in ("q_norm", "k_norm", "qk_norm_eps"))  # files without them unchanged
    for bad, field in (
        (dict(q_norm=["a"]), "q_norm"),
        (dict(k_norm=[float("nan")]), "k_norm"),
        (dict(qk_norm_eps=0), "qk_norm_eps"),
    ):
        with pytest.raises(AttentionError) as info:
            Options.from_dict(bad)
        assert info.value.field == field and field in info.value.message
    m = p.matrices()
    with pytest.raises(AttentionError, match="q_norm has 3 gains") as info:
        attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], heads=2, q_norm=(1.0, 1.0, 1.0))
    assert info.value.field == "q_norm"


def test_no_gains_leave_the_pass_as_it_was() -> None:
    p = attention.blank(5, 4, 4, seed=3)
    m = p.matrices()
    plain = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], positions="rotary")
    same = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], positions="rotary", q_norm=(), k_norm=())
    np.testing.assert_array_equal(plain.weights, same.weights)
    ones = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], q_norm=(1.0,) * 4, k_norm=(1.0,) * 4)
    q = m["X"] @ m["W_q"]
    np.testing.assert_allclose(ones.Q, q / np.sqrt(np.mean(q * q, axis=1, keepdims=True) + 1e-6), rtol=1e-14)


QK_NORM_MADE = [name for name in TYPES if tiny_config(name).qk_norm]  # per head and across all heads


@pytest.mark.parametrize("family", QK_NORM_MADE)
def test_an_edit_of_the_norm_gains_changes_the_logits_as_transformers_does(made, family: str) -> None:
    """replace_gains on one layer's q_norm and k_norm: our logits equal transformers' with the same weights written
    into its q_norm and k_norm (float64 throughout, the family tests' bound 1e-6), and differ from the unedited
    model's far beyond it."""
    from attention.model import load, replace_gains
    from attention.model.interventions import gains_width
    from tests.helpers.oracle import float64_oracle

    m, theirs = load(made(family).folders["float32"], dtype=np.float64), made(family).torch
    c, rs = m.config, np.random.RandomState(8)
    ids = rs.randint(3, c.vocab_size, 12).tolist()
    new = {norm: rs.normal(1.0, 0.5, gains_width(c, norm)) for norm in ("q_norm", "k_norm")}  # as applied
    ours = m.run(ids, [replace_gains(1, norm, g) for norm, g in new.items()]).logits
    attn = theirs.model.layers[1].self_attn
    kept = {norm: getattr(attn, norm).weight.detach().clone() for norm in new}
    try:
        with torch.no_grad(), float64_oracle():
            for norm, g in new.items():
                getattr(attn, norm).weight.copy_(torch.tensor(g - c.norm_offset))  # transformers stores γ
            edited = theirs(torch.tensor([ids])).logits[0].numpy()
    finally:
        with torch.no_grad():
            for norm, w in kept.items():
                getattr(attn, norm).weight.copy_(w)
    scale = float(np.abs(edited).max())
    np.testing.assert_allclose(ours, edited, rtol=1e-6, atol=1e-6 * scale)
    assert np.abs(ours - m.run(ids).logits).max() > 1e-3 * scale  # the edit moves the logits


def test_replaced_gains_are_checked_by_name() -> None:
    from attention.model import replace_gains

    m = _model(PER_HEAD[0])
    ids = list(range(1, 6))
    with pytest.raises(AttentionError, match="has 24 gains|has 32 gains") as info:
        m.run(ids, [replace_gains(0, "q_norm", np.ones(5))])
    assert info.value.matrix == "q_norm"
    with pytest.raises(AttentionError, match="q_norm or k_norm"):
        replace_gains(0, "v_norm", np.ones(5))
    with pytest.raises(AttentionError, match="finite"):
        replace_gains(0, "k_norm", [1.0, float("nan")])
