"""Does a learned attention pattern carry over to sentences training never saw? With and without positions.

Sentences of 8 words are drawn from a 30-word vocabulary with a seed; every word has one random vector in a shared
embedding table (d = 32; any word → vector mapping, GloVe included, can be passed to ``learn.train_many``). W_q
and W_k are learned (and P with learned positions) by 300 Adam steps on 80 training sentences, then measured on
100 held-out sentences. Accuracy: the share of rows whose largest weight falls on a key the target wants.

- "previous token" is a rule about order. Without positions the model sees only which words are present, so it
  can at best memorise pairs of words: it cannot even fit its training sentences, and on new sentences it is near
  chance. With sinusoidal or learned positions it learns "attend one place back" and carries it over.
- "same word" (attend every occurrence of your own word) is a rule about content: it carries over without positions.
  (Its sentences draw from 6 words with repeats, so repeats occur.)

Run: ``python benchmarks/generalisation.py`` (about ten seconds). Prints one table.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import attention  # noqa: E402
from attention import learn, targets  # noqa: E402

VOCAB = (  # noqa: SIM905 (one readable string of 30 words)
    "the a cat dog sat ran on under mat rug big small red old new fast slow happy sad bird fish tree house car "
    "road sun moon star blue green"
).split()
D, N, TRAIN, HELD_OUT, STEPS, LR = 32, 8, 80, 100, 300, 0.05


def sentences(rs: np.random.RandomState, count: int, vocab: list[str], repeats: bool) -> list[tuple[str, ...]]:
    """``count`` sentences of N words drawn from ``vocab`` (with or without repeated words)."""
    return [tuple(str(w) for w in rs.choice(vocab, N, replace=repeats)) for _ in range(count)]


def floor(sents: list[tuple[str, ...]], target: str) -> float:
    """The least cross-entropy possible: the mean entropy of the target's rows that count (0 for one key a row)."""
    ent = []
    for s in sents:
        t = targets.make(target, s)
        for row in t.pattern[t.rows]:
            p = row[row > 0]
            ent.append(float(-(p * np.log(p)).sum()))
    return float(np.mean(ent))


def experiment(seed: int = 0) -> list[dict]:
    """One row per (target, positions): training and held-out accuracy, held-out loss, seconds."""
    rs = np.random.RandomState(seed)
    data = {
        "previous": (sentences(rs, TRAIN, VOCAB, False), sentences(rs, HELD_OUT, VOCAB, False)),
        "same_word": (sentences(rs, TRAIN, VOCAB[:6], True), sentences(rs, HELD_OUT, VOCAB[:6], True)),
    }
    table = learn.embedding_table(VOCAB, D, seed=seed + 1)
    W = {k: np.random.RandomState(seed + 2 + i).randn(D, D) / np.sqrt(D) for i, k in enumerate(("W_q", "W_k", "W_v"))}
    rows = []
    for target, (train_s, test_s) in data.items():
        assert not set(train_s) & set(test_s), "a held-out sentence is also a training sentence"
        for pos in ("none", "sinusoidal", "learned"):
            opts = attention.Options(positions=pos)
            learned = ("W_q", "W_k", "P") if pos == "learned" else ("W_q", "W_k")
            t = time.perf_counter()
            r = learn.train_many(train_s, table, W, opts, target, learn=learned, steps=STEPS, lr=LR, seed=seed)
            seconds = time.perf_counter() - t
            ev = learn.evaluate(test_s, table, r.matrices, opts, target)
            rows.append(
                {
                    "floor": floor(test_s, target),
                    "target": target,
                    "positions": pos,
                    "train": r.accuracy,
                    "held_out": ev.accuracy,
                    "loss": ev.loss,
                    "seconds": seconds,
                }
            )
    return rows


def main() -> None:
    print(
        f"d = {D}, {N} tokens per sentence, {TRAIN} training and {HELD_OUT} held-out sentences, "
        f"{STEPS} Adam steps (lr {LR}); W_q, W_k learned (and P when positions are learned)"
    )
    header = (
        f"{'target':<10} | {'positions':<10} | {'train acc':>9} | {'held-out acc':>12} | {'held-out loss':>13} | "
        f"{'loss floor':>10} | s"
    )
    print(header)
    print("-" * len(header))
    for r in experiment():
        print(
            f"{r['target']:<10} | {r['positions']:<10} | {r['train']:>9.2f} | {r['held_out']:>12.2f} | "
            f"{r['loss']:>13.3f} | {r['floor']:>10.3f} | {r['seconds']:.1f}"
        )
    print("chance for 'previous' (a uniform guess over the 8 keys): 0.125")


if __name__ == "__main__":
    main()
