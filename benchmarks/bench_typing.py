"""Typed numbers lost, counted in Chromium: scripted edits typed as people type them, with no pause for the page,
once with four processes burning CPU beside the server and once with the page's CPU throttled 4× (CDP
``Emulation.setCPUThrottlingRate``). The goal is 0 lost.

The cases (each a share of the edits): the learner's steps (double-click, a number, Enter) on every step page with a
grid; typing down a column (type, Enter, ...); a second edit right after the first; Tab along a row; a block pasted
from a spreadsheet (tab-separated rows); a challenge's grid; QK-norm's gains grid (a tiny Qwen3 GGUF listed by the
server). Every value typed is distinct. An edit counts as lost when, once the editor has no value waiting for the
server's echo, its cell does not show the value (the page then draws the server's numbers), or when the page is drawn
afresh from its address after a case and the cell no longer shows it, or when a message on the page says a value did
not land or was typed over numbers no longer shown. Prints the edits and lost counts by case and mode, the load
average, and the time taken.
Run: python benchmarks/bench_typing.py [--edits 300] [--modes busy,throttle]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers import gguf_files  # noqa: E402
from tests.helpers.browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    burning,
    guarded_context,
    landed,
    ready,
    rerun,
    server_listing,
)

STEP_PAGES = ("tokens", "weights", "qkv", "scores", "scaling", "softmax", "output")
CHALLENGE = "Make 'sat' look back at 'The'"
INDEX = "(gs, p) => gs.findIndex(g => !!g.closest(`[class*='st-key-${p}']`) && g.offsetParent !== null)"
SAID_LOST = ("did not land", "no longer shown", "did not reach")
# each case: its share of the edits and the edits one round types
SHARES = {
    "learner": (42, 1),
    "column": (60, 3),
    "second": (50, 2),
    "tab": (48, 4),
    "paste": (48, 6),
    "challenge": (26, 1),
}
SHARES["gains"] = (26, 1)
PASTE = """(text) => { const data = new DataTransfer(); data.setData('text/plain', text);
  document.activeElement.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true})); }"""


class Typist:
    """One mode's page and counts: values typed, checked against the cells once the server has echoed them."""

    def __init__(self, page, base: str, gains_query: str) -> None:
        self.pg, self.base, self.gains_query = page, base, gains_query
        self.k = 0
        self.typed: dict[str, int] = {}
        self.lost: dict[str, int] = {}
        self.notes: list[str] = []

    def value(self) -> str:
        self.k += 1
        return f"{1 + (self.k % 400) * 0.01 + (self.k // 400) * 5:.2f}"

    def open(self, page: str, query: str = "preset=the_cat_sat") -> None:
        self.pg.goto(f"{self.base}/{page}?{query}")
        ready(self.pg)

    def grid(self, key: str = "ed-") -> int:
        i = self.pg.locator(".mgrid").evaluate_all(INDEX, key)
        if i < 0:
            raise RuntimeError(f"no visible editor keyed {key}")
        return i

    def cell(self, grid: int, r: int, c: int):  # noqa: ANN201 - a Playwright locator
        return self.pg.locator(".mgrid").nth(grid).locator(f"td[data-r='{r}'][data-c='{c}']")

    def learner(self, grid: int, r: int, c: int, value: str) -> None:
        self.cell(grid, r, c).dblclick()
        self.pg.keyboard.type(value)
        self.pg.keyboard.press("Enter")

    def check(self, case: str, grid: int, typed: dict[tuple[int, int], str]) -> None:
        """Count the values not shown once nothing waits for the server's echo (or said not to have landed)."""
        landed(self.pg, grid, timeout_ms=120_000)
        ready(self.pg)
        self.typed[case] = self.typed.get(case, 0) + len(typed)
        for (r, c), v in typed.items():
            text = self.cell(grid, r, c).text_content() or ""
            try:
                ok = abs(float(text) - float(v)) <= 5e-4 * max(1.0, abs(float(v)))
            except ValueError:
                ok = False
            if not ok:
                self.lost[case] = self.lost.get(case, 0) + 1
                self.notes.append(f"{case}: typed {v} at ({r}, {c}), shows {text!r}")
        said = " ".join(self.pg.get_by_role("alert").all_text_contents())
        if any(s in said for s in SAID_LOST):
            self.notes.append(f"{case}: the page said {said[:200]!r}")
            self.lost[case] = self.lost.get(case, 0) + len(typed)

    def afresh(self, case: str, page: str, key: str, typed: dict[tuple[int, int], str]) -> None:
        """The page drawn afresh from its address: the last values typed are still there."""
        query = self.pg.url.partition("?")[2]
        self.open(page, query)
        grid = self.grid(key)
        for (r, c), v in typed.items():
            text = self.cell(grid, r, c).text_content() or ""
            try:
                ok = abs(float(text) - float(v)) <= 5e-4 * max(1.0, abs(float(v)))
            except ValueError:
                ok = False
            if not ok:
                self.lost[case] = self.lost.get(case, 0) + 1
                self.notes.append(f"{case}: {v} at ({r}, {c}) gone when drawn afresh: {text!r}")


def _learner(t: Typist, rounds: int) -> None:
    for i in range(rounds):
        page = STEP_PAGES[i % len(STEP_PAGES)]
        t.open(page)
        grid = t.grid()
        typed = {(i % 3, 1 + i % 2): t.value()}
        for (r, c), v in typed.items():
            t.learner(grid, r, c, v)
        t.check("learner", grid, typed)


def _on_x(t: Typist, case: str, rounds: int, one: Callable[[int, int], dict[tuple[int, int], str]]) -> None:
    t.open("tokens")
    typed: dict[tuple[int, int], str] = {}
    for i in range(rounds):
        grid = t.grid("ed-X-")
        typed = one(grid, i)
        t.check(case, grid, typed)
    t.afresh(case, "tokens", "ed-X-", typed)


def _column(t: Typist, grid: int, i: int) -> dict[tuple[int, int], str]:
    col = i % 4
    t.cell(grid, 0, col).click()
    typed = {}
    for r in range(3):
        typed[(r, col)] = t.value()
        t.pg.keyboard.type(typed[(r, col)])
        t.pg.keyboard.press("Enter")
    return typed


def _second(t: Typist, grid: int, i: int) -> dict[tuple[int, int], str]:
    typed = {(0, i % 4): t.value(), (2, (i + 1) % 4): t.value()}
    for (r, c), v in typed.items():
        t.learner(grid, r, c, v)
    return typed


def _tab(t: Typist, grid: int, i: int) -> dict[tuple[int, int], str]:
    row = i % 3
    t.cell(grid, row, 0).dblclick()
    typed = {}
    for c in range(4):
        typed[(row, c)] = t.value()
        t.pg.keyboard.type(typed[(row, c)])
        t.pg.keyboard.press("Tab")
    return typed


def _paste(t: Typist, grid: int, i: int) -> dict[tuple[int, int], str]:
    r0, c0 = i % 2, i % 2
    t.cell(grid, r0, c0).click()
    typed = {(r0 + r, c0 + c): t.value() for r in range(2) for c in range(3)}
    rows = ["\t".join(typed[(r0 + r, c0 + c)] for c in range(3)) for r in range(2)]
    t.pg.evaluate(PASTE, "\r\n".join(rows) + "\r\n")
    return typed


def _challenge(t: Typist, rounds: int) -> None:
    t.open("challenges", "")
    if not t.pg.get_by_role("heading", name=CHALLENGE).count():
        t.pg.get_by_test_id("stSelectbox").filter(has_text="A built-in challenge").locator("input").first.click()
        t.pg.keyboard.type(CHALLENGE[:20], delay=50)
        t.pg.get_by_role("option", name=CHALLENGE).first.wait_for(timeout=60_000)
        with rerun(t.pg):
            t.pg.keyboard.press("Enter")
    with rerun(t.pg):
        t.pg.get_by_role("button", name="Start").first.click()
    ready(t.pg)
    for i in range(rounds):
        grid = t.grid("ed-W_k-")
        typed = {(i % 3, i % 4): t.value()}
        t.learner(grid, *next(iter(typed)), typed[next(iter(typed))])
        t.check("challenge", grid, typed)


def _gains(t: Typist, rounds: int) -> None:
    t.open("qkv", t.gains_query)
    typed: dict[tuple[int, int], str] = {}
    for i in range(rounds):
        grid = t.grid("gains")
        typed = {(i % 4, i % 2): t.value()}
        t.cell(grid, *next(iter(typed))).scroll_into_view_if_needed()
        t.learner(grid, *next(iter(typed)), typed[next(iter(typed))])
        t.check("gains", grid, typed)


def run_mode(browser, base: str, gains_query: str, mode: str, edits: int) -> Typist:
    throttle = 4 if mode == "throttle" else 1
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as ctx:
        pg = ctx.new_page()
        ctx.new_cdp_session(pg).send("Emulation.setCPUThrottlingRate", {"rate": throttle})
        t = Typist(pg, base, gains_query)
        scale = edits / sum(n for n, _ in SHARES.values())
        rounds = {case: max(1, round(n * scale / per)) for case, (n, per) in SHARES.items()}
        _learner(t, rounds["learner"])
        _on_x(t, "column", rounds["column"], lambda g, i: _column(t, g, i))
        _on_x(t, "second", rounds["second"], lambda g, i: _second(t, g, i))
        _on_x(t, "tab", rounds["tab"], lambda g, i: _tab(t, g, i))
        _on_x(t, "paste", rounds["paste"], lambda g, i: _paste(t, g, i))
        _challenge(t, rounds["challenge"])
        _gains(t, rounds["gains"])
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--edits", type=int, default=300, help="edits per mode (shared among the cases)")
    ap.add_argument("--modes", default="busy,throttle")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from attention.ui.address.inside import head_param
    from attention.ui.core import models

    gguf = gguf_files.write(Path(tempfile.mkdtemp()) / "q3.gguf", "qwen3")
    with server_listing(f"q3={gguf}") as base, sync_playwright() as p:
        ids = models.first_text("server:q3")[1]
        gains_query = urlencode({"preset": "model", "mh": head_param(models.HeadRef("server:q3", ids, 1, 0))})
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        for mode in args.modes.split(","):
            t0 = time.perf_counter()
            with burning(4 if mode == "busy" else 0, seconds=3600):
                t = run_mode(browser, base, gains_query, mode, args.edits)
                load = os.getloadavg()
            took = time.perf_counter() - t0
            label = "4 busy processes beside the server" if mode == "busy" else "page CPU throttled 4x"
            print(f"{mode} ({label}): {sum(t.typed.values())} edits, {sum(t.lost.values())} lost, {took:.0f} s")
            for case in SHARES:
                print(f"  {case:10} {t.typed.get(case, 0):4} edits {t.lost.get(case, 0):3} lost")
            print(f"  load average at the end (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in load)}")
            for note in t.notes[:20]:
                print("  lost:", note)
        browser.close()


if __name__ == "__main__":
    main()
