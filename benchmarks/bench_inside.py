"""The Every head page against the floor app, side by side in one run: page load → every heatmap drawn, and press
Ablate → the new loss shown (issue 23's goal: an ablation → new predictions ≤ 1.5× the floor app's edit).

The floor app and its edit are bench_floor's (one 4 × 4 editor, one 3 × 3 heatmap; edit a cell → the heatmap shows
the new number), measured just before each repeat of this page, each in a new browser context at 1400 × 1000. An
ablation is timed from the click to the repeated half's loss, computed by the engine, being written on the page.
Prints medians and ratios. Needs /usr/bin/chromium and playwright.
Run: python benchmarks/bench_inside.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_floor import _one as floor_one  # noqa: E402
from bench_floor import _ready  # noqa: E402

from tests.browser_util import CHROMIUM, CHROMIUM_ARGS, guarded_context, streamlit_server  # noqa: E402

HEADS = ((1, 0), (0, 1), (1, 1), (0, 0))


def _loss_after(layer: int, head: int) -> str:
    """The repeated half's loss the page writes once this head is zero-ablated (the engine's own functions)."""
    from attention.model import ablate, builtin, induction

    ids = [int(i) for i in induction.history("induction")["example"]]
    run = builtin("induction").run(ids, [ablate(layer, head)])
    return f"{induction.half_losses(run.logits[None], np.array(ids)[None], len(ids) // 2)[1]:.2f} nats"


def _one(browser, url: str, rep: int) -> tuple[float, float]:
    """One load of the page and one ablation in a new browser context."""
    layer, head = HEADS[rep % len(HEADS)]
    want = _loss_after(layer, head)
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as ctx:
        page = ctx.new_page()
        t0 = time.perf_counter()
        page.goto(url)
        _ready(page)
        page.locator("[data-testid='stVegaLiteChart'] svg, [data-testid='stVegaLiteChart'] canvas").nth(3).wait_for()
        t_load = time.perf_counter() - t0
        button = page.get_by_role("button", name=f"Ablate layer {layer + 1} · head {head + 1}", exact=True)
        button.scroll_into_view_if_needed()
        t0 = time.perf_counter()
        button.click()
        page.get_by_test_id("stMetric").nth(1).get_by_text(want).wait_for(timeout=30_000)
        return t_load, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    times: dict[str, list[tuple[float, float]]] = {"floor": [], "every head": []}
    with streamlit_server("benchmarks/floor/floor_app.py") as floor, streamlit_server() as app, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        for rep in range(args.repeats + 1):  # the first round warms both servers and is not counted
            f = floor_one(browser, "floor", f"{floor}/", rep)
            a = _one(browser, f"{app}/every_head", rep)
            if rep:
                times["floor"].append(f)
                times["every head"].append(a)
        browser.close()
    f_load = statistics.median(t for t, _ in times["floor"])
    f_edit = statistics.median(t for _, t in times["floor"])
    a_load = statistics.median(t for t, _ in times["every head"])
    a_edit = statistics.median(t for _, t in times["every head"])
    print(f"floor app: load -> heatmap drawn {f_load:.2f} s, edit a cell -> new heatmap {f_edit:.2f} s")
    print(
        f"Every head: load -> 4 heatmaps drawn {a_load:.2f} s ({a_load / f_load:.2f}x), ablate -> new loss shown "
        f"{a_edit:.2f} s ({a_edit / f_edit:.2f}x)"
    )
    print(f"goal: an ablation -> new predictions <= 1.5x the floor app's edit; medians of {args.repeats} repeats")


if __name__ == "__main__":
    main()
