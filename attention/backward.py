"""The backward pass: the gradient of a loss with respect to the inputs, one small function per forward step.

For a trace of the forward pass and the upstream gradients G_O = ∂L/∂output and G_A = ∂L/∂weights, the loss is
taken to be L = Σ G_O ⊙ output + Σ G_A ⊙ weights (any loss of the output and weights has this gradient locally).
Going back through the steps of :mod:`attention.steps`, for each head (W^i its block of columns):

    output = concat W_o         ∂concat = ∂output W_oᵀ,       ∂W_o = concatᵀ ∂output
    O = A V                     ∂A = ∂O Vᵀ (+ G_A),            ∂V = Aᵀ ∂O
    A = softmax(Z)              ∂Z = A ⊙ (∂A − rowsum(∂A ⊙ A))   (every softmax variant: the shift cancels)
    Z = (S · s) / T, masked     ∂S = ∂Z · s / T                (masked cells have A = 0, so ∂Z = 0 there)
    S = Q Kᵀ                    ∂Q = ∂S K,                      ∂K = ∂Sᵀ Q
    Q = R(Q_raw) (rotary)       ∂Q_raw = Rᵀ ∂Q (the rotation by −θ)
    Q_raw = x / r · g (QK-norm, r = √(mean(x²) + ε) per row, x = X' W_q)
                                ∂x = (g ⊙ ∂Q_raw) / r − x · Σ(g ⊙ ∂Q_raw ⊙ x) / (d r³),   ∂g = Σ_rows ∂Q_raw ⊙ x / r
    Q = X' W_q  (or X' W_qᵀ)    ∂X' = ∂Q W_qᵀ (∂Q W_q),         ∂W_q = X'ᵀ ∂Q (∂Qᵀ X')
    X' = X + P                  ∂X = ∂X',                       ∂P = Σ_batch ∂X' (learned P; the sinusoidal PE is fixed)

A fully masked row has weights 0 whatever its scores, so its gradient is 0. Weights shared by a leading batch
get the sum over the batch. Grouped-query heads (kv_heads = g < h): a key/value block read by h/g query heads gets
the sum of their gradients. The ALiBi bias and the window are constants of Z (a bias, a mask), so they change
nothing above. Cross-attention traces (keys from a second sequence) are refused.
"""

from __future__ import annotations

import numpy as np

from . import steps
from .errors import AttentionError
from .heads import merge_heads, split_heads
from .options import Options
from .trace import Trace


def output_mix_backward(concat: np.ndarray, W_o: np.ndarray, d_output: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """output = concat @ W_o: returns (∂concat (..., n, d_v), ∂W_o (d_v, d_out))."""
    d_concat = d_output @ W_o.T  # (..., n, d_out) @ (d_out, d_v) -> (..., n, d_v)
    d_W_o = _flat(concat).T @ _flat(d_output)  # (d_v, B·n) @ (B·n, d_out) -> (d_v, d_out)
    return d_concat, d_W_o


def weighted_sum_backward(A: np.ndarray, V: np.ndarray, d_O: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """O = A @ V: returns (∂A (..., n, n), ∂V (..., n, d_v))."""
    d_A = d_O @ np.swapaxes(V, -1, -2)  # (..., n, d_v) @ (..., d_v, n) -> (..., n, n)
    d_V = np.swapaxes(A, -1, -2) @ d_O  # (..., n, n) @ (..., n, d_v) -> (..., n, d_v)
    return d_A, d_V


def softmax_backward(A: np.ndarray, d_A: np.ndarray) -> np.ndarray:
    """A = softmax(Z) row-wise: ∂Z = A ⊙ (∂A − Σ_j ∂A_j A_j). Overwrites and returns ``d_A``; (..., n, n).
    The same for every variant (subtracting a constant from a row does not change A); a row with A = 0
    (fully masked) gets 0."""
    row = np.einsum("...ij,...ij->...i", d_A, A)[..., None]  # (..., n, 1)
    d_A -= row  # (..., n, n)
    d_A *= A  # (..., n, n)
    return d_A


def scale_backward(d_Z: np.ndarray, factor: float, temperature: float) -> np.ndarray:
    """Z = S · factor / T: ∂S = ∂Z · factor / T. Overwrites and returns ``d_Z``; (..., n, n)."""
    d_Z *= factor / temperature  # (..., n, n)
    return d_Z


def scores_backward(Q: np.ndarray, K: np.ndarray, d_S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """S = Q @ Kᵀ: returns (∂Q, ∂K), each (..., n, d_k)."""
    d_Q = d_S @ K  # (..., n, n) @ (..., n, d_k) -> (..., n, d_k)
    d_K = np.swapaxes(d_S, -1, -2) @ Q  # (..., n, n) @ (..., n, d_k) -> (..., n, d_k)
    return d_Q, d_K


def rotary_backward(d_Q: np.ndarray, options: Options | None = None) -> np.ndarray:
    """Q = R Q_raw with R a rotation per position and column pair (as ``options`` turn them): ∂Q_raw = Rᵀ ∂Q, the
    rotation by −θ."""
    return (options or Options()).rotate(d_Q, inverse=True)  # (..., n, d)


def rms_norm_backward(
    x: np.ndarray, gains: np.ndarray, eps: float, d_y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """y = x / r · g with r = √(mean(x²) + ε) per row (:func:`steps.rms_norm`): returns (∂x (..., n, d), ∂g (d,),
    summed over every row, head and batch item)."""
    d = x.shape[-1]
    r = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)  # (..., n, 1)
    g_dy = d_y * gains  # (..., n, d)
    along = np.sum(g_dy * x, axis=-1, keepdims=True)  # (..., n, 1)
    d_x = g_dy / r - x * along / (d * r**3)  # (..., n, d)
    d_g = _flat(d_y * x / r).sum(axis=0)  # (d,)
    return d_x, d_g


def project_backward(
    X: np.ndarray, W: np.ndarray, d_Q: np.ndarray, projection: steps.Projection
) -> tuple[np.ndarray, np.ndarray]:
    """Q = X @ W (or X @ Wᵀ): returns (∂X (..., n, d_model), ∂W shaped like W, summed over any batch)."""
    if projection == "x_w":
        d_X = d_Q @ W.T  # (..., n, d_k) @ (d_k, d_model) -> (..., n, d_model)
        d_W = _flat(X).T @ _flat(d_Q)  # (d_model, B·n) @ (B·n, d_k) -> (d_model, d_k)
    else:
        d_X = d_Q @ W  # (..., n, d_k) @ (d_k, d_model) -> (..., n, d_model)
        d_W = _flat(d_Q).T @ _flat(X)  # (d_k, B·n) @ (B·n, d_model) -> (d_k, d_model)
    return d_X, d_W


def positions_backward(d_X_in: np.ndarray) -> np.ndarray:
    """X' = X + P with P shared by every batch item: ∂P = Σ_batch ∂X'; (n, d_model)."""
    return d_X_in.reshape(-1, *d_X_in.shape[-2:]).sum(axis=0)  # (n, d_model)


def backward(trace: Trace, d_output: object = None, d_weights: object = None) -> dict[str, np.ndarray]:
    """Gradients of L = Σ d_output ⊙ output + Σ d_weights ⊙ weights (either may be None, meaning 0).

    ``d_output`` has the shape of ``trace.output``, ``d_weights`` that of ``trace.weights`` ((..., h, n, n) with
    heads). Returns a dict with "X", "W_q", "W_k", "W_v" (each shaped like the trace's array), "W_o" when the
    trace has W_o, "P" when positions are learned, and "q_norm", "k_norm" (the gains', (d_k/h,)) with QK-norm."""
    o = trace.options
    h, group = o.heads, o.heads // o.kv
    if trace.X_kv is not None:
        raise AttentionError(
            "the backward pass covers self-attention; this trace is cross-attention (keys and values from X_kv)",
            field="X_kv",
        )
    d_out = _upstream("d_output", d_output, trace.output.shape)
    d_w = _upstream("d_weights", d_weights, trace.weights.shape)
    head_axis = trace.weights.ndim == trace.X.ndim + 1  # (..., h, n, n): multi-head
    A = trace.weights if head_axis else trace.weights[..., None, :, :]  # (..., h, n, n)
    V = np.repeat(split_heads(trace.V, o.kv), group, axis=-3)  # (..., h, n, d_v/g): head i's value block
    grads: dict[str, np.ndarray] = {}

    if trace.W_o is not None:
        d_concat, grads["W_o"] = (
            output_mix_backward(trace.concat, trace.W_o, d_out)
            if d_out is not None
            else (None, np.zeros(trace.W_o.shape))
        )
    else:
        d_concat = d_out
    d_A, d_V = None, None
    if d_concat is not None:
        d_A, d_V = weighted_sum_backward(A, V, split_heads(d_concat, h))  # (..., h, n, n), (..., h, n, d_v/h)
    if d_w is not None:
        d_w = d_w if head_axis else d_w[..., None, :, :]  # (..., h, n, n)
        d_A = np.array(d_w) if d_A is None else np.add(d_A, d_w, out=d_A)  # a new array: the steps below reuse it
    d_A = np.zeros(A.shape) if d_A is None else d_A  # (..., h, n, n)
    d_V = np.zeros(V.shape) if d_V is None else d_V  # (..., h, n, d_v/h)
    d_Z = softmax_backward(A, d_A)  # (..., h, n, n)
    d_S = scale_backward(d_Z, trace.scale, float(o.temperature))  # (..., h, n, n)
    K = np.repeat(split_heads(trace.K, o.kv), group, axis=-3)  # (..., h, n, d_k/h): head i's key block
    d_Q, d_K = scores_backward(split_heads(trace.Q, h), K, d_S)  # (..., h, n, d_k/h) each
    if group > 1:  # each shared block gets the sum over the query heads that read it
        d_K, d_V = _group_sum(d_K, group), _group_sum(d_V, group)  # (..., g, n, d_k/h), (..., g, n, d_v/g)
    if o.positions == "rotary":
        d_Q, d_K = rotary_backward(d_Q, o), rotary_backward(d_K, o)  # before the rotation
    X_in = trace.X if trace.X_in is None else trace.X_in  # (..., n, d_model): what the projections saw
    d_Q, d_K = _qk_norm_backward(trace, X_in, d_Q, d_K, grads)  # before QK-norm, when the options have it
    d_X = np.zeros(X_in.shape)  # (..., n, d_model)
    for name, d_M in (("W_q", d_Q), ("W_k", d_K), ("W_v", d_V)):
        d_X_part, grads[name] = project_backward(X_in, getattr(trace, name), merge_heads(d_M), o.projection)
        d_X += d_X_part  # (..., n, d_model)
    grads["X"] = d_X
    if o.positions == "learned":
        grads["P"] = positions_backward(d_X)  # (n, d_model)
    order = ("X", "W_q", "W_k", "W_v", "W_o", "P", "q_norm", "k_norm")
    return {name: grads[name] for name in order if name in grads}


def _qk_norm_backward(
    trace: Trace, X_in: np.ndarray, d_Q: np.ndarray, d_K: np.ndarray, grads: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """∂(X'W_q) and ∂(X'W_k) per head from ∂Q_raw, ∂K_raw ((..., h, n, d_k/h) and (..., g, n, d_k/h)) through
    QK-norm, whose input is recomputed from X' and W; the gains' gradients go into ``grads``."""
    o = trace.options
    for name, W, count in (("q_norm", trace.W_q, o.heads), ("k_norm", trace.W_k, o.kv)):
        gains = getattr(o, name)
        if not gains:
            continue
        x = split_heads(steps.project(X_in, W, o.projection), count)  # (..., heads, n, d_k/h): before the norm
        d_in = d_Q if name == "q_norm" else d_K
        d_x, grads[name] = rms_norm_backward(x, np.asarray(gains), float(o.qk_norm_eps), d_in)
        d_Q, d_K = (d_x, d_K) if name == "q_norm" else (d_Q, d_x)
    return d_Q, d_K


def _group_sum(d: np.ndarray, group: int) -> np.ndarray:
    """(..., h, n, w) -> (..., h/group, n, w): the sum over each run of ``group`` consecutive heads."""
    *lead, h, n, w = d.shape
    return d.reshape(*lead, h // group, group, n, w).sum(axis=-3)  # (..., g, n, w)


def _flat(a: np.ndarray) -> np.ndarray:
    """(..., n, d) -> (B·n, d): the rows of every batch item stacked, for a gradient summed over the batch."""
    return a.reshape(-1, a.shape[-1])


def _upstream(name: str, value: object, shape: tuple[int, ...]) -> np.ndarray | None:
    """An upstream gradient as a float array of the given shape, or None; anything else is an error naming it."""
    if value is None:
        return None
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise AttentionError(f"{name} must be an array of numbers of shape {shape}", matrix=name) from None
    if arr.shape != shape:
        raise AttentionError(f"{name} must have the shape of the trace's array, {shape}; got {arr.shape}", matrix=name)
    if not np.isfinite(arr).all():
        raise AttentionError(f"{name} has values that are NaN or infinite; every value must be finite", matrix=name)
    return arr
