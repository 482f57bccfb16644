"""Hosting for a class: the server's settings take effect, and replicas behind nginx keep each tab on one replica.

Sessions are driven over Streamlit's own websocket protocol (``benchmarks/st_client.py``), as a browser tab; the
numbers they download are checked against an oracle that never asks the server (``benchmarks/classroom.py``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import numpy as np
import psutil
import pytest
import requests

from attention.io import parse
from benchmarks.classroom import (
    DOCUMENT_PRESETS,
    Replicas,
    Server,
    attention_weights,
    preset_file,
    preset_inputs,
    student,
)
from benchmarks.st_client import DOWNLOADS, Tab, find

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


# ------------------------------------------------------------------------------------------------ one server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app as deployed: `streamlit run` with the project's .streamlit/config.toml, for a user who has never run
    Streamlit (an empty home folder: no credentials file) and a terminal that would wait at an "Email:" prompt."""
    home = tmp_path_factory.mktemp("home")
    s = Server(home / "server.log", env={**_env(), "HOME": str(home)})
    yield s
    s.stop()


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}


def test_no_email_prompt_on_the_first_run(server):
    """The server answered its health check although stdin stayed open and empty, and asked nothing."""
    assert requests.get(f"{server.url}/_stcore/health", timeout=10).text == "ok"
    assert "Email" not in server.log.read_text()


async def _with_tab(url: str, page: str, then):
    """Open a tab on ``page`` and, while its session is live, call ``then(tab)`` (blocking calls run on a thread)."""
    tab = Tab(url)
    try:
        await tab.open(page=page)
        return await asyncio.to_thread(then, tab)
    finally:
        await tab.close()


def _upload(tab: Tab, name: str, data: bytes, token: bool) -> int:
    """PUT a file to the tab's session as its uploader does; the status code."""
    cookie = tab.http.cookies["_streamlit_xsrf"]
    r = requests.put(
        f"{tab.base}/_stcore/upload_file/{tab.session_id}/{name}",
        files={"file": (f"{name}.csv", data, "text/csv")},
        cookies={"_streamlit_xsrf": cookie},
        headers={"X-Xsrftoken": cookie} if token else {},
        timeout=60,
    )
    return r.status_code


def test_xsrf_protection_guards_uploads(server):
    statuses = asyncio.run(
        _with_tab(server.url, "", lambda tab: [_upload(tab, "f1", b"1,2\n3,4\n", token) for token in (False, True)])
    )
    assert statuses == [403, 204]  # without the token from the XSRF cookie: refused


def test_the_upload_limit_is_the_parsers_in_the_server(server):
    """The uploaders offer the parser's limit, the server takes a file just under it and refuses one just over it.
    (The server compares the whole request, file plus ~200 bytes of multipart framing, with the limit, so a file
    within those bytes of 16 MiB is refused too; the largest supported matrix as CSV is ~13.2 MB.)"""

    def check(tab: Tab) -> tuple[set[int], int, int]:
        limit = parse.MAX_UPLOAD_MB * 2**20
        sizes = {e.proto.max_upload_size_mb for e in find(tab.elements, "file_uploader")}
        under = _upload(tab, "under", b"0" * (limit - 2**16), True)
        return sizes, under, _upload(tab, "over", b"0" * (limit + 1), True)

    sizes, under, over = asyncio.run(_with_tab(server.url, "tokens", check))
    assert sizes == {parse.MAX_UPLOAD_MB}
    assert (under, over) == (204, 413)


def test_error_details_stay_on_the_server(tmp_path):
    """An uncaught exception (in a throwaway script run with this project's config) reaches the browser without its
    message, type or traceback; the server's console has them."""
    script = tmp_path / "boom.py"
    script.write_text("raise ValueError('secret-detail-4711')\n")
    s = Server(tmp_path / "boom.log", script=script, env=_env())
    try:
        elements = asyncio.run(_with_tab(s.url, "", lambda tab: tab.elements))
    finally:
        s.stop()
    exceptions = find(elements, "exception")
    assert len(exceptions) == 1
    e = exceptions[0].proto
    assert "secret-detail" not in e.message and not e.type and not list(e.stack_trace)
    assert "secret-detail-4711" in (tmp_path / "boom.log").read_text()


# ------------------------------------------------------------------------------------------------ replicas + nginx


@pytest.mark.skipif(NGINX is None, reason="nginx not installed (apt-get install -y nginx)")
def test_replicas_behind_nginx(tmp_path):
    """deploy/run_replicas.sh with 2 replicas: new browsers spread over both, every request of one tab (page, health,
    websocket, downloads) reaches one replica, each student downloads exactly its own numbers, and Ctrl+C stops
    nginx and every replica."""
    proxy = Replicas(2, tmp_path / "run")
    children = psutil.Process(proxy.pid).children(recursive=True)
    try:
        fresh = [requests.get(f"{proxy.url}/_stcore/health", timeout=10).headers["X-Upstream"] for _ in range(24)]
        replicas = {f"127.0.0.1:{p}" for p in proxy.replica_ports}
        assert set(fresh) == replicas  # 24 fresh browsers, random keys: both replicas are used

        async def class_of(n: int):
            return await asyncio.gather(
                *(
                    student(
                        proxy.url,
                        sid,
                        edits=3,
                        pace=(0.05, 0.2),
                        switch_every=2,
                        downloads=tuple(d for d in DOWNLOADS if d[0] in ("X", "W_q", "weights")),
                        clicks=3,
                    )
                    for sid in range(n)
                )
            )

        outcomes = asyncio.run(class_of(4))
        for o in outcomes:
            assert o.problems == [], (o.sid, o.problems)
            assert o.checked == 3 and len(o.times["edit"]) == 3
            assert len(o.upstreams) >= 5 and len(set(o.upstreams)) == 1, o.upstreams  # one replica per tab
            assert set(o.upstreams) <= replicas
    finally:
        status = proxy.stop()
    assert status == 0
    assert not [p.pid for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not list((tmp_path / "run").glob("*.pid"))


def test_the_students_oracle_gives_the_documents_printed_numbers():
    """The oracle the load test checks downloads against (preset file + numpy) reproduces every number the documents
    print (to their 8 printed digits), so "0 wrong numbers" means the server gave each student its own numbers."""
    compared = 0
    for preset_id in DOCUMENT_PRESETS:
        preset = preset_file(preset_id)
        inputs = preset_inputs(preset)
        ours = {**inputs, "weights": attention_weights(inputs, preset["options"])}
        for name, printed in preset.get("expected", {}).items():
            if name in ours:
                want = np.reshape(printed, ours[name].shape)
                assert np.allclose(ours[name], want, rtol=0, atol=1e-8), (preset_id, name)
                compared += 1
    assert compared >= 8  # weights of four documents, and the printed random draws
