"""The Every head page against the floor app, side by side in one run: page load → every heatmap drawn; press
Ablate → the new loss shown, and → the whole run drawn; choose another position → its prediction shown (issue 23's
goals: an ablation → new predictions ≤ 1.5× the floor app's edit; switching layer or head ≤ 1.5× the floor app's
edit: measured as the page's two switches, its position box (which prediction is read) and a head's "Open … on the
step pages" (the session becomes that head; timed to the page saying so), and on a step page opened at a head, its
"Head shown on these pages" box (the step pages become another head; timed to the run's end with the panel naming
the new head and the heatmap drawn)).

The floor app and its edit are bench_floor's (one 4 × 4 editor, one 3 × 3 heatmap; edit a cell → the heatmap shows
the new number), measured just before each repeat of this page, each in a new browser context at 1400 × 1000. An
ablation is timed from the click to the repeated half's loss, computed by the engine, being written on the page, and
on to the run's end with every element drawn (the pressed button reading Restore). A switch is timed from the click
on a position in the box to that position's next-token probability and loss, computed by the engine, being written.
``--before PATH``: also serve the app from another checkout (e.g. the main branch in a second work tree), measured
beside this one in each repeat (which of the two comes first alternates). Prints medians, ratios and the machine's
load average. Needs /usr/bin/chromium and playwright.
``--head-on-steps``: only the floor app and the head switch on the step pages (more repeats in the same time).
Run: python benchmarks/bench_inside.py [--repeats 7] [--before ../main] [--head-on-steps]
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

from bench_floor import _one as floor_one  # noqa: E402
from bench_floor import _ready, servers  # noqa: E402
from waits import until, until_drawn, until_text  # noqa: E402

from tests.helpers.browser import guarded_context, head_button, runs, settle  # noqa: E402

HEADS = ((1, 0), (0, 1), (1, 1), (0, 0))
POSITIONS = (5, 17, 20, 8)  # 0-based; the page opens on position 12 (the first of the repeated half)
MEASURES = (
    "load",
    "ablate: new loss",
    "ablate: all drawn",
    "switch position",
    "open a head",
    "head on steps",
    "head on steps, by key",
)

# the second metric (the loss with the head ablated) shows ``want``
SECOND_METRIC_SHOWS = """(want) =>
  document.querySelectorAll("[data-testid='stMetric']")[1]?.textContent.includes(want)"""


def _example() -> list[int]:
    from attention.model import induction

    return [int(i) for i in induction.history("induction")["example"]]


def _loss_after(layer: int, head: int) -> str:
    """The repeated half's loss the page writes once this head is zero-ablated (the engine's own functions)."""
    from attention.model import ablate, builtin, induction

    ids = _example()
    run = builtin("induction").run(ids, [ablate(layer, head)])
    return f"{induction.half_losses(run.logits[None], np.array(ids)[None], len(ids) // 2)[1]:.2f} nats"


DIGITS = 4  # the significant digits a page shows by default (Session.digits)


def _prediction_at(position: int) -> tuple[str, str]:
    """The position box's label for ``position`` and the probability and loss of the text's next token there, as
    the page writes them, from the engine's unablated run (the softmax and the cross-entropy written out)."""
    from attention import charts
    from attention.model import builtin

    m = builtin("induction")
    ids = _example()
    logits = m.run(ids).logits[position]  # (V,)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    target = ids[position + 1]
    label = f"{position + 1}: {m.pieces([ids[position]])[0]}"
    shown = charts.decimals_for(np.asarray([p[target]]), DIGITS).format(p[target])  # as the page
    return label, f"probability {shown}, loss {-np.log(p[target]):.2f} nats"


def _switch_on_steps(browser, url: str, rep: int, by_key: bool = False) -> float:
    """On the Softmax page opened at layer 2 · head 1 (by its address), choose another head in the box under the
    results: the time from the choice to the run's end with the panel naming the new head and the heatmap drawn.
    The choice is a click on the option, or (``by_key``) the Enter that picks it after its name was typed in the box,
    as the floor's edit is timed from the Enter that commits the typed cell (a click first waits for Playwright's
    checks that the option is visible, stable and not covered)."""
    layer, head = HEADS[1 + rep % (len(HEADS) - 1)]  # never the head already shown
    mh = "induction~2.1~" + ".".join(str(i) for i in _example()) + "~"
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as ctx:
        page = ctx.new_page()
        page.goto(f"{url}/softmax?preset=model&mh={mh}")
        _ready(page)
        box = page.get_by_role("combobox", name="Head shown on these pages")
        if box.count() == 0:  # a version without the head box
            return float("nan")
        box.scroll_into_view_if_needed()
        box.click()
        option = page.get_by_role("option", name=f"layer {layer + 1} · head {head + 1}", exact=True)
        option.wait_for()
        if by_key:  # the box filters its options by what is typed: the head's name leaves that one option, highlighted
            page.keyboard.type(f"layer {layer + 1} · head {head + 1}")
            page.get_by_role("option").filter(has_text=f"layer {layer + 1} · head {head + 1}").wait_for()
        mark = runs(page)
        t0 = time.perf_counter()
        page.keyboard.press("Enter") if by_key else option.click()
        until_text(page, f"What the model predicts, with layer {layer + 1} · head {head + 1} as it is here")
        settle(page, mark)
        until_drawn(page)
        return time.perf_counter() - t0


def _one(browser, url: str, rep: int) -> tuple[float, ...]:
    """One load of the page, one switch of position, one ablation and one head opened, in a new browser context."""
    layer, head = HEADS[rep % len(HEADS)]
    want = _loss_after(layer, head)
    label, said = _prediction_at(POSITIONS[rep % len(POSITIONS)])
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as ctx:
        page = ctx.new_page()
        t0 = time.perf_counter()
        page.goto(url)
        until_drawn(page, count=4)
        t_load = time.perf_counter() - t0
        box = page.get_by_role("combobox", name="Position (the prediction is for the token after it)")
        box.scroll_into_view_if_needed()
        box.click()
        option = page.get_by_role("option", name=label, exact=True)
        option.wait_for()
        mark = runs(page)
        t0 = time.perf_counter()
        option.click()
        until_text(page, said, within="[data-testid='stMarkdown']")
        t_switch = time.perf_counter() - t0
        settle(page, mark)
        button = head_button(page, f"Ablate layer {layer + 1} · head {head + 1}")  # the head chosen first, untimed
        mark = runs(page)
        t0 = time.perf_counter()
        button.click()
        until(page, SECOND_METRIC_SHOWS, want, timeout=30_000)
        t_new = time.perf_counter() - t0
        settle(page, mark)
        until_text(page, f"Restore layer {layer + 1} · head {head + 1} (zero-ablated)", within="button")
        t_drawn = time.perf_counter() - t0
        opener = head_button(page, f"Open layer {2 - layer} · head {head + 1} on the step pages")
        if opener.count() == 0:  # a version without the head opener
            return t_load, t_new, t_drawn, t_switch, float("nan"), float("nan"), float("nan")
        opener.scroll_into_view_if_needed()
        t0 = time.perf_counter()
        opener.click()
        until_text(page, f"The step pages now show layer {2 - layer} · head {head + 1}")
        t_open = time.perf_counter() - t0
    steps = url.removesuffix("/every_head")
    return (
        t_load,
        t_new,
        t_drawn,
        t_switch,
        t_open,
        _switch_on_steps(browser, steps, rep),
        _switch_on_steps(browser, steps, rep, by_key=True),
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--before", type=Path, help="another checkout of the app, measured beside this one")
    ap.add_argument("--head-on-steps", action="store_true", help="time only the head switch on the step pages")
    args = ap.parse_args()

    versions = ("now", "before") if args.before else ("now",)
    floor: list[tuple[float, float]] = []
    times: dict[str, list[tuple[float, ...]]] = {v: [] for v in versions}
    start = os.getloadavg()
    with contextlib.ExitStack() as stack:
        floor_url, apps, browser = servers(stack, args.before)
        for rep in range(args.repeats + 1):  # the first round warms every server and is not counted
            f = floor_one(browser, "floor", f"{floor_url}/", rep)
            order = versions if rep % 2 else versions[::-1]  # each version in turn measured right after the floor
            if args.head_on_steps:  # the floor's edit and the switch on the step pages, nothing else
                a = {
                    v: (float("nan"),) * 5
                    + (_switch_on_steps(browser, apps[v], rep), _switch_on_steps(browser, apps[v], rep, by_key=True))
                    for v in order
                }
            else:
                a = {v: _one(browser, f"{apps[v]}/every_head", rep) for v in order}
            if rep:
                floor.append(f)
                for v in versions:
                    times[v].append(a[v])
        browser.close()
    f_load = statistics.median(t for t, _ in floor)
    f_edit = statistics.median(t for _, t in floor)
    print(f"floor app: load -> heatmap drawn {f_load:.2f} s, edit a cell -> new heatmap {f_edit:.2f} s")
    print(f"{'Every head':12}" + "".join(f"{m:>24}" for m in MEASURES))
    for v in versions:
        med = [statistics.median(t[k] for t in times[v]) for k in range(len(MEASURES))]
        ratios = [med[0] / f_load, *(x / f_edit for x in med[1:])]
        print(
            f"{v:12}"
            + "".join(f"{f'{x:.2f} s ({r:.2f}x)' if x == x else 'n/a':>24}" for x, r in zip(med, ratios, strict=True))
        )
    end = os.getloadavg()
    print(f"ratios: load over the floor's load, the others over the floor's edit; medians of {args.repeats} repeats")
    print(
        f"machine load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in start)} at the start, "
        f"{', '.join(f'{x:.2f}' for x in end)} at the end; {os.cpu_count()} cores"
    )
    print("goals: an ablation -> new predictions <= 1.5x, switching layer or head <= 1.5x the floor app's edit")


if __name__ == "__main__":
    main()
