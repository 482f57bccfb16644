"""Training speed: 500 Adam steps on each document preset (goal < 1 s) and on n = 64 tokens, d = 64 (goal < 10 s).

Each case is run several times in one process (after a warm-up) and the median wall time is printed, with the
seconds per step and the final loss, so the goals are read off one table. Targets: previous token for the presets
(W_q and W_k learn; on 'I am Batman' X learns too, since the token 'am' is the zero vector), previous token with
sinusoidal positions at n = 64.

Run: ``python benchmarks/bench_learn.py`` (about half a minute).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import attention  # noqa: E402
from attention import learn  # noqa: E402

DOCUMENTS = ("she_likes_coffee", "i_am_batman", "the_cat_sat", "the_cat_sat_on_the_mat", "random_seed_42")
STEPS = 500
REPEATS = 5


def timed(fn) -> tuple[float, learn.TrainResult]:
    fn()  # warm up
    times, result = [], None
    for _ in range(REPEATS):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), result  # type: ignore[return-value]


def main() -> None:
    print(f"numpy {np.__version__}; {STEPS} Adam steps (lr 0.05), median of {REPEATS} runs after a warm-up")
    header = f"{'case':<34} | {'n':>3} | {'d':>3} | {'seconds':>7} | {'ms/step':>7} | {'final loss':>10} | goal"
    print(header)
    print("-" * len(header))
    for pid in DOCUMENTS:
        p = attention.load_preset(pid)
        m = p.matrices()
        learned = ("W_q", "W_k", "X") if pid == "i_am_batman" else ("W_q", "W_k")
        sec, r = timed(
            lambda p=p, m=m, learned=learned: learn.train(
                p.tokens, m, p.options, "previous", learn=learned, steps=STEPS
            )
        )
        d = m["X"].shape[-1]
        goal = "ok (< 1 s)" if sec < 1 else "MISSED (< 1 s)"
        print(
            f"{pid:<34} | {len(p.tokens):>3} | {d:>3} | {sec:>7.3f} | {sec / STEPS * 1e3:>7.3f} | {r.loss:>10.2e} | "
            f"{goal}"
        )
    rs = np.random.RandomState(0)
    n = d = 64
    m = {"X": rs.randn(n, d) / np.sqrt(d), **{k: rs.randn(d, d) / np.sqrt(d) for k in ("W_q", "W_k", "W_v")}}
    tokens = [f"t{i}" for i in range(n)]
    opts = attention.Options(positions="sinusoidal")
    sec, r = timed(lambda: learn.train(tokens, m, opts, "previous", steps=STEPS))
    goal = "ok (< 10 s)" if sec < 10 else "MISSED (< 10 s)"
    print(
        f"{'random, sinusoidal positions':<34} | {n:>3} | {d:>3} | {sec:>7.3f} | {sec / STEPS * 1e3:>7.3f} | "
        f"{r.loss:>10.2e} | {goal}"
    )


if __name__ == "__main__":
    main()
