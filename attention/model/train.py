"""Learning an attention-only model: next-token cross-entropy, its analytic gradient, and Adam.

For a batch of sequences ids (B, n) the loss is the mean over the predicted positions of −log p(ids[t+1] | ids[..t]).
Backward, one line per step of the forward pass (x_L the last stream, W_U the unembedding):

    logits = x_L W_U                 ∂logits = (softmax(logits) − onehot(next)) / count   (0 where nothing counts)
                                     ∂W_U = x_Lᵀ ∂logits,   ∂x_L = ∂logits W_Uᵀ
    x_{l+1} = x_l + attn_l(x_l) + b_o   ∂x_l = ∂x_{l+1} + (the attention's backward pass of ∂x_{l+1})_X,
                                     ∂W_q, ∂W_k, ∂W_v, ∂W_o from :func:`attention.backward`,  ∂b_o = Σ_rows ∂x_{l+1}
    x₀ = W_E[ids] + W_pos[:n]        ∂W_E[i] = Σ_{t: ids_t = i} ∂x₀[t] (+ ∂W_Uᵀ when tied),   ∂W_pos[:n] = Σ_batch ∂x₀

With biases the attention's weights carry them as a last row (see :mod:`.model`), so their gradient's last row is the
bias's. Rotary positions are handled by the attention's own backward pass; sinusoidal ones are fixed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import optimisers
from ..backward import backward
from ..errors import AttentionError
from ..names import is_whole
from ..trace import Trace, run_steps
from .config import Config
from .layers import log_softmax
from .model import Model, Params, attention_input, attention_weights, embed, layer_options, unembedding

OnStep = Callable[[int, float], object]
Record = Callable[[int, float, Params], object]
MAX_STEPS = 100_000


def forward(config: Config, params: Params, ids: np.ndarray) -> tuple[list[Trace], list[np.ndarray], np.ndarray]:
    """The attention-only forward pass on a batch (B, n): (each layer's trace, the streams x₀ .. x_L, logits)."""
    x = embed(config, params, ids)  # (B, n, d)
    traces, streams = [], [x]
    for layer in range(config.n_layers):
        W_q, W_k, W_v, W_o = attention_weights(config, params, layer)
        t = run_steps(attention_input(config, params, layer, x), W_q, W_k, W_v, layer_options(config, layer), W_o=W_o)
        x = x + (t.output + params[f"{layer}.b_o"] if config.bias else t.output)  # (B, n, d)
        traces.append(t)
        streams.append(x)
    return traces, streams, x @ unembedding(config, params)  # (B, n, V)


def next_token_loss(logits: np.ndarray, ids: np.ndarray, counts: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Mean cross-entropy of predicting ids[:, t+1] from position t, and ∂L/∂logits (B, n, V). ``counts`` (B, n−1)
    weighs each prediction (1 = counts, 0 = not); by default every prediction counts."""
    B, n, V = logits.shape
    w = np.ones((B, n - 1)) if counts is None else np.asarray(counts, dtype=np.float64)  # (B, n-1)
    total = float(w.sum())
    if total <= 0:
        raise AttentionError("no prediction counts in the loss: give sequences of at least 2 tokens", field="ids")
    logp = log_softmax(logits[:, :-1])  # (B, n-1, V)
    nxt = ids[:, 1:]  # (B, n-1)
    picked = np.take_along_axis(logp, nxt[..., None], axis=-1)[..., 0]  # (B, n-1)
    loss = -float(np.sum(w * picked)) / total
    d = np.exp(logp)  # (B, n-1, V): softmax
    np.put_along_axis(d, nxt[..., None], np.take_along_axis(d, nxt[..., None], axis=-1) - 1.0, axis=-1)
    d *= (w / total)[..., None]
    d_logits = np.zeros_like(logits)
    d_logits[:, :-1] = d  # the last position predicts nothing here
    return loss, d_logits


def loss_and_grads(
    config: Config, params: Params, ids: np.ndarray, counts: np.ndarray | None = None
) -> tuple[float, Params]:
    """The next-token loss of an attention-only model on ids (B, n) and its gradient for every parameter."""
    if not config.attention_only:
        raise AttentionError(
            "the analytic gradient covers attention-only models (no LayerNorm, no MLP)", field="attention_only"
        )
    ids = np.atleast_2d(np.asarray(ids))
    traces, streams, logits = forward(config, params, ids)
    loss, d_logits = next_token_loss(logits, ids, counts)
    d = config.d_model
    W_U = unembedding(config, params)
    grads: Params = {}
    x_L = streams[-1]
    d_W_U = x_L.reshape(-1, d).T @ d_logits.reshape(-1, d_logits.shape[-1])  # (d, V)
    d_x = d_logits @ W_U.T  # (B, n, d)
    for layer in range(config.n_layers - 1, -1, -1):
        p = f"{layer}."
        g = backward(traces[layer], d_output=d_x)
        for m in ("W_q", "W_k", "W_v"):
            grads[p + m] = g[m][:d] if config.bias else g[m]  # (d, d)
            if config.bias:
                grads[p + "b_" + m[-1]] = g[m][d]  # (d,): the last row is the bias's
        grads[p + "W_o"] = g["W_o"]  # (d, d)
        if config.bias:
            grads[p + "b_o"] = d_x.reshape(-1, d).sum(axis=0)  # (d,)
        d_x = d_x + (g["X"][..., :d] if config.bias else g["X"])  # (B, n, d): the residual sum passes ∂x on
    d_W_E = np.zeros(params["W_E"].shape)
    np.add.at(d_W_E, ids, d_x)  # (V, d)
    if config.tied:
        d_W_E += d_W_U.T
    else:
        grads["W_U"] = d_W_U
    grads["W_E"] = d_W_E
    if config.positions == "learned":
        d_pos = np.zeros(params["W_pos"].shape)
        d_pos[: ids.shape[-1]] = d_x.sum(axis=0)  # (n, d)
        grads["W_pos"] = d_pos
    return loss, {k: grads[k] for k in params}


@dataclass(frozen=True, eq=False)
class TrainResult:
    """The trained model, the loss before each step (losses[s] on the batch of step s), steps done, cancelled."""

    model: Model
    losses: np.ndarray
    steps_done: int
    cancelled: bool


def train(
    model: Model,
    batches: Callable[[int], np.ndarray],
    steps: int,
    *,
    lr: float | Callable[[int], float] = 1e-2,
    on_step: OnStep | None = None,
    record: Record | None = None,
) -> TrainResult:
    """Adam on the next-token loss of an attention-only model. ``batches(step)`` gives the ids (B, n) of each step.
    ``on_step(step, loss)`` is called before each step and once at the end (as :func:`attention.train`); returning
    False stops the run (``cancelled``). ``lr`` is a number or a schedule, ``lr(step)`` for each step.
    ``record(step, loss, params)`` sees the parameters the loss was taken at
    (for snapshots; do not change them). Deterministic: the same arguments give the same numbers."""
    if not model.config.attention_only:
        raise AttentionError("only attention-only models are trained here", field="attention_only")
    if not (is_whole(steps) and 0 <= steps <= MAX_STEPS):
        raise AttentionError(f"steps must be a whole number from 0 to {MAX_STEPS}; got {steps!r}", field="steps")
    schedule = lr if callable(lr) else (lambda step: lr)
    for step in (0, steps):
        rate = schedule(step)
        if not (isinstance(rate, (int, float)) and np.isfinite(rate) and rate > 0):
            raise AttentionError(
                f"the learning rate lr must be a finite number > 0; got {rate!r} at step {step}", field="lr"
            )
    opt = optimisers.Adam(float(schedule(0)))
    params = {k: np.array(v) for k, v in model.params.items()}
    state = opt.init(params)
    losses: list[float] = []
    cancelled = False
    for step in range(steps + 1):
        loss, grads = loss_and_grads(model.config, params, batches(step))
        if not np.isfinite(loss) or not all(np.isfinite(g).all() for g in grads.values()):
            raise AttentionError(
                f"training stopped at step {step}: the loss or its gradient became {loss}; "
                f"try a smaller learning rate than {schedule(step):g}",
                field="lr",
            )
        losses.append(loss)
        if record is not None:
            record(step, loss, params)
        if on_step is not None and on_step(step, loss) is False:
            cancelled = step < steps
            break
        if step == steps:
            break
        if callable(lr):
            opt = optimisers.Adam(float(schedule(step)))  # Adam's state does not depend on the rate
        params, state = opt.step(params, grads, state)
    trained = Model(model.config, params, model.vocab, model.name)
    return TrainResult(trained, np.array(losses), len(losses) - 1, cancelled)
