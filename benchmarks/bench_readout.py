"""The Logit lens and Attribution pages against the floor app, side by side in one run: choose a position → its
numbers shown; type a token → its numbers shown (issue 33's goal: choosing a position or a token for the lens and for
the attribution ≤ 1.5× the floor app's edit).

The floor app and its edit are bench_floor's (one 4 × 4 editor, one 3 × 3 heatmap; edit a cell → the heatmap shows
the new number), measured just before each repeat, each in a new browser context at 1400 × 1000, on the shipped
model. A position is timed from the click on it in the box to the page's sentence naming it (the lens's first-top-1
sentence, the attribution's sum, each computed for that position); a token from Enter to the lens's line titled with
it, or the attribution's sum naming it. Prints medians, ratios and the machine's load average. Needs
/usr/bin/chromium and playwright.
Run: python benchmarks/bench_readout.py [--repeats 7]
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

from tests.helpers.browser import guarded_context, runs, settle  # noqa: E402

POSITIONS = (5, 17, 20, 8)  # 0-based; the pages open on position 12 (the first of the repeated half)
TOKENS = ("ba", "fu", "go", "le")
PAGES = {  # page: (what names the position, what names the token)
    "logit_lens": ("At position {p} (“", "“{tok}”: its probability, layer by layer"),
    "attribution": ("At position {p} (“", "token “{tok}”: embeddings"),
}
MEASURES = [f"{page}: {what}" for page in PAGES for what in ("position", "token")]


def _example() -> list[str]:
    from attention.model import builtin, induction

    m = builtin("induction")
    return m.pieces([int(i) for i in induction.history("induction")["example"]])


def _one(browser, url: str, page_name: str, rep: int, words: list[str]) -> tuple[float, float]:
    """One position chosen and one token typed on ``page_name``, in a new browser context."""
    position, token = POSITIONS[rep % len(POSITIONS)], TOKENS[rep % len(TOKENS)]
    said_position, said_token = PAGES[page_name]
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as ctx:
        page = ctx.new_page()
        page.goto(f"{url}/{page_name}")
        settle(page)
        page.locator("[data-testid='stVegaLiteChart'] svg").first.wait_for(timeout=60_000)
        box = page.get_by_role("combobox", name="Position (its stream predicts the token after it)")
        box.scroll_into_view_if_needed()
        box.click()
        option = page.get_by_role("option", name=f"{position + 1}: {words[position]}", exact=True)
        option.wait_for()
        mark = runs(page)
        t0 = time.perf_counter()
        option.click()
        until_text(page, said_position.format(p=position + 1))
        t_position = time.perf_counter() - t0
        settle(page, mark)
        typed = page.get_by_role(
            "textbox", name="Token to follow (its text; empty: the model's prediction), then press Enter"
        )
        typed.fill(token)
        mark = runs(page)
        t0 = time.perf_counter()
        typed.press("Enter")
        until_text(page, said_token.format(tok=token))
        t_token = time.perf_counter() - t0
        settle(page, mark)
    return t_position, t_token


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    words = _example()
    floor: list[tuple[float, float]] = []
    times: list[tuple[float, ...]] = []
    start = os.getloadavg()
    with contextlib.ExitStack() as stack:
        floor_url, apps, browser = servers(stack, None)
        for rep in range(args.repeats + 1):  # the first round warms every server and is not counted
            f = floor_one(browser, "floor", f"{floor_url}/", rep)
            measured = tuple(t for name in PAGES for t in _one(browser, apps["now"], name, rep, words))
            if rep:
                floor.append(f)
                times.append(measured)
        browser.close()
    f_edit = statistics.median(t for _, t in floor)
    print(f"floor app: edit a cell -> new heatmap {f_edit:.2f} s")
    for k, name in enumerate(MEASURES):
        med = statistics.median(t[k] for t in times)
        print(f"{name:<24} {med:6.2f} s ({med / f_edit:.2f}x the floor's edit)")
    end = os.getloadavg()
    print(f"medians of {args.repeats} repeats; goal: each <= 1.5x the floor app's edit")
    print(
        f"machine load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in start)} at the start, "
        f"{', '.join(f'{x:.2f}' for x in end)} at the end; {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
