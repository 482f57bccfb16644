"""Real headless Chromium at 1280 × 720, a common laptop screen: the navigation and the sidebar's controls both in reach
without scrolling, every label of a multi-head heatmap shown, one number format from the digits control, huge values
written short, no text cut and no table scrolled sideways, messages where the eye is, and every quick edit landing."""

from __future__ import annotations

import contextlib
import re

import pytest

from attention.ui.app.specs import NAV
from tests.helpers.browser import (
    SHOTS,
    cell_once,
    cell_text,
    check,
    grid_cells,
    guarded_context,
    nav_link,
    open_page,
    open_view,
    ready,
    rerun,
    runs,
    settle,
    type_in_cell,
)

LAPTOP = {"width": 1280, "height": 720}


def _in_view(box: dict | None, pg) -> bool:
    size = pg.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"] and box["x"] >= 0


def _significant(text: str) -> int:
    """How many significant digits a number's text shows ("0.4330" 4, "1.000e+300" 4, "0.000" 4, "−∞" 0)."""
    mantissa = re.split(r"[eE]", text.strip().lstrip("+-−"))[0]
    if not re.fullmatch(r"\d+(\.\d*)?|\.\d+", mantissa):
        return 0
    digits = mantissa.replace(".", "")
    stripped = digits.lstrip("0")
    return len(stripped) if stripped else len(digits)  # "0.000": its zeros are the digits shown


# ------------------------------------------------------------------------------------------ the navigation


def test_the_preset_selector_and_every_page_are_in_reach_without_scrolling(page, base_url) -> None:
    """At 1280 × 720 the sidebar's first controls (preset, seed, reset, the conventions) are inside the screen as the
    page opens, nothing scrolled; and every page is two clicks away at most: its section's menu, then its link."""
    page.set_viewport_size(LAPTOP)
    open_page(page, base_url, "")
    sidebar = page.get_by_test_id("stSidebar")
    assert sidebar.get_by_text("Preset", exact=True).is_visible()
    for control in (
        sidebar.get_by_role("combobox").first,  # the preset selector
        sidebar.get_by_role("button", name="Reset to preset"),
        sidebar.get_by_test_id("stExpander").filter(has_text="Heads, mask and conventions").first,
    ):
        assert _in_view(control.bounding_box(), page), control.bounding_box()
    scrolled = page.evaluate("() => document.querySelector(\"[data-testid='stSidebarContent']\").scrollTop")
    assert scrolled == 0
    page.screenshot(path=str(SHOTS / "readable_navigation_1280.png"))
    found = set()
    for _path, label in NAV:
        link = nav_link(page, label)  # one click: its section's menu
        assert _in_view(link.bounding_box(), page), (label, link.bounding_box())
        found.add(label)
        page.keyboard.press("Escape")
    assert len(found) == len(NAV)
    link = nav_link(page, "Learn the weights")
    with rerun(page):
        link.click()  # the second click
    assert page.get_by_test_id("stMain").locator("h1").filter(has_text="Learn the weights").count() == 1


# ------------------------------------------------------------------------------------------ numbers


def test_every_number_has_the_digits_the_control_says(page, base_url) -> None:
    """A causal mask at 4 significant digits: the heatmap's weights (1.000, 0.4326, 0.5674, where 0.433 was written)
    and the input grid's numbers all show 4 significant digits, as the scores do (0.6442). (The read-only tables'
    texts are checked in tests/app/test_app_honest_marks.py: the grid's accessible table holds their raw numbers.)"""
    page.set_viewport_size(LAPTOP)
    open_page(page, base_url, "softmax", "preset=she_likes_coffee&mask=causal&digits=4")
    ready(page)
    main = page.get_by_test_id("stMain")
    heat = main.get_by_test_id("stVegaLiteChart").first.locator("svg g.mark-text.role-mark text").all_text_contents()
    cells = [t for t in heat if re.fullmatch(r"-?\d+\.\d+", t)]
    assert {"1.000", "0.4326", "0.5674"} <= set(cells), cells
    numbers = [t for row in grid_cells(page, "ed-X-")[1:] for t in row[1:]]  # the X editor beside the result
    assert "0.2000" in numbers, numbers
    wrong = [t for t in cells + numbers if _significant(t) != 4]
    assert not wrong, f"not 4 significant digits: {wrong}"


def test_a_huge_value_is_written_short_in_the_grid_and_the_change_note(page, base_url) -> None:
    page.set_viewport_size(LAPTOP)
    open_page(page, base_url, "tokens", "preset=the_cat_sat&digits=4")
    ready(page)
    type_in_cell(page, 0, 0, 0, 4, "1e300")
    assert cell_once(page, 0, 0, 0, "1e300") == "1e300"  # the grid that took it stays mounted, as typed
    body = page.get_by_test_id("stMain").inner_text()
    assert "→ 1.000e+300" in body, body[-1500:]
    assert not re.search(r"\d{30}", body), "a number written out in hundreds of digits"
    page.reload()  # the grid drawn afresh writes it in the grid's format
    ready(page)
    assert cell_text(page, 0, 0, 0) == "1.000e+300"
    assert not re.search(r"\d{30}", page.get_by_test_id("stMain").inner_text())


# ------------------------------------------------------------------------------------------ messages


def _import_box(pg, name: str):
    box = pg.get_by_test_id("stExpander").filter(has_text=f"Import {name}").first
    box.locator("summary").click()
    box.get_by_role("textbox").wait_for()
    return box


def test_a_refused_paste_is_said_where_the_eye_is(page, base_url) -> None:
    """Apply of a 5 × 3 paste for a 4 × 4 W_q: the refusal shows on screen at once, under the button just pressed."""
    page.set_viewport_size(LAPTOP)
    open_page(page, base_url, "weights", "preset=the_cat_sat")
    ready(page)
    box = _import_box(page, "W_q")
    box.get_by_role("textbox").fill(str([[1, 2, 3]] * 5))
    apply = box.get_by_role("button", name="Apply")
    apply.scroll_into_view_if_needed()
    with rerun(page):
        apply.click()
    error = page.get_by_test_id("stAlertContainer").filter(has_text="W_q must be 4 × 4").first
    error.wait_for()
    page.screenshot(path=str(SHOTS / "readable_refused_paste_1280.png"))
    assert _in_view(error.bounding_box(), page), error.bounding_box()


def test_a_file_of_prose_says_no_numbers_were_found(page, base_url) -> None:
    page.set_viewport_size(LAPTOP)
    open_page(page, base_url, "tokens", "preset=the_cat_sat")
    ready(page)
    box = _import_box(page, "X")
    prose = b"The cat sat on the mat.\nIt was warm there, and it slept.\n"
    with rerun(page):
        box.locator("input[type='file']").set_input_files(
            {"name": "story.txt", "mimeType": "text/plain", "buffer": prose}
        )
    error = page.get_by_test_id("stAlertContainer").filter(has_text="story.txt").first
    error.wait_for()
    said = error.inner_text()
    assert "no numbers were found" in said and "cells but row" not in said, said
    assert _in_view(error.bounding_box(), page), error.bounding_box()


# ------------------------------------------------------------------------------------------ confusions answered


def test_random_weights_are_said_to_mean_nothing_yet(page, base_url) -> None:
    page.set_viewport_size(LAPTOP)
    open_page(page, base_url, "softmax", "preset=random_seed_42&heads=2")
    main = page.get_by_test_id("stMain").inner_text()
    assert "These weights are random" in main and "means nothing yet" in main, main[:1500]


def test_the_variance_off_the_model_is_called_sampling_noise_and_the_diamonds_have_a_legend(page, base_url) -> None:
    page.set_viewport_size(LAPTOP)
    open_page(page, base_url, "why_sqrt_dk", "preset=random_seed_42")
    main = page.get_by_test_id("stMain")
    said = main.inner_text()
    found = re.search(r"variance ≈ ([\d.]+) \(the model says 64; the difference is sampling noise[^)]*± ([\d.]+)", said)
    assert found, said[:2000]
    chart = main.get_by_test_id("stVegaLiteChart").first  # the variance of the scores
    chart.locator("svg").wait_for()
    legend = chart.locator("svg g.role-legend-label text").all_text_contents()
    assert {"your scores, not scaled", "your scores, scaled"} <= set(legend), legend


@pytest.mark.parametrize(
    "query, named",
    [
        ("preset=she_likes_coffee&mask=causal", "Changed: the mask (causal)"),
        ("preset=the_cat_sat&heads=2", "Changed: heads (2)"),
    ],
)
def test_the_banner_names_the_option_that_changed(page, base_url, query: str, named: str) -> None:
    page.set_viewport_size(LAPTOP)
    open_page(page, base_url, "softmax", query)
    caption = page.get_by_test_id("stMain").get_by_text("no longer the tutorial's").first
    caption.wait_for()
    assert named in caption.inner_text(), caption.inner_text()


# ------------------------------------------------------------------------------------------ multi-head heatmaps

SHOWN_TEXTS = """el => Array.from(el.querySelectorAll('svg g.mark-text.role-mark text'))
    .filter(t => t.getAttribute('opacity') !== '0' && getComputedStyle(t).opacity !== '0').map(t => t.textContent)"""
LABELS = "el => Array.from(el.querySelectorAll('svg g.role-axis-label text'), t => t.textContent)"


def _heads(pg) -> list:
    charts = pg.get_by_test_id("stMain").get_by_test_id("stVegaLiteChart")
    for i in range(charts.count()):
        charts.nth(i).locator("svg g.role-axis-label text").first.wait_for()
    return [charts.nth(i) for i in range(charts.count())]


def test_two_heads_show_every_label_and_their_numbers_at_1280(page, base_url) -> None:
    """2 heads on "The cat sat on the mat": each head's heatmap shows all six key and query labels ("mat" was
    dropped on Scores, "the" on Softmax) and writes its 36 numbers in its cells."""
    page.set_viewport_size(LAPTOP)
    tokens = ["The", "cat", "sat", "on", "the", "mat"]
    for slug in ("scores", "softmax", "output"):
        open_page(page, base_url, slug, "preset=the_cat_sat_on_the_mat&heads=2")
        heads = _heads(page)[:2]
        assert len(heads) == 2, slug
        for k, chart in enumerate(heads):
            labels = chart.evaluate(LABELS)
            assert sorted(labels) == sorted(tokens * 2), (slug, k, labels)  # keys and queries, none dropped
            written = chart.evaluate(SHOWN_TEXTS)
            assert len(written) == 36 and all(re.fullmatch(r"-?\d+\.\d+", t) for t in written), (slug, k, written)
            assert chart.bounding_box()["width"] >= 300, chart.bounding_box()
        heads[0].scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"readable_two_heads_{slug}_1280.png"))


def test_a_heatmap_too_narrow_for_its_numbers_says_where_they_are(page, base_url) -> None:
    """At 8 significant digits the numbers do not fit in a head's cells at 1280 px: the chart says so and where the
    values are (hover a cell), instead of showing bare colours."""
    page.set_viewport_size(LAPTOP)
    open_page(page, base_url, "softmax", "preset=the_cat_sat_on_the_mat&heads=2&digits=8")
    for chart in _heads(page)[:2]:
        written = chart.evaluate(SHOWN_TEXTS)
        title = " ".join(chart.locator("svg .role-title-text text, svg .role-title-text").all_text_contents())
        assert written or "too narrow for numbers: hover a cell" in title, (written, title)
        assert not written or all(len(t) >= 10 for t in written)


# ------------------------------------------------------------------------------------------ quick edits


def test_a_quick_edit_on_a_fresh_page_always_lands(browser, base_url) -> None:
    """Double-click, type and Enter at once (no delay between them) on a freshly loaded page, 8 times: 8 edits land.
    Without the page's keystroke script 6 of 8 were lost here: the keys reached the page before the grid's cell
    editor was open (attention/ui/widgets/keystrokes.py says how)."""
    landed = []
    for trial in range(8):
        with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
            pg = context.new_page()
            open_page(pg, base_url, "tokens", "preset=the_cat_sat")
            _quick_edit(pg, 0, 1, f"{trial + 2}.5")  # typed as a person would: digits, a point, a digit
            landed.append(float(cell_text(pg, 0, 0, 1)))
    want = [trial + 2.5 for trial in range(8)]
    lost = sum(a != b for a, b in zip(landed, want, strict=True))
    assert not lost, f"{lost} of 8 quick edits lost: {landed}"


def _cell_point(pg, row: int, col: int) -> tuple[float, float]:
    """The middle of a cell of the first grid (4 columns after a 50 px index column; rows 35 px under the header)."""
    box = pg.get_by_test_id("stDataFrame").nth(0).bounding_box()
    return box["x"] + 50 + (box["width"] - 50) / 4 * (col + 0.5), box["y"] + 35 * (row + 1.5)


def _type_at_once(pg, row: int, col: int, value: str) -> None:
    """Double-click a cell of the first grid, type ``value`` and press Enter, with no delay between them."""
    pg.mouse.dblclick(*_cell_point(pg, row, col))
    pg.keyboard.type(value)
    pg.keyboard.press("Enter")


def _quick_edit(pg, row: int, col: int, value: str) -> None:
    """:func:`_type_at_once`, then wait for the run the edit starts."""
    mark = runs(pg)
    _type_at_once(pg, row, col, value)
    with contextlib.suppress(TimeoutError):
        settle(pg, mark, timeout=15_000)  # a lost edit sends nothing: no run follows
    ready(pg)


LISTEN = "() => { window.seenKeys = []; document.addEventListener('keydown', e => window.seenKeys.push(e.key)); }"


def test_a_second_quick_edit_right_after_the_first_lands_too(browser, base_url) -> None:
    """A quick edit, then at once a key typed on the grid: it goes on to the page (the keystroke script kept
    watching for 3 s after the first edit, holding such keys for an editor that never opened, then dropping them);
    then a second quick edit on another cell: both edits land and nothing is said lost."""
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        open_page(pg, base_url, "tokens", "preset=the_cat_sat")
        _quick_edit(pg, 0, 1, "2.5")
        pg.evaluate(LISTEN)
        box = pg.get_by_test_id("stDataFrame").nth(0).bounding_box()
        pg.mouse.click(box["x"] + 25, box["y"] + 35 * 3.5)  # a row's name: selected, not opened
        pg.keyboard.press("x")
        seen = pg.evaluate("() => window.seenKeys")
        pg.keyboard.press("Escape")  # the editor that key opened on the row's name is closed, nothing changed
        _quick_edit(pg, 2, 2, "3.5")
        pg.wait_for_timeout(3500)  # past the script's window: nothing it held is typed late or said lost
        got = float(cell_text(pg, 0, 0, 1)), float(cell_text(pg, 0, 2, 2))
        notes = pg.get_by_role("alert").filter(has_text="did not reach a cell").count()
    assert seen == ["x"] and got == (2.5, 3.5) and notes == 0, (seen, got, notes)


def _numbers_in(pg, cells: list[tuple[int, int]], want: list[float], timeout_ms: int = 8000) -> list[str]:
    """The texts of ``cells`` of the first grid once they read as ``want`` (or at the timeout), the runs drawn."""
    got: list[str] = []
    for _ in range(timeout_ms // 250):
        ready(pg)
        got = [cell_text(pg, 0, r, c) for r, c in cells]
        if [float(g) for g in got] == want:
            break
        pg.wait_for_timeout(250)
    return got


def test_values_typed_down_a_column_all_land(browser, base_url) -> None:
    """Select a cell, then type a value and Enter three times, 250 ms apart, as one fills a column (Enter moves to
    the cell below): all three land, 3 times of 3. When every edit mounted a new grid, 0 of 4 such columns kept more
    than the first value: the grid the next keys went to was being replaced."""
    for trial in range(3):
        with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
            pg = context.new_page()
            open_page(pg, base_url, "tokens", "preset=the_cat_sat")
            pg.mouse.click(*_cell_point(pg, 0, 1))
            pg.wait_for_timeout(200)
            values = [f"{trial + 1}.5", f"{trial + 2}.25", f"{trial + 3}.75"]
            for value in values:
                pg.keyboard.type(value, delay=30)
                pg.keyboard.press("Enter")
                pg.wait_for_timeout(250)
            got = _numbers_in(pg, [(0, 1), (1, 1), (2, 1)], [float(v) for v in values])
        assert [float(g) for g in got] == [float(v) for v in values], (trial, got)


@pytest.mark.parametrize("gap_ms", [150, 300])
def test_an_edit_made_right_after_another_lands_too(browser, base_url, gap_ms: int) -> None:
    """Double-click, type and Enter on one cell; ``gap_ms`` later the same on another cell: both land, 3 times of
    3. When every edit mounted a new grid, 0 of 6 second edits landed 300 ms after the first."""
    for trial in range(3):
        with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
            pg = context.new_page()
            open_page(pg, base_url, "tokens", "preset=the_cat_sat")
            first, second = f"{trial + 2}.5", f"{trial + 3}.25"
            _type_at_once(pg, 0, 1, first)
            pg.wait_for_timeout(gap_ms)
            _type_at_once(pg, 2, 2, second)
            got = _numbers_in(pg, [(0, 1), (2, 2)], [float(first), float(second)])
        assert [float(g) for g in got] == [float(first), float(second)], (trial, got)


def test_keys_no_cell_editor_took_are_said_not_dropped(browser, base_url) -> None:
    """A double-click on a grid's column header opens no editor: the keys typed after it, kept by the script for an
    editor, are named in a note at the top of the page once its 3 s are over."""
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        open_page(pg, base_url, "tokens", "preset=the_cat_sat")
        box = pg.get_by_test_id("stDataFrame").nth(0).bounding_box()
        pg.mouse.dblclick(box["x"] + 50 + (box["width"] - 50) / 8, box["y"] + 17)  # a column's header
        pg.keyboard.type("7")
        note = pg.get_by_role("alert").filter(has_text="did not reach a cell")
        note.wait_for(timeout=8000)
        said = note.text_content()
        pg.screenshot(path=str(SHOTS / "keys_said_lost.png"))
    assert "(7)" in said and "Double-click the cell and retype it" in said, said


# ------------------------------------------------------------------------------------------ text that fits

SIDEWAYS = """() => Array.from(document.querySelectorAll("[data-testid='stMain'] [data-testid='stDataFrame']"))
    .map(el => el.querySelector('.dvn-scroller')).filter(s => s && s.scrollWidth > s.clientWidth + 1)
    .map(s => [s.scrollWidth, s.clientWidth])"""


def test_the_overviews_summary_shows_its_text_whole_at_1280(page, base_url) -> None:
    page.set_viewport_size(LAPTOP)
    open_page(page, base_url, "", "preset=the_cat_sat")
    summary = page.get_by_test_id("stMain").get_by_text("Q = XW_q, K = XW_k, V = XW_v", exact=True).first
    assert summary.is_visible()
    cut = summary.evaluate("el => el.scrollWidth > el.clientWidth + 1 || el.getBoundingClientRect().right > innerWidth")
    assert not cut


def test_no_grid_on_the_output_page_scrolls_sideways_at_8_digits(page, base_url) -> None:
    """At 8 significant digits and 1280 px, every table and grid of the Output page is seen whole: a table too wide
    for its column is shown in blocks of whole columns, and the editor beside shows as many columns as fit."""
    page.set_viewport_size(LAPTOP)
    open_page(page, base_url, "output", "preset=the_cat_sat_on_the_mat&digits=8")
    ready(page)
    open_view(page, "as a table")  # the result table, drawn when opened
    assert page.evaluate(SIDEWAYS) == []
    said = page.get_by_test_id("stMain").inner_text()
    assert "Columns 1–" in said, said[:3000]
    page.screenshot(path=str(SHOTS / "readable_output_8_digits_1280.png"))


# ------------------------------------------------------------------------------------------ accessibility


@pytest.mark.parametrize(
    "slug, query",
    [
        ("", "preset=the_cat_sat"),  # the summary table and the links by section
        ("scores", "preset=the_cat_sat_on_the_mat&heads=2"),  # one head to a row, numbers in the cells
        ("output", "preset=the_cat_sat_on_the_mat&digits=8"),  # tables in blocks of columns
        ("why_sqrt_dk", "preset=random_seed_42"),  # the diamonds' legend
    ],
)
def test_the_readable_pages_pass_axe_at_1280(page, base_url, axe_script, slug: str, query: str) -> None:
    page.set_viewport_size(LAPTOP)
    open_page(page, base_url, slug, query)
    ready(page)
    check(page, axe_script, f"{slug or 'overview'} at 1280 × 720")
