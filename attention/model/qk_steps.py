"""One head's queries and keys step by step, with the model's own numbers: X·W, QK-norm, the rotation, then the scores.

For query head i of a layer reading key/value head g (its group's), at positions 0 .. n − 1:

    q₀ = X W_q[:, head i],   k₀ = X W_k[:, head g]          (n, dₕ) each: the projection
    q₁ = RMS(q₀) · (offset + γ_q),   k₁ = RMS(k₀) · (offset + γ_k)      QK-norm, per head (Qwen3, Gemma 3)
    q₁ = q₀ / rms(X W_q) · γ_q[head i]                      or across all heads (OLMo-2): the RMS over every head's
                                                            columns of the row, the head's block of the wide gains
    q₂ = rotate(q₁),   k₂ = rotate(k₁)                      RoPE on the first r columns of each (r = rotary_dims:
                                                            all of them, or GPT-NeoX's share); the rest unchanged
    S = q₂ k₂ᵀ,   A = softmax(S · scale, where the layer's mask allows)              (n, n)

Each step is recomputed here from X, the head's blocks of W and the norm's gains (never read back from the model's
trace), so a test can hold it against the model's run and against transformers; a step the model does not take is
left out (a model without QK-norm has no q₁, one without rotary positions no q₂). Engine code: no Streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import positions, steps
from ..errors import AttentionError
from ..heads import kv_block
from .attend import frequencies, visible
from .config import Config
from .layers import rms_norm
from .model import Run

PROJECTED, NORMED, ROTATED = "X·W", "after QK-norm", "after the rotation"
WHAT = {"head": "each head's queries and keys", "all": "its queries and keys across all heads at once"}  # by scope
HOW = {  # how QK-norm normalises them, by qk_norm_scope, as a page says it
    "head": "RMSNorm with the head's own gains",
    "all": "one RMSNorm over every head's columns of a row, before the split into heads: a head's q is its columns "
    "divided by the whole row's RMS, times its block of the gains",
}


@dataclass(frozen=True)
class QKSteps:
    """One head's q and k after each step the model takes (name -> (n, dₕ)), in order; how many of each head's
    columns the rotation turns (0 without rotary positions); the scores, scaled scores and weights (n, n) from the
    last step's q and k; the key/value head read (0-based)."""

    q: dict[str, np.ndarray]
    k: dict[str, np.ndarray]
    rotated_columns: int
    kv_head: int
    scores: np.ndarray
    scaled: np.ndarray
    weights: np.ndarray

    @property
    def names(self) -> tuple[str, ...]:
        """The steps taken, in order: "X·W", then "after QK-norm" and "after the rotation" when the model has them."""
        return tuple(self.q)


def qk_steps(run: Run, layer: int, head: int) -> QKSteps:
    """Head ``head`` of layer ``layer`` in ``run``: from the layer's input X (n, d [+1]: after its norm, a column of
    ones when the model has biases), q and k after each step, then the scores and weights they make."""
    model, X = run.model, run.traces.light(layer).X
    if model is None:
        raise AttentionError("this run does not name the model that made it; run the model again", field="model")
    c, p = model.config, model.params
    dh, H, G = c.d_head, c.n_heads, c.kv_heads
    g = kv_block(head, H, G)
    W_q, W_k = model.layer_weights(layer)[:2]
    q = {PROJECTED: X @ W_q[:, head * dh : (head + 1) * dh]}  # (n, dₕ)
    k = {PROJECTED: X @ W_k[:, g * dh : (g + 1) * dh]}  # (n, dₕ)
    if c.qk_norm:
        q[NORMED] = _normed(c, q[PROJECTED], X @ W_q, p[f"{layer}.q_norm.g"], head)  # (n, dₕ)
        k[NORMED] = _normed(c, k[PROJECTED], X @ W_k, p[f"{layer}.k_norm.g"], g)  # (n, dₕ)
    omega = frequencies(c, layer)
    if omega is not None:
        q[ROTATED] = positions.rotate(list(q.values())[-1], omega, 0, c.rotary_layout)  # (n, dₕ)
        k[ROTATED] = positions.rotate(list(k.values())[-1], omega, 0, c.rotary_layout)  # (n, dₕ)
    n = X.shape[0]
    window = c.sliding_window if c.layer_type(layer) == "sliding" else 0
    S = steps.scores(list(q.values())[-1], list(k.values())[-1])  # (n, n)
    scaled = steps.mask(steps.scale(S, c.scale(layer)), visible(0, n, n, window))  # (n, n)
    turned = 0 if omega is None else 2 * len(omega)
    return QKSteps(q, k, turned, g, S, scaled, steps.softmax(scaled))


def _normed(c: Config, x: np.ndarray, every: np.ndarray, gain: np.ndarray, block: int) -> np.ndarray:
    """One head's QK-normed columns (n, dₕ) from its projection x (n, dₕ): RMSNorm over its own columns with the
    shared gains ("head"), or its columns divided by the RMS of every head's (``every``, (n, H·dₕ) or (n, G·dₕ))
    and scaled by its block of the wide gains ("all", OLMo-2)."""
    if c.qk_norm_scope == "head":
        return rms_norm(x, gain, c.ln_eps, c.norm_offset)  # (n, dₕ)
    cols = slice(block * c.d_head, (block + 1) * c.d_head)
    rms = np.sqrt(np.mean(every * every, axis=-1, keepdims=True) + c.ln_eps)  # (n, 1): over every head's columns
    return x / rms * (c.norm_offset + gain[cols])  # (n, dₕ)
