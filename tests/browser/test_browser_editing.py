"""Real headless Chromium: editing as a person sees it (the value in force in the cell, one format, an error where it
belongs and short, Ctrl+Enter in the paste box) and layouts that cut nothing (select boxes, grids, tables, the link
box), at 1400 × 1000 and 1280 × 720."""

from __future__ import annotations

import numpy as np
import pytest

import attention
from tests.helpers.browser import (
    SHOTS,
    cell_once,
    cell_text,
    editor_cell,
    landed,
    nav,
    open_page,
    open_sidebar_expander,
    ready,
    type_in_cell,
)

SIZES = [(1400, 1000), (1280, 720)]
ERRORS = "[data-testid='stAlertContentError']"


def _visible_grids(pg) -> list[int]:
    """The indices of the page's visible matrix editors."""
    grids = pg.locator(".mgrid")
    return [i for i in range(grids.count()) if grids.nth(i).is_visible()]


# ------------------------------------------------------------------------------------------ editing


def test_a_refused_value_leaves_the_value_in_force_in_the_cell_and_a_short_error(page, base_url) -> None:  # noqa: F811
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, base_url, "softmax", "preset=the_cat_sat")
    ready(page)
    grid = _visible_grids(page)[-1]  # the X editor beside the weights (the inputs' first tab)
    assert cell_text(page, grid, 0, 1) == "0.000"  # X is up to 2: 4 significant digits, 3 decimals
    type_in_cell(page, grid, 0, 1, 4, "abc")
    grid = _visible_grids(page)[-1]
    assert cell_text(page, grid, 0, 1) == "0.000", "the grid shows the refused text, not the number in force"
    box = page.locator(ERRORS)
    assert box.count() == 1 and "not a number" in box.first.inner_text()
    height = page.get_by_test_id("stAlert").filter(has_text="not a number").first.bounding_box()["height"]
    assert height <= 110, f"one error takes {height:.0f} px in the inputs column"
    page.screenshot(path=str(SHOTS / "editing_refused_value.png"))
    nav(page, "Weights")  # an error stays with the page of the input that caused it
    ready(page)
    assert page.locator(ERRORS).count() == 0
    assert not page.console_errors, page.console_errors


def test_an_edited_cell_is_written_in_the_grids_format_and_the_grid_keeps_its_decimals(page, base_url) -> None:  # noqa: F811
    open_page(page, base_url, "weights", "preset=the_cat_sat")
    ready(page)
    w_k = attention.load_preset("the_cat_sat").matrices()["W_k"]
    assert cell_text(page, 1, 1, 1) == f"{w_k[1, 1]:.4f}"  # 0.7992: 4 significant digits
    type_in_cell(page, 1, 1, 1, 4, "-5")
    assert cell_once(page, 1, 1, 1, "-5.000") == "-5.000"  # once the server has it: in the grid's format
    for r in range(4):
        for c in range(4):
            if (r, c) != (1, 1):
                assert cell_text(page, 1, r, c) == f"{w_k[r, c]:#.4g}", (r, c)  # still 4 significant digits
    body = page.inner_text("body")
    assert f"{w_k[1, 1]:.4f} → -5.000" in body, body[-2000:]
    page.reload()  # drawn afresh: the edited cell in the grid's format too, as every other cell
    ready(page)
    assert cell_text(page, 1, 1, 1) == "-5.000"


def test_ctrl_enter_applies_the_paste_and_apply_after_it_is_no_error(page, base_url) -> None:  # noqa: F811
    open_page(page, base_url, "weights", "preset=the_cat_sat")
    ready(page)
    page.get_by_test_id("stExpander").filter(has_text="Import W_q").first.locator("summary").click()
    area = page.get_by_label("Paste W_q")
    area.wait_for()
    area.fill("[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 2]]")
    area.press("Control+Enter")
    page.wait_for_timeout(300)
    ready(page)
    assert "W_q replaced by the pasted matrix" in page.inner_text("body")
    page.get_by_role("button", name="Apply").first.click()
    page.wait_for_timeout(300)
    ready(page)
    assert page.locator(ERRORS).count() == 0, page.locator(ERRORS).all_inner_texts()
    assert "W_q replaced by the pasted matrix" in page.inner_text("body")  # what Ctrl+Enter did is still said
    assert cell_text(page, 0, 3, 3) == "2.000"  # 4 significant digits


# ------------------------------------------------------------------------------------------ layout


def _cut_selects(pg) -> list[tuple[str, float, float]]:
    """Select boxes whose shown choice is wider than the box, for every option of each (measured in the box's font)."""
    found = []
    boxes = pg.locator("input[role='combobox']")
    for i in range(boxes.count()):
        box = boxes.nth(i)
        if not box.is_visible():
            continue
        labels = []
        if box.is_enabled():  # a disabled box (one choice, e.g. key/value heads with 1 head) shows only its value
            box.click()
            options = pg.get_by_role("option")
            try:
                options.first.wait_for(timeout=20_000)  # a busy machine draws the list late
                labels = options.all_inner_texts()
            except Exception:  # noqa: BLE001 - a box with no options
                labels = []
            pg.keyboard.press("Escape")
            pg.wait_for_timeout(100)
        for text, need, room in box.evaluate(
            """(e, labels) => {
                const c = document.createElement('canvas').getContext('2d');
                const s = getComputedStyle(e);
                c.font = `${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
                const room = e.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
                return [e.value, ...labels].map(t => [t, c.measureText(t).width, room]);
            }""",
            labels,
        ):
            if need > room + 1:
                found.append((text, round(need), round(room)))
    return found


def _cut_grids(pg) -> list[tuple[str, int, int, int]]:
    """Visible tables ("df", Streamlit's) and matrix editors ("ed") that cut a row in half (a height that is not a
    whole number of rows) or hide rows or columns: (kind, index among its kind, hidden rows px, hidden columns px)."""
    return pg.evaluate(
        """() => [...document.querySelectorAll('[data-testid=stDataFrame]')].flatMap((e, i) => {
            const sc = e.querySelector('.dvn-scroller');
            if (!sc || !e.offsetParent) return [];
            const hidden_rows = sc.scrollHeight - sc.clientHeight, hidden_cols = sc.scrollWidth - sc.clientWidth;
            const half_row = hidden_rows > 0 && (sc.clientHeight % 35) > 3;
            return (half_row || hidden_cols > 1) ? [['df', i, hidden_rows, hidden_cols]] : [];
        }).concat([...document.querySelectorAll('.mgrid')].flatMap((e, i) => {
            const sc = e.querySelector('.mgrid-scroll');
            if (!sc || !e.offsetParent) return [];
            const hidden_rows = sc.scrollHeight - sc.clientHeight, hidden_cols = sc.scrollWidth - sc.clientWidth;
            return (hidden_rows > 1 || hidden_cols > 1) ? [['ed', i, hidden_rows, hidden_cols]] : [];
        }))"""
    )


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_select_boxes_show_every_choice_whole(page, base_url, size) -> None:  # noqa: F811
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_page(page, base_url, "tokens", "preset=glove_the_cat_sat_on_the_mat")
    ready(page)
    open_sidebar_expander(page, "Heads, mask and conventions")
    cut = _cut_selects(page)
    assert not cut, f"select boxes cut their text: {cut}"


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_grids_and_tables_cut_no_column_and_no_row_in_half(page, base_url, size) -> None:  # noqa: F811
    page.set_viewport_size({"width": size[0], "height": size[1]})
    for where, query in (
        ("softmax", "preset=the_cat_sat_on_the_mat"),  # X is 6 × 8: its editor beside the weights
        ("tokens", "preset=the_cat_sat_on_the_mat"),
        ("weights", "preset=blank&size=12x8x8"),  # 12-row editors
        ("reading", "preset=the_cat_sat_on_the_mat&heads=2"),  # the reading table beside the inputs
    ):
        open_page(page, base_url, where, query)
        ready(page)
        page.wait_for_timeout(500)
        cut = _cut_grids(page)
        page.screenshot(path=str(SHOTS / f"layout_{where}_{size[0]}.png"))
        if where == "reading":  # the reading table, the first table, shows every column whole
            assert not [c for c in cut if c[:2] == ["df", 0]], cut
            assert "max possible" not in (page.get_by_test_id("stDataFrame").first.text_content() or "")
        elif where == "softmax":  # the X editor, the last editor
            last = _visible_grids(page)[-1]
            assert not [c for c in cut if c[:2] == ["ed", last]], cut
            assert "d4" in page.locator(".mgrid").nth(last).text_content()
        else:
            assert not [c for c in cut if c[2] > 0], f"{where}: a grid cuts a row in half: {cut}"
            editors = [c for c in cut if c[3] > 1]
            assert not editors, f"{where}: a grid hides columns: {cut}"


def test_a_long_link_scrolls_in_a_short_box(page, base_url) -> None:  # noqa: F811
    from urllib.parse import urlencode

    from attention.ui.address import url
    from attention.ui.core import session

    s = session.new_session("blank", 0, (8, 16, 16))
    s.matrices["W_q"] = s.matrices["W_q"] + 0.123456789  # every cell edited: a link of thousands of characters
    s.matrices["W_k"] = s.matrices["W_k"] * 1.1
    query = urlencode(url.link(s)[0])
    assert len(query) > 3000
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, base_url, "weights", query)
    ready(page)
    assert cell_text(page, 0, 0, 0) == f"{s.matrices['W_q'][0, 0]:#.4g}"  # the link carried the edits
    open_sidebar_expander(page, "Save, share, export")
    code = page.get_by_test_id("stSidebar").get_by_test_id("stCode").first
    code.wait_for()
    height = code.bounding_box()["height"]
    assert height <= 200, f"the link box is {height:.0f} px tall"
    assert "characters long" in page.get_by_test_id("stSidebar").inner_text()


def test_the_batch_shape_details_are_folded(page, base_url) -> None:  # noqa: F811
    open_page(page, base_url, "tokens", "preset=the_cat_sat_on_the_mat")
    ready(page)
    details = page.get_by_test_id("stExpander").filter(has_text="batch of one")
    assert details.count() == 1
    assert not page.get_by_text("np.dot").first.is_visible()  # folded
    details.locator("summary").click()
    assert page.get_by_text("np.dot", exact=False).first.is_visible()
    np.testing.assert_equal(page.locator(ERRORS).count(), 0)


RENAME = """(el, text) => {  // a rename committed in the sentence box while the focus stays in the grid's cell editor
  Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set.call(el, text);
  el.dispatchEvent(new Event("input", { bubbles: true }));
  for (const type of ["keydown", "keypress"])
    el.dispatchEvent(new KeyboardEvent(type, { key: "Enter", code: "Enter", keyCode: 13, which: 13, bubbles: true }));
}"""


def test_an_open_cell_editor_keeps_its_text_when_the_grids_rows_are_relabelled(page, base_url) -> None:  # noqa: F811
    """Issue 46: a token renamed while a cell of X is open (a rerun arriving as a person types) relabels X's rows, and
    the grid, built afresh, dropped the cell editor with the text typed so far. It stays open on the same cell, its
    text, caret and focus kept, and Enter then applies what was typed."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    open_page(page, base_url, "tokens", "preset=the_cat_sat")
    ready(page)
    grid = _visible_grids(page)[0]  # X
    rows = page.locator(".mgrid").nth(grid).locator("th.mgrid-row")
    assert rows.all_text_contents()[:3] == ["The", "cat", "sat"], rows.all_text_contents()
    editor_cell(page, grid, 1, 0).dblclick()
    page.keyboard.type("4.25")  # the value selected is replaced
    page.get_by_role("textbox", name="Sentence (tokens are split on spaces)").evaluate(RENAME, "The dog sat")
    page.wait_for_function(
        "(i) => [...document.querySelectorAll('.mgrid')[i].querySelectorAll('th.mgrid-row')].some(t => "
        "t.textContent === 'dog')",
        arg=grid,
        timeout=30_000,
    )
    editing = editor_cell(page, grid, 1, 0).locator("input")
    assert editing.count() == 1, "the cell editor was dropped when the rows were relabelled"
    assert editing.input_value() == "4.25"
    assert editing.evaluate("el => el === document.activeElement && el.selectionStart === el.value.length")
    assert editing.get_attribute("aria-label").startswith("X dog")  # its name follows the row's new label
    page.keyboard.type("5")
    page.keyboard.press("Enter")
    landed(page, grid)
    assert cell_once(page, grid, 1, 0, "4.255") == "4.255"
    page.screenshot(path=str(SHOTS / "editing_kept_across_relabel.png"))
    assert not page.console_errors, page.console_errors
