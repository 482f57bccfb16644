"""A class on one server: N students at once, each editing at a person's pace; edit -> run finished, errors, memory.

Each student (``benchmarks/classroom.py``) is one Streamlit session driven over Streamlit's own websocket protocol
(``benchmarks/st_client.py``: the protobuf BackMsg/ForwardMsg a browser tab exchanges, XSRF handshake included):
it opens the app, chooses a document preset in the sidebar, makes 20 cell edits of X or W (one every 2-4 s,
seeded jitter), moves to another page every 4 edits, then downloads X.csv, W_q/W_k/W_v.csv and weights.csv
(deferred downloads: a backend request, then the /media URL over HTTP) and compares them with an oracle that
never asks the server (the preset file, its own edits, attention in numpy): any value from another session or
a lost edit is a wrong number.

Measured, in one run, side by side:

- **edit -> run finished**: from sending the edit's ``rerun_script`` BackMsg to receiving the ``script_finished``
  ForwardMsg of the run it started (the time a student waits for the page to settle); p50 / p95 / max over all
  edits of all sessions. Page switches, opening the app and loading the preset are reported apart.
- **errors**: exceptions or error boxes in any run, disconnects, timeouts, failed downloads, wrong numbers.
- **server memory**: RSS summed over the server's process tree (psutil, every 0.1 s): the peak during each wave
  and the value a few seconds after the wave's sessions closed. Waves of N sessions come and go (default 3):
  the after-close values must level off. Streamlit keeps a closed tab's session for reconnection for 2 minutes
  (``server.disconnectedSessionTTL``, at most 128 sessions), so "after close" still holds them.
- **baseline**: one session alone on the same (warmed-up) server, first; the ratio is p95(N) / p95(1).
- **server time per edit, one student alone**: one tab on the Softmax page of "The cat sat" types ``--solo`` cells
  into the grid beside the heatmap, one at a time with a pause after each; the server's CPU seconds (its process
  tree, user + system) from sending each edit to 0.1 s after its run finished, averaged over the edits.
- ``--compare PATH``: only the server time per edit, this app and the checkout at PATH side by side (two servers,
  one tab each, their edits alternating, so the machine's noise hits both), over ``--solo`` edits each.
- ``--root``: serve another checkout of the app (e.g. the main branch in a second work tree) with this client, so
  two versions are measured by the same code.
- ``--proxy``: the same again through nginx with 2 replicas (``deploy/run_replicas.sh``), memory summed over
  nginx and both replicas.

The load generator runs on the same machine and shares its cores with the server; its CPU use is reported.
Run: ``python benchmarks/bench_classroom.py`` (about 7 minutes; ``--proxy``: about 14) or ``--fast`` (a smoke run:
8 sessions, 6 quick edits, 2 waves, under a minute). Results also go to artifacts/bench_classroom.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.classroom import (  # noqa: E402
    EDIT_PAGES,
    Outcome,
    Replicas,
    RssSampler,
    Server,
    big_session,
    need,
    student,
    tree_cpu,
)
from benchmarks.st_client import Tab, find_widget, grid_frame  # noqa: E402

MB = 2**20
GOAL_P95_S = 1.0  # issue 9: p95 edit -> run finished with 30 sessions, document presets, this 2-core machine


def busy_cpu() -> float:
    """CPU seconds the whole machine has spent busy (every process, every core)."""
    import psutil

    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def pct(xs: list[float], q: float) -> float | None:
    return float(np.percentile(xs, q)) if xs else None


def fmt(x: float | None, unit: str = "s") -> str:
    if x is None:
        return "—"
    return f"{x:.3f} s" if unit == "s" else f"{x / MB:.0f} MB"


async def run_wave(url: str, sids: range, args: argparse.Namespace) -> list[Outcome]:
    rng = random.Random(f"{args.seed}:ramp:{sids.start}")
    return await asyncio.gather(
        *(
            student(
                url,
                sid,
                edits=args.edits,
                pace=tuple(args.pace),
                switch_every=args.switch_every,
                seed=args.seed,
                start_after=rng.uniform(0, args.ramp) if len(sids) > 1 else 0.0,
                timeout=args.timeout,
            )
            for sid in sids
        )
    )


def measure(label: str, url: str, pid: int, rss: RssSampler, sids: range, args: argparse.Namespace) -> dict:
    """One wave of sessions; its latencies, errors, the server's memory and CPU during it and after it closed."""
    start, cpu0, client0, busy0 = time.monotonic(), tree_cpu(pid), time.process_time(), busy_cpu()
    outcomes = asyncio.run(run_wave(url, sids, args))
    end, cpu1, client1, busy1 = time.monotonic(), tree_cpu(pid), time.process_time(), busy_cpu()
    time.sleep(args.settle)
    times: dict[str, list[float]] = {}
    for o in outcomes:
        for kind, xs in o.times.items():
            times.setdefault(kind, []).extend(xs)
    problems = [f"session {o.sid} ({o.preset}): {p}" for o in outcomes for p in o.problems]
    row = {
        "run": label,
        "sessions": len(sids),
        "edits": len(times.get("edit", [])),
        "checked_csv": sum(o.checked for o in outcomes),
        "downloads_clicked_again": sum(o.clicked_again for o in outcomes),
        "errors": len(problems),
        "error_kinds": dict(Counter(p.split(": ", 1)[0] for o in outcomes for p in o.problems)),
        "problems": problems[:20],
        "wall_s": end - start,
        "rss_peak": rss.peak(start, end),
        "rss_after": rss.now(),
        "server_cores": (cpu1 - cpu0) / (end - start),
        "client_cores": (client1 - client0) / (end - start),
        "other_cores": ((busy1 - busy0) - (cpu1 - cpu0) - (client1 - client0)) / (end - start),
        "replicas_hit": sorted({u for o in outcomes for u in o.upstreams}),
        "sticky": all(len(set(o.upstreams)) <= 1 for o in outcomes),
    }
    for kind, xs in times.items():
        row[kind] = {"n": len(xs), "p50": pct(xs, 50), "p95": pct(xs, 95), "max": max(xs)}
    print(
        f"  {label}: edits {row['edits']}, p50 {fmt(row.get('edit', {}).get('p50'))}, "
        f"p95 {fmt(row.get('edit', {}).get('p95'))}, errors {row['errors']}, RSS peak {fmt(row['rss_peak'], 'MB')}, "
        f"after close {fmt(row['rss_after'], 'MB')}",
        flush=True,
    )
    for p in problems[:5]:
        print(f"    ! {p}", flush=True)
    return row


async def solo_edits(url: str, pid: int, edits: int, pause: float = 0.1) -> list[float]:
    """Server CPU seconds of each of ``edits`` grid edits by one tab alone (the Softmax page, W_q beside the
    heatmap), from sending the edit to ``pause`` seconds after its run finished; the first 3 edits warm up."""
    tab = Tab(url)
    cpu = []
    try:
        await tab.open(page="softmax", query="preset=the_cat_sat")
        for k in range(edits + 3):
            grid = need(find_widget(tab, "editor", "W_q") or find_widget(tab, "editor", "X"), "a grid")
            frame = grid_frame(grid)  # type: ignore[arg-type]
            start = tree_cpu(pid)
            run = await tab.edit_cells(grid, {(1, str(frame.columns[1])): f"{0.5 + k / 1000:.6f}"})  # type: ignore[arg-type]
            await asyncio.sleep(pause)
            if run.problems:
                raise RuntimeError(f"the solo edits met a problem: {run.problems}")
            if k >= 3:
                cpu.append(tree_cpu(pid) - start)
    finally:
        await tab.close()
    return cpu


async def solo_side_by_side(servers: list[Server], edits: int, pause: float = 0.1) -> list[list[float]]:
    """:func:`solo_edits` on several servers at once, one tab each, their edits alternating (3 warm-up edits each)."""
    tabs = [Tab(s.url) for s in servers]
    cpu: list[list[float]] = [[] for _ in servers]
    try:
        for tab in tabs:
            await tab.open(page="softmax", query="preset=the_cat_sat")
        for k in range(edits + 3):
            for i, (server, tab) in enumerate(zip(servers, tabs, strict=True)):
                grid = need(find_widget(tab, "editor", "W_q") or find_widget(tab, "editor", "X"), "a grid")
                frame = grid_frame(grid)  # type: ignore[arg-type]
                start = tree_cpu(server.pid)
                run = await tab.edit_cells(grid, {(1, str(frame.columns[1])): f"{0.5 + k / 1000:.6f}"})  # type: ignore[arg-type]
                await asyncio.sleep(pause)
                if run.problems:
                    raise RuntimeError(f"the solo edits met a problem: {run.problems}")
                if k >= 3:
                    cpu[i].append(tree_cpu(server.pid) - start)
    finally:
        for tab in tabs:
            await tab.close()
    return cpu


def compare(args: argparse.Namespace) -> None:
    """The server time per edit of one student alone, this app and ``args.compare``, side by side."""
    roots = [args.root.resolve(), args.compare.resolve()]
    with tempfile.TemporaryDirectory(prefix="bench-classroom-") as tmp:
        servers = []
        try:
            for i, root in enumerate(roots):
                env = {**os.environ, "PYTHONPATH": str(root)}
                servers.append(Server(Path(tmp) / f"server{i}.log", script=root / "streamlit_app.py", env=env))
            cpu = asyncio.run(solo_side_by_side(servers, args.solo))
        finally:
            for server in servers:
                server.stop()
    for root, xs in zip(roots, cpu, strict=True):
        print(
            f"{root}: server CPU per edit, one student alone: mean {1000 * np.mean(xs):.1f} ms, "
            f"median {1000 * np.median(xs):.0f} ms ({len(xs)} edits)"
        )
    print(f"ratio: {np.mean(cpu[0]) / np.mean(cpu[1]):.2f}; machine load average at the end: {os.getloadavg()}")


def scenario(setup: str, url: str, pid: int, args: argparse.Namespace) -> dict:
    """Warm-up (every page once, not counted), 1 session alone, then the waves (``args.sizes`` sessions each)."""
    rss = RssSampler(pid)
    try:
        idle = rss.now()
        warm = argparse.Namespace(**{**vars(args), "edits": len(EDIT_PAGES), "pace": (0.05, 0.1), "switch_every": 1})
        warmup = measure(f"{setup}: warm-up (not counted)", url, pid, rss, range(900, 900 + args.replicas_warm), warm)
        solo = asyncio.run(solo_edits(url, pid, args.solo)) if args.solo else []
        if solo:
            print(
                f"  {setup}: server CPU per edit, one student alone: {1000 * np.mean(solo):.1f} ms "
                f"(mean of {len(solo)} edits)",
                flush=True,
            )
        rows = [measure(f"{setup}: 1 session alone (baseline)", url, pid, rss, range(1000, 1001), args)]
        first = 0
        for w, n in enumerate(args.sizes):
            rows.append(measure(f"{setup}: wave {w + 1}, {n} sessions", url, pid, rss, range(first, first + n), args))
            first += n
        return {
            "setup": setup,
            "rss_idle": idle,
            "rss_after_warmup": warmup["rss_after"],
            "warmup": warmup,
            "solo_cpu_per_edit": float(np.mean(solo)) if solo else None,
            "rows": rows,
            "big": big_sessions(url, rss, args) if args.big and setup == "1 server" else [],
        }
    finally:
        rss.stop()


def kinds(row: dict) -> str:
    return " (" + ", ".join(f"{k} {n}" for k, n in row["error_kinds"].items()) + ")" if row["errors"] else ""


def big_sessions(url: str, rss: RssSampler, args: argparse.Namespace) -> list[dict]:
    """``args.big`` sessions one after another on blank presets of ``args.big_size`` (each its own seed): the server's
    RSS after each has closed, and the peak while it ran."""
    out = []
    for i in range(args.big):
        start = time.monotonic()
        o = asyncio.run(big_session(url, seed=100 + i, size=args.big_size))
        end = time.monotonic()
        time.sleep(1.0)
        out.append(
            {
                "rss_peak": rss.peak(start, end),
                "rss_after": rss.now(),
                "edit_max": max(o.times["edit"], default=None),
                "problems": o.problems,
            }
        )
        print(f"  big session {i + 1}: RSS after {fmt(out[-1]['rss_after'], 'MB')}, problems {o.problems}", flush=True)
    return out


def big_table(setups: list[dict]) -> str:
    rows = [r for s in setups for r in s.get("big", [])]
    if not rows:
        return ""
    head = "| session | " + " | ".join(str(i + 1) for i in range(len(rows))) + " |"
    line = "|---|" + "---:|" * len(rows)
    after = "| RSS after it closed | " + " | ".join(f"{r['rss_after'] / MB:.0f} MB" for r in rows) + " |"
    peak = "| RSS peak while it ran | " + " | ".join(f"{r['rss_peak'] / MB:.0f} MB" for r in rows) + " |"
    errors = sum(len(r["problems"]) for r in rows)
    return "\n".join([head, line, after, peak]) + f"\n\nerrors: {errors}"


def latency_table(setups: list[dict]) -> str:
    head = (
        "| run | sessions | edits | edit→run finished p50 | p95 | max | page switch p50 / p95 "
        "| open + preset p95 | CSV download p95 | errors |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in setups:
        for r in s["rows"]:
            e, sw, dl = r.get("edit", {}), r.get("switch", {}), r.get("download", {})
            opened = max((r.get(k, {}).get("p95") or 0.0) for k in ("open", "preset"))
            lines.append(
                f"| {r['run']} | {r['sessions']} | {r['edits']} | {fmt(e.get('p50'))} | {fmt(e.get('p95'))} "
                f"| {fmt(e.get('max'))} | {fmt(sw.get('p50'))} / {fmt(sw.get('p95'))} | {fmt(opened)} "
                f"| {fmt(dl.get('p95'))} | {r['errors']}{kinds(r)} |"
            )
    return "\n".join(lines)


def memory_table(setups: list[dict]) -> str:
    lines = [
        "| run | server RSS peak | RSS after the sessions closed | CPU (cores): server | load generator "
        "| other processes |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for s in setups:
        lines.append(f"| {s['setup']}: idle, before any session | — | {fmt(s['rss_idle'], 'MB')} | — | — | — |")
        lines.append(f"| {s['setup']}: after the warm-up | — | {fmt(s['rss_after_warmup'], 'MB')} | — | — | — |")
        for r in s["rows"]:
            lines.append(
                f"| {r['run']} | {fmt(r['rss_peak'], 'MB')} | {fmt(r['rss_after'], 'MB')} "
                f"| {r['server_cores']:.2f} | {r['client_cores']:.2f} | {r['other_cores']:.2f} |"
            )
    return "\n".join(lines)


def verdicts(setups: list[dict]) -> str:
    out = []
    for s in setups:
        base, waves = s["rows"][0], s["rows"][1:]
        if not waves:
            continue
        p95 = max(w["edit"]["p95"] for w in waves if "edit" in w)
        ratio = p95 / base["edit"]["p95"] if "edit" in base else float("nan")
        errors = sum(r["errors"] for r in s["rows"]) + s["warmup"]["errors"]
        after = [w["rss_after"] for w in waves]
        growth = [(b - a) / MB for a, b in zip(after, after[1:], strict=False)]
        flat = all(g <= max(10.0, 0.05 * a / MB) for g, a in zip(growth, after, strict=False))
        met = [w["sessions"] for w in waves if "edit" in w and w["edit"]["p95"] <= GOAL_P95_S]
        if len({w["sessions"] for w in waves}) > 1:
            out.append(
                f"- {s['setup']}: the largest wave with p95 ≤ {GOAL_P95_S:g} s: "
                + (f"{max(met)} sessions" if met else "none")
            )
        out.append(
            f"- {s['setup']}: worst wave p95 edit→run finished {p95:.3f} s "
            f"({'meets' if p95 <= GOAL_P95_S else 'misses'} the {GOAL_P95_S:g} s goal), "
            f"{ratio:.2f}× the session alone; errors {errors}; RSS after each wave "
            + ", ".join(f"{a / MB:.0f}" for a in after)
            + " MB"
            + (
                f" (growth between waves {', '.join(f'{g:+.0f}' for g in growth)} MB: "
                + ("levels off" if flat else "still growing")
                + ", criterion ≤ max(10 MB, 5 %) per wave)"
                if growth
                else ""
            )
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--waves", type=int, default=3)
    ap.add_argument("--sizes", help="sessions per wave instead, e.g. 4,8,12,16 (a capacity sweep)")
    ap.add_argument("--pace", type=float, nargs=2, default=(2.0, 4.0), metavar=("MIN", "MAX"), help="seconds per edit")
    ap.add_argument("--switch-every", type=int, default=4, help="edits between page switches")
    ap.add_argument("--ramp", type=float, default=10.0, help="sessions start at random within this many seconds")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds after a wave before 'RSS after close'")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--proxy", action="store_true", help="also through nginx with 2 replicas (deploy/run_replicas.sh)")
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--big", type=int, default=8, help="sessions in a row on a large blank preset (memory bound)")
    ap.add_argument("--big-size", default="1024x64x64", help="n x d_model x d_k of those sessions")
    ap.add_argument("--fast", action="store_true", help="smoke run: 8 sessions, 6 edits 0.2-0.4 s apart, 2 waves")
    ap.add_argument("--solo", type=int, default=40, help="edits of one student alone for the server time per edit")
    ap.add_argument("--root", type=Path, default=ROOT, help="the app checkout to serve (default: this one)")
    ap.add_argument("--compare", type=Path, help="only the server time per edit, beside another checkout")
    ap.add_argument("--out", type=Path, default=ROOT / "artifacts" / "bench_classroom.json")
    args = ap.parse_args()
    if args.fast:
        args.sessions, args.edits, args.waves, args.pace, args.ramp, args.settle = 8, 6, 2, (0.2, 0.4), 1.0, 1.0
        args.switch_every, args.big, args.big_size = 2, 2, "256x64x64"
    args.replicas_warm = 1
    if args.compare:
        compare(args)
        return
    args.sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else [args.sessions] * args.waves

    print(
        f"waves of {', '.join(map(str, args.sizes))} sessions, {args.edits} edits each every "
        f"{args.pace[0]:g}-{args.pace[1]:g} s, page switch every {args.switch_every}; app {args.root.resolve()}; "
        f"Python {platform.python_version()}, {os.cpu_count()} cores",
        flush=True,
    )
    setups = []
    with tempfile.TemporaryDirectory(prefix="bench-classroom-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(args.root.resolve())}
        server = Server(Path(tmp) / "server.log", script=args.root.resolve() / "streamlit_app.py", env=env)
        try:
            setups.append(scenario("1 server", server.url, server.pid, args))
        finally:
            server.stop()
        if args.proxy:
            args.replicas_warm = 2 * args.replicas  # enough to reach every replica (cookies are random)
            proxy = Replicas(args.replicas, Path(tmp) / "replicas")
            try:
                setups.append(scenario(f"nginx + {args.replicas} replicas", proxy.url, proxy.pid, args))
            finally:
                proxy.stop()

    print("\nEdit → run finished (seconds from sending the BackMsg to its run's script_finished)\n")
    print(latency_table(setups))
    print("\nServer memory (RSS summed over the process tree) and CPU\n")
    print(memory_table(setups))
    if args.big:
        print(f"\nSessions one after another on blank {args.big_size} presets (1 server, after the waves)\n")
        print(big_table(setups))
    print("\n" + verdicts(setups))
    print(f"machine load average (1, 5, 15 min) at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {"args": {k: v for k, v in vars(args).items() if k != "out"}, "setups": setups}, indent=1, default=str
        )
    )


if __name__ == "__main__":
    main()
