"""How many messages each step page sends: on load, and for one edit of a grid cell. A count, not a time: the same on
any machine, so it is the figure to compare before and after a change of what a page draws.

The browser renders every message of a run before it shows the new heatmap (docs/performance.md, *Where an edit's
time goes*), so an edit's time grows with its count. For each step page of ``--preset`` (default "The cat sat"), one
tab over Streamlit's own protocol (benchmarks/st_client.py) opens ``/<page>?preset=<preset>`` and counts the
ForwardMsgs of that run (*load*: from the request to its ``script_finished``, both counted), then types a new number
into the first input grid the page shows (the X tab beside a result; X on the Tokens page, W_q on the Weights page)
and counts that run's (*edit*). Nothing is opened: what a learner sees first. ``--before PATH`` counts another
checkout beside this one (e.g. the main branch in a second work tree); ``--kinds`` prints each run's messages by
kind.
Run: python benchmarks/bench_messages.py [--preset the_cat_sat] [--before ../main] [--kinds]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_floor import checkout_server  # noqa: E402
from benchmarks.st_client import Run, Tab, TabError, find_widget, grid_frame  # noqa: E402
from tests.helpers.browser import streamlit_server  # noqa: E402

PAGES = ("tokens", "weights", "qkv", "scores", "scaling", "softmax", "output", "reading")
GRIDS = ("X", "W_q", "W_k", "W_v")


async def count(base: str, page: str, preset: str) -> tuple[Run, Run]:
    """The load run of ``page`` and the run of one edit of its first input grid, in a new tab."""
    tab = Tab(base)
    try:
        load = await tab.open(page=page, query=f"preset={preset}")
        if load.problems:
            raise TabError(f"{page}: {load.problems}")
        grid = next((g for g in (find_widget(tab, "editor", n) for n in GRIDS) if g), None)
        if grid is None:
            raise TabError(f"widget not found: no input grid on {page}")
        frame = grid_frame(grid)  # type: ignore[arg-type]
        edit = await tab.edit_cells(grid, {(0, str(frame.columns[0])): "0.123457"})  # type: ignore[arg-type]
        if edit.problems:
            raise TabError(f"{page}: {edit.problems}")
        return load, edit
    finally:
        await tab.close()


def _kinds(run: Run) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(run.kinds.items(), key=lambda kv: (-kv[1], kv[0])))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="the_cat_sat")
    ap.add_argument("--before", type=Path, help="another checkout of the app, counted beside this one")
    ap.add_argument("--kinds", action="store_true", help="print each run's messages by kind")
    args = ap.parse_args()
    with contextlib.ExitStack() as stack:
        apps = {"now": stack.enter_context(streamlit_server())}
        if args.before:
            apps["before"] = stack.enter_context(checkout_server(args.before.resolve()))
        counts = {v: {p: asyncio.run(count(base, p, args.preset)) for p in PAGES} for v, base in apps.items()}
    head = f"{'step page':10}" + "".join(f"{f'load {v}':>13}{f'edit {v}':>13}" for v in apps)
    print(f"messages per run, preset {args.preset} (nothing opened)")
    print(head)
    for p in PAGES:
        print(f"{p:10}" + "".join(f"{counts[v][p][0].messages:13}{counts[v][p][1].messages:13}" for v in apps))
    if args.kinds:
        for v in apps:
            for p in PAGES:
                load, edit = counts[v][p]
                print(f"{v} {p} load: {_kinds(load)}\n{v} {p} edit: {_kinds(edit)}")


if __name__ == "__main__":
    main()
