"""Full-trace engine vs a bare four-line numpy attention, side by side in one run.

For n = 64, 256, 1024, 2048 tokens at d = 64 this times ``attention.self_attention(X, W_q, W_k, W_v)``
(validation, every intermediate array kept) against the bare computation below, interleaving the two
in the same loop so both see the same machine state, and prints the medians and their ratio.
Goal: ratio <= 1.2 at n >= 1024.

Run: ``python benchmarks/bench_engine.py`` (about a minute).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import attention  # noqa: E402

D = 64
SIZES = (64, 256, 1024, 2048)
BUDGET_S = 12.0  # per size, both functions together
MIN_REPEATS, MAX_REPEATS = 15, 2000


def bare(X: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray) -> np.ndarray:
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return (E / E.sum(axis=-1, keepdims=True)) @ V


def engine(X: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray) -> np.ndarray:
    return attention.self_attention(X, W_q, W_k, W_v).output


def blas_line() -> str:
    """BLAS name/version from numpy's build config, and its thread count when threadpoolctl is present."""
    try:
        from threadpoolctl import threadpool_info  # optional; not a project dependency

        info = [f"{i.get('internal_api')} {i.get('version')} threads={i.get('num_threads')}" for i in threadpool_info()]
        if info:
            return "; ".join(info)
    except ImportError:
        pass
    try:
        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]  # type: ignore[attr-defined]
        name = f"{blas.get('name')} {blas.get('version')}"
    except (AttributeError, KeyError, TypeError):
        name = "unknown BLAS"
    env = (
        ", ".join(f"{k}={os.environ[k]}" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS") if k in os.environ)
        or "no thread env vars"
    )
    return f"{name}; {env}; cpu_count={os.cpu_count()} (install threadpoolctl for the live thread count)"


def measure(n: int, rng: np.random.Generator) -> tuple[float, float, int]:
    X = rng.standard_normal((n, D))
    W_q, W_k, W_v = (rng.standard_normal((D, D)) / np.sqrt(D) for _ in range(3))
    out_engine, out_bare = engine(X, W_q, W_k, W_v), bare(X, W_q, W_k, W_v)
    assert np.allclose(out_engine, out_bare, rtol=1e-12, atol=1e-12), "engine and bare numpy disagree"
    # Warm up, then size the repeat count to the budget.
    for _ in range(3):
        engine(X, W_q, W_k, W_v)
        bare(X, W_q, W_k, W_v)
    t0 = time.perf_counter()
    for _ in range(5):
        engine(X, W_q, W_k, W_v)
        bare(X, W_q, W_k, W_v)
    per_pair = (time.perf_counter() - t0) / 5
    repeats = int(min(MAX_REPEATS, max(MIN_REPEATS, BUDGET_S / max(per_pair, 1e-9))))
    t_engine, t_bare = [], []
    for i in range(repeats):
        # Alternate which one goes first, so neither always runs on a warmer cache.
        order = ((engine, t_engine), (bare, t_bare)) if i % 2 == 0 else ((bare, t_bare), (engine, t_engine))
        for fn, times in order:
            t = time.perf_counter()
            fn(X, W_q, W_k, W_v)
            times.append(time.perf_counter() - t)
    return float(np.median(t_engine)), float(np.median(t_bare)), repeats


def main() -> None:
    print(f"numpy {np.__version__}; BLAS: {blas_line()}")
    print(f"d = {D}; median of interleaved repeats; ratio = engine / bare (goal <= 1.20 at n >= 1024)")
    rng = np.random.default_rng(0)
    header = f"{'n':>6} | {'repeats':>7} | {'engine (full trace) ms':>22} | {'bare numpy ms':>13} | {'ratio':>6} | goal"
    print(header)
    print("-" * len(header))
    for n in SIZES:
        te, tb, reps = measure(n, rng)
        ratio = te / tb
        goal = ("ok" if ratio <= 1.2 else "MISSED") if n >= 1024 else "-"
        print(f"{n:>6} | {reps:>7} | {te * 1e3:>22.3f} | {tb * 1e3:>13.3f} | {ratio:>6.2f} | {goal}")


if __name__ == "__main__":
    main()
