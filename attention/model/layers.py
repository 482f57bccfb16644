"""The parts of a transformer block other than attention: the norms, the MLP and its activations.

LayerNorm normalises each row of the residual stream, then scales and shifts it; RMSNorm only rescales it:

    LN(x)  = (x − mean(x)) / √(var(x) + ε) · γ + β          (mean and biased variance over the last axis)
    RMS(x) = x / √(mean(x²) + ε) · (o + γ)                   (o = 0; Gemma stores γ − 1, so o = 1 there)

The MLP is plain, act(x W_fc + b_fc) W_proj + b_proj (GPT-2, GPT-NeoX), or gated, (act(x W_gate) ⊙ x W_fc) W_proj
(SwiGLU with SiLU: Llama, Qwen, Mistral; GeGLU with the tanh GELU: Gemma). GELU (GPT-2's "gelu_new", the tanh
approximation): gelu(x) = ½ x (1 + tanh(√(2/π) (x + 0.044715 x³))); the exact form is ½ x (1 + erf(x / √2)).
SiLU: x · σ(x) = x / (1 + e^(−x)).
"""

from __future__ import annotations

import math

import numpy as np

from .. import steps

_ERF = np.frompyfunc(math.erf, 1, 1)


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """LN over the last axis: (..., n, d) -> (..., n, d)."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., n, 1)
    centred = x - mean  # (..., n, d)
    var = np.mean(centred * centred, axis=-1, keepdims=True)  # (..., n, 1)
    return centred / np.sqrt(var + eps) * gamma + beta  # (..., n, d)


def rms_norm(x: np.ndarray, gamma: np.ndarray, eps: float, offset: float = 0.0) -> np.ndarray:
    """RMSNorm over the last axis: (..., n, d) -> (..., n, d), scaled by offset + γ (the step pages' QK-norm step)."""
    return steps.rms_norm(x, offset + gamma, eps)  # (..., n, d)


def gelu_new(x: np.ndarray) -> np.ndarray:
    """GPT-2's GELU, the tanh approximation (elementwise). x³ is written x · x · x: numpy's ``x**3`` calls pow for
    each number, 240× slower here (48 ms against 0.2 ms for 256 × 3072 float32s; it was half of GPT-2's forward)."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def gelu(x: np.ndarray) -> np.ndarray:
    """The exact GELU, ½ x (1 + erf(x/√2)) (elementwise; erf from Python's math, slower)."""
    return 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0)).astype(x.dtype))


def relu(x: np.ndarray) -> np.ndarray:
    """max(x, 0), elementwise."""
    return np.maximum(x, 0.0)


def silu(x: np.ndarray) -> np.ndarray:
    """x · σ(x) = x / (1 + exp(−x)), elementwise, in one new array. Far below 0, exp(−x) overflows to inf and the
    quotient is its limit, 0 (−0.0: within the float's smallest step of the true value)."""
    e = np.negative(x)  # (...): the one new array
    with np.errstate(over="ignore"):
        np.exp(e, out=e)  # exp(−x), inf below about −88 in float32 (−709 in float64)
    e += 1.0
    return np.divide(x, e, out=e)  # (...)


ACTIVATION = {"gelu_new": gelu_new, "gelu": gelu, "relu": relu, "silu": silu}


def mlp(
    x: np.ndarray,
    W_fc: np.ndarray,
    b_fc: np.ndarray | None,
    W_proj: np.ndarray,
    b_proj: np.ndarray | None,
    activation: str,
    W_gate: np.ndarray | None = None,
    b_gate: np.ndarray | None = None,
) -> np.ndarray:
    """act(x W_fc + b_fc) W_proj + b_proj, or gated (with W_gate): (act(x W_gate + b_gate) ⊙ (x W_fc + b_fc)) W_proj
    + b_proj. (..., n, d) -> (..., n, d)."""
    hidden = x @ W_fc  # (..., n, d_mlp)
    if b_fc is not None:
        hidden += b_fc
    if W_gate is None:
        hidden = ACTIVATION[activation](hidden)  # (..., n, d_mlp)
    else:
        gate = x @ W_gate  # (..., n, d_mlp)
        if b_gate is not None:
            gate += b_gate
        hidden *= ACTIVATION[activation](gate)  # (..., n, d_mlp)
    out = hidden @ W_proj  # (..., n, d)
    return out if b_proj is None else out + b_proj


def with_ones(x: np.ndarray) -> np.ndarray:
    """x with a column of ones appended, (..., n, d) -> (..., n, d + 1): a bias becomes the last row of a weight,
    x W + b = [x, 1] [W; b], so a projection with a bias runs through the bias-free attention steps."""
    return np.concatenate([x, np.ones((*x.shape[:-1], 1), dtype=x.dtype)], axis=-1)  # (..., n, d + 1)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over the last axis, shifted by each row's max (never overflows)."""
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (..., V)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (..., V)


def probabilities(logits: np.ndarray) -> np.ndarray:
    """softmax over the last axis in float64, whatever the logits' dtype: the one home of every probability a page
    shows. In float32 most of a 49,152-token vocabulary's probabilities underflow to 0 (e^-104 is float32's
    smallest), so ranks and small probabilities read off them would be wrong."""
    return np.exp(log_softmax(np.asarray(logits, dtype=np.float64)))  # (..., V)


def ranks(logits: np.ndarray, token: int) -> np.ndarray:
    """The rank of ``token`` in each row of logits (1: the largest), read off the logits themselves, never off
    probabilities (which underflow): 1 + how many tokens have a strictly larger logit. (..., V) -> (...)."""
    z = np.asarray(logits, dtype=np.float64)  # (..., V)
    return (z > z[..., token : token + 1]).sum(axis=-1) + 1  # (...)
