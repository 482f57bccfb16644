"""Where an edit's time goes in the browser: the floor app, the floor app with this app's heatmap, and the Softmax page,
side by side in one run, each edit timed in the page's own clock (``performance.now()``).

For one edit of a grid cell (type a value, press Enter), measured from the Enter:

- **sent**: the edit leaves the page (the grid's own commit; the same code in all three);
- **chart msg**: the run's heatmap element is handed to the page's message handler (a one-off timer inside the
  server found it sent ~10 ms after the edit arrived, so what is later is mostly the page's main thread, busy);
- **finished**: the run's ``script_finished`` message is handled;
- **shown**: the heatmap's text holds the new number (a MutationObserver on the page);
- **msgs**: messages of the edit's run.

The apps: ``floor`` (benchmarks/floor/floor_app.py: a 4 × 4 editor and a 3 × 3 Altair heatmap), ``floor + our
heatmap`` (benchmarks/floor/floor_heatmap_app.py: the same editor, the 3 × 3 weights drawn by the Softmax page's chart
code) and ``softmax page`` (this app, /softmax?preset=the_cat_sat, W_q[1, 1] in the input tabs). Each repeat uses a
new browser context per app, in turn, so the machine's noise hits all three. Prints medians and each app's shown
time over the floor's. Needs /usr/bin/chromium and playwright.
Run: python benchmarks/bench_edit_parts.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_floor import (  # noqa: E402
    _edit_for,
    _ready,
    floor_weights,
    last_visible_grid,
    retried,
    type_into_cell,
)
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, guarded_context, rerun, streamlit_server  # noqa: E402

# Before any page script: note when each websocket message is handed to the page and when the page sends, and when
# Enter is pressed (capture phase, so before the grid's own handler).
_CLOCK = """
(() => {
  const Native = window.WebSocket; window.__got = []; window.__sent = [];
  function Timed(...args) {
    const ws = new Native(...args);
    ws.addEventListener('message', () => window.__got.push(performance.now()));
    const send = ws.send.bind(ws); ws.send = d => { window.__sent.push(performance.now()); return send(d); };
    return ws;
  }
  Timed.prototype = Native.prototype;
  for (const k of ['CONNECTING', 'OPEN', 'CLOSING', 'CLOSED']) Timed[k] = Native[k];
  window.WebSocket = Timed;
  document.addEventListener('keydown', e => { if (e.key === 'Enter') window.__enter = performance.now(); }, true);
})();
"""
_WATCH = """(want) => {
  window.__shown = null; window.__got = []; window.__sent = [];
  const heatmap = () => document.querySelector("[data-testid='stVegaLiteChart']");  // the page's first chart
  const has = () => (heatmap()?.textContent ?? "").includes(want);
  new MutationObserver(() => { if (!window.__shown && has()) window.__shown = performance.now(); })
    .observe(document.body, {subtree: true, childList: true, characterData: true});
}"""
FIELDS = ("sent", "chart msg", "finished", "shown")


def _kind(payload: bytes) -> str:
    """A websocket message's kind: the element's type for a new element, else the message's type."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = ForwardMsg()
    msg.ParseFromString(payload)
    kind = msg.WhichOneof("type")
    if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
        return msg.delta.new_element.WhichOneof("type")
    return kind or "?"


def _floor_edit(rep: int, ours: bool) -> tuple[str, str]:
    """The value typed into the floor's cell (1, 1) and the text its heatmap then shows for weight (1, 1) (the floor
    writes ``.4f``; our chart code writes the page's format)."""
    from attention import charts

    value = str(2.0 + rep)
    a = floor_weights(value)
    return value, (charts.decimals_for(a, 4) if ours else "{:.4f}").format(a[1, 1])


def _one(browser, app: str, url: str, rep: int) -> dict[str, float]:
    """Load ``url`` in a new context, edit cell (1, 1) of the grid, and time the edit's parts in the page's clock."""
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as ctx:
        ctx.add_init_script(_CLOCK)
        page = ctx.new_page()
        kinds: list[str] = []
        page.on(
            "websocket",
            lambda ws: ws.on("framereceived", lambda p: kinds.append(_kind(bytes(p))) if not isinstance(p, str) else 0),
        )
        page.goto(url)
        _ready(page)
        if app == "softmax page":
            with rerun(page):
                page.get_by_role("tab", name="W_q").click()
            _ready(page)
            value, want = _edit_for("the_cat_sat", rep)
        else:
            value, want = _floor_edit(rep, ours=app != "floor")
        type_into_cell(page, last_visible_grid(page), value)
        page.wait_for_timeout(300)  # the page idle before the Enter
        page.evaluate(_WATCH, want)
        kinds.clear()
        page.keyboard.press("Enter")
        page.wait_for_function("() => window.__shown", timeout=10_000)
        page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(state="attached")
        page.wait_for_timeout(300)  # the run's last messages reach the Python side too
        t = page.evaluate("() => ({enter: __enter, shown: __shown, got: __got, sent: __sent})")
    got = [g - t["enter"] for g in t["got"]]
    at = {k: got[i] for i, k in reversed(list(enumerate(kinds[: len(got)])))}  # each kind's first message
    return {
        "sent": t["sent"][0] - t["enter"],
        "chart msg": at.get("arrow_vega_lite_chart", at.get("vega_lite_chart", float("nan"))),
        "finished": at.get("script_finished", float("nan")),
        "shown": t["shown"] - t["enter"],
        "msgs": float(len(kinds)),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    apps = ("floor", "floor + our heatmap", "softmax page")
    seen: dict[str, list[dict[str, float]]] = {a: [] for a in apps}
    retries = dict.fromkeys(apps, 0)
    with contextlib.ExitStack() as stack:
        urls = {
            "floor": stack.enter_context(streamlit_server("benchmarks/floor/floor_app.py")) + "/",
            "floor + our heatmap": stack.enter_context(streamlit_server("benchmarks/floor/floor_heatmap_app.py")) + "/",
            "softmax page": stack.enter_context(streamlit_server()) + "/softmax?preset=the_cat_sat",
        }
        browser = stack.enter_context(sync_playwright()).chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        for rep in range(args.repeats + 1):  # the first round warms every server and is not counted
            for app in apps:
                parts = retried(app, retries, _one, browser, app, urls[app], rep)
                if rep:
                    seen[app].append(parts)
    missing = {a: sum(any(math.isnan(p[k]) for k in FIELDS) for p in seen[a]) for a in apps}
    med = {
        a: {k: statistics.median(p[k] for p in seen[a] if not math.isnan(p[k])) for k in (*FIELDS, "msgs")}
        for a in apps
    }
    print(f"edit of one cell, ms from its Enter in the page's clock; medians of {args.repeats} repeats")
    print(f"{'app':22}" + "".join(f"{k:>11}" for k in FIELDS) + f"{'msgs':>6}{'shown / floor':>15}")
    for a in apps:
        row = "".join(f"{med[a][k]:11.0f}" for k in FIELDS)
        print(f"{a:22}{row}{med[a]['msgs']:6.0f}{med[a]['shown'] / med['floor']['shown']:15.2f}")
    if any(retries.values()) or any(missing.values()):
        print("edits retried in a new context:", retries, "· repeats missing a message (left out):", missing)
    print(f"machine load average (1, 5, 15 min) at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
