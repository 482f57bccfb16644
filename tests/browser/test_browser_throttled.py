"""Every typed number lands on a slow machine: nothing vanishes, and no note asks to retype one.

Chromium's CPU is throttled 4× (CDP ``Emulation.setCPUThrottlingRate``) and the server shares its cores with
processes that burn CPU for the test's duration (bounded). Each test types as a person does (double-click, type,
Enter; values down a column; Tab along a row; a pasted block), with no pause for the page, then waits until the
editor holds no value the server has not echoed, and reads every cell typed into: on the page, and again after a
reload (what the server holds). The matrix editor keeps a typed value as pending until the server echoes it
(attention/ui/widgets/matrix_grid.py), so a rerun never takes one away."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from tests.helpers.browser import (
    SHOTS,
    burning,
    cell_text,
    editor_cell,
    guarded_context,
    landed,
    open_page,
    open_sidebar_expander,
    ready,
    rerun,
)

THROTTLE = 4


@pytest.fixture
def busy_server() -> Iterator[None]:
    """A process burning one core beside the server while the test runs."""
    with burning(1):
        yield


@contextlib.contextmanager
def slow_page(browser, throttle: float = THROTTLE) -> Iterator:
    """A guarded page at 1400 × 1000 whose CPU is throttled ``throttle``×."""
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        cdp = context.new_cdp_session(pg)
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
        yield pg


def _double_click_type_enter(pg, grid: int, row: int, col: int, value: str) -> None:
    """The learner's steps, at once: double-click the cell, type the number, Enter."""
    cell = editor_cell(pg, grid, row, col)
    cell.scroll_into_view_if_needed()
    cell.dblclick()
    pg.keyboard.type(value)
    pg.keyboard.press("Enter")


def _number(text: str | None) -> float | None:
    try:
        return float(text or "")
    except ValueError:
        return None


INDEX = "(gs, p) => gs.findIndex(g => !!g.closest(`[class*='st-key-${p}']`))"


def _grid(pg, key: str) -> int:
    """The index among the page's matrix editors of the one whose key starts with ``key`` ("ed-W_q-")."""
    return pg.locator(".mgrid").evaluate_all(INDEX, key)


def _not_landed(pg, key: str, typed: dict[tuple[int, int], str], shot: str, again: str = "tokens") -> list[str]:
    """For each (row, col) → value typed into the editor keyed ``key``: what is wrong once the server has echoed every
    value: the cell does not show it, or, drawn afresh from the page's address on page ``again`` (what the server
    holds, as a reload or a link would show it), still does not."""
    grid = _grid(pg, key)
    landed(pg, grid)
    ready(pg)
    wrong = []
    for (r, c), value in typed.items():
        got = _number(cell_text(pg, grid, r, c))
        if got is None or abs(got - float(value)) > 5e-4 * max(1.0, abs(float(value))):
            wrong.append(f"row {r + 1}, col {c + 1}: typed {value}, the page shows {cell_text(pg, grid, r, c)!r}")
    base, _, query = pg.url.partition("?")
    pg.goto(f"{base.rsplit('/', 1)[0]}/{again}?{query}")
    ready(pg)
    grid = _grid(pg, key)
    for (r, c), value in typed.items():
        got = _number(cell_text(pg, grid, r, c))
        if got is None or abs(got - float(value)) > 5e-4 * max(1.0, abs(float(value))):
            wrong.append(f"row {r + 1}, col {c + 1}: typed {value}, drawn afresh {cell_text(pg, grid, r, c)!r}")
    if wrong:
        pg.screenshot(path=str(SHOTS / shot))
    return wrong


@pytest.mark.usefixtures("busy_server")
def test_values_typed_down_a_column_land_throttled(browser, base_url) -> None:
    """Select a cell, then a value and Enter, three times with no pause (Enter moves down)."""
    with slow_page(browser) as pg:
        open_page(pg, base_url, "tokens", "preset=the_cat_sat")
        ready(pg)
        editor_cell(pg, 0, 0, 1).click()
        values = ["1.5", "2.25", "3.75"]
        for value in values:
            pg.keyboard.type(value)
            pg.keyboard.press("Enter")
        wrong = _not_landed(pg, "ed-X-", dict(zip([(0, 1), (1, 1), (2, 1)], values, strict=True)), "slow_column.png")
    assert not wrong, wrong


@pytest.mark.parametrize("gap_ms", [0, 150, 400])
@pytest.mark.usefixtures("busy_server")
def test_a_second_edit_right_after_the_first_lands_throttled(browser, base_url, gap_ms: int) -> None:
    """Double-click, type, Enter on one cell, then ``gap_ms`` later on another: both land."""
    with slow_page(browser) as pg:
        open_page(pg, base_url, "tokens", "preset=the_cat_sat")
        ready(pg)
        _double_click_type_enter(pg, 0, 0, 1, "2.5")
        pg.wait_for_timeout(gap_ms)
        _double_click_type_enter(pg, 0, 2, 2, "3.25")
        wrong = _not_landed(pg, "ed-X-", {(0, 1): "2.5", (2, 2): "3.25"}, f"slow_second_{gap_ms}.png")
    assert not wrong, wrong


def test_a_typed_value_lands_on_a_busy_server(browser, base_url) -> None:
    """The learner's case, with four processes burning CPU beside the server (on 2 cores): the Softmax page, the W_q
    tab of its inputs, a double-click on d1 · q1, 3, Enter; at once the same on the next row. Both land."""
    with burning(4), slow_page(browser, throttle=1) as pg:
        open_page(pg, base_url, "softmax", "preset=the_cat_sat")
        ready(pg)
        with rerun(pg):
            pg.get_by_role("tab", name="W_q").first.click()
        ready(pg)
        grid = _grid(pg, "ed-W_q-")
        _double_click_type_enter(pg, grid, 0, 0, "3")
        _double_click_type_enter(pg, grid, 1, 0, "-2.5")
        wrong = _not_landed(pg, "ed-W_q-", {(0, 0): "3", (1, 0): "-2.5"}, "busy_learner.png", again="weights")
    assert not wrong, wrong


@pytest.mark.usefixtures("busy_server")
def test_values_typed_along_a_row_with_tab_land_throttled(browser, base_url) -> None:
    """Double-click, then a value and Tab, four times with no pause (Tab moves right, Shift+Tab would go back)."""
    with slow_page(browser) as pg:
        open_page(pg, base_url, "tokens", "preset=the_cat_sat")
        ready(pg)
        editor_cell(pg, 0, 1, 0).dblclick()
        values = ["4.5", "-1", "0.125", "7"]
        pg.keyboard.type(values[0])
        for value in values[1:]:
            pg.keyboard.press("Tab")
            pg.keyboard.type(value)
        pg.keyboard.press("Tab")
        wrong = _not_landed(pg, "ed-X-", {(1, c): v for c, v in enumerate(values)}, "slow_tab.png")
    assert not wrong, wrong


PASTE = """([sel, text]) => {
  const data = new DataTransfer();
  data.setData('text/plain', text);
  document.activeElement.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true}));
  return document.activeElement.closest(sel) !== null;
}"""


@pytest.mark.usefixtures("busy_server")
def test_a_block_pasted_from_a_spreadsheet_lands_throttled(browser, base_url) -> None:
    """A 2 × 3 block of tab-separated rows pasted at the selected cell (row 2, column 2): all six cells land."""
    with slow_page(browser) as pg:
        open_page(pg, base_url, "tokens", "preset=the_cat_sat")
        ready(pg)
        editor_cell(pg, 0, 1, 1).click()
        assert pg.evaluate(PASTE, [".mgrid", "1.5\t2.5\t3.5\r\n-4\t-5\t-6\r\n"])  # the focus is in the grid
        typed = {(1, 1): "1.5", (1, 2): "2.5", (1, 3): "3.5", (2, 1): "-4", (2, 2): "-5", (2, 3): "-6"}
        wrong = _not_landed(pg, "ed-X-", typed, "slow_paste.png")
    assert not wrong, wrong


@pytest.mark.parametrize("delay_ms", [0, 300])
@pytest.mark.usefixtures("busy_server")
def test_an_edit_typed_during_a_rerun_lands_throttled(browser, base_url, delay_ms: int) -> None:
    """A rerun started by another control (the temperature, typed in the sidebar), and ``delay_ms`` into it a quick
    edit: it lands, and the temperature's box keeps its own value."""
    with slow_page(browser) as pg:
        open_page(pg, base_url, "tokens", "preset=the_cat_sat")
        ready(pg)
        open_sidebar_expander(pg, "Heads, mask and conventions")
        temperature = pg.get_by_test_id("stSidebar").get_by_role("spinbutton", name="Temperature T")
        temperature.fill("2")
        temperature.press("Enter")
        pg.wait_for_timeout(delay_ms)
        _double_click_type_enter(pg, 0, 1, 2, "6.5")
        wrong = _not_landed(pg, "ed-X-", {(1, 2): "6.5"}, f"slow_during_rerun_{delay_ms}.png")
    assert not wrong, wrong


TITLE = "Make 'sat' look back at 'The'"


@pytest.mark.usefixtures("busy_server")
def test_the_challenges_w_k_grid_takes_a_5_throttled(browser, base_url) -> None:
    """The learner's case: a W_k challenge started, double-click a cell, type 5, Enter: the cell shows 5; and a
    matrix the challenge locks refuses a typed key, saying so beside it."""
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
        grid = _grid(pg, "ed-W_k-")
        _double_click_type_enter(pg, grid, 1, 1, "5")
        landed(pg, grid)
        ready(pg)
        got = _number(cell_text(pg, grid, 1, 1))
        locked = _grid(pg, "ed-W_q-")
        if locked >= 0:  # W_q is locked by this challenge: a key opens no editor, and the grid says why
            before = cell_text(pg, locked, 0, 0)
            editor_cell(pg, locked, 0, 0).click()
            pg.keyboard.type("9")
            pg.keyboard.press("Enter")
            assert cell_text(pg, locked, 0, 0) == before
            assert "locked" in pg.locator(".mgrid").nth(locked).locator(".mgrid-status").text_content()
        if got != 5.0:
            pg.screenshot(path=str(SHOTS / "slow_challenge_w_k.png"))
    assert got == 5.0, got
