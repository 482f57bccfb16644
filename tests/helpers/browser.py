"""A real Streamlit server and headless Chromium (Debian's /usr/bin/chromium, driven by Playwright)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from attention.io.parse import read_matrix_csv
from tests.helpers import ROOT

CHARTS = "[data-testid='stVegaLiteChart']"  # every Vega-Lite chart on a page
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


@contextlib.contextmanager
def server_listing(models: str) -> Iterator[str]:
    """A ``streamlit run`` server whose ``ATTENTION_MODELS`` is ``models`` ("name=path;..."): set for this process too
    while it runs (the server copies the environment as it starts; a test makes its links here), then put back."""
    before = os.environ.get("ATTENTION_MODELS")
    os.environ["ATTENTION_MODELS"] = models
    try:
        with streamlit_server() as url:
            yield url
    finally:
        if before is None:
            os.environ.pop("ATTENTION_MODELS", None)
        else:
            os.environ["ATTENTION_MODELS"] = before


@contextlib.contextmanager
def burning(n: int, seconds: float = 240) -> Iterator[None]:
    """``n`` processes burning CPU beside the server (a busy machine), killed at the end and bounded by ``seconds``
    whatever happens to the caller: the throttled browser tests' busy server and bench_typing's busy mode."""
    burn = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", burn]) for _ in range(n)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


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


LOCAL = ("http://127.0.0.1", "data:", "blob:")  # nothing may be fetched from outside this machine


def _track(page) -> None:
    """Collect on ``page``: console errors, requests leaving the machine, and the script runs the server reports.

    Runs are read from Streamlit's websocket messages (a ForwardMsg ``new_session`` starts a run, ``script_finished``
    ends it), so a run is seen however fast it is; the page's ``data-test-script-state`` can skip 'running' when React
    draws both changes in one frame."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    page.console_errors, page.external, page.script_runs = [], [], []
    early = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_EARLY_FOR_RERUN")

    def frame(payload) -> None:
        if not isinstance(payload, (bytes, bytearray)):
            return
        msg = ForwardMsg()
        msg.ParseFromString(bytes(payload))
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            page.script_runs.append("start")
        elif kind == "script_finished":
            page.script_runs.append("rerun" if msg.script_finished == early else "finished")

    page.on("websocket", lambda ws: ws.on("framereceived", frame))
    page.on(  # a new document (goto, reload), not the address updates Streamlit makes on every run
        "request",
        lambda r: (
            page.script_runs.append("document") if r.is_navigation_request() and r.frame == page.main_frame else None
        ),
    )
    page.on(
        "console",
        lambda m: (
            page.console_errors.append(m.text)
            if m.type == "error" and "Failed to load resource" not in m.text
            else None
        ),
    )
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    page.on("request", lambda r: None if r.url.startswith(LOCAL) else page.external.append(r.url))


@contextlib.contextmanager
def guarded_context(browser, **options) -> Iterator:
    """A browser context whose every page is guarded: on leaving, no request has left the machine and no page logged
    a console error. Every browser test opens its contexts here (the pages also record their script runs for
    :func:`settle`)."""
    context = browser.new_context(**options)
    context.on("page", _track)
    try:
        yield context
        external = [u for pg in context.pages for u in pg.external]
        errors = [e for pg in context.pages for e in pg.console_errors]
    finally:
        context.close()
    assert not external, f"requests left the machine: {external}"
    assert not errors, f"console errors: {errors}"


def runs(page) -> int:
    """A mark for :func:`settle`: take it before the action whose run you will wait for."""
    return len(page.script_runs)


def settle(page, since: int | None = None, timeout: float = 60_000) -> None:
    """Wait for a script run started after the mark ``since`` to have finished (reruns it asked for included) and been
    drawn: the stApp marked not running, no skeleton left, two animation frames painted. ``since`` is a :func:`runs`
    mark taken before the action: use ``with rerun(page): <action>``. Without it, the mark is the last page load
    (goto, reload): right after one, this waits for its run; after an action in the page it only waits for the page to
    be idle, which may be before that action's run has started. Needs a page of :func:`guarded_context`."""
    events = getattr(page, "script_runs", None)
    if events is None:
        raise TypeError("settle() needs a page of a context opened with guarded_context(browser, ...)")
    if since is None:
        since = max((i + 1 for i, e in enumerate(events) if e == "document"), default=0)
    deadline = time.monotonic() + timeout / 1000
    while not ("start" in events[since:] and [e for e in events if e != "document"][-1] == "finished"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no script run started and finished after mark {since}: {events[since:]}")
        page.wait_for_timeout(20)  # lets Playwright deliver the websocket's messages
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=timeout
    )
    page.wait_for_function("() => !document.querySelector(\"[data-testid='stSkeleton']\")", timeout=timeout)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


@contextlib.contextmanager
def rerun(page, timeout: float = 60_000) -> Iterator[None]:
    """``with rerun(page): <an action that reruns the script>``: afterwards the page shows that action's run."""
    mark = runs(page)
    yield
    settle(page, mark, timeout)


def open_sidebar_expander(page, label: str) -> None:
    """Click a sidebar expander's heading (a lazy one reruns the page to build its content) and wait for the run."""
    box = page.get_by_test_id("stSidebar").get_by_test_id("stExpander").filter(has_text=label).first
    with rerun(page):
        box.locator("summary").click()


def open_view(page, label: str) -> None:
    """Open a step page's closed expander whose heading has ``label`` (its view is built only once it is open: the
    click reruns the page) and wait for that run; an open one is left as it is."""
    box = page.get_by_test_id("stMain").get_by_test_id("stExpander").filter(has_text=label).first
    if box.locator("details[open]").count():
        return
    with rerun(page):
        box.locator("summary").click()


def grid_cells(page, key_prefix: str) -> list[list[str]]:
    """The text of each cell of the first matrix editor whose key starts with ``key_prefix`` (header row first, each
    row's label first): what the page shows, typed values waiting for the server's echo included."""
    grid = page.locator(f"[class*='st-key-{key_prefix}'] .mgrid").first
    grid.locator("table tr").first.wait_for(state="attached")
    return grid.locator("table tr").evaluate_all("trs => trs.map(tr => Array.from(tr.children, c => c.textContent))")


def error_texts(page) -> list[str]:
    """Tracebacks and st.error boxes on the page."""
    out = page.get_by_test_id("stException").all_inner_texts()
    out += page.locator("[data-testid='stAlertContentError']").all_inner_texts()
    return out


def blank_pixels(png: bytes, share: float = 0.02) -> str | None:
    """Why a chart's screenshot looks blank (its grey levels barely spread, or under ``share`` of its pixels differ
    from the most common grey), or None."""
    grey = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float)
    background = np.bincount(grey.astype(int).ravel()).argmax()
    drawn = float(np.mean(np.abs(grey - background) > 16))
    if grey.std() < 8 or drawn < share:
        return f"blank pixels (std {grey.std():.1f}, {drawn:.1%} drawn)"
    return None


HEADER_BOTTOM = """() => Math.max(0,
    document.querySelector("[data-testid='stHeader']")?.getBoundingClientRect().bottom ?? 0)"""


def seen_png(el) -> bytes:  # noqa: ANN001 - a Playwright locator
    """The pixels of ``el`` a person sees once scrolled to it. An element that fits the view below the header: its
    screenshot. A taller one (a bar per layer's K and V at 1280 × 720): Chromium paints the app's scrolled container
    only where it is on screen, so the rest of an element screenshot is blank (1.9% drawn, where the chart in view
    draws 8-11%); so the part on screen with the element centred, below the header."""
    page = el.page
    box, view, top = el.bounding_box(), page.viewport_size, page.evaluate(HEADER_BOTTOM)
    if box is None or box["height"] <= view["height"] - top:
        return el.screenshot(timeout=60_000)
    el.evaluate("e => e.scrollIntoView({block: 'center', inline: 'nearest'})")
    box = el.bounding_box()
    x, y = max(box["x"], 0), max(box["y"], top)
    right, bottom = min(box["x"] + box["width"], view["width"]), min(box["y"] + box["height"], view["height"])
    if right <= x or bottom <= y:  # nothing on screen: the element's screenshot says what it can
        return el.screenshot(timeout=60_000)
    return page.screenshot(clip={"x": x, "y": y, "width": right - x, "height": bottom - y}, timeout=60_000)


def why_not_readable(page, index: int, share: float = 0.02) -> str | None:
    """None when chart ``index``'s box is at least 120 × 60 px and its pixels, as seen (:func:`seen_png`), are not
    blank (:func:`blank_pixels`, with ``share``); else why."""
    el = page.locator(CHARTS).nth(index)
    box = el.bounding_box()
    if box is None or box["width"] < 120 or box["height"] < 60:
        return f"chart {index}: box {box}"
    blank = blank_pixels(seen_png(el), share)
    return f"chart {index}: {blank}" if blank else None


def wait_readable(page, count: int, *, exact: bool = True, seconds: float = 60, share: float = 0.02) -> None:
    """Wait (up to ``seconds``) until ``count`` charts (at least ``count`` when not ``exact``) are drawn and the first
    ``count`` are readable (:func:`why_not_readable`, with ``share``); else fail saying why."""
    why: list[str | None] = []
    for _ in range(int(seconds * 2)):
        n = page.locator(CHARTS).count()
        if (n == count if exact else n >= count) and page.locator(f"{CHARTS} svg, {CHARTS} canvas").count() >= count:
            why = [why_not_readable(page, k, share) for k in range(count)]
            if not any(why):
                return
        page.wait_for_timeout(500)
    raise AssertionError(f"charts not readable: {why} ({page.locator(CHARTS).count()} charts)")


def head_button(page, name: str):
    """Every head's button ``name`` ("Ablate layer 2 · head 1", "Open layer 2 · head 1 on the step pages"): only the
    chosen head's buttons are drawn, so the head it names is chosen first (*Head to read, ablate or open*) when
    needed, as a person does."""
    button = page.get_by_role("button", name=name, exact=True)
    head = re.search(r"layer \d+ · head \d+", name)
    if head and not button.count():
        box = page.get_by_role("combobox", name="Head to read, ablate or open")
        box.scroll_into_view_if_needed()
        box.click()
        with rerun(page):
            page.get_by_role("option", name=head.group(), exact=True).click()
    button.scroll_into_view_if_needed()
    return button


# Pages, grids and downloads, as a person uses them


def open_page(page, base_url: str, name: str, query: str = "") -> None:
    page.goto(f"{base_url}/{name}" + (f"?{query}" if query else ""))
    settle(page)  # the run of this page load


def open_charts(page, url: str, count: int) -> None:
    """Load ``url`` (a page's whole address), wait until its ``count`` charts are drawn and readable
    (:func:`wait_readable`), and fail on any error the page shows."""
    page.goto(url)
    settle(page)
    wait_readable(page, count)
    assert not error_texts(page), error_texts(page)


def shot(page, name: str, at=None) -> None:
    """A screenshot of the viewport to ``SHOTS/<name>.png``, after scrolling the locator ``at`` (if any) into view."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    if at is not None:
        at.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def click_opens_head(page, box: dict, head: str, name: str) -> None:
    """Click the middle of ``box`` (a model page's mark for ``head``, "layer 2 · head 1"): the page says the step
    pages now show that head (screenshot ``name``), and its link to the Scores page opens them on it."""
    with rerun(page):
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    assert not error_texts(page), error_texts(page)
    said = page.get_by_test_id("stAlertContentSuccess").inner_text()
    assert f"The step pages now show {head}" in said, said
    shot(page, name, page.get_by_test_id("stAlertContentSuccess"))
    with rerun(page):
        page.get_by_role("link", name=f"→ Scores of {head}").click()
    settle(page)
    assert head in page.inner_text("body")


def nav_link(page, label: str):
    """The navigation's link to the page labelled ``label`` (the first whose label contains it), found the way a
    person does: the navigation sits at the top, one menu per section, so its section's menu is opened first."""
    menus = page.get_by_test_id("stTopNav").get_by_test_id("stTopNavSection")
    for i in range(menus.count()):
        menus.nth(i).click()
        link = page.get_by_test_id("stTopNavPopover").locator("a").filter(has_text=label)
        if link.count():
            return link.first
        page.keyboard.press("Escape")  # not in this section: close its menu
    raise AssertionError(f"no page labelled {label!r} in the navigation's menus")


def nav(page, label: str) -> None:
    """Switch page the way a person does, through the navigation at the top (same session): its section, then it."""
    link = nav_link(page, label)
    with rerun(page):
        link.click()


def read_csv(path) -> tuple[list[str], list[str], np.ndarray]:
    """Columns, rows and values of a downloaded matrix CSV (read by the app's own importer)."""
    values, rows, cols = read_matrix_csv(Path(path).read_bytes(), "download")
    return cols, rows, values


def download(page, label: str, tmp_path) -> str:
    """Click the download button ``label`` (opening the page's "Downloads" first when it is closed) and save the
    file."""
    if not page.get_by_role("button", name=label).count():
        open_view(page, "Downloads")
    with page.expect_download() as info:
        page.get_by_role("button", name=label).first.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    return str(path)


EDITOR = ".mgrid"  # a matrix editor (attention/ui/widgets/matrix_grid.js): a plain table, one td per cell


def editor_cell(pg, grid: int, row: int, col: int):
    """The cell (0-based, not counting the row labels) of the page's ``grid``-th matrix editor."""
    return pg.locator(EDITOR).nth(grid).locator(f"td[data-r='{row}'][data-c='{col}']")


def landed(pg, grid: int | None = None, timeout_ms: float = 60_000) -> None:
    """Wait until the editors (or the ``grid``-th) hold no typed value the server has not echoed yet."""
    pg.wait_for_function(
        """([sel, i]) => { const gs = Array.from(document.querySelectorAll(sel));
           return (i === null ? gs : [gs[i]]).every(g => g && g.dataset.pending === '0'); }""",
        arg=[EDITOR, grid],
        timeout=timeout_ms,
    )


def edit_grid_cell(page, grid_index: int, row: int, col: int, n_cols: int = 0, value: str = "", **_: object) -> None:
    """Double-click a matrix editor's cell (0-based, not counting the row labels), type, press Enter, and wait until
    the server has the value (its echo) and the run it started is drawn. ``n_cols`` is not needed (cells are
    elements, not pixels of a canvas)."""
    cell = editor_cell(page, grid_index, row, col)
    cell.scroll_into_view_if_needed()
    cell.dblclick()
    page.keyboard.type(value)
    with rerun(page):
        page.keyboard.press("Enter")
    landed(page, grid_index)
    ready(page)


def ready(pg) -> None:
    """The run finished and the grids are drawn (not skeletons)."""
    settle(pg)
    for _ in range(100):
        if pg.locator("[data-testid='stSkeleton']").count() == 0:
            break
        pg.wait_for_timeout(50)


def cell_text(pg, grid: int, row: int, col: int) -> str:
    """The text a matrix editor shows in a cell (0-based, not counting the row labels)."""
    return editor_cell(pg, grid, row, col).text_content()


def cell_once(pg, grid: int, row: int, col: int, text: str, timeout_ms: int = 5000) -> str:
    """The text of a cell once it is ``text``, or at the timeout (whatever it is then)."""
    for _ in range(timeout_ms // 100):
        got = cell_text(pg, grid, row, col)
        if got == text:
            return got
        pg.wait_for_timeout(100)
    return cell_text(pg, grid, row, col)


def cell_number_once(pg, grid: int, row: int, col: int, value: float, timeout_ms: int = 5000) -> float | None:
    """The number a cell shows once it is ``value`` (as typed, or in the editor's format), or at the timeout whatever
    it shows then (None if not a number)."""
    for _ in range(timeout_ms // 100 + 1):
        try:
            got = float(cell_text(pg, grid, row, col) or "nan")
        except ValueError:
            got = None
        if got is not None and abs(got - value) <= 1e-9 * max(1.0, abs(value)):
            return got
        pg.wait_for_timeout(100)
    return got


def type_in_cell(pg, grid: int, row: int, col: int, n_cols: int = 0, value: str = "", **_: object) -> None:
    """The learner's steps: double-click the cell, type, press Enter; then wait for the server's echo and the run."""
    edit_grid_cell(pg, grid, row, col, n_cols, value)


# Accessibility: axe-core in the page (the script comes from the axe_script fixture)

# Streamlit's own chrome, not drawn by our code: the top header (toolbar, menu and status live inside it), the
# sidebar's header (logo, collapse button) and the page navigation. Three containers, nothing of ours inside them.
# A toast's box too (st.toast: Streamlit's role="alertdialog" without a name, axe's aria-dialog-name); its text is
# ours and stays in the page's other message where it is also said (the sidebar's "Handed in").
CHROME = (
    "[data-testid='stHeader'], [data-testid='stSidebarHeader'], [data-testid='stSidebarNav'], [data-testid='stToast']"
)
FAIL_IMPACTS = ("critical", "serious")

# axe.run with the elements of each violating node classified in the page itself (the DOM may change later)
RUN_AXE = """async chrome => {
  const r = await axe.run(document, {resultTypes: ['violations'], elementRef: true});
  return r.violations.flatMap(v => v.nodes.map(n => ({
    id: v.id, impact: n.impact || v.impact, target: n.target.join(' '), html: n.html.slice(0, 160),
    chrome: !!(n.element && n.element.closest(chrome)),
  })));
}"""


def drawn(pg) -> None:
    """Charts drawn and the fonts (KaTeX's too) loaded: what axe measures is what a person sees."""
    charts = pg.locator("[data-testid='stVegaLiteChart']")
    for i in range(charts.count()):
        charts.nth(i).locator("svg, canvas").first.wait_for(state="attached", timeout=30_000)
    pg.evaluate("() => document.fonts.ready.then(() => true)")


def violations(pg, axe_script: str) -> tuple[list[dict], list[dict]]:
    """(ours, chrome): every violating element axe finds, split by whether it sits in Streamlit's chrome."""
    drawn(pg)
    pg.evaluate(axe_script)
    found = pg.evaluate(RUN_AXE, CHROME)
    return [v for v in found if not v["chrome"]], [v for v in found if v["chrome"]]


def check(pg, axe_script: str, where: str) -> None:
    """Fail on a critical or serious violation in our content; print (once per rule) what else axe found."""
    ours, chrome = violations(pg, axe_script)
    for label, found in (("Streamlit's chrome, not failed", chrome), ("ours", ours)):
        for rule in sorted({(v["id"], v["impact"]) for v in found}):
            nodes = [v["target"][-80:] for v in found if (v["id"], v["impact"]) == rule]
            print(f"{where}: {label}: {rule[0]} ({rule[1]}) x{len(nodes)}: {nodes[0]}")
    bad = [v for v in ours if v["impact"] in FAIL_IMPACTS]
    assert not bad, "\n".join(f"{v['id']} ({v['impact']}): {v['target']}\n    {v['html']}" for v in bad)


def choose_model(pg, label: str, timeout: float = 60_000) -> None:
    """Choose the model labelled ``label`` in a model page's chooser, the way a person does, and wait for the run
    (``timeout`` ms: a real model's first load on a busy machine takes longer)."""
    box = pg.get_by_test_id("stSelectbox").filter(has_text="Model").first.locator("input").first
    box.scroll_into_view_if_needed()
    option = pg.get_by_role("option").filter(has_text=label).first
    for _ in range(10):  # a list opened while the page still scrolls closes again: open it until it stays
        box.click()
        try:
            option.wait_for(state="visible", timeout=2_000)
            break
        except Exception:  # noqa: BLE001 - not open yet: close what opened and try again
            pg.keyboard.press("Escape")
    with rerun(pg, timeout=timeout):
        option.click()
    assert not error_texts(pg), error_texts(pg)
