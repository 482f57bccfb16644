"""What each reader of a long run costs on the real SmolLM2-135M-Instruct GGUF (issue "Long texts on a real model").

Each reader runs in a fresh process after one run of the same text (2,048 tokens of this project's docs by default):
the peak resident memory while it reads, above the memory just before it (sampled every 2 ms, as
``bench_long.py`` does), and its wall and processor time. The readers: one head's weights, the logit lens,
direct logit attribution, routes, the exact patching sweep of one head, and the patching estimate, the last three
against the same text with one token changed five from the end.

Run: ``python benchmarks/bench_long_readers.py [--tokens 2048] [reader ...]`` (minutes: a 2,048-token run per reader).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

READERS = ("head", "lens", "attribute", "routes", "sweep_one_head", "estimate")


def one(name: str, n: int) -> dict:
    """Reader ``name`` after a run of n tokens, in this process."""
    import bench_long
    import numpy as np

    from attention.model import atp, flow, load, models_folder, readout

    m = load(models_folder.packaged()[bench_long.NAME])
    ids = m.encode(bench_long.text()[:100_000])[:n]
    other = list(ids)
    other[n - 5] = (other[n - 5] + 1) % m.config.vocab_size  # one token changed: the corrupted text
    run = m.run(ids)
    if name in ("sweep_one_head", "estimate"):
        m.run(other)
    gc.collect()
    answer, wrong = (int(i) for i in np.argsort(run.logits[n - 1])[::-1][:2])  # the two likeliest next tokens
    read = {
        "head": lambda: run.head(bench_long.LAYER, bench_long.HEAD).weights,
        "lens": lambda: readout.lens(run, n - 1),
        "attribute": lambda: readout.attribute(run, n - 1),
        "routes": lambda: flow.routes(run, n - 1),
        "sweep_one_head": lambda: readout.sweep(m, ids, other, answer=answer, wrong=wrong,
                                                only=[("head", bench_long.LAYER, bench_long.HEAD)]),
        "estimate": lambda: atp.estimate(m, ids, other, answer=answer, wrong=wrong),
    }[name]
    t, c = time.perf_counter(), time.process_time()
    with bench_long.Peak() as peak:
        read()
    return dict(reader=name, tokens=n, wall=time.perf_counter() - t, cpu=time.process_time() - c,
                above=peak.peak - peak.before)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("readers", nargs="*", help=f"any of {', '.join(READERS)} (default: all)")
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--one")
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one, a.tokens)))
        return
    print(f"| reader at {a.tokens} tokens | peak above | wall | processor time | load average |")
    for name in a.readers or READERS:
        cmd = [sys.executable, __file__, "--one", name, "--tokens", str(a.tokens)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT).stdout
        r = json.loads(out.splitlines()[-1])
        load = os.getloadavg()[0]
        print(f"| {name} | {r['above'] / 1e6:.1f} MB | {r['wall']:.2f} s | {r['cpu']:.2f} s | {load:.1f} |", flush=True)


if __name__ == "__main__":
    main()
