"""A real Streamlit server and headless Chromium (Debian's /usr/bin/chromium, driven by Playwright)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(script: str = "streamlit_app.py") -> Iterator[str]:
    """Start `streamlit run` on a free loopback port; yield its base URL; stop it afterwards."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            script,
            "--server.headless",
            "true",
            "--server.address",
            "127.0.0.1",
            "--server.port",
            str(port),
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"{base}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.2)
        else:
            raise RuntimeError("streamlit did not become healthy within 60 s")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def settle(page, timeout: float = 60_000) -> None:
    """Wait until the current script run has finished (and the page has had a moment to paint)."""
    page.wait_for_timeout(150)
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=timeout
    )
    page.wait_for_timeout(150)


def open_sidebar_expander(page, label: str) -> None:
    """Click a sidebar expander's heading (a lazy one reruns the page to build its content) and wait for the run."""
    box = page.get_by_test_id("stSidebar").get_by_test_id("stExpander").filter(has_text=label).first
    box.locator("summary").click()
    settle(page)


def error_texts(page) -> list[str]:
    """Tracebacks and st.error boxes on the page."""
    out = page.get_by_test_id("stException").all_inner_texts()
    out += page.locator("[data-testid='stAlertContentError']").all_inner_texts()
    return out
