"""Real headless Chromium at 1280 × 720, a common laptop screen: the navigation and the sidebar's controls both in reach
without scrolling, every label of a multi-head heatmap shown, one number format from the digits control, huge values
written short, no text cut and no table scrolled sideways, messages where the eye is, and every quick edit landing."""

from __future__ import annotations

import re

import pytest

import attention
from attention.ui.app.specs import NAV
from tests.helpers.browser import (
    SHOTS,
    cell_text,
    check,
    editor_cell,
    grid_cells,
    guarded_context,
    landed,
    nav_link,
    open_page,
    open_view,
    ready,
    rerun,
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
    assert cell_text(page, 0, 0, 0) == "1.000e+300"  # the server echoed it: drawn in the grid's format
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
    """Double-click, type and Enter at once (no delay between them) on a freshly loaded page, 4 times: 4 edits land.
    With Streamlit's canvas grid 6 of 8 were lost here (the keys came before its cell editor opened); the matrix
    editor's cells are elements, and a typed value stays in the page until the server has it."""
    got = []
    for trial in range(4):
        with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
            pg = context.new_page()
            open_page(pg, base_url, "tokens", "preset=the_cat_sat")
            editor_cell(pg, 0, 0, 1).dblclick()
            pg.keyboard.type(f"{trial + 2}.5")
            pg.keyboard.press("Enter")
            landed(pg, 0)
            ready(pg)
            got.append(float(cell_text(pg, 0, 0, 1)))
    assert got == [trial + 2.5 for trial in range(4)], got


def test_the_editors_keys_select_edit_cancel_move_and_copy(browser, base_url) -> None:
    """The grid's keys as in a spreadsheet: F2 edits keeping the value, Escape drops what was typed, a typed key
    replaces the value, Shift+Enter commits and moves up, the arrows move, Shift+arrows select a block and Ctrl+C
    copies it as tab-separated text with every digit; the focused cell is outlined; each cell is labelled with its
    matrix, row and column."""
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        context.grant_permissions(["clipboard-read", "clipboard-write"])
        pg = context.new_page()
        open_page(pg, base_url, "tokens", "preset=the_cat_sat")
        ready(pg)
        assert pg.get_by_role("grid").count() >= 1
        assert pg.get_by_role("gridcell", name="X cat · d2", exact=True).count() == 1  # matrix, row and column
        cell = editor_cell(pg, 0, 1, 1)  # the same cell (its label grows ", changed from the preset" once edited)
        before = cell.text_content()
        cell.click()
        pg.keyboard.press("F2")
        pg.keyboard.type("99")
        pg.keyboard.press("Escape")
        assert cell.text_content() == before  # Escape dropped it
        outline = cell.evaluate("e => getComputedStyle(e).outlineStyle")
        assert outline == "solid", outline  # the focus is seen
        pg.keyboard.type("7")  # a typed key replaces the value
        with rerun(pg):
            pg.keyboard.press("Shift+Enter")  # commits and moves up
        landed(pg, 0)
        ready(pg)
        assert float(cell.text_content()) == 7.0
        assert cell.get_attribute("aria-label") == "X cat · d2, changed from the preset"
        focused = pg.evaluate("() => document.activeElement.getAttribute('aria-label')")
        assert focused.startswith("X The · d2"), focused
        pg.keyboard.press("ArrowLeft")
        pg.keyboard.press("Shift+ArrowDown")
        pg.keyboard.press("Shift+ArrowRight")
        pg.keyboard.press("Control+c")
        copied = pg.evaluate("() => navigator.clipboard.readText()")
    x = attention.load_preset("the_cat_sat").matrices()["X"]
    want = [[repr(float(x[0, 0])), repr(float(x[0, 1]))], [repr(float(x[1, 0])), "7.0"]]  # cat · d2 is 7 now
    assert copied == "\n".join("\t".join(row) for row in want), copied


# ------------------------------------------------------------------------------------------ text that fits

SIDEWAYS = """() => Array.from(document.querySelectorAll("[data-testid='stMain'] [data-testid='stDataFrame']"))
    .map(el => el.querySelector('.dvn-scroller'))
    .concat(Array.from(document.querySelectorAll("[data-testid='stMain'] .mgrid-scroll")))
    .filter(s => s && s.scrollWidth > s.clientWidth + 1).map(s => [s.scrollWidth, s.clientWidth])"""


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
