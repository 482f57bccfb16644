"""Learning the matrices: a loss on the weights or the output, its gradient through the backward pass, an optimiser.

Cross-entropy from a target pattern T to the weights A, over the rows R that count (the mean over heads with h > 1):

    L = −(1/|R|) Σ_{i∈R} Σ_j T_ij log A_ij,      ∂L/∂A_ij = −T_ij / (|R| A_ij)

(its least value is the target's own entropy: 0 for one key per row). Mean squared error to a target output Y:
L = mean((O − Y)²), ∂L/∂O = 2 (O − Y) / size. :func:`train` repeats forward → loss → :func:`backward` → optimiser
step on one sentence; :func:`train_many` does the same on a set of sentences whose embeddings come from a shared
table (word → vector), and :func:`evaluate` measures a result on sentences it never saw. Accuracy: the share of the
rows that count whose largest weight falls on one of the target's best keys.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import masks, names, optimisers, targets
from .backward import backward
from .errors import AttentionError, as_matrix
from .options import Options, finite, short
from .targets import Target
from .trace import Trace, check_inputs, check_output_weights, check_positions, run_steps, self_attention

GAINS = ("q_norm", "k_norm")  # QK-norm's gains: options of the pass, learned like a matrix when the options have them
LEARNABLE = ("X", "W_q", "W_k", "W_v", "W_o", "P", *GAINS)
LOSSES = ("cross_entropy", "mse")
MAX_STEPS = 100_000
TINY = float(np.finfo(np.float64).tiny)  # the weights are clamped to this inside log and 1/A

OnStep = Callable[[int, float], object]


# ---------------------------------------------------------------- losses


def cross_entropy(weights: np.ndarray, target: Target, count: int | None = None) -> tuple[float, np.ndarray]:
    """(L, ∂L/∂weights) for weights (..., n, n) or (..., h, n, n) and a target (..., n, n). ``count`` is |R| (by
    default the rows that count here, times the heads); give it to sum one part of a larger set."""
    T, rows = _with_heads(weights, target)  # (..., [h], n, n), (..., [h], n)
    T = T * rows[..., None]  # (..., [h], n, n): rows that do not count weigh 0
    count = int(np.broadcast_to(rows, weights.shape[:-1]).sum()) if count is None else count
    if count == 0:
        raise AttentionError("the target has no row to learn: every row is masked or has no key", field="target")
    A = np.maximum(weights, TINY)  # (..., [h], n, n): a weight that underflowed to 0 stays finite in log and 1/A
    loss = -float(np.sum(T * np.log(A))) / count
    d_weights = np.broadcast_to(-T / (A * count), weights.shape)  # (..., [h], n, n)
    return loss, np.array(d_weights)


def mse(output: np.ndarray, target_output: np.ndarray) -> tuple[float, np.ndarray]:
    """(L, ∂L/∂output) for L = mean((output − target)²)."""
    diff = output - target_output  # (..., n, d_v)
    return float(np.mean(diff**2)), 2.0 * diff / diff.size


def accuracy(weights: np.ndarray, target: Target) -> float:
    """The share of counted rows (of every head) whose argmax key is one of the target's best keys."""
    T, rows = _with_heads(weights, target)
    best = T.max(axis=-1, keepdims=True) == T  # (..., [h], n, n): the target's best keys
    top = np.argmax(weights, axis=-1)  # (..., [h], n)
    hit = np.take_along_axis(np.broadcast_to(best, weights.shape), top[..., None], axis=-1)[..., 0]  # (..., [h], n)
    rows = np.broadcast_to(rows, hit.shape)
    return float(hit[rows].mean()) if rows.any() else float("nan")


def _with_heads(weights: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
    """The target's pattern and rows with a head axis inserted when the weights have one more axis."""
    if weights.ndim == target.pattern.ndim + 1:
        return target.pattern[..., None, :, :], target.rows[..., None, :]
    return target.pattern, target.rows


# ---------------------------------------------------------------- results


@dataclass(frozen=True)
class Snapshot:
    """The learned matrices and the weights after ``step`` optimiser steps (weights None for many sentences)."""

    step: int
    loss: float
    matrices: dict[str, np.ndarray]
    weights: np.ndarray | None


@dataclass(frozen=True)
class TrainResult:
    """What a training run gives back.

    matrices: every matrix of the run (the learned ones trained, the others as given, drawn ones included);
    losses: (steps_done + 1,) the loss after 0, 1, ... steps; snapshots: at regular steps, the last one included;
    accuracy: on the (training) rows that count (None for the mse loss without a pattern); steps_done and
    cancelled (``on_step`` returned False). For :func:`train`, ``trace`` is ``self_attention`` on the trained
    matrices and ``weights`` its weights (the numbers the accuracy is taken on); None for :func:`train_many`.
    """

    matrices: dict[str, np.ndarray]
    losses: np.ndarray
    snapshots: tuple[Snapshot, ...]
    accuracy: float | None
    target: Target | None
    steps_done: int
    cancelled: bool
    trace: Trace | None = None
    weights: np.ndarray | None = None

    @property
    def loss(self) -> float:
        """The final loss."""
        return float(self.losses[-1])


@dataclass(frozen=True)
class Evaluation:
    """Accuracy and mean cross-entropy on a set of sentences, and how many rows counted."""

    accuracy: float
    loss: float
    rows: int


# ---------------------------------------------------------------- one sentence


def train(
    tokens: Sequence[str],
    matrices: Mapping[str, object],
    options: Options | None = None,
    target: str | Target | object = "previous",
    *,
    learn: Sequence[str] = ("W_q", "W_k"),
    optimiser: str = "adam",
    lr: float = 0.05,
    steps: int = 500,
    seed: int = 0,
    snapshots: int = 10,
    on_step: OnStep | None = None,
    loss: str = "cross_entropy",
    j: int | None = None,
    include_self: bool = True,
) -> TrainResult:
    """Learn the matrices named in ``learn`` so the attention of ``tokens`` matches ``target``; "q_norm" and "k_norm"
    learn the options' QK-norm gains (the result's ``matrices`` then hold them as arrays, and its trace uses them).

    ``matrices`` holds "X", "W_q", "W_k", "W_v", and "W_o" and "P" when used (a missing W_o that is learned, or a
    missing P with learned positions, is drawn from ``seed``: standard normal / √d_v for W_o, / √d_model for P).
    ``target`` is a kind from :data:`targets.KINDS` ("token" takes ``j``, "same_word" ``include_self``), a
    :class:`Target`, or a grid (n, n) painted by hand; with ``loss="mse"`` it is the target output instead.
    ``on_step(step, loss)`` is called before each step and once at the end (step = steps done); returning False
    stops the run (``cancelled``). The run is deterministic: the same arguments give the same numbers.
    Raises AttentionError naming the setting ("lr", "steps", "target"...) when one is invalid or the loss or the
    matrices become infinite or NaN; the given matrices are never modified.
    """
    opts = (options or Options()).validate()
    opt = _settings(learn, optimiser, lr, steps, seed, snapshots, loss)
    X, W_q, W_k, W_v = check_inputs(
        matrices.get("X"), matrices.get("W_q"), matrices.get("W_k"), matrices.get("W_v"), opts, tokens
    )
    n, d_model = X.shape[-2:]
    d_v = opts.heads * (W_v.shape[names.out_axis(opts.projection)] // opts.kv)  # the heads' concatenated width
    mats = {"X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v, **_extras(matrices, opts, learn, seed, n, d_model, d_v)}
    mats.update(_gains_of(opts, learn))  # (d_k/h,) each: QK-norm's gains, when they learn
    first = self_attention(**_call(mats), tokens=tokens, options=opts)
    tgt: Target | None = None
    Y = None
    if loss == "mse":
        Y = as_matrix("target", target, ndim=(2, 3))
        if Y.shape != first.output.shape:
            raise AttentionError(
                f"the target output must have the output's shape {first.output.shape}; got {Y.shape}", field="target"
            )
    else:
        tgt = _target(target, tokens, first.allowed, j, include_self)
        if tgt.pattern.ndim == 3 and tgt.pattern.shape[0] != opts.heads:  # one pattern per head
            raise AttentionError(
                f"the target has {tgt.pattern.shape[0]} per-head patterns but there are {opts.heads} heads",
                field="target",
            )

    def loss_and_grads(params: dict[str, np.ndarray]) -> tuple[float, dict[str, np.ndarray], np.ndarray]:
        t = run_steps(**_call({**mats, **params}), opts=with_gains(opts, params), tokens=tokens)
        if tgt is not None:
            value, d_w = cross_entropy(t.weights, tgt)
            g = backward(t, d_weights=d_w)
        else:
            value, d_o = mse(t.output, Y)  # type: ignore[arg-type]
            g = backward(t, d_output=d_o)
        return value, {k: g[k] for k in params}, t.weights

    params, losses, snaps, cancelled = _loop(
        {k: mats[k] for k in learn}, loss_and_grads, opt, steps, snapshots, on_step, lr, optimiser
    )
    final = {**mats, **params}
    trace = self_attention(**_call(final), tokens=tokens, options=with_gains(opts, params))
    acc = None if tgt is None else accuracy(trace.weights, tgt)
    return TrainResult(final, losses, snaps, acc, tgt, len(losses) - 1, cancelled, trace, trace.weights)


# ---------------------------------------------------------------- many sentences


def embedding_table(words: Sequence[str], d: int, seed: int = 0) -> dict[str, np.ndarray]:
    """A random vector per word, standard normal / √d. Each word's vector depends only on the word and the seed
    (not on the other words), so a table for a larger vocabulary agrees with a smaller one."""
    return {w: _word_rng(w, seed).randn(d) / np.sqrt(d) for w in dict.fromkeys(words)}


def embed(tokens: Sequence[str], table: Mapping[str, object]) -> np.ndarray:
    """X (n, d): each token's vector from the table (looked up as written, then lower-cased)."""
    rows = []
    for t in tokens:
        vec = table.get(t, table.get(str(t).lower()))
        if vec is None:
            raise AttentionError(f"the word {t!r} is not in the embedding table", matrix="X")
        rows.append(np.asarray(vec, dtype=np.float64))
    widths = {r.shape for r in rows}
    if len(widths) != 1 or len(next(iter(widths))) != 1:
        raise AttentionError(
            f"the embedding table's vectors must all be 1-D of one width; got {sorted(widths)}", matrix="X"
        )
    return np.stack(rows)  # (n, d)


def train_many(
    sentences: Sequence[Sequence[str]],
    table: Mapping[str, object],
    matrices: Mapping[str, object],
    options: Options | None = None,
    target: str = "previous",
    *,
    learn: Sequence[str] = ("W_q", "W_k"),
    optimiser: str = "adam",
    lr: float = 0.05,
    steps: int = 300,
    seed: int = 0,
    snapshots: int = 0,
    on_step: OnStep | None = None,
    j: int | None = None,
    include_self: bool = True,
) -> TrainResult:
    """Learn shared matrices on a set of sentences: each step sums the cross-entropy over every row that counts in
    every sentence (X from the shared ``table``, word → vector), then takes one optimiser step. ``matrices`` holds
    "W_q", "W_k", "W_v", and "W_o" / "P" when used (P with as many rows as the longest sentence; a sentence of
    n tokens uses its first n rows). ``target`` is a kind from :data:`targets.KINDS` except "custom".
    Masks: "none" or "causal" (padding and custom masks are per sentence). X is not learned here."""
    opts = (options or Options()).validate()
    opt = _settings(learn, optimiser, lr, steps, seed, snapshots, "cross_entropy")
    if "X" in learn:
        raise AttentionError("learn cannot include X with many sentences: the embedding table is shared", field="learn")
    if set(GAINS) & set(learn):
        raise AttentionError("learn cannot include QK-norm's gains with many sentences: only matrices", field="learn")
    groups, mats = _groups(sentences, table, matrices, opts, target, learn, seed, j, include_self)
    total = sum(_count(tgt, shape) for _, tgt, shape in groups)
    if total == 0:
        raise AttentionError("the target has no row to learn in these sentences", field="target")

    def loss_and_grads(params: dict[str, np.ndarray]) -> tuple[float, dict[str, np.ndarray], None]:
        value, grads = 0.0, {k: np.zeros_like(p) for k, p in params.items()}
        for X, tgt, _ in groups:
            t = _forward_group(X, {**mats, **params}, opts)
            part, d_w = cross_entropy(t.weights, tgt, count=total)
            value += part
            for k, g in backward(t, d_weights=d_w).items():
                if k == "P":
                    grads[k][: X.shape[-2]] += g  # a sentence of n tokens used P's first n rows
                elif k in grads:
                    grads[k] += g
        return value, grads, None

    params, losses, snaps, cancelled = _loop(
        {k: mats[k] for k in learn}, loss_and_grads, opt, steps, snapshots, on_step, lr, optimiser
    )
    final = {**mats, **params}
    acc = evaluate(sentences, table, final, opts, target, j=j, include_self=include_self).accuracy
    return TrainResult(final, losses, snaps, acc, None, len(losses) - 1, cancelled)


def evaluate(
    sentences: Sequence[Sequence[str]],
    table: Mapping[str, object],
    matrices: Mapping[str, object],
    options: Options | None = None,
    target: str = "previous",
    *,
    j: int | None = None,
    include_self: bool = True,
) -> Evaluation:
    """Accuracy and mean cross-entropy of shared matrices on sentences (for example ones training never saw)."""
    opts = (options or Options()).validate()
    groups, mats = _groups(sentences, table, matrices, opts, target, (), 0, j, include_self)
    hits, losses, rows = 0.0, 0.0, 0
    for X, tgt, shape in groups:
        t = _forward_group(X, mats, opts)
        count = _count(tgt, shape)
        if count:
            hits += accuracy(t.weights, tgt) * count
            losses += cross_entropy(t.weights, tgt)[0] * count
            rows += count
    if rows == 0:
        raise AttentionError("the target has no row to evaluate in these sentences", field="target")
    return Evaluation(hits / rows, losses / rows, rows)


# ---------------------------------------------------------------- the shared parts


def _settings(
    learn: Sequence[str], optimiser: str, lr: object, steps: object, seed: object, snapshots: object, loss: str
) -> optimisers.SGD | optimisers.Momentum | optimisers.Adam:
    """Check the training settings (each error names its setting) and return the optimiser."""
    if isinstance(learn, str) or not learn or any(k not in LEARNABLE for k in learn) or len(set(learn)) != len(learn):
        raise AttentionError(
            f"learn must list some of {', '.join(LEARNABLE)} (each once); got {short(learn)}", field="learn"
        )
    if not (finite(lr) and float(lr) > 0):  # type: ignore[arg-type]
        raise AttentionError(f"the learning rate lr must be a finite number > 0; got {short(lr)}", field="lr")
    for name, value, low, high in (
        ("steps", steps, 1, MAX_STEPS),
        ("seed", seed, 0, names.MAX_SEED),
        ("snapshots", snapshots, 0, MAX_STEPS),
    ):
        if not (names.is_whole(value) and low <= value <= high):
            raise AttentionError(f"{name} must be a whole number from {low} to {high}; got {short(value)}", field=name)
    if loss not in LOSSES:
        raise AttentionError(f"loss must be one of {', '.join(LOSSES)}; got {loss!r}", field="loss")
    return optimisers.make(optimiser, float(lr))  # type: ignore[arg-type]


def _extras(
    matrices: Mapping[str, object], opts: Options, learn: Sequence[str], seed: int, n: int, d_model: int, d_v: int
) -> dict[str, np.ndarray]:
    """W_o and P: as given (checked), or drawn from the seed when missing (W_o when it is learned: standard normal
    / √d_v; P whenever positions are "learned": standard normal / √d_model). Learning P without learned positions
    is an error naming learn."""
    rs = np.random.RandomState(seed)
    out: dict[str, np.ndarray] = {}
    W_o = matrices.get("W_o")
    if W_o is None and "W_o" in learn:
        W_o = rs.randn(d_v, d_v) / np.sqrt(d_v)
    if W_o is not None:
        out["W_o"] = check_output_weights(W_o, d_v)  # type: ignore[assignment]
    if "P" in learn and opts.positions != "learned":
        raise AttentionError(
            f"learn has P but positions are {opts.positions!r}; set positions to 'learned'", field="learn"
        )
    P = matrices.get("P")
    if P is None and opts.positions == "learned":
        P = rs.randn(n, d_model) / np.sqrt(d_model)
    P = check_positions(P, opts, n, d_model)
    if P is not None:
        out["P"] = P
    return out


def _gains_of(opts: Options, learn: Sequence[str]) -> dict[str, np.ndarray]:
    """The QK-norm gains that learn, as arrays (d_k/h,) from the options; an error naming learn when the options
    have no such gains."""
    out = {}
    for name in GAINS:
        if name in learn and not getattr(opts, name):
            raise AttentionError(f"learn has {name} but the options have no {name} gains (no QK-norm)", field="learn")
        if name in learn:
            out[name] = np.array(getattr(opts, name), dtype=np.float64)
    return out


def with_gains(opts: Options, params: Mapping[str, np.ndarray]) -> Options:
    """The options with the QK-norm gains ``params`` holds (learned ones) in place of their own."""
    gains = {k: tuple(float(g) for g in params[k]) for k in GAINS if k in params}
    return opts.replace(**gains) if gains else opts


def _call(mats: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The keyword arguments of self_attention / run_steps for a dict of matrices."""
    return {
        "X": mats["X"],
        "W_q": mats["W_q"],
        "W_k": mats["W_k"],
        "W_v": mats["W_v"],
        "W_o": mats.get("W_o"),
        "P": mats.get("P"),
    }


def _target(
    target: object, tokens: Sequence[str], allowed: np.ndarray | None, j: int | None, include_self: bool
) -> Target:
    """A target from a kind's name, a Target, or a painted grid; fitted to the mask. Its errors name "target"."""
    try:
        if isinstance(target, str):
            return targets.make(target, tokens, j=j, include_self=include_self, allowed=allowed)
        if isinstance(target, Target):
            n, shape = len(tokens), target.pattern.shape  # (n, n) for every head, or (h, n, n) one per head
            if shape[-2:] != (n, n) or len(shape) not in (2, 3):
                raise AttentionError(f"the target is {shape} but there are {n} tokens")
            return targets.fit(target, allowed, tokens)
        return targets.make("custom", tokens, grid=target, allowed=allowed)
    except AttentionError as exc:
        exc.field = exc.field or "target"
        raise


def _loop(
    params: dict[str, np.ndarray],
    loss_and_grads: Callable[[dict[str, np.ndarray]], tuple[float, dict[str, np.ndarray], np.ndarray | None]],
    opt: optimisers.SGD | optimisers.Momentum | optimisers.Adam,
    steps: int,
    snapshots: int,
    on_step: OnStep | None,
    lr: float,
    optimiser: str,
) -> tuple[dict[str, np.ndarray], np.ndarray, tuple[Snapshot, ...], bool]:
    """forward → loss → backward → step, ``steps`` times; snapshots every steps // snapshots steps and at the end."""
    every = max(1, steps // snapshots) if snapshots else 0
    state = opt.init(params)
    losses: list[float] = []
    snaps: list[Snapshot] = []
    cancelled = False
    for step in range(steps + 1):
        try:
            value, grads, weights = loss_and_grads(params)
        except AttentionError as exc:
            if exc.field is not None:
                raise
            raise _diverged(step, f"the forward pass failed: {exc.message}", lr, optimiser) from None
        if not np.isfinite(value) or not all(np.isfinite(g).all() for g in grads.values()):
            raise _diverged(step, f"the loss or its gradient became {value}", lr, optimiser)
        losses.append(value)
        if snapshots and (step % every == 0 or step == steps):
            snaps.append(
                Snapshot(
                    step, value, {k: p.copy() for k, p in params.items()}, None if weights is None else weights.copy()
                )
            )
        if on_step is not None and on_step(step, value) is False:
            cancelled = step < steps
            if snapshots and snaps[-1].step != step:
                snaps.append(
                    Snapshot(
                        step,
                        value,
                        {k: p.copy() for k, p in params.items()},
                        None if weights is None else weights.copy(),
                    )
                )
            break
        if step == steps:
            break
        params, state = opt.step(params, grads, state)
        bad = [k for k, p in params.items() if not np.isfinite(p).all()]
        if bad:
            raise _diverged(step + 1, f"{bad[0]} has infinite or NaN values", lr, optimiser)
    return params, np.array(losses), tuple(snaps), cancelled


def _diverged(step: int, what: str, lr: float, optimiser: str) -> AttentionError:
    return AttentionError(
        f"training stopped at step {step}: {what.rstrip('.')}. The learning rate lr = {lr:g} is too large for "
        f"{optimiser}; try a smaller one (for example {lr / 10:g})",
        field="lr",
    )


def _word_rng(word: str, seed: int) -> np.random.RandomState:
    """A generator for one word: seeded by the seed and a checksum of the word (stable across runs and machines)."""
    return np.random.RandomState((seed * 1_000_003 + zlib.crc32(word.encode("utf-8"))) % 2**32)


def _groups(
    sentences: Sequence[Sequence[str]],
    table: Mapping[str, object],
    matrices: Mapping[str, object],
    opts: Options,
    target: str,
    learn: Sequence[str],
    seed: int,
    j: int | None,
    include_self: bool,
) -> tuple[list[tuple[np.ndarray, Target, tuple[int, ...]]], dict[str, np.ndarray]]:
    """Sentences grouped by length into batches: (X (B, n, d), the stacked targets, the weights' shape), and the
    shared matrices checked (W_o and P drawn when learned and missing)."""
    if not isinstance(target, str) or target == "custom":
        raise AttentionError("with many sentences the target must be a kind's name (not 'custom')", field="target")
    if opts.mask not in ((), ("causal",)):
        raise AttentionError(
            f"with many sentences the mask must be 'none' or 'causal'; got {masks.join(opts.mask)!r}", field="mask"
        )
    if not sentences or any(len(s) == 0 for s in sentences):
        raise AttentionError("give at least one sentence, each with at least one token", field="sentences")
    n_max = max(len(s) for s in sentences)
    by_length: dict[int, list[Sequence[str]]] = {}
    for s in sentences:
        by_length.setdefault(len(s), []).append(s)
    first = embed(sentences[0], table)
    d_model = first.shape[1]
    W_q, W_k, W_v = (as_matrix(k, matrices.get(k)) for k in names.WEIGHTS)
    check_inputs(first, W_q, W_k, W_v, opts.replace(mask="none"), list(sentences[0]))
    d_v = opts.heads * (W_v.shape[names.out_axis(opts.projection)] // opts.kv)  # the heads' concatenated width
    mats = {"W_q": W_q, "W_k": W_k, "W_v": W_v, **_extras(matrices, opts, learn, seed, n_max, d_model, d_v)}
    groups = []
    for n, group in sorted(by_length.items()):
        X = np.stack([embed(s, table) for s in group])  # (B, n, d_model)
        if X.shape[-1] != d_model:
            raise AttentionError(f"the embedding table's vectors must all have width {d_model}", matrix="X")
        allowed = np.tril(np.ones((n, n), bool)) if opts.mask == ("causal",) else None
        ts = [targets.make(target, s, j=j, include_self=include_self, allowed=allowed) for s in group]
        stacked = Target(target, np.stack([t.pattern for t in ts]), np.stack([t.rows for t in ts]))
        shape = (len(group), opts.heads, n) if opts.heads > 1 else (len(group), n)
        groups.append((X, stacked, shape))
    return groups, mats


def _count(target: Target, shape: tuple[int, ...]) -> int:
    """The rows that count in a batch whose weights' rows have ``shape``: (B, n), or (B, h, n) with heads."""
    rows = target.rows[:, None, :] if len(shape) == 3 else target.rows  # (B, [1], n)
    return int(np.broadcast_to(rows, shape).sum())


def _forward_group(X: np.ndarray, mats: Mapping[str, np.ndarray], opts: Options) -> Trace:
    """One batch of same-length sentences through the steps (P cut to their length)."""
    n = X.shape[-2]
    P = mats.get("P")
    return run_steps(
        X, mats["W_q"], mats["W_k"], mats["W_v"], opts, W_o=mats.get("W_o"), P=None if P is None else P[:n]
    )
