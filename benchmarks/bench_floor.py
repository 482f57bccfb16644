"""This app against a floor app, side by side in one run: page load → first heatmap drawn, and edit one cell → the
heatmap on the same screen shows the new numbers (goals: load ≤ 1.2× the floor, edit ≤ 1.2× the floor).

The floor (benchmarks/floor/floor_app.py; its editor and weights in floor/grid.py) is one 4 × 4 st.data_editor and one
3 × 3 Altair heatmap. This app is measured on /softmax?preset=<each document preset>, editing W_q[1, 1] in the input
tabs beside the heatmap. Both servers run at the same time on the same machine; the floor app is measured just before
each preset (so noise hits both), and each ratio is a preset's median over the floor's median of all its runs. An edit
that never shows is retried in a new context and counted (printed when any). Both ends are checked once per animation
frame (benchmarks/waits.py), for both apps alike. Prints medians and ratios. Needs
/usr/bin/chromium and playwright. ``--before PATH``: also serve the app from another checkout (e.g. the main branch in a
second work tree), measured right after this one for each preset, so a change is compared with what it replaces in one
run.
Run: python benchmarks/bench_floor.py [--repeats 7] [--presets the_cat_sat,i_am_batman] [--before ../main]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.waits import until_drawn, until_text  # noqa: E402
from tests.helpers.browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    free_port,
    guarded_context,
    rerun,
    settle,
    streamlit_server,
)


@contextlib.contextmanager
def checkout_server(root: Path) -> Iterator[str]:
    """``streamlit run`` of the app in another checkout ``root`` (its own code and config) on a free port."""
    port = free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", str(root / "streamlit_app.py"), "--server.headless", "true"]
    cmd += ["--server.address", "127.0.0.1", "--server.port", str(port), "--server.fileWatcherType", "none"]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if urllib.request.urlopen(f"{base}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.2)
        else:
            raise RuntimeError(f"the app in {root} did not become healthy within 60 s")
        yield base
    finally:
        proc.terminate()
        proc.wait(30)


def servers(stack: contextlib.ExitStack, before: Path | None) -> tuple[str, dict[str, str], object]:
    """The floor app's address, this app's (``"now"``) and ``before``'s (a checkout, if given) by version, and a
    headless Chromium: each started here and stopped when ``stack`` closes."""
    from playwright.sync_api import sync_playwright

    floor = stack.enter_context(streamlit_server("benchmarks/floor/floor_app.py"))
    apps = {"now": stack.enter_context(streamlit_server())}
    if before:
        apps["before"] = stack.enter_context(checkout_server(before.resolve()))
    browser = stack.enter_context(sync_playwright()).chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    return floor, apps, browser


def _ready(page) -> None:
    """After an action in the page: its run finished (:func:`settle`), the heatmap drawn, the run over and drawn."""
    settle(page)
    until_drawn(page)


def _load(page, url: str) -> float:
    t0 = time.perf_counter()
    page.goto(url)
    until_drawn(page)  # the heatmap exists only once the page's run has drawn it
    return time.perf_counter() - t0


def type_into_cell(page, grid, value: str) -> None:
    """Select cell (0, 0) of the grid, move to (1, 1) with the arrow keys (column widths differ between grids), open
    its editor and type ``value``, short of the Enter that commits it. The floor's grid is Streamlit's canvas grid
    (its cell editor opens in a portal); the app's is its matrix editor, a table whose cells are elements."""
    if grid.evaluate("g => g.classList.contains('mgrid')"):
        grid.locator("td[data-r='0'][data-c='0']").click()
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Enter")
        grid.locator("input").fill(value)
        return
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 35 * 1.5)
    page.wait_for_timeout(200)  # the grid takes the focus and the selection before the keys
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    editor = page.locator("#portal .gdg-input")
    editor.wait_for(timeout=5000)
    editor.fill(value)


def last_visible_grid(page):  # noqa: ANN201 - a Playwright locator
    """The page's last visible matrix editor: the open input tab's editor beside the Softmax heatmap."""
    grids = page.locator(".mgrid")
    return [grids.nth(i) for i in range(grids.count()) if grids.nth(i).is_visible()][-1]


def retried(name: str, retries: dict[str, int], measure: Callable[..., T], *args: object) -> T:
    """``measure(*args)`` (one new browser context), again when an edit never shows (a Playwright timeout), at most
    3 tries; each retry is counted in ``retries[name]``."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _attempt in range(3):
        try:
            return measure(*args)
        except PlaywrightTimeout:
            retries[name] += 1
    raise SystemExit(f"{name}: the edit never showed in 3 tries")


def _edit(page, grid, value: str, text_after: str) -> float:
    """Type ``value`` into cell (1, 1) of the grid, press Enter; time until the heatmap shows ``text_after``."""
    type_into_cell(page, grid, value)
    t0 = time.perf_counter()
    page.keyboard.press("Enter")
    until_text(page, text_after, within=CHART_TEXT, timeout=10_000)
    return time.perf_counter() - t0


CHART_TEXT = "[data-testid='stVegaLiteChart'] text"  # the texts a chart draws (the heatmap's numbers)


DOCUMENT_PRESETS = ("she_likes_coffee", "i_am_batman", "the_cat_sat", "the_cat_sat_on_the_mat", "random_seed_42")


def _expected_app(preset_id: str, value: str) -> str | None:
    """A text the Softmax heatmap writes once W_q[1, 1] = value and did not write before (the page's own number
    format): the cell that moves most among those whose new text is new (in "I am Batman" row 2 stays uniform)."""
    import numpy as np

    import attention
    from attention import charts

    p = attention.load_preset(preset_id)

    def weights(edit: bool) -> np.ndarray:
        m = p.matrices()
        if edit:
            m["W_q"][..., 1, 1] = float(value)
        return np.squeeze(attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], options=p.options).weights)

    old, new = weights(False), weights(True)
    before = {charts.decimals_for(old, 4).format(v) for v in old.ravel()}
    fmt = charts.decimals_for(new, 4).format
    fresh = [(abs(n - o), fmt(n)) for n, o in zip(new.ravel(), old.ravel(), strict=True) if fmt(n) not in before]
    return max(fresh)[1] if fresh else None


def _edit_for(preset_id: str, rep: int) -> tuple[str, str]:
    """A value to type into W_q[1, 1] on this repeat that makes the heatmap write a new number, and that number."""
    for k in range(40):
        value = str(2.0 + rep + 0.125 * k)
        want = _expected_app(preset_id, value)
        if want is not None:
            return value, want
    raise SystemExit(f"{preset_id}: no value of W_q[1, 1] tried writes a new number in the heatmap")


def floor_weights(value: str) -> np.ndarray:
    """The floor app's 3 × 3 weights once its cell (1, 1) holds ``value`` (its own numbers, in numpy)."""
    from benchmarks.floor import grid

    w = grid.start()
    w[1, 1] = float(value)
    return grid.weights(w)


def _expected_floor(value: str) -> str:
    return f"{floor_weights(value)[1, 1]:.4f}"


def _one(browser, name: str, url: str, rep: int) -> tuple[float, float]:
    """One load and one edit of ``name`` (the floor app or a preset) in a new browser context."""
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as ctx:  # the pages record their runs
        page = ctx.new_page()
        t_load = _load(page, url)
        if name == "floor":
            value = str(2.0 + rep)
            want = _expected_floor(value)
            grid = page.get_by_test_id("stDataFrame").first
        else:
            with rerun(page):  # the page rebuilt with the W_q editor
                page.get_by_role("tab", name="W_q").click()
            _ready(page)
            value, want = _edit_for(name, rep)
            grid = last_visible_grid(page)
        return t_load, _edit(page, grid, value, want)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--presets", default=",".join(DOCUMENT_PRESETS), help="comma-separated; default: the documents'")
    ap.add_argument("--before", type=Path, help="another checkout of the app, measured beside this one")
    args = ap.parse_args()
    presets = args.presets.split(",")
    versions = ("now", "before") if args.before else ("now",)
    names = ["floor", *(f"{v} {p}" for p in presets for v in versions)]
    loads: dict[str, list[float]] = {n: [] for n in names}
    edits: dict[str, list[float]] = {n: [] for n in names}
    retries = dict.fromkeys(names, 0)
    with contextlib.ExitStack() as stack:
        floor, apps, browser = servers(stack, args.before)
        for rep in range(args.repeats + 1):  # the first round warms every server and is not counted
            for preset_id in presets:  # the floor app is measured before each preset, so all see the same noise
                runs = [("floor", "floor", f"{floor}/")]
                runs += [(f"{v} {preset_id}", preset_id, f"{apps[v]}/softmax?preset={preset_id}") for v in versions]
                for name, what, url in runs:
                    t_load, t_edit = retried(name, retries, _one, browser, what, url, rep)
                    if rep:
                        loads[name].append(t_load)
                        edits[name].append(t_edit)
        browser.close()
    f_load, f_edit = statistics.median(loads["floor"]), statistics.median(edits["floor"])
    print(f"floor app: page load -> heatmap drawn {f_load:.2f} s, edit a cell -> new heatmap {f_edit:.2f} s")
    print(f"{'Softmax page, preset':36}{'load (s)':>10}{'ratio':>8}{'edit (s)':>10}{'ratio':>8}")
    for name in names[1:]:
        a_load, a_edit = statistics.median(loads[name]), statistics.median(edits[name])
        print(f"{name:36}{a_load:10.2f}{a_load / f_load:8.2f}{a_edit:10.2f}{a_edit / f_edit:8.2f}")
    if any(retries.values()):
        print("edits retried in a new context (the typed value never showed):", retries)
    cores = Path("/proc/cpuinfo").read_text().count("processor")
    print(f"machine load average (1, 5, 15 min) at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"goals: load <= 1.2x, edit <= 1.2x the floor app; medians of {args.repeats} repeats, {cores} cores")


if __name__ == "__main__":
    main()
