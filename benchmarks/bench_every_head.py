"""Every head on a SmolLM2-shaped random model at 32 tokens, against the floor app, side by side in one run.

Issue 39 §4's goals (first set in issue 33): Every head on a SmolLM2-135M-shaped model (30 layers × 9 query heads on
3 key/value heads) at 32 tokens opens within 1.5× the floor app's page load, and redraws a chosen layer within 1.5×
the floor's edit (benchmarks/floor: one cell edited → its heatmap redrawn). Two waits are
timed in headless Chromium at 1400 × 1000, each from a new browser context:

- load: the page opened at the model and text (its address) → the three score grids and the first layer's nine
  head heatmaps drawn;
- layer: another layer chosen in "Layer whose heads are drawn below" → its nine heatmaps drawn with their titles
  (the redraw a learner waits for while reading a wide model, one layer at a time).

The floor app's load and edit are measured just before each repeat, so load on the machine hits both; the load's
ratio is its median over the floor's page load (heatmap drawn), the layer's over the floor's edit. ``--before PATH``:
also serve the app from another checkout (what a change replaces), measured right after this one in each repeat.
The model is random, made with transformers as benchmarks/bench_model.py makes it (the
full width, saved as bfloat16) or, with ``--narrow``, at the tests' narrow width (the same layers and heads, d = 72).
Run: python benchmarks/bench_every_head.py [--repeats 5] [--narrow] [--before ../main]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_floor import _one, checkout_server, retried  # noqa: E402
from benchmarks.waits import IDLE, until  # noqa: E402
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, guarded_context, streamlit_server  # noqa: E402

N = 32  # tokens
LAYERS, HEADS = 30, 9
# ``count`` heatmaps titled ``prefix``… drawn, and the run over and drawn
TITLED = f"""(a) => [...document.querySelectorAll("[data-testid='stVegaLiteChart'] svg.marks .role-title-text")]
  .filter((t) => t.textContent.startsWith(a.prefix)).length >= a.count && {IDLE}"""


def make_model(folder: Path, narrow: bool) -> None:
    """A random SmolLM2-shaped checkpoint with a tokenizer in ``folder``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # made here: the hub is never asked
    if narrow:
        from tests.helpers.families import smol_shaped

        smol_shaped(folder)
        return
    import torch

    from benchmarks.bench_model import _smollm2_folder, _tokenizer

    torch.manual_seed(0)
    _smollm2_folder(folder)
    _tokenizer(folder)


def _drawn(page, prefix: str, count: int, timeout_s: float = 120) -> None:
    """Wait until ``count`` heatmaps titled ``prefix``… are drawn and the run has ended (checked once per frame)."""
    until(page, TITLED, {"prefix": prefix, "count": count}, timeout=timeout_s * 1000)


def _every_head(browser, url: str, layer: int) -> tuple[float, float]:
    """One load of Every head at ``url`` and one switch to ``layer`` (1-based), in a new context: both times (s)."""
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as ctx:
        page = ctx.new_page()
        t0 = time.perf_counter()
        page.goto(url)
        _drawn(page, "layer 1 · head", HEADS)
        t_load = time.perf_counter() - t0
        box = page.get_by_role("combobox", name="Layer whose heads are drawn below")
        box.scroll_into_view_if_needed()
        box.click()
        option = page.get_by_role("option", name=f"layer {layer}", exact=True)
        option.wait_for()
        t0 = time.perf_counter()
        option.click()
        _drawn(page, f"layer {layer} · head", HEADS)
        return t_load, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--narrow", action="store_true", help="the tests' narrow model (d = 72) instead of the full width")
    ap.add_argument("--before", type=Path, help="another checkout of the app, measured beside this one")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    versions = ("now", "before") if args.before else ("now",)
    times: dict[str, list[float]] = {"floor load": [], "floor edit": []}
    times.update({f"{v} {w}": [] for v in versions for w in ("load", "layer")})
    retries = {"floor": 0}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        folder = Path(tmp) / "smol"
        make_model(folder, args.narrow)
        os.environ["ATTENTION_MODELS"] = f"smol={folder}"  # the servers copy the environment when they start
        floor = stack.enter_context(streamlit_server("benchmarks/floor/floor_app.py"))
        apps = {"now": stack.enter_context(streamlit_server())}
        if args.before:
            apps["before"] = stack.enter_context(checkout_server(args.before.resolve()))
        browser = stack.enter_context(sync_playwright()).chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        ids = ".".join(str(3 + (7 * k) % 250) for k in range(N))  # 32 ids every tokenizer here holds
        for rep in range(args.repeats + 1):  # the first round warms every server and is not counted
            measured = dict(
                zip(
                    ("floor load", "floor edit"),
                    retried("floor", retries, _one, browser, "floor", f"{floor}/", rep),
                    strict=True,
                )
            )
            for v in versions:
                url = f"{apps[v]}/every_head?model=server:smol&ids={ids}"
                measured[f"{v} load"], measured[f"{v} layer"] = _every_head(browser, url, 2 + rep % (LAYERS - 1))
            for name, t in measured.items() if rep else ():
                times[name].append(t)
        browser.close()
    report(times, versions, args)


def report(times: dict[str, list[float]], versions: tuple[str, ...], args: argparse.Namespace) -> None:
    """The medians, each with its ratio to the floor's load (a page opened) or edit (a layer chosen)."""
    med = {name: statistics.median(t) for name, t in times.items()}
    width = "narrow (d = 72)" if args.narrow else "full width (d = 576, bfloat16 file)"
    print(f"SmolLM2-shaped random model, {width}, {LAYERS} × {HEADS} heads, {N} tokens, 1400 × 1000")
    print(f"{'wait':52}{'median (s)':>12}{'ratio':>8}  ratio to")
    print(f"{'floor app: open -> heatmap drawn':52}{med['floor load']:12.2f}")
    print(f"{'floor app: edit a cell -> heatmap redrawn':52}{med['floor edit']:12.2f}")
    for v in versions:
        for w, label, floor in (
            ("load", "open -> grids and 9 heads drawn", "floor load"),
            ("layer", "choose a layer -> 9 heads drawn", "floor edit"),
        ):
            t = med[f"{v} {w}"]
            print(f"{f'Every head ({v}): {label}':52}{t:12.2f}{t / med[floor]:8.2f}  {floor}")
    print(f"machine load average (1, 5, 15 min) at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"goals: open <= 1.5x the floor's load, a layer <= 1.5x the floor's edit; medians of {args.repeats} repeats")


if __name__ == "__main__":
    main()
