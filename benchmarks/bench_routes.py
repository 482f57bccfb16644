"""The routes of a prediction and what a part pushes toward, measured beside what they are compared with, in one run.

Engine (issue 40 §5: routes for SmolLM2-135M at 32 tokens ≤ 3× one forward pass of the same text): a model of
SmolLM2-135M's shape (30 layers × 9 query heads, 3 key/value heads, d 576, d_mlp 1536, vocabulary 49,152; random
weights in float32, as bench_patching makes it), one full forward pass (its run cache cleared) and
``routes(run, -1, threshold)`` on that run, taking turns. The threshold the page starts at (0.04) walks down from
the last position only as far as the shares reach; a threshold of 0 keeps every part with any share, so every row
of every level is reached: the most work routes can do. Also what a part pushes toward: every head of a layer and an
MLP with its neurons, projected through the held final norm and the 49,152-token unembedding.

Page (``--page``; needs /usr/bin/chromium and playwright): the floor app's load and edit (bench_floor's), then the
Routes page on the shipped model: load → the graph drawn and the run over; and reading another part of the graph as
tokens (choose it in the box → its promoted tokens written). Goals: the page ≤ 1.5× the floor's load, projecting
≤ 1.5× the floor's edit.

Prints medians, ratios and the machine's load average.
Run: python benchmarks/bench_routes.py [--repeats 7] [--tokens 32] [--page] [--skip-engine]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_patching import alternately, row, smollm2_shaped  # noqa: E402

from attention.model import pushes, routes  # noqa: E402

GRAPH = "[data-testid='stVegaLiteChart'] g.mark-rule.role-mark line"  # a drawn edge of the routes graph


def engine(repeats: int, n: int) -> None:
    m = smollm2_shaped()
    ids = np.random.RandomState(0).randint(0, 1000, n).tolist()
    run = m.run(ids)

    def one_pass() -> None:
        m.clear_cache()
        m.run(ids)

    got = alternately(
        {
            "pass": one_pass,
            "routes": lambda: routes(run, -1, 0.04),
            "every row": lambda: routes(run, -1, 0.0),
            "heads": lambda: pushes.heads(run, -1, 15),
            "mlp": lambda: (pushes.mlp(run, -1, 15), pushes.neurons(run, -1, 15)),
        },
        repeats,
    )
    kept, every = routes(run, -1, 0.04), routes(run, -1, 0.0)
    row(f"SmolLM2-shaped (float32): one full pass, {n} tokens", got["pass"], "the run cache cleared")
    for name, found, what in (("routes", kept, "threshold 0.04"), ("every row", every, "threshold 0")):
        row(
            f"routes(run, -1, {found.threshold:g}): {what}",
            got[name],
            f"{got[name] / got['pass']:.2f}× the pass; {len(found.edges):,} edges, {len(found.nodes):,} of "
            f"{len(found.levels) * n:,} nodes reached",
        )
    row("what a layer's 9 heads push toward (tokens, shares)", got["heads"], f"{got['heads'] / got['pass']:.2f}×")
    row("what an MLP and its neurons push toward", got["mlp"], f"{got['mlp'] / got['pass']:.2f}× the pass")
    worst = max(got["routes"], got["every row"]) / got["pass"]
    print(f"goal: routes ≤ 3× one forward pass: {'met' if worst <= 3 else 'MISSED'} (worst {worst:.2f}×)")


def _page_once(browser, url: str, rep: int) -> tuple[float, float]:  # noqa: ANN001
    """One load of the Routes page and one part read as tokens, in a new browser context."""
    from bench_floor import _ready  # noqa: F401 - imported for the same waits as the floor's
    from waits import until_drawn, until_text

    from tests.helpers.browser import guarded_context, settle

    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as ctx:
        page = ctx.new_page()
        t0 = time.perf_counter()
        page.goto(f"{url}/routes?at=24")
        until_drawn(page, selector=GRAPH)
        t_load = time.perf_counter() - t0
        settle(page)
        box = page.get_by_role("combobox", name="Read a part of the graph as tokens (what it writes at position 24)")
        box.scroll_into_view_if_needed()
        box.click()
        name = ("layer 2 · head 1", "layer 1 · head 2", "layer 2 · head 2")[rep % 3]
        option = page.get_by_role("option", name=name, exact=True)
        option.wait_for()
        t0 = time.perf_counter()
        option.click()
        until_text(page, f"{name} moves each logit by", within="[data-testid='stMarkdown']")
        return t_load, time.perf_counter() - t0


def page(repeats: int) -> None:
    from bench_floor import _one as floor_one
    from bench_floor import servers

    floor, app = [], []
    with contextlib.ExitStack() as stack:
        floor_url, apps, browser = servers(stack, None)
        for rep in range(repeats + 1):  # the first round warms both servers and is not counted
            f = floor_one(browser, "floor", f"{floor_url}/", rep)
            a = _page_once(browser, apps["now"], rep + 1)  # rep + 1: never the part already shown
            if rep:
                floor.append(f)
                app.append(a)
        browser.close()
    f_load, f_edit = (statistics.median(t[k] for t in floor) for k in (0, 1))
    a_load, a_part = (statistics.median(t[k] for t in app) for k in (0, 1))
    print(f"floor app: load -> heatmap drawn {f_load:.2f} s, edit a cell -> new heatmap {f_edit:.2f} s")
    print(f"Routes page: load -> graph drawn {a_load:.2f} s ({a_load / f_load:.2f}x the floor's load)")
    print(f"Routes page: a part read as tokens {a_part:.2f} s ({a_part / f_edit:.2f}x the floor's edit)")
    print(
        f"goals: load <= 1.5x: {'met' if a_load <= 1.5 * f_load else 'MISSED'}; "
        f"projecting <= 1.5x: {'met' if a_part <= 1.5 * f_edit else 'MISSED'}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--page", action="store_true", help="also the page against the floor app, in Chromium")
    ap.add_argument("--skip-engine", action="store_true", help="only the page")
    args = ap.parse_args()
    start = os.getloadavg()
    print(f"numpy {np.__version__}; {os.cpu_count()} cores; medians of {args.repeats} after a warm-up")
    print(f"| {'case':<64} | {'median':>12} | note")
    if not args.skip_engine:
        engine(args.repeats, args.tokens)
    if args.page:
        page(args.repeats)
    end = os.getloadavg()
    print(f"load average (1, 5, 15 min): {start} at the start, {end} at the end")


if __name__ == "__main__":
    main()
