"""A batch of texts, named activations and hooks, each against an independent computation.

- A batch (B, n) run once equals the runs of its rows, on every family's parts.
- Every name in ``run.cache`` is the quantity computed here by hand from the parameters (a plain numpy forward
  written out below, one line per step), for a GPT-2-like model and a Llama-like one.
- Hooks read what the cache holds, and a replacing hook is what the intervention it stands for does.

Bound: both sides compute in float64 from the same parameters, in a different order of operations (a batched matrix
product against one per row; the hand forward's own sums): values are of order 1 to 10 and each passes a few hundred
floating-point steps, so they agree to ~1e-13; 1e-10 of the largest value is a thousand times that, and a changed
token or a wrong step moves them by far more (checked)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attention.errors import AttentionError
from attention.model import Config, Model, ablate, attribute, init_params, lens, patch_head, patch_stream
from attention.model.interventions import hook_names
from attention.model.vocab import WordVocab

REL = 1e-10
FAMILIES = {
    "gpt-2": {},
    "llama": dict(norm="rmsnorm", mlp="gated", activation="silu", n_kv_heads=2, positions="rotary",
                  rotary_layout="halves", bias=False, tied=False),
    "qwen2": dict(norm="rmsnorm", mlp="gated", activation="silu", bias=False, qkv_bias=True, positions="rotary",
                  n_kv_heads=2),
    "gemma 3": dict(norm="rmsnorm", norm_offset=1.0, post_norms=True, qk_norm=True, mlp="gated", n_kv_heads=1,
                    positions="rotary", bias=False, head_dim=12, layer_types=("sliding", "full", "sliding"),
                    sliding_window=3),
    "gpt-neox": dict(parallel_residual=True, positions="rotary", rotary_dims=4, rotary_layout="halves"),
    "attention only": dict(attention_only=True, positions="sinusoidal"),
}


def _model(parts: dict) -> Model:
    cfg = Config(vocab_size=40, n_ctx=16, d_model=32, n_layers=3, n_heads=4, d_mlp=48, **parts).validate()
    params = init_params(cfg, seed=1, std=0.3)
    rs = np.random.RandomState(2)
    params = {k: v + rs.normal(0, 0.3, v.shape) if k.endswith((".g", ".b")) or "b_" in k else v
              for k, v in params.items()}
    return Model(cfg, params, WordVocab([f"w{i}" for i in range(40)]))


def _close(ours: np.ndarray, theirs: np.ndarray) -> None:
    theirs = np.asarray(theirs)
    assert ours.shape == theirs.shape
    largest = float(np.abs(theirs[np.isfinite(theirs)]).max(initial=1.0))  # masked scores are -inf on both sides
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=REL * largest)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_batch_is_the_runs_of_its_rows(name: str) -> None:
    m = _model(FAMILIES[name])
    ids = np.random.RandomState(3).randint(0, 40, (3, 10))
    run = m.run(ids)
    L, H, n = m.config.n_layers, m.config.n_heads, 10
    assert run.batched and run.logits.shape == (3, n, 40) and run.weights.shape == (3, L, H, n, n)
    assert run.residuals[0].shape == (3, n, 32) and len(run.ids) == 3 and run.ids[1] == tuple(ids[1])
    for b in range(3):
        one = m.run(ids[b].tolist())
        row = run.row(b)
        _close(run.logits[b], one.logits)
        _close(run.weights[b], one.weights)
        _close(row.logits, one.logits)
        assert row.ids == one.ids and row.tokens == one.tokens and run.predictions[b] == one.predictions
        for la in range(L):
            _close(run.residuals[la + 1][b], one.residuals[la + 1])
            for array in ("Q", "K", "V", "concat", "output", "scaled"):
                _close(getattr(row.traces[la], array), getattr(one.traces[la], array))
        _close(lens(row, -1), lens(one, -1))
        assert attribute(row, 4).heads == pytest.approx(attribute(one, 4).heads, abs=1e-9)
    other = ids.copy()
    other[1, 2] = (other[1, 2] + 1) % 40
    moved = m.run(other).logits
    assert np.abs(moved[1] - run.logits[1]).max() > 1e3 * REL  # one token of one row moves that row past the bound
    _close(moved[0], run.logits[0])  # and no other row


def test_a_batch_keeps_interventions_and_bad_batches_are_named() -> None:
    m = _model(FAMILIES["llama"])
    ids = np.random.RandomState(4).randint(0, 40, (2, 8))
    ivs = [ablate(1, 2), patch_stream(2, 5, np.ones(32))]
    run = m.run(ids, ivs)
    for b in range(2):
        _close(run.logits[b], m.run(ids[b].tolist(), ivs).logits)
    with pytest.raises(AttentionError, match="token ids must be a non-empty list"):  # a padded batch's texts are
        m.run([ids[0].tolist(), []])  # checked one by one
    with pytest.raises(AttentionError, match="a batch of 2 texts: read one at a time, run.row"):
        lens(run, 0)
    with pytest.raises(AttentionError, match="there is no text 2"):
        run.row(2)
    assert m.run(ids[0].tolist()).ids == tuple(ids[0])  # one text stays (n,): the pages' runs are unchanged


# ---------------------------------------------------------------- a forward pass by hand, every activation named


def _scale(c: Config, x: np.ndarray) -> np.ndarray:
    """A norm's divisor (n, 1): √(var + ε) for LayerNorm, √(mean(x²) + ε) for RMSNorm."""
    centred = x - x.mean(-1, keepdims=True) if c.norm == "layernorm" else x
    return np.sqrt((centred**2).mean(-1, keepdims=True) + c.ln_eps)


def _norm(c: Config, p: dict, name: str, x: np.ndarray) -> np.ndarray:
    if c.norm == "layernorm":
        mu = x.mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + c.ln_eps) * p[name + ".g"] + p[name + ".b"]
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + c.ln_eps) * (c.norm_offset + p[name + ".g"])


def _act(c: Config, x: np.ndarray) -> np.ndarray:
    if c.activation == "silu":
        return x / (1 + np.exp(-x))
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _rope_halves(x: np.ndarray, theta: float) -> np.ndarray:
    """(n, heads, dₕ) turned by position · θ^(−2i/dₕ) on the pairs (i, i + dₕ/2)."""
    n, _, d = x.shape
    angle = np.arange(n)[:, None] * theta ** (-np.arange(0, d, 2) / d)[None, :]  # (n, d/2)
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def _by_hand(m: Model, ids: list[int]) -> dict[str, np.ndarray]:
    c, p = m.config, m.params
    n, H, G, dh = len(ids), c.n_heads, c.kv_heads, c.d_head
    x = p["W_E"][ids] + (p["W_pos"][:n] if c.positions == "learned" else 0)
    out: dict[str, np.ndarray] = {"hook_embed": p["W_E"][ids]}
    if c.positions == "learned":
        out["hook_pos_embed"] = p["W_pos"][:n]
    for la in range(c.n_layers):
        at, w = f"blocks.{la}.", lambda k, la=la: p[f"{la}.{k}"]
        out[at + "hook_resid_pre"] = x
        out[at + "ln1.hook_scale"] = _scale(c, x)
        h = _norm(c, p, f"{la}.ln1", x)
        q, k, v = (h @ w(f"W_{m_}") + (w(f"b_{m_}") if c.bias else 0) for m_ in "qkv")
        q, k, v = q.reshape(n, H, dh), k.reshape(n, G, dh), v.reshape(n, G, dh)
        out.update({at + "attn.hook_q": q, at + "attn.hook_k": k, at + "attn.hook_v": v})
        if c.positions == "rotary":
            q, k = _rope_halves(q, c.rope_theta), _rope_halves(k, c.rope_theta)
            out.update({at + "attn.hook_rot_q": q, at + "attn.hook_rot_k": k})
        k, v = np.repeat(k, H // G, axis=1), np.repeat(v, H // G, axis=1)  # each query head's key/value head
        scores = np.einsum("qhe,khe->hqk", q, k) / math.sqrt(dh)
        scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
        pattern = np.exp(scores - scores.max(-1, keepdims=True))
        pattern /= pattern.sum(-1, keepdims=True)
        z = np.einsum("hqk,khe->qhe", pattern, v)
        result = np.einsum("qhe,hed->qhd", z, w("W_o").reshape(H, dh, -1))
        attn_out = result.sum(1) + (w("b_o") if c.bias else 0)
        out.update({at + "attn.hook_attn_scores": scores, at + "attn.hook_pattern": pattern, at + "attn.hook_z": z,
                    at + "attn.hook_result": result, at + "hook_attn_out": attn_out})
        mid = x + attn_out
        h2 = _norm(c, p, f"{la}.ln2", mid)
        gated = c.mlp == "gated"
        pre = h2 @ w("W_gate") if gated else h2 @ w("W_fc") + w("b_fc")  # (n, d_mlp): before the activation
        inner = _act(c, pre) * (h2 @ w("W_fc")) if gated else _act(c, pre)
        out.update({at + "ln2.hook_scale": _scale(c, mid), at + "mlp.hook_pre": pre, at + "mlp.hook_post": inner})
        if gated:
            out[at + "mlp.hook_pre_linear"] = h2 @ w("W_fc")
        mlp = inner @ w("W_proj") + (w("b_proj") if c.bias else 0)
        x = mid + mlp
        out.update({at + "hook_resid_mid": mid, at + "hook_mlp_out": mlp, at + "hook_resid_post": x})
    out["ln_final.hook_scale"] = _scale(c, x)
    out["ln_final.hook_normalized"] = _norm(c, p, "ln_f", x)
    out["logits"] = out["ln_final.hook_normalized"] @ (p["W_E"].T if c.tied else p["W_U"])
    return out


@pytest.mark.parametrize("name", ["gpt-2", "llama"])
def test_every_named_activation_is_the_quantity_computed_by_hand(name: str) -> None:
    m = _model(FAMILIES[name])
    ids = np.random.RandomState(5).randint(0, 40, 9).tolist()
    run = m.run(ids)
    want = _by_hand(m, ids)
    assert list(run.cache) == hook_names(m.config) and set(run.cache) == set(want) - {"logits"}
    for key in run.cache:
        _close(run.cache[key], want[key])
    _close(run.logits, want["logits"])
    assert np.abs(want["blocks.1.attn.hook_z"] - want["blocks.2.attn.hook_z"]).max() > 1e3 * REL  # distinct


@pytest.mark.parametrize("name", list(FAMILIES))
def test_hooks_read_what_the_cache_holds_on_every_family(name: str) -> None:
    m = _model(FAMILIES[name])
    ids = np.random.RandomState(6).randint(0, 40, (2, 9))
    plain = m.run(ids)
    seen: dict[str, np.ndarray] = {}
    hooks = {key: (lambda v, key: seen.__setitem__(key, v.copy())) for key in hook_names(m.config)}
    hooked = m.run(ids, hooks=hooks)
    assert set(seen) == set(hook_names(m.config))
    for key in seen:
        _close(seen[key], plain.cache[key])
        _close(hooked.cache[key], seen[key])
    _close(hooked.logits, plain.logits)


def test_a_replacing_hook_is_the_intervention_it_stands_for() -> None:
    m = _model(FAMILIES["llama"])
    ids = np.random.RandomState(7).randint(0, 40, 10).tolist()
    other = m.run(np.random.RandomState(8).randint(0, 40, 10).tolist())

    def set_head(value):
        def hook(z, name):
            z = z.copy()
            z[:, 1] = value
            return z

        return hook

    _close(m.run(ids, hooks={"blocks.1.attn.hook_z": set_head(0.0)}).logits, m.run(ids, [ablate(1, 1)]).logits)
    theirs = other.cache["blocks.2.attn.hook_z"][:, 1]
    _close(m.run(ids, hooks={"blocks.2.attn.hook_z": set_head(theirs)}).logits,
           m.run(ids, [patch_head(2, 1, theirs)]).logits)

    def set_row(x, name):
        x = x.copy()
        x[4] = other.residuals[1][4]
        return x

    _close(m.run(ids, hooks={"blocks.1.hook_resid_pre": set_row}).logits,
           m.run(ids, [patch_stream(1, 4, other.residuals[1][4])]).logits)
    uniform = np.tril(np.ones((10, 10))) / np.arange(1, 11)[:, None]  # every query spreads evenly over its keys
    run = m.run(ids, hooks={"blocks.0.attn.hook_pattern": lambda a, name: np.broadcast_to(uniform, a.shape)})
    v = np.repeat(run.cache["blocks.0.attn.hook_v"], 2, axis=1)  # (n, H, dₕ): each query head's values
    _close(run.cache["blocks.0.attn.hook_z"], np.einsum("qk,khe->qhe", uniform, v))
    _close(run.cache["blocks.0.attn.hook_pattern"][3], uniform)
    assert np.abs(run.logits - m.run(ids).logits).max() > 1e-3
    _close(m.run(ids).logits, _by_hand(m, ids)["logits"])  # a hooked run leaves the cached runs as they were


def test_bad_hooks_are_named() -> None:
    m = _model(FAMILIES["gpt-2"])
    ids = list(range(6))
    for hooks, words in (
        ({"blocks.9.attn.hook_z": print}, "no activation 'blocks.9.attn.hook_z'"),
        ({"blocks.0.attn.hook_rot_q": print}, "no activation"),  # no rotation in a GPT-2
        ({"blocks.0.hook_resid_pre": 3}, "must be a function"),
        ({"blocks.0.hook_resid_pre": lambda x, name: x[:2]}, "returned shape (2, 32); it must return (6, 32)"),
    ):
        with pytest.raises(AttentionError, match=words.replace("(", r"\(").replace(")", r"\)")) as info:
            m.run(ids, hooks=hooks)
        assert info.value.field == "hooks"
    with pytest.raises(ValueError, match="read-only"):
        m.run(ids, hooks={"blocks.0.hook_resid_pre": lambda x, name: x.__setitem__(0, 0.0)})
    with pytest.raises(KeyError, match="no activation"):
        m.run(ids).cache["blocks.0.hook_nothing"]


@pytest.mark.parametrize("name", list(FAMILIES)[:2])
def test_a_hook_on_the_final_norm_runs_after_a_plain_run_of_the_same_text(name: str) -> None:
    """Every layer of a text already run comes from the cache; a hook on the final norm must still run (it once was
    passed over, and the cached logits returned)."""
    ids = np.random.RandomState(8).randint(0, 40, 9)
    zeroed = {"ln_final.hook_normalized": lambda v, name: np.zeros_like(v)}
    fresh = _model(FAMILIES[name]).run(ids, hooks=zeroed)  # nothing cached: the hook certainly runs
    m = _model(FAMILIES[name])
    plain = m.run(ids)
    again = m.run(ids, hooks=zeroed)
    assert "ln_final.hook_normalized" in again.hooked and not np.allclose(plain.logits, fresh.logits)
    _close(again.logits, fresh.logits)


def test_replacing_the_new_names_changes_what_the_pass_computes_after_them() -> None:
    m = _model(FAMILIES["gpt-2"])
    c, p = m.config, m.params
    ids = np.random.RandomState(9).randint(0, 40, 7).tolist()
    run = m.run(ids, hooks=[("blocks.1.mlp.hook_post", lambda v, n: np.zeros_like(v)),
                            ("ln_final.hook_scale", lambda v, n: np.ones_like(v)),
                            ("hook_pos_embed", lambda v, n: np.zeros_like(v))])
    np.testing.assert_array_equal(run.cache["blocks.1.hook_mlp_out"], np.broadcast_to(p["1.b_proj"], (7, c.d_model)))
    x = run.residuals[-1]
    _close(run.cache["ln_final.hook_normalized"], (x - x.mean(-1, keepdims=True)) * p["ln_f.g"] + p["ln_f.b"])
    _close(run.residuals[0], p["W_E"][ids])  # no positions added
