"""The dashboard at scale: server rerun time, browser time to a visible heatmap, and server memory.

One run prints, side by side, for the document preset ``the_cat_sat`` (n = 3) and blank presets of
n = 256, 1024, 2048 tokens (d_model = d_k = 64; plus n = 2048 at d = 256):

1. **Server rerun per page (AppTest).** ``AppTest.from_file("streamlit_app.py")`` with the preset in
   the query string, then ``switch_page`` to every page: the first run of each page (cold) and the
   median of warm reruns. Each size runs in its own Python process, so Streamlit's caches start
   empty for it (imports are warmed first with a different preset, so "cold" is not import time).
2. **Browser (headless Debian Chromium + Playwright against ``streamlit run``).** Timestamps are taken
   inside the page with ``performance.now()``: a MutationObserver logs every change of the app's
   ``data-test-script-state``; the heatmap counts as visible once the first Vega chart's SVG holds
   its ``<image>`` mark (decoded) or its rect marks (cells or pooled blocks, not the legend), two
   animation frames later (it has then been painted). The "heatmap path" row gives which it was.
   - load: navigation start -> run finished, -> heatmap visible, and visible minus run finished
     (issue 4 bounds the last at 1.5 s for n = 2048), on ``/softmax?preset=...``; cold = the first
     load of that size on the server, warm = median of the later loads (new sessions each time).
   - edit: on ``/tokens`` double-click the first cell of the X grid, type a new value, Enter ->
     run finished; then the sidebar link to Softmax -> run finished and -> heatmap visible.
3. **Memory.** Resident set size of the server process (psutil), a fresh server per scenario: one
   session at n = 2048 (d = 64 and d = 256) after visiting every page and after 10 edits; and the
   cache bound: sequential sessions (browser contexts closed after use) with different seeds at
   n = 1024, RSS after each and the peak (sampled every 50 ms).

Run: ``python benchmarks/bench_app.py`` (about 8 minutes) or ``--quick`` (under 3: fewer sizes and
repeats). Needs /usr/bin/chromium and the Python ``playwright`` package (no browser download).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGE_FILES = {
    "overview": "pages/0_overview.py",
    "tokens": "pages/1_tokens.py",
    "weights": "pages/2_weights.py",
    "qkv": "pages/3_qkv.py",
    "scores": "pages/4_scores.py",
    "scaling": "pages/5_scaling.py",
    "softmax": "pages/6_softmax.py",
    "output": "pages/7_output.py",
    "reading": "pages/8_reading.py",
}
NAV_LABELS = {
    "overview": "Overview",
    "tokens": "Tokens & embeddings (X)",
    "weights": "Weights (W_q, W_k, W_v)",
    "qkv": "Q·K·V",
    "scores": "Scores (QKᵀ)",
    "scaling": "Scaling (÷√d_k)",
    "softmax": "Softmax (attention weights)",
    "output": "Output (weights·V)",
    "reading": "Reading the weights",
}
HEATMAP_PAGES = ("scores", "scaling", "softmax", "output")
BUDGET_HEAT_S, BUDGET_RERUN_S, BUDGET_RSS_MB = 1.5, 2.0, 500.0


def query_for(size: str) -> dict[str, str]:
    """'the_cat_sat' or 'NxDxD' (blank preset, seed 0) as URL query parameters."""
    if "x" in size and size[0].isdigit():
        return {"preset": "blank", "seed": "0", "size": size}
    return {"preset": size}


def label(size: str) -> str:
    if size[0].isdigit():
        n, d, _ = size.split("x")
        return f"n={n}" + ("" if d == "64" else f",d={d}")
    return f"{size}(n=3)"


def med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def table(title: str, head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]

    def line(r):
        return "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )

    out = [title, line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
    return "\n".join(out)


# ----------------------------------------------------------------------------- 1. AppTest (server)


def apptest_worker(size: str, warm: int) -> dict:
    """In a fresh process: entry run, then every page once (cold) and ``warm`` more times."""
    from streamlit.testing.v1 import AppTest

    def entry(query: dict[str, str]) -> AppTest:
        at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=300)
        for k, v in query.items():
            at.query_params[k] = v
        return at

    warmup = entry({"preset": "she_likes_coffee"}).run()  # imports, not this size's caches
    for f in PAGE_FILES.values():
        warmup.switch_page(str(ROOT / f)).run()
    at = entry(query_for(size))
    t = time.perf_counter()
    at.run()
    out: dict = {"entry": time.perf_counter() - t, "pages": {}, "errors": [e.value[:200] for e in at.exception]}
    for name, f in PAGE_FILES.items():
        t = time.perf_counter()
        at.switch_page(str(ROOT / f)).run()
        cold = time.perf_counter() - t
        times = []
        for _ in range(warm):
            t = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t)
        out["pages"][name] = {"cold": cold, "warm": times}
        out["errors"] += [f"{name}: {e.value[:200]}" for e in at.exception]
    return out


def run_apptest(sizes: list[str], warm: int) -> dict[str, dict]:
    res = {}
    for size in sizes:
        p = subprocess.run(
            [sys.executable, __file__, "--apptest-worker", size, "--warm", str(warm)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=900,
        )
        if p.returncode != 0:
            raise RuntimeError(f"AppTest worker for {size} failed:\n{p.stderr[-3000:]}")
        res[size] = json.loads(p.stdout.strip().splitlines()[-1])
        print(f"  apptest {label(size)}: entry {res[size]['entry']:.2f} s", file=sys.stderr, flush=True)
    return res


def apptest_table(res: dict[str, dict]) -> str:
    sizes = list(res)
    head = ["page (s: cold / warm median)"] + [label(s) for s in sizes]
    big, mid = "2048x64x64", "1024x64x64"
    with_ratio = big in res and mid in res
    if with_ratio:
        head.append("warm 2048÷1024")
    rows = [
        ["entry run (new session: preset + trace + overview)"]
        + [fmt(res[s]["entry"]) for s in sizes]
        + ([""] if with_ratio else [])
    ]
    for name in PAGE_FILES:
        row = [name]
        for s in sizes:
            p = res[s]["pages"][name]
            row.append(f"{fmt(p['cold'])} / {fmt(med(p['warm']))}")
        if with_ratio:
            a, b = med(res[big]["pages"][name]["warm"]), med(res[mid]["pages"][name]["warm"])
            row.append(f"{a / b:.1f}×" if a and b else "—")
        rows.append(row)
    errors = [f"{label(s)}: {e}" for s in sizes for e in res[s]["errors"]]
    text = table(
        "1. Server-side rerun per page, AppTest (seconds; cold = first run of the page in the session)", head, rows
    )
    return text + ("\n  errors: " + "; ".join(errors) if errors else "")


# ----------------------------------------------------------------------------- 2./3. browser

INIT_JS = """
window.__bench = {states: [], heatT: undefined, pending: false, kind: undefined};
const __rec = () => {
  const a = document.querySelector("[data-testid='stApp']");
  const s = a && a.getAttribute('data-test-script-state');
  const L = window.__bench.states;
  if (s && (!L.length || L[L.length - 1][0] !== s)) L.push([s, performance.now()]);
};
new MutationObserver(__rec).observe(document, {subtree: true, childList: true, attributes: true,
                                               attributeFilter: ['data-test-script-state']});
"""

# True once a run that started at or after `since` has finished; returns that finish time.
RUN_DONE_JS = """
(since) => {
  const L = window.__bench.states;
  const i = L.findIndex(e => e[0] === 'running' && e[1] >= since);
  if (i < 0) return false;
  const done = L.slice(i + 1).find(e => e[0] === 'notRunning');
  return done ? done[1] : false;
}
"""

# The first Vega chart is painted: its SVG holds the decoded <image> (large matrices) or rect marks
# (small ones); the time is taken two animation frames after that.
HEAT_JS = """
() => {
  const b = window.__bench;
  if (b.heatT !== undefined) return b.heatT;
  if (b.pending) return false;
  const chart = document.querySelector("[data-testid='stVegaLiteChart']");
  if (!chart) return false;
  let ready = null;
  const svg = chart.querySelector("svg.marks");
  if (svg) {
    const imgGroup = svg.querySelector("g.mark-image.role-mark");
    if (imgGroup) {
      const img = imgGroup.querySelector("image");
      if (!img) return false;
      const href = img.getAttribute('href') || img.getAttributeNS('http://www.w3.org/1999/xlink', 'href');
      if (!href || img.getBBox().width <= 0) return false;
      const im = new Image(); im.src = href; ready = im.decode(); b.kind = 'image';
    } else {
      const n = svg.querySelectorAll("g.mark-rect.role-mark path").length;  // cells, not the legend
      if (n > 0) { ready = Promise.resolve(); b.kind = n + ' rects'; }
    }
  } else {
    const cv = chart.querySelector("canvas");
    if (cv && cv.width > 0) { ready = Promise.resolve(); b.kind = 'canvas'; }
  }
  if (!ready) return false;
  b.pending = true;
  ready.then(() => requestAnimationFrame(() => requestAnimationFrame(() => { b.heatT = performance.now(); })));
  return false;
}
"""


def reset_heat(page) -> None:
    page.evaluate(
        "() => { window.__bench.heatT = undefined; window.__bench.pending = false; window.__bench.kind = undefined; }"
    )


def now(page) -> float:
    return page.evaluate("performance.now()")


def wait_run(page, since: float, timeout: float = 180_000) -> float:
    return page.wait_for_function(RUN_DONE_JS, arg=since, timeout=timeout, polling="raf").json_value()


def wait_heat(page, timeout: float = 180_000) -> float:
    return page.wait_for_function(HEAT_JS, timeout=timeout, polling="raf").json_value()


def quiet_finish(page, since: float) -> float:
    """The finish time of the last run started since ``since``, once no run has started for 300 ms."""
    while True:
        page.wait_for_timeout(300)
        states = page.evaluate("window.__bench.states")
        if states[-1][0] == "notRunning" and now(page) - states[-1][1] >= 300:
            return max(t for s, t in states if s == "notRunning" and t >= since)


def new_context(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.add_init_script(INIT_JS)
    return ctx


def new_page(browser):
    ctx = new_context(browser)
    return ctx, ctx.new_page()


def qs(size: str, **extra: str) -> str:
    return "&".join(f"{k}={v}" for k, v in {**query_for(size), **extra}.items())


def browser_load(ctx, base: str, size: str) -> dict:
    """Open /softmax in a new tab of ``ctx`` (a new Streamlit session)."""
    page = ctx.new_page()
    try:
        page.goto(f"{base}/softmax?{qs(size)}", wait_until="commit")
        heat = wait_heat(page)
        wait_run(page, 0)
        done = quiet_finish(page, 0)
        kind = page.evaluate("window.__bench.kind")
        return {"finished": done / 1000, "visible": heat / 1000, "after": (heat - done) / 1000, "kind": kind}
    finally:
        page.close()


def sidebar_nav(page, name: str) -> None:
    """Switch page through the navigation at the top: the page's section menu, then its link."""
    menus = page.get_by_test_id("stTopNav").get_by_test_id("stTopNavSection")
    for i in range(menus.count()):
        menus.nth(i).click()
        link = page.get_by_test_id("stTopNavPopover").locator("a").filter(has_text=NAV_LABELS[name])
        if link.count():
            link.first.click()
            return
        page.keyboard.press("Escape")
    raise RuntimeError(f"no page {name!r} in the navigation")


def edit_first_x_cell(page, value: str) -> float:
    """Double-click X[0, 0] in the tokens page's matrix editor, type ``value``; the time of Enter."""
    cell = page.locator("[class*='st-key-ed-X-'] .mgrid td[data-r='0'][data-c='0']").first
    cell.wait_for(state="visible", timeout=60_000)
    cell.scroll_into_view_if_needed()
    cell.dblclick()
    page.keyboard.press("Control+A")
    page.keyboard.type(value)
    t = now(page)
    page.keyboard.press("Enter")
    return t


def browser_edit(ctx, base: str, size: str, value: str) -> dict:
    page = ctx.new_page()
    try:
        page.goto(f"{base}/tokens?{qs(size)}", wait_until="commit")
        wait_run(page, 0)
        quiet_finish(page, 0)
        t_edit = edit_first_x_cell(page, value)
        wait_run(page, t_edit)
        edit_done = quiet_finish(page, t_edit)
        reset_heat(page)
        t_nav = now(page)
        sidebar_nav(page, "softmax")
        heat = wait_heat(page)
        wait_run(page, t_nav)
        nav_done = quiet_finish(page, t_nav)
        changed = "differ from the unedited preset" in page.inner_text("body")
        return {
            "edit": (edit_done - t_edit) / 1000,
            "nav_finished": (nav_done - t_nav) / 1000,
            "nav_visible": (heat - t_nav) / 1000,
            "after": (heat - nav_done) / 1000,
            "applied": changed,
        }
    finally:
        page.close()


def run_browser(browser, base: str, sizes: list[str], loads: int, edits: int) -> dict[str, dict]:
    """Per size: the first load in a brand-new browser context (empty HTTP cache: Streamlit's lazily
    loaded chart and grid code is fetched too), then ``loads - 1`` loads and ``edits`` edits, each in a
    new tab (new session) of one warmed-up context (browser cache warm, as for a returning visitor)."""
    warm = new_context(browser)
    for path in ("softmax", "tokens"):  # pull the lazily loaded chunks into the warm context's cache
        pg = warm.new_page()
        pg.goto(f"{base}/{path}?preset=she_likes_coffee", wait_until="commit")
        wait_run(pg, 0)
        quiet_finish(pg, 0)
        pg.close()
    res = {}
    try:
        for size in sizes:
            fresh = new_context(browser)
            try:
                ld = [browser_load(fresh, base, size)]
            finally:
                fresh.close()
            ld += [browser_load(warm, base, size) for _ in range(loads - 1)]
            ed = [browser_edit(warm, base, size, f"{0.5 + 0.0137 * (k + 1):.4f}") for k in range(edits)]
            res[size] = {"load": ld, "edit": ed}
            print(
                f"  browser {label(size)}: load {ld[-1]['visible']:.2f} s, edit {ed[-1]['edit']:.2f} s",
                file=sys.stderr,
                flush=True,
            )
    finally:
        warm.close()
    return res


def browser_table(res: dict[str, dict]) -> str:
    sizes = list(res)
    head = ["browser (s)"] + [label(s) for s in sizes]

    def cold_warm(key: str, what: str) -> list[str]:
        out = []
        for s in sizes:
            xs = [r[what] for r in res[s][key]]
            out.append(f"{fmt(xs[0], 2)} / {fmt(med(xs[1:]), 2)}")
        return out

    def median_of(key: str, what: str) -> list[str]:
        return [fmt(med([r[what] for r in res[s][key]]), 2) for s in sizes]

    def worst(key: str, what: str) -> list[str]:
        return [fmt(max(r[what] for r in res[s][key]), 2) for s in sizes]

    rows = [
        ["heatmap path"] + [res[s]["load"][0]["kind"] or "?" for s in sizes],
        ["load /softmax -> run finished (first / repeat)"] + cold_warm("load", "finished"),
        ["load /softmax -> heatmap visible (first / repeat)"] + cold_warm("load", "visible"),
        ["  heatmap after run finished (first / repeat)"] + cold_warm("load", "after"),
        ["  heatmap after run finished, worst repeat"]
        + [fmt(max((r["after"] for r in res[s]["load"][1:]), default=None), 2) for s in sizes],
        ["edit X[0,0] on /tokens -> run finished, median"] + median_of("edit", "edit"),
        ["then nav -> Softmax run finished, median"] + median_of("edit", "nav_finished"),
        ["then nav -> Softmax heatmap visible, median"] + median_of("edit", "nav_visible"),
        ["  heatmap visible after run finished, median"] + median_of("edit", "after"),
        ["  heatmap visible after run finished, worst"] + worst("edit", "after"),
        ["edit reached Softmax ('cells differ' shown)"]
        + [f"{sum(r['applied'] for r in res[s]['edit'])}/{len(res[s]['edit'])}" for s in sizes],
        ["samples: loads / edits"] + [f"{len(res[s]['load'])} / {len(res[s]['edit'])}" for s in sizes],
    ]
    return table(
        "2. Browser, headless Chromium (seconds from navigation start / Enter / nav click; first = first load of the "
        "size, "
        "new browser context and cold server cache; repeat = median of new tabs in a warm context; negative 'after' = "
        "visible before the run ended)",
        head,
        rows,
    )


# ----------------------------------------------------------------------------- 3. memory


class RssSampler:
    """Peak RSS of one process, sampled every 50 ms on a background thread."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.proc = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def rss(self) -> int:
        r = self.proc.memory_info().rss
        self.peak = max(self.peak, r)
        return r

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            try:
                self.rss()
            except Exception:  # noqa: BLE001 - the server may be stopping
                return

    def stop(self) -> None:
        self._stop.set()
        self._t.join()


def server_pid(base: str) -> int:
    import psutil

    port = base.rsplit(":", 1)[1]
    for child in psutil.Process().children(recursive=True):
        try:
            cmd = child.cmdline()
        except psutil.Error:
            continue
        if "streamlit" in " ".join(cmd) and port in cmd:
            return child.pid
    raise RuntimeError(f"no streamlit child process on port {port}")


MB = 1024 * 1024


def memory_one_session(browser, size: str, edits: int) -> dict:
    from tests.helpers.browser import streamlit_server

    with streamlit_server() as base:
        sampler = RssSampler(server_pid(base))
        idle = sampler.rss()
        ctx, page = new_page(browser)
        try:
            page.goto(f"{base}/?{qs(size)}", wait_until="commit")
            wait_run(page, 0)
            quiet_finish(page, 0)
            for name in list(PAGE_FILES)[1:]:
                t = now(page)
                sidebar_nav(page, name)
                wait_run(page, t)
                quiet_finish(page, t)
            pages = sampler.rss()
            peak_pages = sampler.peak
            t = now(page)
            sidebar_nav(page, "tokens")
            wait_run(page, t)
            quiet_finish(page, t)
            for k in range(edits):
                t = edit_first_x_cell(page, f"{0.3 + 0.0111 * (k + 1):.4f}")
                wait_run(page, t)
                quiet_finish(page, t)
            t = now(page)
            sidebar_nav(page, "softmax")
            wait_run(page, t)
            quiet_finish(page, t)
            after_edits = sampler.rss()
        finally:
            ctx.close()
        sampler.stop()
        return {
            "idle": idle / MB,
            "pages": pages / MB,
            "peak_pages": peak_pages / MB,
            "edits": after_edits / MB,
            "peak": sampler.peak / MB,
            "n_edits": edits,
        }


def memory_many_sessions(browser, size: str, sessions: int) -> dict:
    from tests.helpers.browser import streamlit_server

    with streamlit_server() as base:
        sampler = RssSampler(server_pid(base))
        idle = sampler.rss()
        series = []
        for seed in range(sessions):
            ctx, page = new_page(browser)
            try:
                page.goto(f"{base}/softmax?{qs(size, seed=str(seed))}", wait_until="commit")
                wait_heat(page)
                wait_run(page, 0)
                quiet_finish(page, 0)
            finally:
                ctx.close()
            series.append(sampler.rss() / MB)
        sampler.stop()
        return {"idle": idle / MB, "series": series, "peak": sampler.peak / MB}


def memory_tables(one: dict[str, dict], many: dict, many_size: str) -> str:
    sizes = list(one)
    head = ["server RSS (MB)"] + [label(s) for s in sizes]
    rows = [
        ["idle server (fresh, before any session)"] + [f"{one[s]['idle']:.0f}" for s in sizes],
        ["after one session loaded and visited all 9 pages"] + [f"{one[s]['pages']:.0f}" for s in sizes],
        ["  peak while visiting the pages"] + [f"{one[s]['peak_pages']:.0f}" for s in sizes],
        [f"after {one[sizes[0]]['n_edits']} edits of X (tokens page), then Softmax"]
        + [f"{one[s]['edits']:.0f}" for s in sizes],
        ["  peak over the whole session"] + [f"{one[s]['peak']:.0f}" for s in sizes],
        ["budget (issue 4)"] + [f"{BUDGET_RSS_MB:.0f}" for _ in sizes],
    ]
    t1 = table("3a. Memory, one session (fresh server per column)", head, rows)
    s = many["series"]
    half = len(s) // 2
    t2 = (
        f"3b. Cache bound: {len(s)} sequential sessions at {label(many_size)}, seeds 0..{len(s) - 1}, each a new "
        f"browser context "
        f"closed after loading /softmax (fresh server)\n"
        f"  idle {many['idle']:.0f} MB; RSS after each session: " + " ".join(f"{v:.0f}" for v in s) + "\n"
        f"  max RSS after a session {max(s):.0f} MB; peak sampled {many['peak']:.0f} MB; "
        f"growth over the 2nd half {s[-1] - s[half - 1]:+.0f} MB vs 1st half {s[half - 1] - s[0]:+.0f} MB"
    )
    return t1 + "\n\n" + t2


# ----------------------------------------------------------------------------- main


def facts(browser_version: str) -> str:
    import altair
    import numpy
    import streamlit

    return (
        f"machine: cpu_count={os.cpu_count()} {platform.machine()} · python {platform.python_version()} · numpy "
        f"{numpy.__version__} · "
        f"streamlit {streamlit.__version__} · altair {altair.__version__} · chromium {browser_version}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repeats (under 3 minutes)")
    ap.add_argument("--apptest-worker", metavar="SIZE", help=argparse.SUPPRESS)
    ap.add_argument("--warm", type=int, default=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.apptest_worker:
        print(json.dumps(apptest_worker(args.apptest_worker, args.warm)))
        return

    from playwright.sync_api import sync_playwright

    from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, streamlit_server

    if args.quick:
        sizes, warm, loads, edits = ["the_cat_sat", "256x64x64", "2048x64x64"], 2, 2, 1
        mem_sizes, mem_edits, many_sessions = ["2048x64x64"], 10, 6
    else:
        sizes, warm, loads, edits = ["the_cat_sat", "256x64x64", "1024x64x64", "2048x64x64", "2048x256x256"], 5, 5, 3
        mem_sizes, mem_edits, many_sessions = ["2048x64x64", "2048x256x256"], 10, 18
    many_size = "1024x64x64"
    t_start = time.perf_counter()
    print("running AppTest ...", file=sys.stderr, flush=True)
    at = run_apptest(sizes, warm)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            print("running the browser ...", file=sys.stderr, flush=True)
            with streamlit_server() as base:
                br = run_browser(browser, base, sizes, loads, edits)
            print("measuring memory ...", file=sys.stderr, flush=True)
            one = {s: memory_one_session(browser, s, mem_edits) for s in mem_sizes}
            many = memory_many_sessions(browser, many_size, many_sessions)
            version = browser.version
        finally:
            browser.close()
    print(facts(version))
    print(
        f"mode: {'quick' if args.quick else 'full'} · AppTest warm reruns per page {warm} · browser loads {loads}, "
        f"edits {edits} per size · "
        f"total {time.perf_counter() - t_start:.0f} s\n"
    )
    print(apptest_table(at), end="\n\n")
    print(browser_table(br), end="\n\n")
    print(memory_tables(one, many, many_size), end="\n\n")
    print(flags(at, br, one, many))


def flags(at: dict, br: dict, one: dict, many: dict) -> str:
    """Everything over the issue's budgets (or the brief's thresholds)."""
    out = []
    for s, r in at.items():
        for name, p in r["pages"].items():
            for what, v in (("cold", p["cold"]), ("warm", med(p["warm"]))):
                if v is not None and v > BUDGET_RERUN_S:
                    out.append(f"server rerun {label(s)} {name} {what} {v:.2f} s > {BUDGET_RERUN_S} s")
        if r["entry"] > BUDGET_RERUN_S:
            out.append(f"server entry run {label(s)} {r['entry']:.2f} s > {BUDGET_RERUN_S} s")
    for s, r in br.items():
        for what, xs in (
            ("first load (new browser context)", r["load"][:1]),
            ("repeat load", r["load"][1:]),
            ("nav to Softmax after an edit", r["edit"]),
        ):
            worst = max((x["after"] for x in xs), default=0.0)
            if worst > BUDGET_HEAT_S:
                out.append(f"browser {label(s)} {what}: heatmap {worst:.2f} s after run finished > {BUDGET_HEAT_S} s")
        if not all(x["applied"] for x in r["edit"]):
            out.append(f"browser {label(s)}: an edit did not reach the Softmax page")
    for s, r in one.items():
        if r["peak"] > BUDGET_RSS_MB:
            out.append(
                f"memory {label(s)}: peak RSS {r['peak']:.0f} MB > {BUDGET_RSS_MB:.0f} MB (after pages "
                f"{r['pages']:.0f}, "
                f"after edits {r['edits']:.0f})"
            )
    if many["peak"] > BUDGET_RSS_MB:
        out.append(f"memory, many sessions: peak RSS {many['peak']:.0f} MB > {BUDGET_RSS_MB:.0f} MB")
    return "Over budget: " + ("none" if not out else "\n  " + "\n  ".join(out))


if __name__ == "__main__":
    main()
