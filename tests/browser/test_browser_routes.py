"""Real headless Chromium: the Routes page on the shipped model at 1280 × 720 and 1400 × 1000 (the strongest routes
as lines and the graph readable: box, 12 px text, pixels not blank; their positions, levels and routes written, the
lines' words for a screen reader; axe-core), and a click on a route's edge: the
induction head's edge from the token after the earlier copy opens that head on the step pages, at that query row
(the cell explained there is the edge's target row and source)."""

from __future__ import annotations

import pytest

from attention.model import builtin, induction, routes
from tests.helpers.browser import CHARTS, check, click_opens_head, guarded_context, open_charts, open_view, shot
from tests.helpers.visible import CANVAS_HOOK, VIEWPORT_IDS, VIEWPORTS, chart_texts, check_page

IDS = [int(i) for i in induction.history("induction")["example"]]  # the pages' first ready-made sequence


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=VIEWPORT_IDS)
def test_the_graph_is_readable_and_labelled(browser, base_url, axe_script, viewport) -> None:  # noqa: F811
    w, h = viewport
    with guarded_context(browser, viewport={"width": w, "height": h}) as context:
        pg = context.new_page()
        pg.add_init_script(CANVAS_HOOK)
        open_charts(pg, f"{base_url}/routes?at=24", 2)
        problems = check_page(pg, "routes", "1 head, 6 tokens", viewport)
        assert not problems, "\n".join(problems)
        lines, written = chart_texts(pg)
        pieces = builtin("induction").pieces(IDS)
        for label in ("embeddings", "layer 1", "layer 2", f"13 {pieces[12]}", f"24 {pieces[23]}", "head", "residual"):
            assert label in written, (label, written)
        found = routes(builtin("induction").run(IDS), 23, 0.04).strongest(5)
        for label in ("embeddings", f"24 {pieces[23]}", "route (its strength): its parts"):
            assert label in lines, (label, lines)
        for k, (strength, path) in enumerate(found, 1):  # the legend names each route's parts
            parts = [f"layer {e.layer + 1} · head {e.head + 1}" for e in path if e.kind == "head"]
            assert f"{k} ({strength:.3f}): " + (" → ".join(parts) or "the stream alone") in lines, (k, lines)
        said = pg.locator(CHARTS).first.evaluate(  # each line's words, for a screen reader
            "e => [...e.querySelectorAll('g.role-mark path[aria-label]')].map(p => p.getAttribute('aria-label'))"
        )
        for k, (strength, path) in enumerate(found, 1):
            heads = [f"layer {e.layer + 1} · head {e.head + 1}" for e in path if e.kind == "head"]
            line = next((x for x in said if x.startswith(f"route {k} ({strength:.3f}): “")), "")
            assert line and all(h in line for h in heads), (k, said)
        shot(pg, f"routes_lines_{w}", pg.locator(CHARTS).first)
        shot(pg, f"routes_shipped_{w}", pg.locator(CHARTS).nth(1))
        if viewport == (1400, 1000):
            check(pg, axe_script, "routes")


def test_a_click_on_a_heads_edge_opens_that_head_at_its_row(browser, base_url) -> None:  # noqa: F811
    found = routes(builtin("induction").run(IDS), 23, 0.04)
    edge = next(e for e in found.edges if e.kind == "head")  # the strongest head's edge
    assert (edge.layer, edge.head, edge.source, edge.target) == (1, 0, 12, 23)  # induction: from the token after
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as context:
        pg = context.new_page()
        open_charts(pg, f"{base_url}/routes?at=24", 2)
        chart = pg.locator(CHARTS).nth(1)  # the graph of every edge (the routes as lines come first)
        chart.scroll_into_view_if_needed()
        # the edge from position 13 at layer 1 to position 24 at layer 2, found by what it says it is
        named = "layer 2 · head 1: 13 “fa” → 24 “ba”"
        line = chart.locator("g.mark-rule.role-mark line").filter(has_not_text="x").and_(
            chart.locator(f"line[aria-label*='{named}']")
        )
        assert line.count() == 2, line.count()  # from the source to its bend, from the bend to the target
        click_opens_head(pg, line.first.bounding_box(), "layer 2 · head 1", "routes_clicked_1280")
        # the cell the Scores page explains is the edge's: query row 24 ("ba"), key 13 ("fa", the token after the copy)
        open_view(pg, "Explain a cell")
        query = pg.get_by_test_id("stSelectbox").filter(has_text="query (row)").first
        key = pg.get_by_test_id("stSelectbox").filter(has_text="key (column)").first
        query.scroll_into_view_if_needed()
        shown = "el => el.textContent + ' ' + [...el.querySelectorAll('input')].map(i => i.value).join(' ')"
        said = query.evaluate(shown), key.evaluate(shown)
        assert "ba (24)" in said[0] and "fa (13)" in said[1], said
        shot(pg, "routes_opened_scores_1280")
