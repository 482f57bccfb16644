"""Real headless Chromium: a model's head opened on the step pages from Every head, a grid edit of its W_k that flows
into the model (the loss answers with the engine's number), ablating it from its page, a reload that keeps it, at
1400 × 1000 and 1280 × 720; axe-core on the page."""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import ablate, builtin, induction, replace_matrix, roles
from tests.helpers.browser import (
    EDITOR,
    SHOTS,
    cell_number_once,
    cell_text,
    check,
    error_texts,
    guarded_context,
    head_button,
    nav,
    open_view,
    ready,
    rerun,
    runs,
    settle,
    type_in_cell,
    why_not_readable,
)

ENGINE = builtin("induction")
SIZES = [(1400, 1000), (1280, 720)]


def _repeated_loss(ids: list[int], ivs: list) -> float:
    run = ENGINE.run(ids, ivs)
    return roles.half_losses(roles.position_losses(run.logits, ids), len(ids) // 2)[1]


def _metric(pg, label: str) -> str:
    m = pg.get_by_test_id("stMetric").filter(has_text=label).first
    m.scroll_into_view_if_needed()
    return m.get_by_test_id("stMetricValue").inner_text()


def _grid_after(pg, label: str) -> tuple[int, int]:
    """The matrix editor under the label "W_k · shape r × c" (its index among the page's editors) and its number of
    columns shown."""
    above = pg.get_by_text(label, exact=True)
    above.scroll_into_view_if_needed()
    grids = pg.locator(EDITOR)
    grids.first.wait_for()
    index = next(i for i in range(grids.count()) if grids.nth(i).bounding_box()["y"] > above.bounding_box()["y"])
    grid = grids.nth(index)
    grid.scroll_into_view_if_needed()
    return index, grid.locator("td[data-r='0']").count()


def _click(pg, name: str) -> None:
    with rerun(pg):
        head_button(pg, name).click()
    ready(pg)
    assert not error_texts(pg), error_texts(pg)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_open_a_head_edit_it_and_the_model_answers(browser, base_url, axe_script, size) -> None:  # noqa: F811
    width, height = size
    with guarded_context(browser, viewport={"width": width, "height": height}) as context:
        pg = context.new_page()
        pg.goto(f"{base_url}/every_head")
        settle(pg)
        _click(pg, "Open layer 2 · head 1 on the step pages")
        link = pg.get_by_role("link", name="→ W_q, W_k, W_v of layer 2 · head 1")
        link.scroll_into_view_if_needed()
        with rerun(pg):
            link.click()
        ready(pg)
        assert "What the model predicts, with layer 2 · head 1 as it is here" in pg.inner_text("body")
        mh = pg.evaluate("() => new URL(location.href).searchParams.get('mh')")
        ids = [int(i) for i in mh.split("~")[2].split(".")]
        clean = _repeated_loss(ids, [])
        assert _metric(pg, "Loss on the repeated half") == f"{clean:.2f} nats"
        # the Weights page: W_o's, W_q's, W_k's and W_v's editors. W_k's cell (d1, k3) becomes 40 (a cell away from the
        # row labels, which a double-click on a narrow first column could hit).
        index, cols = _grid_after(pg, "W_k · shape 32 × 16")
        type_in_cell(pg, index, 0, 2, cols, "40")
        W_k = ENGINE.layer_weights(1)[1][:, :16].copy()
        W_k[0, 2] = 40.0
        edited = _repeated_loss(ids, [replace_matrix(1, 0, "W_k", W_k)])
        assert abs(edited - clean) > 0.01
        assert _metric(pg, "Loss on the repeated half") == f"{edited:.2f} nats"
        info = pg.get_by_test_id("stAlertContentInfo").filter(has_text="With your edits").first.inner_text()
        assert f"from {clean:.2f} to {edited:.2f}" in info, info
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.get_by_test_id("stMetric").first.scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / f"model_head_edited_{width}.png"))
        for k in range(3):
            box = pg.get_by_test_id("stMetric").nth(k).bounding_box()
            assert box and box["width"] >= 120 and box["height"] >= 40, box
        # a reload keeps the head and the edit (both in the address)
        pg.reload()
        ready(pg)
        assert _metric(pg, "Loss on the repeated half") == f"{edited:.2f} nats"
        # ablate the head from its page: the model answers as the engine with the head zeroed
        _click(pg, "Ablate layer 2 · head 1 (zero)")
        off = _repeated_loss(ids, [ablate(1, 0, "zero")])
        assert _metric(pg, "Loss on the repeated half") == f"{off:.2f} nats"
        assert np.isfinite(off) and off > clean + 1.0
        _click(pg, "Restore layer 2 · head 1")
        assert _metric(pg, "Loss on the repeated half") == f"{edited:.2f} nats"
        nav(pg, "Softmax")  # the attention weights of the edited head, beside the model's answer
        ready(pg)
        pg.locator("[data-testid='stVegaLiteChart']").first.scroll_into_view_if_needed()
        assert why_not_readable(pg, 0) is None
        assert _metric(pg, "Loss on the repeated half") == f"{edited:.2f} nats"
        if width == 1400:
            check(pg, axe_script, "a model's head on the Softmax page")
        # another head from the box under the results: the page becomes layer 1 · head 2, the model's own numbers
        box = pg.get_by_role("combobox", name="Head shown on these pages")
        box.scroll_into_view_if_needed()
        box.click()
        with rerun(pg):
            pg.get_by_role("option", name="layer 1 · head 2", exact=True).click()
        ready(pg)
        assert "What the model predicts, with layer 1 · head 2 as it is here" in pg.inner_text("body")
        assert _metric(pg, "Loss on the repeated half") == f"{clean:.2f} nats"  # W_k's edit went with layer 2 · head 1
        pg.locator("[data-testid='stVegaLiteChart']").first.scroll_into_view_if_needed()
        assert why_not_readable(pg, 0) is None
        assert "~1.2~" in pg.evaluate("() => new URL(location.href).searchParams.get('mh')")


def _shows(pg, grid: int, row: int, want: np.ndarray) -> None:
    """The grid's row shows ``want`` (rounded as the grid writes it), waited for up to 5 s."""
    for _ in range(100):
        shown = np.array([float(cell_text(pg, grid, row, c)) for c in range(len(want))])
        if np.allclose(shown, want, atol=1e-3):
            return
        pg.wait_for_timeout(50)
    np.testing.assert_allclose(shown, want, atol=1e-3)


def test_switching_the_head_keeps_the_grids_and_the_next_edit_reaches_the_new_head(browser, base_url) -> None:  # noqa: F811
    """Issue 23 §7: on the Weights page opened at layer 2 · head 1, an edit of its W_k, then layer 2 · head 2 chosen in
    the box under the results: one run of the page's body (not the whole page), the grids kept mounted show head 2's
    own numbers, the address and the panel follow, and an edit then changes head 2's block in
    the model only."""
    ids = [int(i) for i in induction.history("induction")["example"]]
    mh = "induction~2.1~" + ".".join(str(i) for i in ids) + "~"
    d = ENGINE.config.d_head
    W_k = ENGINE.layer_weights(1)[1]  # (d_model, n_heads * d_head): head 1's block, then head 2's
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        pg.goto(f"{base_url}/weights?preset=model&mh={mh}")
        ready(pg)
        g, cols = _grid_after(pg, "W_k · shape 32 × 16")
        type_in_cell(pg, g, 0, 2, cols, "40")  # head 1's W_k (d1, k3)
        assert cell_number_once(pg, g, 0, 2, 40.0) == 40.0
        pg.evaluate("() => document.querySelectorAll('.mgrid').forEach(g => g.dataset.was = 1)")
        box = pg.get_by_role("combobox", name="Head shown on these pages")
        box.scroll_into_view_if_needed()
        box.click()
        option = pg.get_by_role("option", name="layer 2 · head 2", exact=True)
        mark = runs(pg)
        option.click()
        settle(pg, mark)
        ready(pg)
        assert pg.script_runs[mark:] == ["start", "finished"]  # one run, of the body: no second run of the whole page
        assert "What the model predicts, with layer 2 · head 2 as it is here" in pg.inner_text("body")
        assert pg.evaluate("() => new URL(location.href).searchParams.get('mh')").startswith("induction~2.2~")
        # the same editor, kept mounted: it shows the numbers it is given, head 2's (head 1's edit was echoed)
        assert pg.locator(EDITOR).nth(g).get_attribute("data-was") == "1"
        for row in (0, 1):  # head 2's own numbers, as the engine has them (head 1's edit went with head 1)
            _shows(pg, g, row, W_k[row, d : d + cols])
        assert _metric(pg, "Loss on the repeated half") == f"{_repeated_loss(ids, []):.2f} nats"
        type_in_cell(pg, g, 1, 1, cols, "-40")  # head 2's W_k (d2, k2)
        block = W_k[:, d : 2 * d].copy()
        block[1, 1] = -40.0
        edited = _repeated_loss(ids, [replace_matrix(1, 1, "W_k", block)])
        assert abs(edited - _repeated_loss(ids, [])) > 0.01, "the edit should move the loss for this test to mean it"
        assert _metric(pg, "Loss on the repeated half") == f"{edited:.2f} nats"
        _shows(pg, g, 0, W_k[0, d : d + cols])  # no 40 came back
        assert cell_number_once(pg, g, 1, 1, -40.0) == -40.0
        assert not error_texts(pg), error_texts(pg)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_an_edit_of_the_heads_w_o_in_its_grid_flows_into_the_model(browser, base_url, size) -> None:  # noqa: F811
    """W_o is the head's rows of the model's W_o (d_head × d_model), edited in its grid on the Weights page; the model
    answers as the engine does with the model's W_o changed in that one cell; the Output page draws concat · W_o."""
    width, height = size
    ids = [3, 1, 4, 1, 5, 9, 2, 6] * 2  # eight tokens, repeated
    mh = "induction~2.1~" + ".".join(str(i) for i in ids) + "~"
    with guarded_context(browser, viewport={"width": width, "height": height}) as context:
        pg = context.new_page()
        pg.goto(f"{base_url}/weights?preset=model&mh={mh}")
        ready(pg)
        assert not error_texts(pg), error_texts(pg)
        clean = _repeated_loss(ids, [])
        assert _metric(pg, "Loss on the repeated half") == f"{clean:.2f} nats"
        index, cols = _grid_after(pg, "W_o · shape 16 × 32")
        type_in_cell(pg, index, 3, 4, cols, "-30")  # W_o's row 4, column o5
        W_o = ENGINE.layer_weights(1)[3].copy()  # the model's own W_o, one cell changed
        W_o[3, 4] = -30.0
        edited = _repeated_loss(ids, [replace_matrix(1, 0, "W_o", W_o[:16])])
        assert abs(edited - clean) > 0.01
        assert _metric(pg, "Loss on the repeated half") == f"{edited:.2f} nats"
        assert "W_o (1 cell) replace" in pg.inner_text("body")
        nav(pg, "Output")
        ready(pg)
        assert not error_texts(pg), error_texts(pg)
        open_view(pg, "output = concat · W_o")  # drawn once opened
        caption = pg.get_by_text("W_o · 16 × 32", exact=True)
        caption.scroll_into_view_if_needed()
        table = caption.locator("xpath=following::*[@data-testid='stTable' or @data-testid='stDataFrame'][1]")
        box = table.bounding_box()
        assert box and box["width"] >= 200 and box["height"] >= 100, box
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SHOTS / f"model_head_w_o_{width}.png"))
        assert _metric(pg, "Loss on the repeated half") == f"{edited:.2f} nats"
