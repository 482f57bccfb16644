"""The labs' computations timed in one run: medians, each against its goal and against one preset's full trace.

Goal: the full "Why √d_k?" grid (18 values of d_k from 1 to 512, n = 16, 8 seeds) well under a second, and every
other lab call fast enough to run on each rerun of a page (under 100 ms). The reference is
``load_preset("the_cat_sat").compute()``, timed in the same loop, so the ratios survive a slower machine.

Run: ``python benchmarks/bench_labs.py`` (a few seconds).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import attention  # noqa: E402
from attention.labs import challenges, sqrt_dk, stability  # noqa: E402

REPEATS = 30


def main() -> None:
    trace = attention.load_preset("the_cat_sat_on_the_mat").compute()
    challenge = challenges.load_challenge("causal_on_sees_cat")
    challenge_trace = challenges.run(challenge)
    text = challenges.to_json(challenge)
    token = challenges.encode_link(challenge)
    cases: dict[str, tuple[Callable[[], object], float]] = {
        "reference: the_cat_sat compute()": (lambda: attention.load_preset("the_cat_sat").compute(), 0.1),
        "sqrt_dk_curves() full grid": (sqrt_dk.sqrt_dk_curves, 1.0),
        "saturation_curve()": (sqrt_dk.saturation_curve, 0.1),
        "trace_point(trace)": (lambda: sqrt_dk.trace_point(trace), 0.1),
        "variant_sweep()": (stability.variant_sweep, 0.1),
        "mask_cases()": (stability.mask_cases, 0.1),
        "dtype_limits()": (stability.dtype_limits, 0.1),
        "trace_headroom(trace)": (lambda: stability.trace_headroom(trace), 0.1),
        "parse_challenge(text)": (lambda: challenges.parse_challenge(text, "c.json"), 0.1),
        "decode_link(token)": (lambda: challenges.decode_link(token), 0.1),
        "evaluate(challenge, trace)": (lambda: challenges.evaluate(challenge, challenge_trace), 0.1),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(REPEATS):  # interleaved: every case sees the same machine state
        for name, (fn, _goal) in cases.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    ref = statistics.median(times["reference: the_cat_sat compute()"])
    print(f"{'call':36} {'median ms':>10} {'goal ms':>8} {'of goal':>8} {'× reference':>12}")
    for name, (_fn, goal) in cases.items():
        med = statistics.median(times[name])
        print(f"{name:36} {med * 1e3:10.2f} {goal * 1e3:8.0f} {med / goal:8.1%} {med / ref:12.1f}")


if __name__ == "__main__":
    main()
