"""The KV cache's eviction engine against a forward pass, side by side in one run, on SmolLM2-135M-Instruct and the
shipped long text (issue 51's goals: one policy at one budget ≤ 3× a forward pass; the loss-against-budget curve,
every policy at 8 budgets, ≤ 30 s).

The forward pass is the same model's layer path over the whole text in blocks of 256 rows, keeping no layer's n × n
weights (:func:`attention.model.eviction.attention_rows` for the last row): at 2,048 tokens Model.run would hold
every head's scores, scaled scores and weights, about 13 GB in float32. Prints medians, ratios and the machine's
load average.

Run: python benchmarks/bench_kvcache.py [--n 2048] [--m 128] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attention.model import load, models_folder  # noqa: E402
from attention.model.eviction import POLICIES, attention_rows, evict, evict_curve, long_text  # noqa: E402

BUDGETS = (16, 32, 64, 128, 256, 512, 1024, 1536)


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--m", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    model = load(models_folder.packaged()["SmolLM2-135M-Instruct"])
    ids = model.vocab.encode(long_text())[: args.n]
    n, m = len(ids), args.m
    runs = [(p, b) for p in POLICIES for b in BUDGETS if b < n - m]
    forward, one, curve = [], [], []
    for _ in range(args.repeats):
        forward.append(_timed(lambda: attention_rows(model, ids, [n - 1])))
        one.append(_timed(lambda: evict(model, ids, m, "sinks", 256)))
        curve.append(_timed(lambda: evict_curve(model, ids, m, runs)))
    f, o, c = (statistics.median(x) for x in (forward, one, curve))
    print(f"n = {n} tokens, m = {m} scored, {len(runs)} policy × budget runs in the curve; load {os.getloadavg()}")
    print(f"forward pass (blocks of 256)       {f:8.2f} s")
    print(f"one policy at one budget (sinks 256) {o:8.2f} s   {o / f:5.2f}× the forward  (goal ≤ 3×)")
    print(f"the curve ({len(runs)} runs)             {c:8.2f} s   {c / f:5.2f}× the forward  (goal ≤ 30 s)")


if __name__ == "__main__":
    main()
