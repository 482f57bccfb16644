"""Real headless Chromium: Every head on a 30 × 9-head model (SmolLM2-135M's shape, narrow, made here) on a 30-token
text, at 1280 × 720 and 1400 × 1000: the three score grids and one layer's nine heads, drawn as ONE chart, pass the
visible checks (a readable box, 12 px text, nothing cut or clipped, pixels not blank); every head's title is whole;
each head is one image (its cells drawn as a picture) of a readable size (cells at least 10 px), its pixels not blank,
labelled with a description of its pattern; pointing at a cell names it and its head in a tooltip; choosing another
layer redraws the one chart; axe-core finds no critical or serious violation."""

from __future__ import annotations

import re

import pytest

from tests.helpers.browser import (
    SHOTS,
    blank_pixels,
    check,
    guarded_context,
    rerun,
    server_listing,
    settle,
    wait_readable,
)
from tests.helpers.visible import CANVAS_HOOK, check_page, stable_charts

N = 30  # tokens
CELL_PX = 10  # the narrowest readable cell


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    from tests.helpers.families import smol_shaped

    folder = smol_shaped(tmp_path_factory.mktemp("smol_shaped"))
    with server_listing(f"smol={folder}") as url:  # the server copies the environment when it starts
        yield url


@pytest.mark.parametrize("viewport", [(1280, 720), (1400, 1000)], ids=["1280x720", "1400x1000"])
def test_a_wide_models_grids_and_one_layers_heads_are_readable(browser, served, axe_script, viewport) -> None:  # noqa: F811
    ids = ".".join(str(i) for i in range(40, 40 + N))
    with guarded_context(browser, viewport={"width": viewport[0], "height": viewport[1]}) as context:
        pg = context.new_page()
        pg.add_init_script(CANVAS_HOOK)
        pg.goto(f"{served}/every_head?model=server:smol&ids={ids}")
        settle(pg)
        wait_readable(pg, 3 + 1, seconds=60)
        problems = check_page(pg, "every_head", "1 head, 6 tokens", viewport)
        assert not problems, "\n".join(problems)
        found = stable_charts(pg)
        assert [c["title"] for c in found[:3]] == ["previous-token score", "induction score", "first-token sink score"]
        assert len(found) == 3 + 1, found  # the layer's nine heads: one chart
        titles = pg.locator("[data-testid='stVegaLiteChart']").nth(3).locator("svg.marks .role-title-text")
        assert titles.all_text_contents() == [f"layer 1 · head {k}" for k in range(1, 10)], titles.all_text_contents()
        problems = [p for k in range(9) if (p := _image_problem(pg, 3, k))]
        assert not problems, "\n".join(problems)
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.locator("[data-testid='stVegaLiteChart']").nth(3).scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / f"wide_model_heads_{viewport[0]}.png"))
        rects = "(el) => el.querySelectorAll('g.mark-rect path').length"  # the cells' marks: made on pointing only
        unpointed = pg.locator("[data-testid='stVegaLiteChart']").nth(3).evaluate(rects)
        tip = _tooltip_at(pg, 3, 4, row=N - 1, col=N // 2)
        # the cell under the pointer, named: its head, its row and column (1-based) and its weight
        assert "layer 1 · head 5" in tip and re.search(rf"\brow\s+{N - 1}\b", tip), tip
        assert re.search(rf"\bcol\s+{N // 2}\b", tip) and "weight (full precision)" in tip, tip
        check(pg, axe_script, f"every_head on a 30 × 9-head model at {viewport[0]}")
        chart = pg.locator("[data-testid='stVegaLiteChart']").nth(3)
        chart.locator("svg.marks").evaluate("(svg) => { svg.dataset.before = 'layer 1'; }")  # this view, marked
        box = pg.get_by_role("combobox", name="Layer whose heads are drawn below")
        box.scroll_into_view_if_needed()
        box.click()
        with rerun(pg):
            pg.get_by_role("option", name="layer 7", exact=True).click()
        wait_readable(pg, 3 + 1, seconds=60)
        titles = chart.locator("svg.marks .role-title-text")
        titles.first.wait_for()
        pg.wait_for_function(
            "(el) => el.textContent === 'layer 7 · head 1'", arg=titles.first.element_handle(), timeout=60_000
        )
        assert titles.all_text_contents() == [f"layer 7 · head {k}" for k in range(1, 10)], titles.all_text_contents()
        # the same Vega view took the layer's data: its spec is the same for every layer (charts.PICTURES)
        assert chart.locator("svg.marks[data-before='layer 1']").count() == 1, "the chart was built again"
        assert chart.evaluate(rects) == unpointed  # head 5 was pointed at on layer 1; layer 7: no cells until pointed
        problems = [p for k in range(9) if (p := _image_problem(pg, 3, k, layer=7))]
        assert not problems, "\n".join(problems)


IMAGE = "svg.marks image"  # a head's cells, drawn as one picture


def _image_problem(pg, index: int, head: int, layer: int = 1) -> str | None:
    """Why picture ``head`` (0-based) of chart ``index`` is not readable, or None: at least CELL_PX a cell each way,
    its pixels not blank, and a description naming the head and its pattern."""
    chart = pg.locator("[data-testid='stVegaLiteChart']").nth(index)
    images = chart.locator(IMAGE)
    if images.count() != 9:
        return f"chart {index}: {images.count()} images"
    image = images.nth(head)
    image.scroll_into_view_if_needed()
    box = image.bounding_box()
    if box is None or box["width"] < N * CELL_PX or box["height"] < N * CELL_PX:
        return f"chart {index} head {head + 1}: image box {box}"
    png = pg.screenshot(clip=box)
    blank = blank_pixels(png)
    if blank:
        return f"chart {index} head {head + 1}: image {blank}"
    label = image.evaluate("(e) => e.closest('[aria-label]')?.getAttribute('aria-label') || ''")
    named = label.startswith(f"Heatmap: layer {layer} · head {head + 1}.")
    if not named or "rows put their largest value on" not in label:
        return f"chart {index} head {head + 1}: description {label!r}"
    return None


def _tooltip_at(pg, index: int, head: int, row: int, col: int) -> str:
    """The tooltip shown when the pointer rests on cell (row, col), 1-based, of picture ``head`` of chart ``index``."""
    image = pg.locator("[data-testid='stVegaLiteChart']").nth(index).locator(IMAGE).nth(head)
    image.scroll_into_view_if_needed()
    box = image.bounding_box()
    x = box["x"] + (col - 0.5) * box["width"] / N
    y = box["y"] + (row - 0.5) * box["height"] / N
    pg.mouse.move(x, y)  # the pointer comes over the picture: its cells' tooltip marks are made (charts.NEAR) …
    pg.mouse.move(x + 1, y + 1)  # … and rests on the cell, as a hand's pointer does, moving by a pixel
    tip = pg.locator("#vg-tooltip-element")
    tip.wait_for(state="visible", timeout=20_000)
    return tip.inner_text()


def test_one_token_across_layers_on_the_wide_model(browser, served, axe_script) -> None:  # noqa: F811
    """First token on the 30 × 9-head model: a key token and a query chosen, the layers × heads grid of every head's
    weight on that key redrawn with its title, readable at 1280 × 720; axe-core."""
    ids = ".".join(str(i) for i in range(40, 40 + N))
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as context:
        pg = context.new_page()
        pg.add_init_script(CANVAS_HOOK)
        pg.goto(f"{served}/first_token?model=server:smol&ids={ids}")
        settle(pg)
        wait_readable(pg, 2, seconds=60)
        for label, option in (("Key token (the one attended to)", "6: "), ("Query (the token attending)", "20: ")):
            box = pg.get_by_role("combobox", name=label)
            box.scroll_into_view_if_needed()
            box.click()
            pg.keyboard.type(option)  # the list is long: typing narrows it to the option
            with rerun(pg):
                pg.get_by_role("option").filter(has_text=option).first.click()
        wait_readable(pg, 2, seconds=60)
        found = stable_charts(pg)
        assert found[0]["title"] == "Weight on token 6", [c["title"] for c in found]
        problems = check_page(pg, "first_token", "1 head, 6 tokens", (1280, 720))
        assert not problems, "\n".join(problems)
        pg.locator("[data-testid='stVegaLiteChart']").first.scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / "wide_model_one_token_across_layers_1280.png"))
        check(pg, axe_script, "first_token on a 30 × 9-head model")
