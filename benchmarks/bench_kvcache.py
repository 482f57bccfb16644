"""The KV cache's eviction engine against a forward pass, side by side in one run, on SmolLM2-135M-Instruct and the
shipped long text (issue 51's goals: one policy at one budget ≤ 3× a forward pass; the loss-against-budget curve,
every policy at 8 budgets, ≤ 30 s).

The forward pass is the same model's layer path over the whole text in blocks of 256 rows, keeping no layer's n × n
weights (:func:`attention.model.eviction.attention_rows` for the last row): at 2,048 tokens Model.run would hold
every head's scores, scaled scores and weights, about 13 GB in float32. Prints medians, ratios and the machine's
load average.

``--page``: the KV cache page instead, against the floor app, side by side in one run (goals: the page's load ≤ 2×
the floor's load, a change of policy or budget ≤ 1.5× the floor's edit, once the study is made). A server lists the
real SmolLM2 and studies the shipped long text once (Measure pressed, untimed); then each repeat measures the floor
app's load and edit (benchmarks/bench_floor.py) and, in a new browser context, the page opened until its 6 charts are
drawn and the run is over, and a policy chosen until the table says that policy's cost. Needs /usr/bin/chromium.

Run: python benchmarks/bench_kvcache.py [--n 2048] [--m 128] [--repeats 3] [--page]
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
    ap.add_argument("--page", action="store_true", help="the page's load and a policy change against the floor app")
    args = ap.parse_args()
    if args.page:
        page_bench(args.repeats)
        return
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


CHARTS = 6  # the page's: three sinks, the retrieval scores, the keys kept, the curve
# a policy chosen each repeat, by its label on the page
PICKS = ("window (the last keys)", "SnapKV", "heavy hitters (H2O)", "random (a floor)")


def _page_once(browser, url: str, rep: int) -> tuple[float, float]:
    """One load of the KV cache page (its study made) and one policy chosen, in a new context: both times (s)."""
    from benchmarks.waits import until_drawn, until_text
    from tests.helpers.browser import guarded_context

    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as ctx:
        page = ctx.new_page()
        t0 = time.perf_counter()
        page.goto(url)
        until_drawn(page, CHARTS, timeout=300_000)
        t_load = time.perf_counter() - t0
        box = page.get_by_test_id("stSelectbox").filter(has_text="Policy").first.locator("input").first
        box.scroll_into_view_if_needed()
        box.click()
        label = PICKS[rep % len(PICKS)]
        option = page.get_by_role("option", name=label, exact=True)
        option.wait_for()
        t0 = time.perf_counter()
        option.click()
        said = label[0].upper() + label[1:] + " costs"
        until_text(page, said, timeout=120_000)
        until_drawn(page, CHARTS, timeout=120_000)
        return t_load, time.perf_counter() - t0


def _study_once(browser, url: str) -> float:
    """Press Measure on the page and wait until the study is drawn (untimed in the ratios): its time (s)."""
    from benchmarks.waits import until_drawn
    from tests.helpers.browser import guarded_context, settle

    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as ctx:
        page = ctx.new_page()
        page.goto(url)
        settle(page, timeout=600_000)  # the server opens the GGUF and reads the long text on its first visit
        t0 = time.perf_counter()
        page.get_by_role("button", name="Measure this text").click()
        until_drawn(page, CHARTS, timeout=3_600_000)
        return time.perf_counter() - t0


def page_bench(repeats: int) -> None:
    """The KV cache page's load and a policy change against the floor app's load and edit (see the docstring)."""
    import contextlib

    from playwright.sync_api import sync_playwright

    from benchmarks.bench_floor import _one, retried
    from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, server_listing, streamlit_server

    path = models_folder.packaged()["SmolLM2-135M-Instruct"]
    ids = ".".join(str(i) for i in load(path).encode("The cat sat on the mat."))
    times: dict[str, list[float]] = {"floor load": [], "floor edit": [], "page load": [], "policy": []}
    retries = {"floor": 0}
    with contextlib.ExitStack() as stack:
        floor = stack.enter_context(streamlit_server("benchmarks/floor/floor_app.py"))
        app = stack.enter_context(server_listing(f"smol={path}"))
        browser = stack.enter_context(sync_playwright()).chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        url = f"{app}/kv_cache?model=server:smol&ids={ids}"
        study = _study_once(browser, url)
        for rep in range(repeats + 1):  # the first round warms both servers and is not counted
            floor_load, floor_edit = retried("floor", retries, _one, browser, "floor", f"{floor}/", rep)
            page_load, policy = _page_once(browser, url, rep)
            for name, t in zip(times, (floor_load, floor_edit, page_load, policy), strict=True) if rep else ():
                times[name].append(t)
        browser.close()
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"KV cache page on SmolLM2, the shipped long text; load {os.getloadavg()}; {repeats} repeats")
    print(f"the study (Measure pressed -> drawn), once          {study:8.1f} s")
    print(f"floor app: open -> heatmap drawn                    {med['floor load']:8.2f} s")
    print(f"floor app: edit a cell -> heatmap redrawn           {med['floor edit']:8.2f} s")
    print(f"KV cache page: open -> 6 charts drawn               {med['page load']:8.2f} s   "
          f"{med['page load'] / med['floor load']:5.2f}x the floor's load (goal <= 2x)")
    print(f"KV cache page: choose a policy -> its table         {med['policy']:8.2f} s   "
          f"{med['policy'] / med['floor edit']:5.2f}x the floor's edit (goal <= 1.5x)")
    if retries["floor"]:
        print(f"floor edits retried: {retries['floor']}")


if __name__ == "__main__":
    main()
