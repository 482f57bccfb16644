"""Patching every head and every stream row (the Patching page's sweep, :func:`attention.model.sweep`): the shipped
model and a SmolLM2-135M-shaped random model.

The sweep runs each patch from the patched layer on, on the rows that can change (the rows from the first changed
position, or from the patched one, to the read position; the rows before come from the corrupted run as a KV cache
holds them). Beside it, on the shipped model, the naive sweep: each patch the whole corrupted run made again with the
intervention (``patch`` for a head, ``Model.run`` with ``patch_stream`` for a stream row), measured alternately in
one run, with the ratio. Goal: the shipped model's sweep ≤ 2 s.

The SmolLM2-shaped model (30 layers, d 576, 9 query heads sharing 3 key/value heads, SwiGLU 1536, RoPE, a
vocabulary of 49,152, tied) has random weights made here, no checkpoint, and computes in float32, the precision
``load`` chooses for a model of its size; its text is ``--tokens`` random tokens (16 by default) with one changed at
a quarter of the way in. Its naive sweep is not run (one full pass per patch: hundreds of them); the table gives one
full pass instead, for scale.

Run: ``python benchmarks/bench_patching.py [--repeats 5] [--tokens 16] [--skip-smollm2]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attention.model import (  # noqa: E402
    Config,
    Model,
    builtin,
    induction,
    init_params,
    patch,
    patch_stream,
    restored,
    sweep,
)
from attention.model.vocab import WordVocab  # noqa: E402

GOAL = 2.0  # s: the shipped model's sweep


def row(case: str, seconds: float, note: str = "") -> None:
    unit = f"{seconds * 1e3:9.2f} ms" if seconds < 1 else f"{seconds:9.2f} s "
    print(f"| {case:<64} | {unit} | {note}", flush=True)


def naive(m: Model, clean: list[int], corrupt: list[int]) -> None:
    """Every patch as a whole corrupted run with the intervention (cache cleared first, as the fast sweep's is)."""
    m.clear_cache()
    a, b = m.run(clean), m.run(corrupt)
    answer, wrong = int(np.argmax(a.logits[-1])), int(np.argmax(b.logits[-1]))
    for layer in range(m.config.n_layers):
        for h in range(m.config.n_heads):
            restored(patch(m, clean, corrupt, [(layer, h)]), a, b, -1, answer, wrong)
        for p in range(len(clean)):
            restored(m.run(corrupt, [patch_stream(layer, p, a.residuals[layer][p])]), a, b, -1, answer, wrong)


def fast(m: Model, clean: list[int], corrupt: list[int]) -> None:
    m.clear_cache()
    sweep(m, clean, corrupt)


def alternately(fns: dict[str, object], repeats: int) -> dict[str, float]:
    """Each function's median, the functions taking turns (after one warm-up each)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {k: float(np.median(v)) for k, v in times.items()}


def shipped(repeats: int) -> None:
    m = builtin("induction")
    clean = [int(i) for i in induction.history("induction")["example"]]
    corrupt = list(clean)
    corrupt[11] = next(i for i in range(m.config.vocab_size) if i not in clean)  # the page's first ready-made pair
    c = m.config
    count = c.n_layers * (c.n_heads + len(clean))
    got = alternately({"fast": lambda: fast(m, clean, corrupt), "naive": lambda: naive(m, clean, corrupt)}, repeats)
    what = f"{c.n_layers} layers × {c.n_heads} heads, {len(clean)} tokens: {count} patches"
    row("shipped model: sweep (from the patched layer, changed rows)", got["fast"], what)
    row(
        "shipped model: naive sweep (a whole run per patch)",
        got["naive"],
        f"{got['naive'] / got['fast']:.1f}× the sweep",
    )
    ok = got["fast"] <= GOAL
    print(f"goal: the shipped model's sweep ≤ {GOAL:g} s: {'met' if ok else 'MISSED'} ({got['fast']:.3f} s)")


def smollm2_shaped() -> Model:
    cfg = Config(
        vocab_size=49152,
        n_ctx=2048,
        d_model=576,
        n_layers=30,
        n_heads=9,
        n_kv_heads=3,
        d_mlp=1536,
        positions="rotary",
        rotary_layout="halves",
        rope_theta=100000.0,
        norm="rmsnorm",
        mlp="gated",
        activation="silu",
        bias=False,
        tied=True,
    )
    params = {k: v.astype(np.float32) for k, v in init_params(cfg, 0, 0.02).items()}
    return Model(cfg, params, WordVocab([f"w{i}" for i in range(1000)]), name="SmolLM2-shaped", dtype=np.float32)


def smollm2(repeats: int, n: int) -> None:
    t = time.perf_counter()
    m = smollm2_shaped()
    built = time.perf_counter() - t
    rs = np.random.RandomState(0)
    clean = rs.randint(0, 1000, n).tolist()
    corrupt = list(clean)
    corrupt[n // 4] = (clean[n // 4] + 1) % 1000
    c = m.config
    count = c.n_layers * (c.n_heads + n)

    def one_pass() -> None:
        m.clear_cache()
        m.run(clean)

    got = alternately({"pass": one_pass, "fast": lambda: fast(m, clean, corrupt)}, repeats)
    row(f"SmolLM2-shaped (float32): one full pass, {n} tokens", got["pass"], f"model built in {built:.1f} s")
    what = f"30 layers × 9 heads, {n} tokens (changed at {n // 4 + 1}): {count} patches"
    row("SmolLM2-shaped: sweep (from the patched layer, changed rows)", got["fast"], what)
    print(f"   = {got['fast'] / got['pass']:.0f} full passes' time for {count} patches", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--skip-smollm2", action="store_true")
    args = ap.parse_args()
    print(
        f"numpy {np.__version__}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}; medians of "
        f"{args.repeats} after a warm-up"
    )
    print(f"| {'case':<64} | {'median':>12} | note")
    shipped(args.repeats)
    if not args.skip_smollm2:
        smollm2(args.repeats, args.tokens)


if __name__ == "__main__":
    main()
