"""Hosting for a class: the server's settings take effect, and replicas behind nginx keep each tab on one replica.

Sessions are driven over Streamlit's own websocket protocol (``benchmarks/st_client.py``), as a browser tab; the
numbers they download are checked against an oracle that never asks the server (``benchmarks/classroom.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
import requests

from attention.io import parse
from attention.ui.widgets import uploads
from benchmarks.classroom import (
    DOCUMENT_PRESETS,
    Replicas,
    Server,
    attention_weights,
    preset_file,
    preset_inputs,
    student,
)
from benchmarks.st_client import DOWNLOADS, Tab, find, find_widget
from tests.helpers import NGINX, ROOT
from tests.helpers.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    SHOTS,
    check,
    guarded_context,
    open_page,
    open_sidebar_expander,
    runs,
    settle,
)

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


async def _with_tab(url: str, page: str, then, opened: tuple[str, ...] = ()):
    """Open a tab on ``page``, open the expanders whose headings start with ``opened`` (their contents are drawn only
    once open) and, while its session is live, call ``then(tab)`` (blocking calls run on a thread)."""
    tab = Tab(url)
    try:
        await tab.open(page=page)
        for heading in opened:
            await tab.open_expander(_expander(tab, heading))
        return await asyncio.to_thread(then, tab)
    finally:
        await tab.close()


def _expander(tab: Tab, heading: str):
    box = find_widget(tab, "expander", heading)
    assert box is not None, f"no expander headed {heading!r}"
    return box


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

    sizes, under, over = asyncio.run(_with_tab(server.url, "tokens", check, opened=("Import X",)))
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
    assert status == 0  # Ctrl+C is a requested stop (it exited 1, "a process stopped", when nginx took it first)
    assert "a process stopped" not in (tmp_path / "run" / "run_replicas.out").read_text()
    assert not [p.pid for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not list((tmp_path / "run").glob("*.pid"))


def _landing_on(url: str, upstream: str) -> requests.Session:
    """A fresh browser's cookies that nginx routes to ``upstream`` (new browsers get random keys: try a few)."""
    for _ in range(200):
        browser = requests.Session()
        if browser.get(f"{url}/_stcore/health", timeout=10).headers["X-Upstream"] == upstream:
            return browser
    raise AssertionError(f"no fresh browser landed on {upstream}")


@pytest.mark.skipif(NGINX is None, reason="nginx not installed (apt-get install -y nginx)")
def test_a_replica_killed_is_started_again_while_the_other_serves(tmp_path):
    """kill -9 one of two replicas: every request through nginx still succeeds (new browsers and the dead replica's
    browsers go to the other one meanwhile), a student mid-session on the other replica keeps her session, the dead
    one is started again on its port, and its browsers return to it and open the app afresh."""
    proxy = Replicas(2, tmp_path / "run")
    run = tmp_path / "run"
    dead, alive = (f"127.0.0.1:{p}" for p in proxy.replica_ports)
    try:
        on_dead, on_alive = _landing_on(proxy.url, dead), _landing_on(proxy.url, alive)
        victim = int((run / "replica-0.pid").read_text())

        async def scenario() -> tuple[list[int], str, Tab]:
            survivor = Tab(proxy.url)
            survivor.http.cookies.update(on_alive.cookies)
            await survivor.open(page="softmax")
            before = survivor.session_id
            os.kill(victim, 9)
            statuses = [
                (await asyncio.to_thread(b.get, f"{proxy.url}/_stcore/health", timeout=10)).status_code
                for _ in range(10)
                for b in (on_dead, on_alive, requests.Session())
            ]
            rerun = await survivor.rerun()  # her next interaction, while the other replica is down
            assert rerun.problems == [] and survivor.session_id == before and not survivor.closed_reason
            await survivor.close()
            return statuses, before, survivor

        statuses, _, survivor = asyncio.run(scenario())
        assert statuses == [200] * 30
        assert set(survivor.upstreams) == {alive}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            restarted = (run / "replica-0.pid").read_text().strip()
            if restarted and int(restarted) != victim:
                with contextlib.suppress(requests.RequestException):
                    if requests.get(f"http://{dead}/_stcore/health", timeout=2).status_code == 200:
                        break
            time.sleep(0.5)
        else:
            raise AssertionError("the killed replica was not started again within 120 s")

        while time.monotonic() < deadline + 30:  # nginx tries a failed server again after fail_timeout (10 s)
            if on_dead.get(f"{proxy.url}/_stcore/health", timeout=10).headers["X-Upstream"] == dead:
                break
            time.sleep(0.5)

        async def back() -> Tab:
            returning = Tab(proxy.url)
            returning.http.cookies.update(on_dead.cookies)
            opened = await returning.open(page="softmax")
            assert opened.problems == []
            await returning.close()
            return returning

        returning = asyncio.run(back())
        assert set(returning.upstreams) == {dead}  # back on its own replica, in a new session
        assert "replica 0 (port" in (run / "run_replicas.out").read_text()
    finally:
        status = proxy.stop()
    assert status == 0


@pytest.mark.skipif(NGINX is None, reason="nginx not installed (apt-get install -y nginx)")
def test_the_deployment_names_neither_its_replicas_nor_its_version(tmp_path):
    """By default no X-Upstream header (it names the internal ports) and no nginx version in Server; the run folder
    it writes inside the checkout is ignored by git."""
    proxy = Replicas(1, tmp_path / "run", show_upstream=False)
    children = psutil.Process(proxy.pid).children(recursive=True)
    try:
        for path in ("/", "/_stcore/health", "/no-such-file"):
            headers = requests.get(f"{proxy.url}{path}", timeout=10).headers
            assert "X-Upstream" not in headers, path
            assert headers.get("Server", "nginx") == "nginx", (path, headers.get("Server"))
    finally:
        proxy.proc.terminate()  # SIGTERM to the script alone, as systemd's KillMode=mixed stops the service
        status = proxy.proc.wait(60)
    assert status == 0
    assert not [p.pid for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    ignored = subprocess.run(["git", "check-ignore", "-q", "deploy/run/replica-0.log"], cwd=ROOT, check=False)
    assert ignored.returncode == 0, "deploy/run/ is not ignored by git"


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


def test_the_systemd_unit_runs_the_replicas_script_with_its_variables():
    """deploy/attention-dashboard.service starts deploy/run_replicas.sh, sets only variables the script reads,
    restarts it on failure, stops it with SIGTERM (the script then exits 0), and passes systemd's own check."""
    unit = (ROOT / "deploy" / "attention-dashboard.service").read_text(encoding="utf-8")
    script = (ROOT / "deploy" / "run_replicas.sh").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in unit.splitlines() if ln.strip() and not ln.startswith("#")]
    env = dict(ln.removeprefix("Environment=").split("=", 1) for ln in lines if ln.startswith("Environment="))
    assert set(env) == {"REPLICAS", "LISTEN", "FIRST_PORT", "PYTHON", "RUN_DIR"}
    assert all(f"${{{name}:-" in script or f"${{{name}}}" in script for name in env), env
    assert "ExecStart=/usr/bin/bash deploy/run_replicas.sh" in lines
    assert {"Restart=on-failure", "KillSignal=SIGTERM", "KillMode=mixed", "WantedBy=multi-user.target"} <= set(lines)
    analyze = shutil.which("systemd-analyze")
    if analyze:
        check = subprocess.run(
            [analyze, "verify", str(ROOT / "deploy" / "attention-dashboard.service")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert check.returncode == 0 and "error" not in check.stderr.lower(), check.stderr


@pytest.mark.skipif(NGINX is None, reason="nginx not installed (apt-get install -y nginx)")
def test_a_download_after_a_failover_reaches_the_replica_that_holds_it(tmp_path):
    """After a failover a tab's session lives on the other replica, while its browser's cookie still names the first
    one (restarted, it serves that browser's requests again): a download link the session made must still answer,
    not 404 from the replica that never made it. Every download of a tab on one replica is fetched with the cookie
    of a browser routed to the other."""
    proxy = Replicas(2, tmp_path / "run")
    one, other = (f"127.0.0.1:{p}" for p in proxy.replica_ports)
    try:
        on_one, on_other = _landing_on(proxy.url, one), _landing_on(proxy.url, other)

        async def scenario() -> list[tuple[str, int, str]]:
            tab = Tab(proxy.url)
            tab.http.cookies.update(on_other.cookies)  # the session: on the other replica (where it failed over to)
            await tab.open(page="softmax")
            await tab.open_expander(_expander(tab, "Downloads"))  # its buttons are drawn once it is open
            button = find_widget(tab, "download", "weights")
            assert button is not None
            got = await tab.download(button)  # fetched as the session's own browser: the reference
            tab.http.cookies.clear()
            tab.http.cookies.update(on_one.cookies)  # ... but the browser's cookie names the first replica
            again = await tab.download(button) if button.proto.url else got
            await tab.close()
            return [(button.label, len(got), "same" if again == got else "differs")]

        found = asyncio.run(scenario())
        assert found and all(n > 0 and same == "same" for _, n, same in found), found
    finally:
        assert proxy.stop() == 0


# ------------------------------------------------------------------------------------------------ uploads, failed over

NEEDS_BROWSER = pytest.mark.skipif(
    NGINX is None or not os.path.exists(CHROMIUM), reason="needs nginx and Chromium (apt-get install -y nginx chromium)"
)
UPLOAD = "/_stcore/upload_file/"
TITLE = "Uploaded after a failover"  # the preset file's title, shown once it is loaded


def _tried(upstream_addr: str) -> list[str]:
    """The replicas an upload was passed to, in turn, from nginx's ``$upstream_addr`` (the X-Upstream header): it
    joins the servers of one upstream with ", " (a reset connection: the next one asked) and the steps of an
    ``error_page`` (``@upload_0``, ``@upload_1``, ...) with " : "."""
    return re.split(r" : |, ", upstream_addr)


def _upload_answers(page) -> list[tuple[int, str]]:  # noqa: ANN001 - a Playwright page
    """The page's upload PUTs' answers, kept as they come: (status, the replicas that answered it in turn)."""
    answers: list[tuple[int, str]] = []
    page.on(
        "response",
        lambda r: (
            answers.append((r.status, r.headers.get("x-upstream", "")))
            if UPLOAD in r.url and r.request.method == "PUT"
            else None
        ),
    )
    return answers


@pytest.fixture(scope="module")
def failover(tmp_path_factory):
    """Two replicas behind nginx, and the cookies of a browser nginx routes to each: (proxy, one, other, cookies)."""
    proxy = Replicas(2, tmp_path_factory.mktemp("failover") / "run")
    try:
        one, other = (f"127.0.0.1:{p}" for p in proxy.replica_ports)
        yield proxy, one, other, {r: _landing_on(proxy.url, r).cookies["st_replica"] for r in (one, other)}
    finally:
        assert proxy.stop() == 0


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.mark.skipif(NGINX is None, reason="nginx not installed (apt-get install -y nginx)")
def test_a_large_upload_after_a_failover_is_passed_on_whole(failover):
    """Uploads of 1 MiB and 12 MiB (the largest supported matrix as CSV is ~13.2 MB) sent, after a failover, to the
    replica that does not hold the session reach the one that does, whole (Streamlit parses the multipart body and
    stores the file: 204); one over the limit is still refused as too large (413), by the session's replica; and the
    replica asked first stays in service for the browsers whose cookie names it."""
    proxy, one, other, cookies = failover

    async def scenario() -> list[tuple[int, list[str], str | None]]:
        tab = Tab(proxy.url)
        tab.http.cookies.set("st_replica", cookies[other])  # the session: on the other replica
        await tab.open(page="tokens")
        xsrf = tab.http.cookies["_streamlit_xsrf"]
        answers = []
        for size in (2**20, 12 * 2**20, parse.MAX_UPLOAD_MB * 2**20 + 1):
            r = await asyncio.to_thread(
                requests.put,
                f"{proxy.url}{UPLOAD}{tab.session_id}/f{size}",
                files={"file": ("big.csv", b"0" * size, "text/csv")},
                cookies={"_streamlit_xsrf": xsrf, "st_replica": cookies[one]},  # ... the cookie names the first one
                headers={"X-Xsrftoken": xsrf},
                timeout=120,
            )
            still = await asyncio.to_thread(_routed, proxy.url, cookies[one])  # the cookie's replica, still in service
            answers.append((r.status_code, _tried(r.headers.get("X-Upstream", "")), still))
        await tab.close()
        return answers

    answers = asyncio.run(scenario())
    assert [status for status, _, _ in answers] == [204, 204, 413], answers
    assert all(tried[0] == one and tried[-1] == other for _, tried, _ in answers), answers
    assert all(still == one for _, _, still in answers), answers  # see the next test


@pytest.mark.skipif(NGINX is None, reason="nginx not installed (apt-get install -y nginx)")
def test_an_upload_reset_by_the_replica_asked_first_leaves_it_in_service(tmp_path):
    """The replica asked first for an upload of a session it does not hold answers 400 before it reads the body and
    closes, and nginx may see the connection reset (a few sends in a hundred on a quiet machine, while sending the body
    or reading the answer; a CI run under load caught it). The upload must still reach the next replica, and the reset
    must not take the first out of service: page loads and a tab's reconnect by the browsers whose cookie names it
    still reach it. Stand-in replicas make it happen every time: the first resets every upload, the second stores it."""
    wrapper = tmp_path / "python"
    stand_in = Path(__file__).with_name("stand_in_replica.py")
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(stand_in))} "$@"\n')
    wrapper.chmod(0o755)
    proxy = Replicas(2, tmp_path / "run", python=str(wrapper))
    try:
        first, second = (f"127.0.0.1:{p}" for p in proxy.replica_ports)
        key = _landing_on(proxy.url, first).cookies["st_replica"]
        for i in range(3):
            r = requests.put(
                f"{proxy.url}{UPLOAD}a-session/f{i}",
                files={"file": ("m.csv", b"0" * 2**20)},
                cookies={"st_replica": key},
                timeout=30,
            )
            assert (r.status_code, _tried(r.headers["X-Upstream"])) == (204, [first, second]), r.headers
            assert _routed(proxy.url, key) == first  # still in service for its browsers
        assert (proxy.run_dir / "nginx-error.log").read_text().count("reset by peer") == 3  # each time, as meant
    finally:
        assert proxy.stop() == 0


def _failed_over(context, proxy: Replicas, one: str, other: str, cookies: dict[str, str]):
    """A tab whose session lives on ``other`` (where it failed over to) while the browser's cookie names ``one`` (the
    first replica, restarted, serves that browser's requests again), with the sidebar's preset file uploader open; and
    the list its uploads' answers are kept in: (status, the replicas that answered it in turn)."""
    context.add_cookies([{"name": "st_replica", "value": cookies[other], "url": proxy.url}])
    page = context.new_page()
    open_page(page, proxy.url, "softmax")
    context.add_cookies([{"name": "st_replica", "value": cookies[one], "url": proxy.url}])  # the failover
    open_sidebar_expander(page, "Save, share, export")  # over the websocket: still the session on ``other``
    answers = _upload_answers(page)
    return page, answers


def _preset(tmp_path) -> Path:
    preset = json.loads((ROOT / "presets" / "the_cat_sat.json").read_text(encoding="utf-8"))
    path = tmp_path / "after_failover.json"
    path.write_text(json.dumps({**preset, "title": TITLE}), encoding="utf-8")
    return path


def _upload_outcome(page, seconds: float = 60) -> str:
    """Upload's outcome as the page shows it: "loaded" once the sidebar says the preset was loaded, or the uploader's
    own text once it shows an error."""
    sidebar = page.get_by_test_id("stSidebar")
    uploader = sidebar.get_by_test_id("stFileUploader").first
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if f"Loaded preset “{TITLE}”" in sidebar.inner_text():
            return "loaded"
        if "status code" in (said := uploader.inner_text()):
            return said
        page.wait_for_timeout(250)
    return "neither loaded nor refused within 60 s: " + uploader.inner_text()


@pytest.mark.browser
@NEEDS_BROWSER
def test_an_upload_after_a_failover_reaches_the_replica_that_holds_the_session(failover, chromium, tmp_path):
    """After a failover the browser's cookie routes its upload to the replica that does not hold its session, which
    refuses it (400, "Invalid session_id"; Streamlit's uploader showed "AxiosError: Request failed with status code
    400"). nginx passes the same upload on, and the replica holding the session loads the preset file."""
    proxy, one, other, cookies = failover
    with guarded_context(chromium, viewport={"width": 1280, "height": 720}) as context:
        page, answers = _failed_over(context, proxy, one, other, cookies)
        page.get_by_test_id("stSidebar").locator("input[type='file']").first.set_input_files(str(_preset(tmp_path)))
        outcome = _upload_outcome(page)
        page.get_by_test_id("stSidebar").get_by_test_id("stFileUploader").first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "deploy_upload_after_failover.png"))
        assert outcome == "loaded", outcome  # here: a refused upload also logs a console error, checked on leaving
        settle(page)
        shown = page.get_by_test_id("stSidebar").inner_text()
    assert TITLE in shown and "after_failover.json" in shown
    assert len(answers) == 1 and answers[0][0] == 204, answers
    tried = _tried(answers[0][1])
    assert tried[0] == one and tried[-1] == other, tried  # asked of the cookie's replica first: a real failover


@pytest.mark.browser
@NEEDS_BROWSER
def test_an_upload_no_replica_takes_is_said_in_plain_words(failover, chromium, tmp_path):
    """An upload that every replica refuses (its session is on none of them: here its address names a session id no
    replica holds, sent through nginx as it is) is said under the uploader in plain words: what happened and what to
    do, readable (Streamlit's uploader itself shows only an error icon on the file, with "AxiosError: Request failed
    with status code 400" on hover); and the note goes with the failed file."""
    from axe_playwright_python.base import AXE_SCRIPT

    proxy, one, other, cookies = failover
    with guarded_context(chromium, viewport={"width": 1280, "height": 720}) as context:
        page, answers = _failed_over(context, proxy, one, other, cookies)
        page.route(
            f"**{UPLOAD}**",
            lambda route: route.continue_(
                url=re.sub(r"upload_file/[^/]+/", "upload_file/no-such-session/", route.request.url)
            ),
        )
        page.get_by_test_id("stSidebar").locator("input[type='file']").first.set_input_files(str(_preset(tmp_path)))
        outcome = _upload_outcome(page)
        note = page.get_by_test_id("stSidebar").get_by_role("alert").filter(has_text="did not reach the server")
        note.wait_for(timeout=10_000)
        said = note.inner_text()
        check(page, AXE_SCRIPT, "an upload refused")  # the note's contrast included
        note.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "deploy_upload_refused_note.png"))  # the sidebar scrolls on its own
        page.get_by_test_id("stSidebar").get_by_test_id("stFileChipDeleteBtn").first.click()  # the failed file removed
        note.wait_for(state="detached", timeout=10_000)
        logged = [e for e in page.console_errors if "status code 400" in e]  # Streamlit's own, for the refusal
        page.console_errors[:] = [e for e in page.console_errors if e not in logged]
    assert len(logged) == 1, logged
    assert "status code 400" in outcome, outcome  # Streamlit's own words are still there; the note is beside them
    assert said == uploads.MESSAGE
    assert [a[0] for a in answers] == [400], answers
    assert set(_tried(answers[0][1])) == {one, other}, answers  # every replica asked, through nginx: none holds it


@pytest.mark.browser
@NEEDS_BROWSER
def test_an_upload_after_a_replica_is_killed_and_restarted(failover, chromium, tmp_path):
    """The failover itself: a tab on the first replica, which is killed (kill -9); the tab reconnects to the other
    one (a new session there), which runs the page in full (else its fragments are unknown there and the first
    click in one is dropped); the first is started again and the browser's cookie routes to it again; the tab opens
    the sidebar's tools and uploads a preset file, and it loads. (Runs last here: it restarts a replica.)"""
    proxy, one, other, cookies = failover
    with guarded_context(chromium, viewport={"width": 1280, "height": 720}) as context:
        context.add_cookies([{"name": "st_replica", "value": cookies[one], "url": proxy.url}])
        page = context.new_page()
        sockets: list = []
        page.on("websocket", lambda ws: sockets.append(ws.url))
        assert page.goto(f"{proxy.url}/softmax").headers.get("x-upstream") == one
        settle(page)
        victim = int((proxy.run_dir / "replica-0.pid").read_text())
        mark = runs(page)
        os.kill(victim, 9)
        deadline = time.monotonic() + 60
        while len(sockets) < 2:  # reconnected (nginx sends it to the other replica: the first one is down)
            assert time.monotonic() < deadline, "the tab did not reconnect within 60 s"
            page.wait_for_timeout(100)
        settle(page, mark, timeout=90_000)  # a full run of its new session (the fragments known there)
        deadline = time.monotonic() + 120
        while _routed(proxy.url, cookies[one]) != one:  # started again, and nginx sends the cookie's requests to it
            assert time.monotonic() < deadline, "the killed replica was not routed to again within 120 s"
            time.sleep(0.5)
        open_sidebar_expander(page, "Save, share, export")
        answers = _upload_answers(page)
        page.get_by_test_id("stSidebar").locator("input[type='file']").first.set_input_files(str(_preset(tmp_path)))
        outcome = _upload_outcome(page)
        assert outcome == "loaded", outcome
        settle(page)
    assert int((proxy.run_dir / "replica-0.pid").read_text()) != victim
    assert len(answers) == 1 and answers[0][0] == 204, answers
    tried = _tried(answers[0][1])
    assert tried[0] == one and tried[-1] == other, tried


def _routed(url: str, key: str) -> str | None:
    """The replica nginx sends a browser with stickiness key ``key`` to now (None while nothing answers)."""
    with contextlib.suppress(requests.RequestException):
        return requests.get(f"{url}/_stcore/health", cookies={"st_replica": key}, timeout=5).headers.get("X-Upstream")
    return None
