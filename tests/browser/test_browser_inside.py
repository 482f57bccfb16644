"""Real headless Chromium at 1280 × 720: the Every head page's journey (find, ablate, restore the induction head, then
ablate the previous-token head), every heatmap readable and drawn, the sentences carrying the engine's numbers."""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import ablate, builtin, induction
from tests.helpers.browser import (
    CHARTS,
    SHOTS,
    check,
    error_texts,
    guarded_context,
    head_button,
    rerun,
    settle,
    wait_readable,
)


def _four(values: list[float]) -> str:
    """The printf format of probabilities shown together with the default 4 significant digits: enough decimals
    that the largest shows 4."""
    return f"%.{max(0, 3 - int(np.floor(np.log10(max(values)))))}f"


def _engine(ids: list[int], *ablations: tuple[int, int, str]) -> tuple[float, np.ndarray]:
    """The repeated half's loss and every head's induction score, from the engine run directly."""
    run = builtin("induction").run(ids, [ablate(*a) for a in ablations])
    half = len(ids) // 2
    repeated = induction.half_losses(run.logits[None], np.array(ids)[None], half)[1]
    return repeated, induction.head_scores(run.weights[None], half)[1]


def _click(pg, name: str) -> str:
    """Press a button by its exact name; the info box's text afterwards."""
    with rerun(pg):
        head_button(pg, name).click()
    assert not error_texts(pg), error_texts(pg)
    return pg.get_by_test_id("stAlertContentInfo").inner_text()


def test_the_journey_in_the_browser(browser, base_url) -> None:  # noqa: F811
    with guarded_context(browser, viewport={"width": 1280, "height": 720}) as context:
        pg = context.new_page()
        pg.goto(f"{base_url}/every_head")
        settle(pg)
        wait_readable(pg, 2)
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SHOTS / "inside_every_head_top_1280.png"))
        ids = [int(i) for i in induction.history("induction")["example"]]  # the page's first ready-made sequence
        clean, clean_ind = _engine(ids)
        off, _ = _engine(ids, (1, 0, "zero"))
        broken, broken_ind = _engine(ids, (0, 1, "zero"))
        body = pg.inner_text("body")
        # 1. find the induction head: its role and score title its picture, and are said under the charts once chosen
        layer2 = pg.locator(CHARTS).nth(1).inner_html()
        assert "layer 2 · head 1" in layer2 and f"induction {clean_ind[1, 0]:.2f}" in layer2
        head_button(pg, "Ablate layer 2 · head 1")
        body = pg.inner_text("body")
        assert "layer 2 · head 1 · role: induction" in body and f"induction {clean_ind[1, 0]:.2f}" in body
        # 2. ablate it: the repeated half's loss rises, said with the engine's numbers
        said = _click(pg, "Ablate layer 2 · head 1")
        assert f"the loss on the repeated half rose from {clean:.2f} to {off:.2f} nats" in said, said
        assert f"{off:.2f} nats" in pg.get_by_test_id("stMetric").nth(1).inner_text()
        # 3. restore it
        said = _click(pg, "Restore layer 2 · head 1 (zero-ablated)")
        assert f"fell from {off:.2f} to {clean:.2f} nats" in said, said
        # 4. ablate the previous-token head in layer 1: the induction head's pattern falls apart too
        said = _click(pg, "Ablate layer 1 · head 2")
        box = pg.get_by_test_id("stAlertContentInfo").bounding_box()  # said above the button pressed, in sight
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 720, box
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SHOTS / "inside_every_head_said_1280.png"))
        assert f"Layer 2 · head 1's induction score fell from {clean_ind[1, 0]:.2f} to {broken_ind[1, 0]:.2f}" in said
        assert f"{broken:.2f} nats" in pg.get_by_test_id("stMetric").nth(1).inner_text()
        wait_readable(pg, 2)
        pg.get_by_role("button", name="Restore every head").scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / "inside_every_head_1280.png"))
        pg.locator(CHARTS).nth(1).screenshot(path=str(SHOTS / "inside_every_head_layer2.png"))


def test_readable_and_accessible_at_1400_by_1000_after_an_ablation(browser, base_url, axe_script) -> None:  # noqa: F811
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        pg.goto(f"{base_url}/every_head")
        settle(pg)
        wait_readable(pg, 2)
        _click(pg, "Ablate layer 2 · head 1")
        wait_readable(pg, 2)
        check(pg, axe_script, "every_head after an ablation")
        pg.screenshot(path=str(SHOTS / "inside_every_head_1400.png"))


@pytest.mark.parametrize("viewport", [(1280, 720), (1400, 1000)], ids=["1280x720", "1400x1000"])
def test_every_heatmap_passes_the_visible_checks(browser, base_url, viewport) -> None:  # noqa: F811
    """The checks every chart of the step pages passes (tests/helpers/visible.py): a readable box and plot, 12 px
    text, nothing cut or clipped, sized to its column, the toolbar covering no text, non-blank pixels."""
    from tests.helpers.visible import page_problems

    url = f"{base_url}/every_head"
    problems = page_problems(browser, url, "every_head", viewport, lambda pg: wait_readable(pg, 2))
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def _probs(ids: list[int], *ablations: tuple[int, int, str]) -> np.ndarray:
    """Every position's next-token probabilities from the engine run directly: (n, V)."""
    logits = builtin("induction").run(ids, [ablate(*a) for a in ablations]).logits
    p = np.exp(logits - logits.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)


def _choose_position(pg, position: int, token: str) -> None:
    box = pg.get_by_role("combobox", name="Position (the prediction is for the token after it)")
    box.scroll_into_view_if_needed()
    box.click()
    with rerun(pg):
        pg.get_by_role("option", name=f"{position + 1}: {token}", exact=True).click()


def test_a_position_and_the_lazy_table_in_the_browser(browser, base_url) -> None:  # noqa: F811
    """Choosing a position (a rerun of the heads, each with its share there, and the predictions) shows the engine's
    prediction there and leaves the heads drawn; after an ablation, the sentence saying what it moved follows the new
    position; every position's table is built when its expander opens, with the engine's numbers."""
    ids = [int(i) for i in induction.history("induction")["example"]]
    pieces = builtin("induction").pieces(ids)
    clean, off = _probs(ids), _probs(ids, (1, 0, "zero"))
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        pg.goto(f"{base_url}/every_head")
        settle(pg)
        wait_readable(pg, 2)
        _choose_position(pg, 5, pieces[5])
        said = f"probability {_four([clean[5, ids[6]]]) % clean[5, ids[6]]}, loss {-np.log(clean[5, ids[6]]):.2f} nats"
        assert said in pg.inner_text("body"), said
        wait_readable(pg, 2)  # the heads are still drawn
        _click(pg, "Ablate layer 2 · head 1")
        _choose_position(pg, 20, pieces[20])
        info = pg.get_by_test_id("stAlertContentInfo").inner_text()
        assert f"At position 21 ({pieces[20]}) the most likely next token" in info, info
        pair = _four([clean[20].max(), off[20].max()])  # one format for the pair, the digits control's 4
        assert pair % clean[20].max() in info and pair % off[20].max() in info, info
        assert pg.get_by_test_id("stDataFrame").count() == 1  # the closed expander's table is not built
        with rerun(pg):
            pg.get_by_text("Every position's prediction").click()
        grid = pg.get_by_test_id("stDataFrame").nth(1)
        grid.scroll_into_view_if_needed()
        grid.locator("table tr").nth(1).wait_for(state="attached")
        cells = "trs => trs.map(tr => Array.from(tr.children, c => c.textContent))"
        rows = grid.locator("table tr").evaluate_all(cells)
        body = [r for r in rows[1:] if r and r[0].strip().isdigit()]
        assert len(body) >= 10, rows[:3]
        for r in body:  # position, token, most likely next, p(most likely), next in the text, p(next in the text)
            k = int(r[0]) - 1
            assert r[2] == builtin("induction").pieces([int(off[k].argmax())])[0], r
            assert float(r[3]) == pytest.approx(float(off[k].max()), abs=1e-4), r  # 4 digits of the column's largest
        wait_readable(pg, 2)
        grid.scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / "inside_every_head_positions_1400.png"))
