"""Backward pass vs the forward trace, side by side in one run.

Times ``attention.self_attention`` (the forward trace, every intermediate kept) and ``attention.backward`` on that
trace with an upstream gradient for the output (and one for the weights), interleaved in the same loop, at d = 64
for n = 256, 1024 and 2048 tokens, with one and with 4 heads. Prints the medians and the ratio backward / forward.
Goal: ratio <= 2.5 at n = 1024, d = 64.

Run: ``python benchmarks/bench_backward.py`` (about a minute).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import attention  # noqa: E402
from attention.backward import backward  # noqa: E402

D = 64
CASES = ((256, 1), (1024, 1), (1024, 4), (2048, 1))
BUDGET_S = 8.0  # per case, both functions together
MIN_REPEATS, MAX_REPEATS = 9, 500


def measure(n: int, heads: int, with_weights: bool, rng: np.random.Generator) -> tuple[float, float, int]:
    X = rng.standard_normal((n, D))
    W_q, W_k, W_v = (rng.standard_normal((D, D)) / np.sqrt(D) for _ in range(3))
    d_out = rng.standard_normal((n, D))
    d_w = rng.standard_normal((heads, n, n) if heads > 1 else (n, n)) if with_weights else None

    def forward() -> attention.Trace:
        return attention.self_attention(X, W_q, W_k, W_v, heads=heads)

    trace = forward()
    for _ in range(2):  # warm up
        forward()
        backward(trace, d_out, d_w)
    t0 = time.perf_counter()
    for _ in range(3):
        forward()
        backward(trace, d_out, d_w)
    per_pair = (time.perf_counter() - t0) / 3
    repeats = int(min(MAX_REPEATS, max(MIN_REPEATS, BUDGET_S / max(per_pair, 1e-9))))
    t_fwd, t_bwd = [], []
    for i in range(repeats):  # alternate which goes first, so neither always runs on a warmer cache
        for which in (0, 1) if i % 2 == 0 else (1, 0):
            t = time.perf_counter()
            if which == 0:
                forward()
            else:
                backward(trace, d_out, d_w)
            (t_fwd if which == 0 else t_bwd).append(time.perf_counter() - t)
    return float(np.median(t_fwd)), float(np.median(t_bwd)), repeats


def main() -> None:
    print(f"numpy {np.__version__}; d = {D}; median of interleaved repeats; ratio = backward / forward")
    print("goal: ratio <= 2.5 at n = 1024, d = 64 (one head, upstream gradient for the output)")
    rng = np.random.default_rng(0)
    header = (
        f"{'n':>5} | {'heads':>5} | {'upstream':>16} | {'repeats':>7} | {'forward ms':>10} | {'backward ms':>11} | "
        f"{'ratio':>5} | goal"
    )
    print(header)
    print("-" * len(header))
    for n, heads in CASES:
        for with_weights in (False, True):
            tf, tb, reps = measure(n, heads, with_weights, rng)
            ratio = tb / tf
            goal = ("ok" if ratio <= 2.5 else "MISSED") if (n, heads, with_weights) == (1024, 1, False) else "-"
            upstream = "output + weights" if with_weights else "output"
            print(
                f"{n:>5} | {heads:>5} | {upstream:>16} | {reps:>7} | {tf * 1e3:>10.2f} | {tb * 1e3:>11.2f} | "
                f"{ratio:>5.2f} | {goal}"
            )


if __name__ == "__main__":
    main()
