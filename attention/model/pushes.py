"""What a head, an MLP or one MLP neuron pushes the prediction toward, read as tokens.

A part writes a vector w (d,) into the stream at a position. Hold the final norm's scale at its value there (σ for
LayerNorm, the root mean square for RMSNorm, as :func:`.readout.attribute` holds it) and the norm and the unembedding
are linear in w, so w moves every logit by

    LayerNorm:  Δlogits = ((w − mean w) / σ ⊙ g) W_U          RMSNorm:  Δlogits = (w / rms ⊙ g) W_U        (V,)

(w W_U for a model without a final norm). The tokens it raises most are what it **promotes**, the lowest what it
**suppresses**; Δlogits[token] is its direct share of that token's logit, the number Attribution shows.

An MLP's write is a sum over its neurons: MLP(h) = Σ_k a_k W_proj[k] + b_proj, with a_k the neuron's activation
(act(h W_fc + b_fc)[k], or act(h W_gate + b_gate)[k] · (h W_fc + b_fc)[k] when gated), through a post-norm held at
the whole output (Gemma 3). So the neurons' shares plus the bias's add up to the MLP's share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AttentionError
from .flow import _attention_parts, _attention_write, _checked
from .layers import ACTIVATION
from .model import Model, Run, mlp_out, normed, unembedding
from .readout import _model, _position, _token, read_direction

TOP = 10  # tokens promoted and suppressed shown per part


@dataclass(frozen=True)
class Push:
    """What one write pushes toward: ``logits`` (V,) how much it moves each logit (the final norm's scale held);
    ``promoted`` and ``suppressed`` the ids of the TOP tokens it raises and lowers most (strongest first);
    ``share`` its direct share of the chosen ``token``'s logit."""

    logits: np.ndarray
    promoted: np.ndarray
    suppressed: np.ndarray
    token: int
    share: float


@dataclass(frozen=True)
class Neurons:
    """An MLP's neurons at one position: ``activations`` (d_mlp,); ``shares`` (d_mlp,) each one's direct share of the
    chosen ``token``'s logit; ``bias`` b_proj's share (0 without); ``total`` the MLP's share (shares + bias add up
    to it); ``order`` the neurons by share, largest first; ``pushes`` the first ``top`` of them as :class:`Push`."""

    token: int
    activations: np.ndarray
    shares: np.ndarray
    bias: float
    total: float
    order: np.ndarray
    pushes: tuple[Push, ...]


def held_logits(model: Model, x: np.ndarray, writes: np.ndarray) -> np.ndarray:
    """How writes (..., d) move the logits through the final norm held at the last stream row x (d,) and the
    unembedding: (..., d) -> (..., V)."""
    c, p = model.config, model.params
    W_U = unembedding(c, p)  # (d, V)
    if c.attention_only:
        return writes @ W_U
    if c.norm == "layernorm":
        sigma = np.sqrt(np.var(x) + c.ln_eps)  # held
        return ((writes - writes.mean(axis=-1, keepdims=True)) / sigma * p["ln_f.g"]) @ W_U  # (..., V)
    rms = np.sqrt(np.mean(x * x) + c.ln_eps)  # held
    return (writes / rms * (c.norm_offset + p["ln_f.g"])) @ W_U  # (..., V)


def _pushes(logits: np.ndarray, token: int, k: int) -> list[Push]:
    """A Push per row of logits (r, V)."""
    out = []
    for row in logits:
        up = np.argpartition(-row, k - 1)[:k]
        down = np.argpartition(row, k - 1)[:k]
        up, down = up[np.argsort(-row[up], kind="stable")], down[np.argsort(row[down], kind="stable")]
        out.append(Push(row, up, down, token, float(row[token])))
    return out


def _read(run: Run, position: int, token: int | None) -> tuple[int, int, int]:
    """(position, token (the prediction by default), tokens to show) checked."""
    t, model = _position(run, position), _model(run)
    _checked(run)
    token = int(np.argmax(run.logits[t])) if token is None else _token(model, token, "token")
    return t, token, min(TOP, model.config.vocab_size)


def heads(run: Run, position: int, layer: int, token: int | None = None) -> tuple[Push, ...]:
    """What each head of ``layer`` writes at ``position``, as tokens: one Push per head."""
    t, token, k = _read(run, position, token)
    model = _model(run)
    _layer(model, layer)
    written = _attention_parts(run, layer, np.array([t]))[0][:, 0].sum(axis=1)  # (H, d): each head's write at t
    return tuple(_pushes(held_logits(model, run.residuals[-1][t], written), token, k))


def mlp(run: Run, position: int, layer: int, token: int | None = None) -> Push:
    """What the MLP of ``layer`` writes at ``position``, as tokens."""
    t, token, k = _read(run, position, token)
    model = _model(run)
    written = mlp_out(model.config, model.params, layer, _mlp_input(run, _mlp_layer(model, layer), t))  # (1, d)
    return _pushes(held_logits(model, run.residuals[-1][t], written), token, k)[0]


def neurons(run: Run, position: int, layer: int, token: int | None = None, top: int = TOP) -> Neurons:
    """The MLP of ``layer`` at ``position`` neuron by neuron: each one's share of ``token``'s logit, and what the
    ``top`` largest push toward."""
    t, token, k = _read(run, position, token)
    model = _model(run)
    c, p, pre = model.config, model.params, f"{_mlp_layer(model, layer)}."
    x = _mlp_input(run, layer, t)  # (1, d): the stream the MLP reads
    h = (normed(c, p, pre + "ln2", x) if c.pre_norms else x)[0]  # (d,): OLMo-2 has no norm before its MLP
    a = _activations(model, layer, h)  # (d_mlp,)
    b_proj = p[pre + "b_proj"] if c.bias else np.zeros(c.d_model)
    rows = a[:, None] * p[pre + "W_proj"]  # (d_mlp, d): each neuron's write
    if c.post_norms:  # Gemma 3: the post-norm held at the whole output
        out = a @ p[pre + "W_proj"] + b_proj  # (d,)
        scale = (c.norm_offset + p[pre + "ln_post_mlp.g"]) / np.sqrt(np.mean(out * out) + c.ln_eps)  # (d,)
        rows, b_proj = rows * scale, b_proj * scale
    x = run.residuals[-1][t]
    column = read_direction(model, x, token)[0]  # (d,): the held read of the token's logit
    shares, bias = rows @ column, float(b_proj @ column)  # (d_mlp,)
    order = np.argsort(-shares, kind="stable")
    pushes = _pushes(held_logits(model, x, rows[order[:top]]), token, k)
    return Neurons(token, a, shares, bias, float(shares.sum() + bias), order, tuple(pushes))


def _activations(model: Model, layer: int, h: np.ndarray) -> np.ndarray:
    """Each neuron's activation for the normed input h (d,): (d_mlp,)."""
    c, p, pre = model.config, model.params, f"{layer}."
    hidden = h @ p[pre + "W_fc"] + (p[pre + "b_fc"] if c.bias else 0.0)  # (d_mlp,)
    if c.mlp != "gated":
        return ACTIVATION[c.activation](hidden)
    gate = h @ p[pre + "W_gate"] + (p[pre + "b_gate"] if c.bias else 0.0)  # (d_mlp,)
    return ACTIVATION[c.activation](gate) * hidden


def _layer(model: Model, layer: object) -> int:
    L = model.config.n_layers
    if not (isinstance(layer, (int, np.integer)) and 0 <= layer < L):
        raise AttentionError(f"there is no layer {layer!r}: the model has {L} layers", field="layer")
    return int(layer)


def _mlp_layer(model: Model, layer: object) -> int:
    layer = _layer(model, layer)
    if model.config.attention_only:
        raise AttentionError("this model is attention-only: it has no MLPs", field="layer")
    return layer


def _mlp_input(run: Run, layer: int, t: int) -> np.ndarray:
    """What the MLP of ``layer`` reads at position t (before its norm): the stream after the attention, or the
    layer's input with a parallel residual: (1, d)."""
    x = run.residuals[layer][[t]]  # (1, d)
    return x if _model(run).config.parallel_residual else x + _attention_write(run, layer, np.array([t]))
