"""Shape traces: what ``@`` gives at each step, and what ``np.dot`` gives (the surprise of 'The cat sat on the mat').

For N-D arrays ``np.dot(a, b)`` is a sum product over the last axis of a and the SECOND-TO-LAST axis
of b, keeping every other axis of both: shape a.shape[:-1] + b.shape[:-2] + b.shape[-1:]. So with a
batch of one, Q (1, 6, 8) dotted with Kᵀ (1, 8, 6) is (1, 6) + (1,) + (6,) = (1, 6, 1, 6): every query
of every batch item against every key of every batch item. ``@`` (matmul) broadcasts the batch axes
instead and gives (1, 6, 6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import AttentionError


def dot_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Shape of ``np.dot(a, b)`` (numpy's rule, without computing it)."""
    if len(a) == 0 or len(b) == 0:
        return a or b
    if len(b) == 1:
        return a[:-1]
    return a[:-1] + b[:-2] + b[-1:]


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Shape of ``a @ b`` for arrays of 2 or more dims: the batch axes broadcast (numpy's own rule,
    ``np.broadcast_shapes``), then (rows of a, columns of b). Raises AttentionError where numpy would raise."""
    if a[-1] != b[-2]:
        raise AttentionError(
            f"a @ b needs a's last axis ({a[-1]}) to equal b's second-to-last ({b[-2]}); shapes {a} and {b}"
        )
    try:
        lead = np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        raise AttentionError(f"the batch axes {a[:-2]} and {b[:-2]} do not broadcast; shapes {a} and {b}") from None
    return tuple(lead) + (a[-2], b[-1])


@dataclass(frozen=True)
class ShapeStep:
    step: str
    matmul: tuple[int, ...]
    np_dot: tuple[int, ...]

    @property
    def differs(self) -> bool:
        return self.matmul != self.np_dot


def shape_trace(x_shape: tuple[int, ...], d_k: int, d_v: int | None = None) -> list[ShapeStep]:
    """Shapes of Q, scores, weights and output computed with ``@`` and with ``np.dot``.

    ``x_shape`` is (..., n, d_model); W is (d_model, d_k). The np.dot path of the 'The cat sat on the mat' example
    carries its 4-D scores into softmax and into np.dot with V, giving output (1, 6, 1, 1, 8) (the example prints
    (1, 6, 1, 8), which that line cannot produce).
    """
    d_v = d_k if d_v is None else d_v
    w, wv = (x_shape[-1], d_k), (x_shape[-1], d_v)
    q_mm, q_dot = matmul_shape(x_shape, w), dot_shape(x_shape, w)
    kt_mm = q_mm[:-2] + (q_mm[-1], q_mm[-2])
    kt_dot = q_dot[:-2] + (q_dot[-1], q_dot[-2])
    s_mm, s_dot = matmul_shape(q_mm, kt_mm), dot_shape(q_dot, kt_dot)
    v_mm, v_dot = matmul_shape(x_shape, wv), dot_shape(x_shape, wv)
    o_mm, o_dot = matmul_shape(s_mm, v_mm), dot_shape(s_dot, v_dot)
    return [
        ShapeStep("Q = X·W_q", q_mm, q_dot),
        ShapeStep("scores = Q·Kᵀ", s_mm, s_dot),
        ShapeStep("weights = softmax(scores)", s_mm, s_dot),
        ShapeStep("output = weights·V", o_mm, o_dot),
    ]
