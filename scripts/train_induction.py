"""Train the shipped induction model: a 2-layer attention-only transformer, from a fixed seed, in a few seconds.

    python scripts/train_induction.py            # writes attention/data/induction.npz and prints what it reached

The task: HALF distinct random tokens followed by the same tokens again; the model learns to predict the repeat. In
training each row repeats a segment of SHORTEST_TRAINED to HALF tokens over and over to the end, from position 0 in a
share FROM_START of the rows (as the task does) and from a random place in the others, so its length and offset vary
and position alone cannot predict it (with a fixed offset the model learns a head that attends "11 back", which
scores as induction without reading the tokens). Training draws a fresh batch each step (from SEED and the step
number); the snapshots are measured on a fixed evaluation batch of the plain task and taken densely where the loss
falls (whenever the smoothed loss, once below ln(VOCAB), has fallen by DROP since the last one, and at least every
MAX_GAP steps). The recipe (sizes, seed, schedule, batches) lives in
attention/model/induction.py, where the "Watch it learn" page reads it too.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attention.model import train  # noqa: E402
from attention.model.induction import (  # noqa: E402
    BATCH,
    BUILTIN,
    FROM_START,
    HALF,
    HOLD,
    INIT_STD,
    LR,
    SEED,
    SHORTEST,
    SHORTEST_TRAINED,
    STEPS,
    VOCAB,
    WARMUP,
    learning_rate,
    measure,
    recipe_model,
    sequences,
    words,
)
from attention.model.induction import recipe_batch as batch  # noqa: E402
from attention.model.induction import recipe_config as config  # noqa: E402

EVAL_BATCH = 64
DROP = 0.08  # nats of smoothed training loss between snapshots
MAX_GAP = 200  # steps


def evaluation_batch() -> np.ndarray:
    return sequences(np.random.RandomState([SEED, 2]), EVAL_BATCH, VOCAB, HALF)


def build(steps: int = STEPS) -> dict[str, np.ndarray]:
    """Train for ``steps`` steps; every array the .npz holds."""
    cfg = config()
    model = recipe_model()
    ev = evaluation_batch()
    snaps: list[dict] = []
    smooth = {"value": None, "at_last": None, "last": -MAX_GAP}

    def record(step: int, loss: float, params: dict) -> None:
        s = loss if smooth["value"] is None else 0.9 * smooth["value"] + 0.1 * loss
        smooth["value"] = s
        falling = s < np.log(VOCAB) and smooth["at_last"] - s >= DROP  # the repeat being learned, not the start
        due = step == 0 or step == steps or step - smooth["last"] >= MAX_GAP or falling
        if due:
            m = measure(cfg, params, ev, HALF)
            snaps.append({"step": step, "train_loss": loss, **m})
            smooth["at_last"], smooth["last"] = s, step

    result = train(model, batch, steps, lr=learning_rate, record=record)
    out: dict[str, np.ndarray] = {
        "config": np.array(json.dumps(asdict(cfg))),
        "words": np.array(words(VOCAB)),
        "losses": result.losses,
        "example": ev[0],
        "meta": np.array(
            json.dumps(
                {
                    "seed": SEED,
                    "half": HALF,
                    "shortest": SHORTEST,
                    "shortest_trained": SHORTEST_TRAINED,
                    "from_start": FROM_START,
                    "batch": BATCH,
                    "lr": LR,
                    "warmup": WARMUP,
                    "hold": HOLD,
                    "steps": steps,
                    "init_std": INIT_STD,
                    "eval_batch": EVAL_BATCH,
                }
            )
        ),
    }
    out.update({f"param/{k}": v for k, v in result.model.params.items()})
    for key in ("step", "train_loss", "loss_first", "loss_repeated", "previous", "induction"):
        out[f"snap/{key}"] = np.array([s[key] for s in snaps])
    out["snap/weights"] = np.array([s["weights"][0] for s in snaps], dtype=np.float32)  # the example's patterns
    return out


def main() -> None:
    t0 = time.perf_counter()
    arrays = build()
    seconds = time.perf_counter() - t0
    path = BUILTIN["induction"]
    np.savez_compressed(path, **arrays)
    cfg = config()
    params = {k.removeprefix("param/"): v for k, v in arrays.items() if k.startswith("param/")}
    print(
        f"trained {STEPS} steps in {seconds:.1f} s; {len(arrays['snap/step'])} snapshots; "
        f"{path.stat().st_size / 1024:.0f} KiB"
    )
    for half in range(SHORTEST, HALF + 1):  # fresh sequences of every length checked
        m = measure(cfg, params, sequences(np.random.RandomState([SEED, 3, half]), 256, VOCAB, half), half)
        print(
            f"first half of {half:2}: loss first half {m['loss_first']:.3f} (ln {VOCAB} = {np.log(VOCAB):.3f}), "
            f"repeated half {m['loss_repeated']:.4f}; previous-token {np.round(m['previous'], 3).tolist()}, "
            f"induction {np.round(m['induction'], 3).tolist()}"
        )
    print("snapshot steps", arrays["snap/step"].tolist())


if __name__ == "__main__":
    main()
