"""The induction task, the scores that show an induction head, and the shipped model trained on it.

A sequence is ``half`` distinct random tokens followed by the same tokens again (the model is checked on every
half from SHORTEST to HALF). The first half cannot be predicted
(its loss stays near ln(vocabulary)); the second half can, by an induction head: at position t in the repeat, attend
to the token after the earlier occurrence of the current token (position t − half + 1) and copy it. Two scores per
head, averaged over a batch:

    previous-token score   mean over t ≥ 1 of A[t, t − 1]
    induction score        mean over t in half .. 2·half − 1 of A[t, t − half + 1]
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np

from ..errors import AttentionError
from .config import Config
from .layers import log_softmax
from .model import Model, Params, init_params
from .vocab import WordVocab

DATA = Path(__file__).resolve().parent.parent / "data"
BUILTIN = {"induction": DATA / "induction.npz"}

# The shipped model's training recipe (scripts/train_induction.py trains it; the "Watch it learn" page trains it live)
SEED = 0
VOCAB = 32
HALF = 12  # the longest first half: the model reads 2·HALF tokens
SHORTEST = 4  # the shortest repeated segment trained on (and checked: every first half from SHORTEST to HALF)
D_MODEL = 32
HEADS = 2
BATCH = 16
LR = 0.03  # held for HOLD steps, then falling linearly to LR / 50 at STEPS
HOLD = 1000
STEPS = 2400
INIT_STD = 0.3
GROWTH = ((300, 8), (600, 16))  # (until step, tokens): short sequences first, then 2·HALF tokens
PERIODIC = 0.5  # after GROWTH, the share of rows that repeat from the start; the others repeat one segment anywhere


def words(count: int) -> list[str]:
    """``count`` short distinct words ("ba", "be", ... "zu") for the vocabulary."""
    out = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    if count > len(out):
        raise AttentionError(f"at most {len(out)} words are made here; asked for {count}", field="vocab_size")
    return out[:count]


def sequences(rs: np.random.RandomState, batch: int, vocab: int, half: int) -> np.ndarray:
    """(batch, 2·half) ids: ``half`` distinct random tokens, then the same again (the task the model is checked on)."""
    tokens = np.argsort(rs.random_sample((batch, vocab)), axis=1)[:, :half]  # (B, half): distinct per row
    return np.concatenate([tokens, tokens], axis=1)  # (B, 2·half)


def training_sequences(
    rs: np.random.RandomState, batch: int, vocab: int, n: int, shortest: int, longest: int, periodic: float
) -> np.ndarray:
    """(batch, n) ids of distinct random tokens in which each row repeats a segment of a random length k from
    ``shortest`` to ``longest``: with probability ``periodic`` the first k tokens over and over to the end (a repeat
    from position 0, the way the task starts), else one segment of k tokens once, from a random start, among other
    tokens. The repeat's length and place vary, so only reading the tokens predicts it (a fixed offset would teach a
    head to attend "11 back", which scores as induction without being one)."""
    out = np.argsort(rs.random_sample((batch, vocab)), axis=1)[:, :n]  # (B, n): distinct per row
    lengths = rs.randint(shortest, longest + 1, size=batch)  # (B,)
    from_start = rs.random_sample(batch) < periodic  # (B,)
    starts = rs.randint(0, n - 2 * lengths + 1)  # (B,)
    for row, (k, again, start) in enumerate(zip(lengths, from_start, starts, strict=True)):
        if again:
            out[row] = out[row, np.arange(n) % k]  # t → t mod k: the first k tokens, over and over
        else:
            out[row, start + k : start + 2 * k] = out[row, start : start + k]  # the segment, once more
    return out  # (B, n)


def head_scores(weights: np.ndarray, half: int) -> tuple[np.ndarray, np.ndarray]:
    """(previous-token score, induction score), each (layers, heads), from weights (B, layers, heads, n, n)."""
    n = weights.shape[-1]
    t = np.arange(1, n)
    prev = weights[..., t, t - 1].mean(axis=(0, -1))  # (L, H)
    r = np.arange(half, 2 * half)
    induction = weights[..., r, r - half + 1].mean(axis=(0, -1))  # (L, H)
    return prev, induction


def half_losses(logits: np.ndarray, ids: np.ndarray, half: int) -> tuple[float, float]:
    """Mean next-token cross-entropy on the first half (targets 1 .. half − 1) and on the repeated half (targets
    half + 1 .. 2·half − 1: each one's previous token has occurred before)."""
    logp = log_softmax(logits[:, :-1])  # (B, n-1, V)
    picked = -np.take_along_axis(logp, ids[:, 1:, None], axis=-1)[..., 0]  # (B, n-1): the loss of predicting t+1
    return float(picked[:, : half - 1].mean()), float(picked[:, half:].mean())


def measure(config: Config, params: Params, ids: np.ndarray, half: int) -> dict[str, object]:
    """Loss on each half and each head's scores on a batch of repeated sequences."""
    from .train import forward  # the batched forward pass (train imports model, as this module does)

    traces, _, logits = forward(config, params, ids)
    weights = np.stack([t.weights if t.weights.ndim == 4 else t.weights[:, None] for t in traces], axis=1)
    first, repeated = half_losses(logits, ids, half)
    prev, induction = head_scores(weights, half)  # (L, H) each
    return {
        "loss_first": first,
        "loss_repeated": repeated,
        "previous": prev,
        "induction": induction,
        "weights": weights,
    }


@functools.lru_cache(maxsize=4)
def _read(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise AttentionError(f"{path.name} is missing; build it with scripts/train_induction.py", field="model")
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def builtin(name: str = "induction") -> Model:
    """A model that ships with the project: "induction", a 2-layer attention-only model trained by
    scripts/train_induction.py (see :func:`history` for its training snapshots)."""
    if name not in BUILTIN:
        raise AttentionError(
            f"there is no built-in model {name!r}; the built-in models are {', '.join(BUILTIN)}", field="model"
        )
    z = _read(BUILTIN[name])
    config = Config(**json.loads(str(z["config"])))
    params = {k.removeprefix("param/"): z[k] for k in z if k.startswith("param/")}
    return Model(config, params, WordVocab([str(w) for w in z["words"]]), name=name)


def history(name: str = "induction") -> dict[str, np.ndarray]:
    """A built-in model's training record: "losses" (every step's training loss), and per snapshot "step",
    "loss_first", "loss_repeated", "previous" and "induction" (snapshots, layers, heads), and "weights" (snapshots,
    layers, heads, n, n) on the example sequence "example"."""
    if name not in BUILTIN:
        raise AttentionError(f"there is no built-in model {name!r}", field="model")
    z = _read(BUILTIN[name])
    return {k.removeprefix("snap/"): v for k, v in z.items() if k.startswith("snap/") or k in ("losses", "example")}


def learning_rate(step: int, steps: int = STEPS, hold: int = HOLD) -> float:
    """The recipe's schedule: LR for ``hold`` steps, then falling linearly to LR / 50 at ``steps``."""
    return LR if step < hold else max(LR * (steps - step) / (steps - hold), LR / 50)


def recipe_config() -> Config:
    """The shipped model's shape: 2 attention-only layers of HEADS heads, learned positions, 2·HALF tokens."""
    return Config(
        vocab_size=VOCAB,
        n_ctx=2 * HALF,
        d_model=D_MODEL,
        n_layers=2,
        n_heads=HEADS,
        positions="learned",
        attention_only=True,
        tied=False,
        bias=False,
    )


def recipe_batch(step: int) -> np.ndarray:
    """The training batch of a step, from SEED and the step alone: (BATCH, n) with n growing as GROWTH says. While
    sequences are short every row repeats from the start; then a share PERIODIC of them does."""
    n = next((tokens for until, tokens in GROWTH if step < until), 2 * HALF)
    grown = n == 2 * HALF
    shortest, periodic = (SHORTEST, PERIODIC) if grown else (2, 1.0)  # short sequences: repeats of 2 tokens up
    return training_sequences(np.random.RandomState([SEED, 1, step]), BATCH, VOCAB, n, shortest, n // 2, periodic)


def recipe_model(name: str = "induction") -> Model:
    """The untrained model the recipe starts from: :func:`recipe_config`, initialised from SEED."""
    config = recipe_config()
    return Model(config, init_params(config, SEED, INIT_STD), WordVocab(words(VOCAB)), name=name)


PHASE_SCORE = 0.5  # an induction head: more than half of its weight on the token to copy


def phase_change(record: dict[str, np.ndarray], score: float = PHASE_SCORE) -> int | None:
    """The index of the first snapshot of a training record (:func:`history`) at which some head's induction score
    reaches ``score``: where the induction head has appeared. None if no head ever does."""
    reached = np.flatnonzero(record["induction"].reshape(len(record["step"]), -1).max(axis=1) >= score)
    return int(reached[0]) if reached.size else None
