"""The parts of a transformer block other than attention: LayerNorm, the MLP's activations, embedding, unembedding.

LayerNorm normalises each row of the residual stream, then scales and shifts it:

    LN(x) = (x − mean(x)) / √(var(x) + ε) · γ + β          (mean and biased variance over the last axis)

GELU (GPT-2's "gelu_new", the tanh approximation): gelu(x) = ½ x (1 + tanh(√(2/π) (x + 0.044715 x³))); the exact
form is ½ x (1 + erf(x / √2)).
"""

from __future__ import annotations

import math

import numpy as np

_ERF = np.frompyfunc(math.erf, 1, 1)


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """LN over the last axis: (..., n, d) -> (..., n, d)."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., n, 1)
    centred = x - mean  # (..., n, d)
    var = np.mean(centred * centred, axis=-1, keepdims=True)  # (..., n, 1)
    return centred / np.sqrt(var + eps) * gamma + beta  # (..., n, d)


def gelu_new(x: np.ndarray) -> np.ndarray:
    """GPT-2's GELU, the tanh approximation (elementwise)."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def gelu(x: np.ndarray) -> np.ndarray:
    """The exact GELU, ½ x (1 + erf(x/√2)) (elementwise; erf from Python's math, slower)."""
    return 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0)).astype(np.float64))


def relu(x: np.ndarray) -> np.ndarray:
    """max(x, 0), elementwise."""
    return np.maximum(x, 0.0)


ACTIVATION = {"gelu_new": gelu_new, "gelu": gelu, "relu": relu}


def mlp(
    x: np.ndarray,
    W_fc: np.ndarray,
    b_fc: np.ndarray | None,
    W_proj: np.ndarray,
    b_proj: np.ndarray | None,
    activation: str,
) -> np.ndarray:
    """act(x W_fc + b_fc) W_proj + b_proj: (..., n, d) -> (..., n, d)."""
    hidden = x @ W_fc  # (..., n, d_mlp)
    if b_fc is not None:
        hidden += b_fc
    out = ACTIVATION[activation](hidden) @ W_proj  # (..., n, d)
    return out if b_proj is None else out + b_proj


def with_ones(x: np.ndarray) -> np.ndarray:
    """x with a column of ones appended, (..., n, d) -> (..., n, d + 1): a bias becomes the last row of a weight,
    x W + b = [x, 1] [W; b], so a projection with a bias runs through the bias-free attention steps."""
    return np.concatenate([x, np.ones((*x.shape[:-1], 1))], axis=-1)  # (..., n, d + 1)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over the last axis, shifted by each row's max (never overflows)."""
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (..., V)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (..., V)
