"""Attribution patching: the linear estimate of every patch from one forward and one backward pass.

Activation patching (:func:`.readout.sweep`) runs the corrupted text once per patch, with one head's output (before
W_o) or one stream row taken from the clean run, and measures the share of D = logit[answer] − logit[wrong] it
restores. Attribution patching (Nanda 2023; Kramár et al. 2024, "AtP*") replaces each of those runs by the first
term of its Taylor series around the corrupted run: for an activation a that the patch moves from a_corrupt to
a_clean,

    D(patched) − D(corrupt) ≈ (a_clean − a_corrupt) · ∂D/∂a |corrupt          one dot product per patch

so the gradient of D at the corrupted run, for every head's output and every stream row at once, estimates all the
patches. Divided by D_clean − D_corrupt it is in the sweep's units (0 changes nothing, 1 restores it all). The
estimate is exact for a part that D reads linearly (a last layer's head in an attention-only model) and drifts where
a patch moves softmaxes and norms far (AtP* names attention saturation as its main failure).

The backward pass, layer by layer from the last, through every family's parts (g is ∂D/∂· of the line it follows):

    g_L[t] = N_fᵀ (W_U[:, answer] − W_U[:, wrong]),  0 at the other rows           (n, d)
    sequential:  x₁ = x + P(a(N₁(x))),  x₂ = x₁ + P(MLP(N₂(x₁)))
                 g_x₁ = g + N₂ᵀ MLPᵀ Pᵀ g;   g_x = g_x₁ + N₁ᵀ aᵀ Pᵀ g_x₁               (n, d)
    parallel:    x₂ = x + a(N₁(x)) + MLP(N₂(x)):  g_x = g + N₁ᵀ aᵀ g + N₂ᵀ MLPᵀ g (GPT-NeoX)
    attention:   ∂concat = g_a W_oᵀ;  ∂A = ∂heads Vᵀ;  ∂S = scale · A ⊙ (∂A − Σ_j ∂A A);  ∂q = ∂S K,
                 ∂K = Σ_group ∂Sᵀ q,  ∂V = Σ_group Aᵀ ∂heads;  RoPE back by turning −θ; QK-norm back;
                 ∂X = ∂q W_qᵀ + ∂k W_kᵀ + ∂v W_vᵀ

where P is a post-norm (Gemma 3) or nothing, Nᵀ a norm's backward (LayerNorm, RMSNorm with its offset) and MLPᵀ a
plain or gated MLP's backward through its activation's derivative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import positions
from ..backward import softmax_backward
from ..errors import AttentionError
from ..heads import merge_heads, split_heads
from .attend import frequencies
from .config import Config
from .layers import _ERF, ACTIVATION
from .model import Model, Params, Run, normed, unembedding
from .readout import _differs, _model, _position, _same_length, _token


@dataclass(frozen=True)
class Gradients:
    """∂D/∂· at one run, D = logit[answer] − logit[wrong] at ``position``: ``concat[l]`` (n, H·dₕ) for layer l's
    heads' outputs side by side (before W_o), ``streams[l]`` (n, d) for the stream entering layer l (l = 0 .. L, the
    last the stream after every layer, before the final norm); ``value`` D itself."""

    position: int
    answer: int
    wrong: int
    concat: tuple[np.ndarray, ...]
    streams: tuple[np.ndarray, ...]
    value: float


@dataclass(frozen=True)
class Estimate:
    """Attribution patching's estimate of every patch a :class:`~attention.model.Sweep` makes, in its units (the
    share of D_clean − D_corrupt restored): ``heads`` (layers, query heads), ``streams`` (layers, n); ``clean`` and
    ``corrupt`` the two runs' D at ``position``; ``steps`` the integrated gradients' steps (0: the gradient at the
    corrupted run alone, attribution patching)."""

    position: int
    answer: int
    wrong: int
    heads: np.ndarray
    streams: np.ndarray
    clean: float
    corrupt: float
    steps: int = 0


def derivative(name: str, x: np.ndarray) -> np.ndarray:
    """act'(x) elementwise for each activation of :data:`.layers.ACTIVATION`."""
    if name == "relu":
        return (x > 0).astype(x.dtype)
    if name == "silu":
        s = 1.0 / (1.0 + np.exp(-np.clip(x, -60.0, 60.0)))  # σ(x)
        return s * (1.0 + x * (1.0 - s))
    if name == "gelu":  # Φ(x) + x φ(x)
        phi = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        return (0.5 * (1.0 + _ERF(x / math.sqrt(2.0)).astype(x.dtype)) + x * phi).astype(x.dtype)
    if name == "gelu_new":  # ½ (1 + tanh u) + ½ x (1 − tanh² u) u',  u = √(2/π)(x + 0.044715 x³)
        k = math.sqrt(2.0 / math.pi)
        th = np.tanh(k * (x + 0.044715 * x * x * x))  # x³ as products: pow is far slower
        return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * k * (1.0 + 3 * 0.044715 * x * x)
    raise AttentionError(f"no derivative for the activation {name!r}", field="activation")


def norm_backward(config: Config, params: Params, name: str, x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """∂/∂x of the norm ``name`` at x (..., d), given ∂/∂ of its output g: LayerNorm
    (g' − mean g' − x̂ mean(g' x̂)) / σ with g' = g ⊙ γ, or RMSNorm g'/r − x mean(g' x) / r³ with g' = g ⊙ (o + γ)."""
    eps = config.ln_eps
    if config.norm == "layernorm":
        centred = x - x.mean(axis=-1, keepdims=True)  # (..., d)
        sigma = np.sqrt(np.mean(centred * centred, axis=-1, keepdims=True) + eps)  # (..., 1)
        xhat, gg = centred / sigma, g * params[name + ".g"]  # (..., d) each
        return (gg - gg.mean(axis=-1, keepdims=True) - xhat * np.mean(gg * xhat, axis=-1, keepdims=True)) / sigma
    return rms_backward(x, g, params[name + ".g"], eps, config.norm_offset)


def rms_backward(x: np.ndarray, g: np.ndarray, gain: np.ndarray, eps: float, offset: float) -> np.ndarray:
    """∂/∂x of x / √(mean(x²) + ε) · (offset + γ) over the last axis, given g (..., w): g'/r − x mean(g' x) / r³."""
    r = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)  # (..., 1)
    gg = g * (offset + gain)  # (..., w)
    return gg / r - x * (np.mean(gg * x, axis=-1, keepdims=True) / r**3)


def mlp_backward(model: Model, layer: int, x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """∂/∂x of layer l's P(MLP(N₂(x))) (its post-norm P, if any), given g (n, d) of its output."""
    c, p = model.config, model.params
    pre = f"{layer}."
    h = normed(c, p, pre + "ln2", x) if c.pre_norms else x  # (n, d): OLMo-2 has no norm before its MLP
    up = h @ p[pre + "W_fc"] + (p[pre + "b_fc"] if c.bias else 0.0)  # (n, m)
    act = ACTIVATION[c.activation]
    if c.mlp == "gated":
        gate = h @ p[pre + "W_gate"] + (p[pre + "b_gate"] if c.bias else 0.0)  # (n, m)
        hidden = act(gate) * up  # (n, m)
    else:
        hidden = act(up)  # (n, m)
    if c.post_norms:
        raw = hidden @ p[pre + "W_proj"] + (p[pre + "b_proj"] if c.bias else 0.0)  # (n, d)
        g = norm_backward(c, p, pre + "ln_post_mlp", raw, g)  # (n, d)
    d_hidden = g @ p[pre + "W_proj"].T  # (n, m)
    if c.mlp == "gated":
        d_h = (d_hidden * act(gate)) @ p[pre + "W_fc"].T  # through the up projection
        d_h += (d_hidden * up * derivative(c.activation, gate)) @ p[pre + "W_gate"].T  # through the gate
    else:
        d_h = (d_hidden * derivative(c.activation, up)) @ p[pre + "W_fc"].T  # (n, d)
    return norm_backward(c, p, pre + "ln2", x, d_h) if c.pre_norms else d_h  # (n, d)


def attention_backward(model: Model, run: Run, layer: int, d_concat: np.ndarray) -> np.ndarray:
    """∂/∂x (n, d) of the stream entering layer l through its attention, given ∂concat (n, H·dₕ)."""
    c, p, a = model.config, model.params, run.traces.light(layer)  # q, K, V, W as the pass made them
    H, G = c.n_heads, c.kv_heads
    n = d_concat.shape[0]
    A = run.traces.rows(layer, slice(None)).reshape(G, H // G, n, n)  # (G, H/G, n, n): the weights alone
    q = a.q.reshape(G, H // G, n, -1)  # (G, H/G, n, dₕ): after QK-norm and the rotation
    K, V = a.K[:, None], a.V[:, None]  # (G, 1, n, dₕ) each
    d_heads = split_heads(d_concat, H).reshape(G, H // G, n, -1)  # (G, H/G, n, dₕ)
    d_V = (A.swapaxes(-1, -2) @ d_heads).sum(axis=1)  # (G, n, dₕ)
    d_S = softmax_backward(A, d_heads @ V.swapaxes(-1, -2)) * a.scale  # (G, H/G, n, n); 0 where masked
    d_q = (d_S @ K).reshape(H, n, -1)  # (H, n, dₕ)
    d_k = (d_S.swapaxes(-1, -2) @ q).sum(axis=1)  # (G, n, dₕ)
    omega = frequencies(c, layer)
    if omega is not None:  # a rotation is orthogonal: its transpose turns by −θ
        d_q = positions.rotate(d_q, omega, 0, c.rotary_layout, inverse=True)
        d_k = positions.rotate(d_k, omega, 0, c.rotary_layout, inverse=True)
    if c.qk_norm:
        d_q, d_k = qk_norm_backward(c, p, layer, a.X, a.W, d_q, d_k)
    W_q, W_k, W_v, _ = a.W
    d_X = merge_heads(d_q) @ W_q.T + merge_heads(d_k) @ W_k.T + merge_heads(d_V) @ W_v.T  # (n, d [+1])
    d_X = d_X[:, : c.d_model]  # the column of ones carries no gradient on
    if c.attention_only or not c.pre_norms:  # no norm before the attention: X is the stream itself
        return d_X
    return norm_backward(c, p, f"{layer}.ln1", run.residuals[layer], d_X)  # (n, d)


def qk_norm_backward(
    config: Config, params: Params, layer: int, X: np.ndarray, W: tuple, d_q: np.ndarray, d_k: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """∂/∂(X·W_q) and ∂/∂(X·W_k), per head (H, n, dₕ) and (G, n, dₕ), given ∂ of the QK-normed q and k: through each
    head's norm ("head": Qwen3, Gemma 3), or through one norm over every head's columns before the split ("all":
    OLMo-2), from the layer's input X and its W_q, W_k, W_v, W_o ``W``."""
    c, H, G = config, config.n_heads, config.kv_heads
    gq, gk = params[f"{layer}.q_norm.g"], params[f"{layer}.k_norm.g"]
    q_in, k_in = X @ W[0], X @ W[1]  # (n, H·dₕ), (n, G·dₕ): before the norm
    if c.qk_norm_scope == "head":
        d_q = rms_backward(split_heads(q_in, H), d_q, gq, c.ln_eps, c.norm_offset)  # (H, n, dₕ)
        d_k = rms_backward(split_heads(k_in, G), d_k, gk, c.ln_eps, c.norm_offset)  # (G, n, dₕ)
        return d_q, d_k
    d_q = rms_backward(q_in, merge_heads(d_q), gq, c.ln_eps, c.norm_offset)  # (n, H·dₕ)
    d_k = rms_backward(k_in, merge_heads(d_k), gk, c.ln_eps, c.norm_offset)  # (n, G·dₕ)
    return split_heads(d_q, H), split_heads(d_k, G)


def block_backward(model: Model, run: Run, layer: int, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Layer l backward: given g = ∂D/∂(the stream after it) (n, d), (∂concat (n, H·dₕ), ∂D/∂(the stream entering
    it) (n, d))."""
    c, p = model.config, model.params
    x = run.residuals[layer]  # (n, d)

    def through_attention(g_after: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g_a = g_after
        if c.post_norms:
            a = run.traces.output(layer) + (p[f"{layer}.b_o"] if c.bias else 0.0)  # (n, d): before the post-norm
            g_a = norm_backward(c, p, f"{layer}.ln_post_attn", a, g_after)
        d_concat = g_a @ run.traces.W_o(layer).T  # (n, H·dₕ)
        return d_concat, attention_backward(model, run, layer, d_concat)

    if c.attention_only:
        d_concat, g_x = through_attention(g)
        return d_concat, g + g_x
    if c.parallel_residual:
        d_concat, g_x = through_attention(g)
        return d_concat, g + g_x + mlp_backward(model, layer, x, g)
    x_mid = run.residuals[layer + 1] - _mlp_write(model, layer, run)  # (n, d): x + P(attention)
    g_mid = g + mlp_backward(model, layer, x_mid, g)  # (n, d)
    d_concat, g_x = through_attention(g_mid)
    return d_concat, g_mid + g_x


def _mlp_write(model: Model, layer: int, run: Run) -> np.ndarray:
    """What layer l's MLP added to the stream in a sequential block: x_{l+1} − x_l − P(attention) (n, d)."""
    c, p = model.config, model.params
    a = run.traces.output(layer) + (p[f"{layer}.b_o"] if c.bias else 0.0)  # (n, d)
    if c.post_norms:
        a = normed(c, p, f"{layer}.ln_post_attn", a)
    return run.residuals[layer + 1] - run.residuals[layer] - a


def gradients(run: Run, position: int, answer: int, wrong: int) -> Gradients:
    """∂D/∂ every head's output and every stream row of ``run`` (see :class:`Gradients`), by one backward pass."""
    t, model = _position(run, position), _model(run)
    answer, wrong = _token(model, answer, "answer"), _token(model, wrong, "wrong")
    if run.interventions:
        raise AttentionError("attribution patching reads a run without interventions", field="run")
    c, p = model.config, model.params
    x_last = run.residuals[-1]  # (n, d)
    w = unembedding(c, p)[:, answer] - unembedding(c, p)[:, wrong]  # (d,)
    g = np.zeros_like(x_last)  # (n, d)
    g[t] = w if c.attention_only else norm_backward(c, p, "ln_f", x_last[t], w)
    value = float((x_last[t] if c.attention_only else normed(c, p, "ln_f", x_last[t : t + 1])[0]) @ w)
    streams, concat = [g], []
    for layer in range(c.n_layers - 1, -1, -1):
        d_concat, g = block_backward(model, run, layer, g)
        concat.append(d_concat)
        streams.append(g)
    return Gradients(t, answer, wrong, tuple(concat[::-1]), tuple(streams[::-1]), value)


STEPS = 4  # integrated gradients' steps on the path from the corrupted run to the clean one (see :func:`estimate`)


def estimate(
    model: Model,
    clean_ids: Sequence[int],
    corrupt_ids: Sequence[int],
    position: int = -1,
    answer: int | None = None,
    wrong: int | None = None,
    steps: int = STEPS,
) -> Estimate:
    """Every patch :func:`.readout.sweep` makes (each head's output, each stream row entering each layer, from the
    clean run into the corrupted one), estimated from gradients: share ≈ (a_clean − a_corrupt) · ḡ / (D_clean −
    D_corrupt), with ḡ the gradient ∂D/∂a averaged over ``steps`` runs on the straight path from the corrupted
    embeddings to the clean ones (at α = (k + ½) / steps: integrated gradients, as EAP-IG, Hanna et al. 2024); with
    ``steps`` 0, the gradient at the corrupted run alone (attribution patching, Nanda 2023).

    Why the path: a head that acts through a later head's keys into a saturated softmax has no gradient at the
    corrupted run (the softmax's tangent is flat there), so attribution patching gives it about 0 however much its
    patch restores (Kramár et al. 2024 name this failure first); on the path the softmax leaves saturation and the
    average gradient sees it. The same defaults and checks as the sweep (answer the clean prediction, wrong the
    corrupted one)."""
    clean_ids, corrupt_ids = _same_length(model, clean_ids, corrupt_ids)
    clean, corrupt = model.run(clean_ids), model.run(corrupt_ids)
    t = _position(clean, position)
    answer = int(np.argmax(clean.logits[t])) if answer is None else _token(model, answer, "answer")
    wrong = int(np.argmax(corrupt.logits[t])) if wrong is None else _token(model, wrong, "wrong")
    _differs(clean, corrupt, t, answer, wrong)
    concat, streams_g = _path_gradients(model, clean, corrupt, t, answer, wrong, steps)
    d_clean = float(clean.logits[t, answer] - clean.logits[t, wrong])
    d_corrupt = float(corrupt.logits[t, answer] - corrupt.logits[t, wrong])
    span = d_clean - d_corrupt
    c = model.config
    heads = np.stack(
        [
            ((clean.traces.concats[la] - corrupt.traces.concats[la]) * concat[la])
            .reshape(len(clean_ids), c.n_heads, c.d_head)
            .sum(axis=(0, 2))
            for la in range(c.n_layers)
        ]
    )  # (L, H)
    streams = np.stack(
        [((clean.residuals[la] - corrupt.residuals[la]) * streams_g[la]).sum(axis=-1) for la in range(c.n_layers)]
    )  # (L, n)
    return Estimate(t, answer, wrong, heads / span, streams / span, d_clean, d_corrupt, steps)


def _path_gradients(
    model: Model, clean: Run, corrupt: Run, t: int, answer: int, wrong: int, steps: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """∂D/∂(each layer's concat) (n, H·dₕ) and ∂D/∂(each stream entering a layer) (n, d), at the corrupted run
    (``steps`` 0) or averaged over the runs whose embeddings lie on the path to the clean ones."""
    if steps < 0 or steps > MAX_STEPS:
        raise AttentionError(f"steps must be 0 to {MAX_STEPS}; got {steps}", field="steps")
    if steps == 0:
        g = gradients(corrupt, t, answer, wrong)
        return list(g.concat), list(g.streams[:-1])
    start, end = corrupt.residuals[0], clean.residuals[0]  # (n, d) each: the embeddings
    alphas = (np.arange(steps) + 0.5) / steps  # (K,): the midpoints of K equal pieces of the path
    x0 = start + alphas[:, None, None] * (end - start)  # (K, n, d)
    ids = np.tile(np.asarray(corrupt.ids), (steps, 1))  # (K, n): one batch, its embeddings replaced by the path's
    path = model.run(ids, hooks={"blocks.0.hook_resid_pre": lambda _v, _n: x0.astype(start.dtype)})
    concat = [np.zeros_like(c) for c in corrupt.traces.concats]
    streams = [np.zeros_like(x) for x in corrupt.residuals[:-1]]
    for k in range(steps):
        g = gradients(path.row(k), t, answer, wrong)
        for la in range(model.config.n_layers):
            concat[la] += g.concat[la] / steps
            streams[la] += g.streams[la] / steps
    return concat, streams


MAX_STEPS = 64
