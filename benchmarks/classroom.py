"""A student's session against the app (load a preset, edit at a person's pace, switch pages, download and check),
and the servers it runs against: one Streamlit server, or deploy/run_replicas.sh (nginx + replicas).

Shared by ``benchmarks/bench_classroom.py`` and ``tests/deploy/test_deploy.py``. The numbers a student downloads are
checked against an oracle that never asks the server: the preset's own file (its fixed matrices, and its random
ones drawn again with numpy's ``RandomState``), the student's own edits on top, and attention computed here with
plain numpy. A value from another session, or a lost edit, shows as wrong numbers.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import requests

from benchmarks.st_client import DOWNLOADS, EDIT_PAGES, Element, Run, Tab, TabError, find_widget, grid_frame

ROOT = Path(__file__).resolve().parent.parent
INPUTS = ("X", "W_q", "W_k", "W_v")
DOCUMENT_PRESETS = ("she_likes_coffee", "i_am_batman", "the_cat_sat", "the_cat_sat_on_the_mat", "random_seed_42")


# ------------------------------------------------------------------------------------------------- the oracle


def preset_file(preset_id: str) -> dict:
    return json.loads((ROOT / "presets" / f"{preset_id}.json").read_text(encoding="utf-8"))


def preset_inputs(preset: dict) -> dict[str, np.ndarray]:
    """X, W_q, W_k, W_v of a preset file as 2-D float64: its fixed matrices, then its random draws in order from
    ``RandomState(seed)`` (``rand`` or ``randn``, times the draw's scale), a batch of one taken as its sentence."""
    out = {name: np.array(m, dtype=np.float64) for name, m in preset.get("matrices", {}).items()}
    spec = preset.get("random")
    if spec:
        rs = np.random.RandomState(spec["seed"])
        draw = rs.randn if spec["generator"].endswith(".randn") else rs.rand
        for d in spec["draws"]:
            out[d["name"]] = draw(*d["shape"]) * d["scale"] if "scale" in d else draw(*d["shape"])
    return {name: out[name].reshape(-1, out[name].shape[-1]) for name in INPUTS}


def attention_weights(m: dict[str, np.ndarray], options: dict) -> np.ndarray:
    """softmax(Q Kᵀ / √d_k) row by row, Q = X·W_q (or X·W_qᵀ when the preset stores W as d_k × d_model): only the
    options the document presets use (one head, no mask, the default scale, temperature 1)."""
    if (options["heads"], options["mask"], options["scale"], options["temperature"]) != (1, "none", None, 1.0):
        raise ValueError(f"the oracle covers one head, no mask, default scale, T = 1; not {options}")
    w = {k: (m[k].T if options["projection"] == "x_wt" else m[k]) for k in ("W_q", "W_k")}
    q, k = m["X"] @ w["W_q"], m["X"] @ w["W_k"]  # (n, d_k)
    scores = q @ k.T / np.sqrt(q.shape[1])  # (n, n)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def read_csv_matrix(data: bytes) -> np.ndarray:
    """The numbers of a downloaded CSV (a header row, then a label and the numbers on each row)."""
    rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    return np.array([[float(x) for x in row[1:]] for row in rows[1:]], dtype=np.float64)


# ------------------------------------------------------------------------------------------------- a student


@dataclass
class Outcome:
    """What one student's session measured and found."""

    sid: int
    preset: str
    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))  # "edit": [seconds, ...]
    problems: list[str] = field(default_factory=list)  # "<category>: <detail>"
    upstreams: list[str] = field(default_factory=list)
    checked: int = 0  # downloaded matrices compared with the oracle
    clicked_again: int = 0  # downloads that failed once and were clicked again

    def add(self, kind: str, run: Run) -> Run:
        self.times[kind].append(run.seconds)
        self.problems.extend(f"{p} (on {kind})" for p in run.problems)
        return run


def need(found: Element | str | None, what: str) -> Element | str:
    if found is None:
        raise TabError(f"widget not found: {what}")
    return found


async def student(
    base_url: str,
    sid: int,
    *,
    edits: int = 20,
    pace: tuple[float, float] = (2.0, 4.0),
    switch_every: int = 4,
    seed: int = 0,
    start_after: float = 0.0,
    timeout: float = 120.0,
    downloads: tuple[tuple[str, str], ...] = DOWNLOADS,
    clicks: int = 1,
) -> Outcome:
    """One student: open the app, choose a document preset in the sidebar, make ``edits`` cell edits of X or a W
    (one every ``pace`` seconds, seeded jitter) on the pages of :data:`EDIT_PAGES`, moving to another page every
    ``switch_every`` edits, then download the edited inputs and the attention weights and compare them with the
    oracle. A failed download is clicked again up to ``clicks`` times in all (1: a failure is a problem; Streamlit
    1.67 deletes a deferred download's file once any two script runs end, so under load the browser's fetch can
    find it gone). Never raises: every failure is one of the outcome's problems."""
    rng = random.Random(f"{seed}:{sid}")
    preset_id = DOCUMENT_PRESETS[sid % len(DOCUMENT_PRESETS)]
    preset = preset_file(preset_id)
    expected = preset_inputs(preset)
    out = Outcome(sid, preset_id)
    tab = Tab(base_url, timeout=timeout)
    await asyncio.sleep(start_after)
    try:
        out.add("open", await tab.open())
        out.add("preset", await tab.choose(need(find_widget(tab, "preset"), "the preset box"), preset["label"]))
        pages = list(EDIT_PAGES)
        rng.shuffle(pages)
        for k in range(edits):
            if k % switch_every == 0:
                page = pages[(k // switch_every) % len(pages)]
                out.add("switch", await tab.goto(need(find_widget(tab, "page", page), f"page {page}")))
            await asyncio.sleep(rng.uniform(*pace))
            name = rng.choice([n for n in INPUTS if find_widget(tab, "editor", n)])
            grid = need(find_widget(tab, "editor", name), f"the {name} grid")
            frame = grid_frame(grid)  # type: ignore[arg-type]
            rows, cols = expected[name].shape  # a grid beside a result shows its first columns (a window of them)
            if frame.shape[0] != rows or not 0 < frame.shape[1] <= cols:
                out.problems.append(
                    f"wrong numbers: the {name} grid is {frame.shape}, the preset's {name} is {expected[name].shape}"
                )
            r, c = rng.randrange(frame.shape[0]), rng.randrange(frame.shape[1])
            text = f"{0.5 + (sid % 1000) / 1000 + k / 1e6:.6f}"  # unique to this student and edit: a leak shows
            out.add("edit", await tab.edit_cells(grid, {(r, str(frame.columns[c])): text}))  # type: ignore[arg-type]
            expected[name][r, c] = float(text)
        for name, page in downloads:
            if not find_widget(tab, "download", name):
                out.add("switch", await tab.goto(need(find_widget(tab, "page", page), f"page {page}")))
            if not find_widget(tab, "download", name) and find_widget(tab, "expander", "Downloads"):
                box = need(find_widget(tab, "expander", "Downloads"), "the Downloads expander")
                out.add("open", await tab.open_expander(box))  # type: ignore[arg-type]  # drawn once open
            start = time.perf_counter()
            for click in range(clicks):
                try:
                    got = read_csv_matrix(await tab.download(need(find_widget(tab, "download", name), f"{name}.csv")))
                    break
                except TabError as exc:
                    if click + 1 == clicks or not str(exc).startswith("download failed"):
                        raise
                    out.clicked_again += 1
            out.times["download"].append(time.perf_counter() - start)
            want = expected[name] if name in INPUTS else attention_weights(expected, preset["options"])
            same = got.shape == want.shape and (
                np.array_equal(got, want) if name in INPUTS else np.allclose(got, want, rtol=0, atol=1e-12)
            )
            out.checked += 1
            if not same:
                diff = int(np.sum(got != want)) if got.shape == want.shape else got.size
                out.problems.append(
                    f"wrong numbers: {name}.csv is not the preset plus this session's own edits ({diff} cells differ)"
                )
    except TabError as exc:
        out.problems.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - a broken session is counted, never hidden
        out.problems.append(f"client failure: {type(exc).__name__}: {exc}")
    finally:
        await tab.close()
        out.upstreams = list(tab.upstreams)
    return out


async def big_session(
    base_url: str, seed: int, size: str = "1024x64x64", edits: int = 2, timeout: float = 300.0
) -> Outcome:
    """A session on a large blank preset (from a link: ``?preset=blank&seed=<seed>&size=<n>x<d_model>x<d_k>``): the
    Softmax page, ``edits`` edits of X beside its heatmap, then the Output page; for the memory bound."""
    out = Outcome(seed, f"blank {size}")
    tab = Tab(base_url, timeout=timeout)
    try:
        out.add("open", await tab.open(page="softmax", query=f"preset=blank&seed={seed}&size={size}"))
        for k in range(edits):
            grid = need(find_widget(tab, "editor", "X"), "the X grid")
            frame = grid_frame(grid)  # type: ignore[arg-type]
            out.add("edit", await tab.edit_cells(grid, {(k, str(frame.columns[0])): f"{0.25 + k / 8}"}))  # type: ignore[arg-type]
        out.add("switch", await tab.goto(need(find_widget(tab, "page", "Output"), "page Output")))  # type: ignore[arg-type]
    except TabError as exc:
        out.problems.append(str(exc))
    finally:
        await tab.close()
    return out


# ------------------------------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, timeout: float = 120.0, proc: subprocess.Popen | None = None) -> None:
    """Wait until ``url``/_stcore/health answers 200 (raises if ``proc`` ends first or time runs out)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server process ended with {proc.returncode} before answering")
        try:
            if requests.get(f"{url}/_stcore/health", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not become healthy within {timeout:g} s")


class Server:
    """``streamlit run streamlit_app.py`` on a free port of 127.0.0.1, with the project's .streamlit/config.toml."""

    def __init__(self, log: Path, script: Path = ROOT / "streamlit_app.py", env: dict | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "streamlit", "run", str(script)]
        cmd += ["--server.address", "127.0.0.1", "--server.port", str(self.port)]
        self.log = log
        with open(log, "wb") as f:
            self.proc = subprocess.Popen(
                cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.PIPE, env=env or os.environ.copy()
            )
        wait_healthy(self.url, proc=self.proc)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _default_signals() -> None:
    """In the child before it runs: SIGINT and SIGTERM back to their defaults. A shell cannot trap a signal that was
    ignored when it started, and the test process may ignore SIGINT by then (something in a long pytest run did)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Replicas:
    """``deploy/run_replicas.sh``: ``k`` replicas on free ports behind nginx on a free port of 127.0.0.1 (``python``
    runs them: this Python, or a stand-in for it)."""

    def __init__(self, k: int, run_dir: Path, show_upstream: bool = True, python: str = sys.executable) -> None:
        self.port = free_port()
        self.replica_ports = [free_port() for _ in range(k)]
        self.url = f"http://127.0.0.1:{self.port}"
        self.run_dir = run_dir
        env = os.environ | {
            "RUN_DIR": str(run_dir),
            "REPLICA_PORTS": " ".join(map(str, self.replica_ports)),
            "PYTHON": python,
            "SHOW_UPSTREAM": "1" if show_upstream else "0",  # X-Upstream names the replica that answered
        }
        run_dir.mkdir(parents=True, exist_ok=True)
        with open(run_dir / "run_replicas.out", "wb") as f:
            self.proc = subprocess.Popen(
                ["bash", str(ROOT / "deploy" / "run_replicas.sh"), str(k), f"127.0.0.1:{self.port}"],
                cwd=ROOT,
                stdout=f,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # its own process group, as in a terminal: see stop()
                preexec_fn=_default_signals,  # a terminal's shell starts it able to take Ctrl+C
            )
        try:
            wait_healthy(self.url, proc=self.proc)
        except BaseException:  # not started in time: stop what did start (nginx, replicas) before saying so
            self.stop()
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> int:
        """Ctrl+C, as a person would stop it: the terminal sends SIGINT to its foreground process group (the script's
        group; the script puts its children in groups of their own); returns the script's exit status."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def _tree(pid: int) -> list:
    """A process and all its living descendants (empty once it has ended)."""
    import psutil

    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def tree_rss(pid: int) -> int:
    """Resident memory of a process and all its descendants, in bytes."""
    import psutil

    total = 0
    for p in _tree(pid):
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by a process and its living descendants."""
    import psutil

    total = 0.0
    for p in _tree(pid):
        with contextlib.suppress(psutil.Error):
            total += sum(p.cpu_times()[:2])
    return total


class RssSampler:
    """Samples a process tree's resident memory every ``every`` seconds on a thread: ``samples`` is (time, bytes)."""

    def __init__(self, pid: int, every: float = 0.1) -> None:
        self.pid, self.every = pid, every
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), tree_rss(self.pid)))
            self._stop.wait(self.every)

    def peak(self, since: float = 0.0, until: float = float("inf")) -> int:
        return max((b for t, b in self.samples if since <= t <= until), default=0)

    def now(self) -> int:
        return tree_rss(self.pid)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
