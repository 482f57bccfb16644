"""Every typed number lands on a slow machine, or a message names it with the cell to retype: nothing vanishes.

Chromium's CPU is throttled 4× (CDP ``Emulation.setCPUThrottlingRate``) and the server shares its cores with a
process that burns CPU for the test's duration (bounded). Each test types as a person does (double-click, type,
Enter; or values down a column), then reads every cell typed into. A value that is not in its cell must be named,
with its cell, in a message on the page: "did not land" with the value and "retype". Anything else fails."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.helpers.browser import (
    SHOTS,
    cell_text,
    guarded_context,
    open_page,
    open_sidebar_expander,
    ready,
    rerun,
    runs,
    settle,
)

THROTTLE = 4
BURN_SECONDS = 240  # a bound on the busy process, whatever happens to the test
BURN = f"import time\nend = time.monotonic() + {BURN_SECONDS}\nwhile time.monotonic() < end:\n    pass\n"


@pytest.fixture
def busy_server() -> Iterator[None]:
    """A process burning one core beside the server while the test runs (killed at its end, bounded by time)."""
    proc = subprocess.Popen([sys.executable, "-c", BURN])
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def slow_page(browser) -> Iterator:
    """A guarded page at 1400 × 1000 whose CPU is throttled ``THROTTLE``×."""
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        cdp = context.new_cdp_session(pg)
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": THROTTLE})
        yield pg


def _cell_point(pg, grid: int, row: int, col: int, n_cols: int = 4) -> tuple[float, float]:
    """The middle of a cell of grid ``grid`` (``n_cols`` columns after a 50 px index column; rows 35 px apart)."""
    g = pg.get_by_test_id("stDataFrame").nth(grid)
    g.scroll_into_view_if_needed()
    box = g.bounding_box()
    return box["x"] + 50 + (box["width"] - 50) / n_cols * (col + 0.5), box["y"] + 35 * (row + 1.5)


def _type_at_once(pg, grid: int, row: int, col: int, value: str) -> None:
    pg.mouse.dblclick(*_cell_point(pg, grid, row, col))
    pg.keyboard.type(value)
    pg.keyboard.press("Enter")


def _after_the_runs(pg, seconds: float = 12) -> None:
    """Let the runs the edits started finish (a lost edit starts none), then let the page settle and say."""
    with contextlib.suppress(TimeoutError):
        settle(pg, max(runs(pg) - 1, 0), timeout=seconds * 1000)
    ready(pg)
    pg.wait_for_timeout(4000)  # what the page says after the runs has time to show, throttled


def _said_lost(pg) -> str:
    """Every message on the page that says a typed value did not land."""
    texts = pg.get_by_role("alert").all_text_contents()
    texts += pg.locator("[data-testid='stAlertContainer']").all_text_contents()
    return "\n".join(t for t in texts if "did not land" in t or "did not reach a cell" in t)


def _names_cell(pg, grid: int, row: int, col: int) -> re.Pattern:
    """How a note names a cell: its row's label and its column's ("cat · d2"), read from the grid's accessible table;
    or the row alone ("row cat"), when the grid was being replaced and only the row was known (from where the
    double-click fell), never another row or column."""
    g = pg.get_by_test_id("stDataFrame").nth(grid)
    label = re.escape(g.get_by_test_id(f"glide-cell-0-{row}").text_content())
    column = re.escape(g.locator("thead th, thead [role=columnheader]").nth(col + 1).text_content())
    return re.compile(rf"(?<!\w){label} · {column}(?!\w)|\brow {label}(?! ·)(?!\w)")


def _landed_or_named(pg, grid: int, typed: dict[tuple[int, int], str], shot: str) -> list[str]:
    """For each (row, col) → value typed: what is wrong (the cell does not show it, and no message names it with that
    cell: a note naming the value at another cell sends the person to retype it in the wrong place)."""
    said = _said_lost(pg)
    entries = re.split(r";|\n", said)  # a note names one or more cells, each with what was typed there
    wrong = []
    for (r, c), value in typed.items():
        text = cell_text(pg, grid, r, c) or ""
        try:
            landed = abs(float(text) - float(value)) <= 1e-9 * max(1.0, abs(float(value)))
        except ValueError:
            landed = False
        cell = _names_cell(pg, grid, r, c)
        number = re.compile(rf"(?<![\d.]){re.escape(value)}(?![\d.])")
        named = any(number.search(e) and cell.search(e) for e in entries) and "retype" in said.lower()
        if not landed and not named:
            wrong.append(f"row {r + 1}, col {c + 1}: typed {value}, shows {text!r}, said {said!r}")
    if wrong:
        pg.screenshot(path=str(SHOTS / shot))
    return wrong


@pytest.mark.usefixtures("busy_server")
def test_values_typed_down_a_column_land_throttled(browser, base_url) -> None:
    """Select a cell, then a value and Enter three times, 250 ms apart (Enter moves down): three trials."""
    for trial in range(3):
        with slow_page(browser) as pg:
            open_page(pg, base_url, "tokens", "preset=the_cat_sat")
            ready(pg)
            pg.mouse.click(*_cell_point(pg, 0, 0, 1))
            pg.wait_for_timeout(300)
            values = [f"{trial + 1}.5", f"{trial + 2}.25", f"{trial + 3}.75"]
            for value in values:
                pg.keyboard.type(value, delay=30)
                pg.keyboard.press("Enter")
                pg.wait_for_timeout(250)
            _after_the_runs(pg)
            wrong = _landed_or_named(pg, 0, dict(zip([(0, 1), (1, 1), (2, 1)], values, strict=True)), "slow_column.png")
        assert not wrong, (trial, wrong)


@pytest.mark.parametrize("gap_ms", [0, 150, 400])
@pytest.mark.usefixtures("busy_server")
def test_a_second_edit_right_after_the_first_lands_throttled(browser, base_url, gap_ms: int) -> None:
    """Double-click, type, Enter on one cell, then ``gap_ms`` later on another: both land, or are named."""
    with slow_page(browser) as pg:
        open_page(pg, base_url, "tokens", "preset=the_cat_sat")
        ready(pg)
        _type_at_once(pg, 0, 0, 1, "2.5")
        pg.wait_for_timeout(gap_ms)
        _type_at_once(pg, 0, 2, 2, "3.25")
        _after_the_runs(pg)
        wrong = _landed_or_named(pg, 0, {(0, 1): "2.5", (2, 2): "3.25"}, f"slow_second_{gap_ms}.png")
    assert not wrong, wrong


WATCH = """() => { window.seenEditors = []; new MutationObserver(() => {
    const i = document.querySelector('#portal .gdg-input');
    if (i && !i.dataset.watched) { i.dataset.watched = 1; window.seenEditors.push('open');
      i.addEventListener('keydown', e => window.seenEditors.push(e.key + ':' + i.value), true); }
  }).observe(document.body, {childList: true, subtree: true}); }"""


@pytest.mark.parametrize("delay_ms", [0, 300])
@pytest.mark.usefixtures("busy_server")
def test_an_edit_typed_during_a_rerun_lands_throttled(browser, base_url, delay_ms: int) -> None:
    """A rerun started by another control (the temperature, typed in the sidebar), and ``delay_ms`` into it a quick
    edit: it lands, or a message names it and its cell."""
    with slow_page(browser) as pg:
        open_page(pg, base_url, "tokens", "preset=the_cat_sat")
        ready(pg)
        open_sidebar_expander(pg, "Heads, mask and conventions")
        temperature = pg.get_by_test_id("stSidebar").get_by_role("spinbutton", name="Temperature T")
        temperature.fill("2")
        mark = runs(pg)
        temperature.press("Enter")
        pg.wait_for_timeout(delay_ms)
        pg.evaluate(WATCH)
        _type_at_once(pg, 0, 1, 2, "6.5")
        with contextlib.suppress(TimeoutError):
            settle(pg, mark, timeout=20_000)
        _after_the_runs(pg)
        wrong = _landed_or_named(pg, 0, {(1, 2): "6.5"}, f"slow_during_rerun_{delay_ms}.png")
        seen = pg.evaluate("() => window.seenEditors")
    assert not wrong, (wrong, seen)


TITLE = "Make 'sat' look back at 'The'"


@pytest.mark.usefixtures("busy_server")
def test_the_challenges_w_k_grid_takes_a_5_throttled(browser, base_url) -> None:
    """The learner's case: a W_k challenge started, double-click a cell, type 5, Enter: the cell shows 5 (it stayed
    0.02022 with no message), or a message names the 5 and its cell."""
    with slow_page(browser) as pg:
        open_page(pg, base_url, "challenges")
        chooser = pg.get_by_test_id("stSelectbox").filter(has_text="A built-in challenge")
        if not pg.get_by_role("heading", name=TITLE).count():  # the first challenge is chosen as the page opens
            chooser.locator("input").first.click()
            pg.keyboard.type(TITLE[:20], delay=50)  # the list, filtered to the one challenge
            pg.get_by_role("option", name=TITLE).first.wait_for(timeout=20_000)
            with rerun(pg):
                pg.keyboard.press("Enter")
        with rerun(pg):
            pg.get_by_role("button", name="Start").first.click()
        ready(pg)
        grid = _grid_index(pg, "ed-W_k-")
        pg.mouse.dblclick(*_cell_point(pg, grid, 1, 1))
        pg.locator("#portal .gdg-input").wait_for(timeout=10_000)  # "with the editor visibly open"
        pg.keyboard.type("5")
        pg.keyboard.press("Enter")
        _after_the_runs(pg)
        wrong = _landed_or_named(pg, grid, {(1, 1): "5"}, "slow_challenge_w_k.png")
    assert not wrong, wrong


def _grid_index(pg, key_prefix: str) -> int:
    """The index among the page's grids of the first one whose widget key starts with ``key_prefix``."""
    return pg.get_by_test_id("stDataFrame").evaluate_all(
        "(els, p) => els.findIndex(e => !!e.closest(`[class*='st-key-${p}']`))", key_prefix
    )


# A double-click the grid never took (its page busy): the pointer events stopped before the grid's handlers, and the
# mouse's default (moving the focus) prevented, once; the focus stays in the box focused before, as on a busy page.
UNTAKEN = """() => {
  const stop = e => { e.stopPropagation(); if (e.type === 'mousedown') e.preventDefault(); };
  const types = ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click'];
  types.forEach(t => window.addEventListener(t, stop, true));
  window.addEventListener('dblclick', () => types.forEach(t => window.removeEventListener(t, stop, true)),
    {capture: true, once: true});
}"""


def test_keys_after_a_double_click_the_grid_did_not_take_stay_out_of_the_box_focused_before(browser, base_url) -> None:
    """On a busy page the grid can take the focus late: the digits typed after a double-click on a cell went into the
    box focused before (the sidebar's temperature, 1 became 16.5), and the cell kept its number with no word. They are
    the cell's: the temperature stays 1, and the value lands or a message names it, to retype."""
    with slow_page(browser) as pg:
        open_page(pg, base_url, "tokens", "preset=the_cat_sat")
        ready(pg)
        open_sidebar_expander(pg, "Heads, mask and conventions")
        temperature = pg.get_by_test_id("stSidebar").get_by_role("spinbutton", name="Temperature T")
        temperature.click()
        was = temperature.input_value()
        pg.evaluate(UNTAKEN)
        pg.mouse.dblclick(*_cell_point(pg, 0, 1, 2))
        pg.keyboard.type("6.5")
        pg.keyboard.press("Enter")
        _after_the_runs(pg)
        assert temperature.input_value() == was, "the digits went into the temperature's box"
        wrong = _landed_or_named(pg, 0, {(1, 2): "6.5"}, "slow_untaken_double_click.png")
    assert not wrong, wrong


def test_a_value_committed_with_tab_at_once_lands_throttled(browser, base_url) -> None:
    """Double-click, type and Tab at once (Tab commits as Enter does, and moves right): the keys kept for the editor
    were dropped without a word when a Tab came before it opened. The value lands, or a message names it."""
    with slow_page(browser) as pg:
        open_page(pg, base_url, "tokens", "preset=the_cat_sat")
        ready(pg)
        pg.mouse.dblclick(*_cell_point(pg, 0, 2, 1))
        pg.keyboard.type("4.5")
        pg.keyboard.press("Tab")
        _after_the_runs(pg)
        wrong = _landed_or_named(pg, 0, {(2, 1): "4.5"}, "slow_tab.png")
    assert not wrong, wrong
