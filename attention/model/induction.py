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
SEED = 11
VOCAB = 32
HALF = 12  # the longest first half: the model reads 2·HALF tokens
SHORTEST = 4  # the shortest first half the model is checked on (every one from SHORTEST to HALF)
SHORTEST_TRAINED = 2  # training repeats segments of SHORTEST_TRAINED to HALF tokens
D_MODEL = 32
HEADS = 2
BATCH = 16
LR = 0.015  # rising linearly over the first WARMUP steps, held until HOLD, then falling linearly to LR / 50 at STEPS
WARMUP = 100
HOLD = 1800
STEPS = 3600
INIT_STD = 0.3
FROM_START = 0.9  # the share of training rows whose repeat starts at position 0 (the others: at a random place)


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
    rs: np.random.RandomState, batch: int, vocab: int, n: int, shortest: int, longest: int, from_start: float
) -> np.ndarray:
    """(batch, n) ids: distinct random tokens up to a place p, then the k tokens from p over and over to the end
    (t → p + (t − p) mod k), k random from ``shortest`` to ``longest``. With probability ``from_start`` p = 0, the
    way the task starts (this teaches the induction head that position 0 is not "the token after" its own token);
    else p is random, so that keys at late positions must say their previous token too. The repeat's length and
    place vary, so only reading the tokens predicts it (a fixed offset would teach a head to attend "11 back", which
    scores as induction without being one)."""
    out = np.argsort(rs.random_sample((batch, vocab)), axis=1)[:, :n]  # (B, n): distinct per row
    lengths = rs.randint(shortest, longest + 1, size=batch)  # (B,)
    at_zero = rs.random_sample(batch) < from_start  # (B,)
    places = np.where(at_zero, 0, rs.randint(0, n - 2 * lengths + 1))  # (B,): where each row's repeating starts
    for row, (k, p) in enumerate(zip(lengths, places, strict=True)):
        out[row, p:] = out[row, p + (np.arange(n - p) % k)]  # the k tokens from p, over and over
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
    """The recipe's schedule: rising linearly to LR over the first WARMUP steps (gentle first steps, so a
    rounding-sized difference between machines is not blown up), LR until ``hold``, then falling linearly to LR / 50
    at ``steps``."""
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
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
    """The training batch of a step, from SEED and the step alone: (BATCH, 2·HALF)."""
    rs = np.random.RandomState([SEED, 1, step])
    return training_sequences(rs, BATCH, VOCAB, 2 * HALF, SHORTEST_TRAINED, HALF, FROM_START)


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


def loss_fall(record: dict[str, np.ndarray], share: float) -> int | None:
    """The index of the first snapshot after the random start at which the repeated half's loss has fallen ``share``
    (0 to 1) of the way from its plateau (snapshot 1, the first after step 0) to its last value; None if it never
    does (or did not fall at all). Read from the recorded curve: where the drop the induction head brings begins,
    is half done, ends."""
    loss = record["loss_repeated"]  # (snapshots,)
    if len(loss) < 2 or not loss[-1] < loss[1]:
        return None
    below = np.flatnonzero(loss[1:] <= loss[1] - share * (loss[1] - loss[-1]))
    return int(below[0]) + 1 if below.size else None
