"""What each view draws, cell by cell, against numpy: the colour of every heatmap cell as Vega-Lite computes it from
the spec the server sends (inline data, filters, the colour scale's domain and range), the numbers in it, and the
highlighted cells of a table (the Styler's CSS the server sends).

Each expected value is computed here with numpy from the session's matrices (X·W, ÷√d_k, a causal mask, a row-max
softmax, block maxima with a plain loop); each expected colour from the rule a person reads off the legend:
weights 0–1 on viridis, signed values on blue–white–red centred at 0 over the largest |value| of the whole matrix
(of all heads). Every one of these mistakes makes a test here fail: a head's panel over another head's numbers,
masked cells in colour, the "now − A" sign flipped, blocks averaged under a "max" title, the zoom window on its
own colour scale, the highlight on edited cells removed.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from attention import charts
from tests.helpers.apptest import conventions, edit_cell, journey, no_exception, open_views, session, texts
from tests.helpers.drawn import _rgb, assert_colour, drawn, signed, subtitle_of, title_of, viridis

GREY = charts.MASKED_COLOR


# --- numpy's attention (x_w projection, 1/√d_k per head, row-max softmax) -----------------------------------------


def softmax_rows(z: np.ndarray) -> np.ndarray:
    z = z - np.max(z, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def naive(s, heads: int = 1, causal: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scores, scaled, weights), each (heads, n, n), from the session's matrices with plain numpy."""
    o = s.options
    assert (o.projection, o.softmax, o.scale, o.temperature, o.positions) == ("x_w", "row_max", None, 1.0, "none")
    m = {k: np.squeeze(v) for k, v in s.matrices.items()}
    q, k = m["X"] @ m["W_q"], m["X"] @ m["W_k"]
    n, d = q.shape[0], q.shape[1] // heads
    scores = np.stack([q[:, h * d : (h + 1) * d] @ k[:, h * d : (h + 1) * d].T for h in range(heads)])
    scaled = scores / np.sqrt(d)
    if causal:
        scaled = np.where(np.tril(np.ones((n, n), bool)), scaled, -np.inf)
    return scores, scaled, softmax_rows(scaled)


def by_title(at, prefix: str) -> dict[str, object]:
    found = {title_of(el): el for el in at.get("vega_lite_chart") if title_of(el).startswith(prefix)}
    assert found, [title_of(el) for el in at.get("vega_lite_chart")]
    return found


# --- 1. each head's chart draws that head ----------------------------------------------------------------------


@pytest.mark.parametrize("page", ["scores", "softmax"])
def test_the_chart_titled_head_k_draws_head_k_on_one_colour_scale(page: str) -> None:
    at = journey(page, {"preset": "the_cat_sat", "heads": "2"})
    no_exception(at)
    s = session(at)
    scores, _, weights = naive(s, heads=2)
    values = scores if page == "scores" else weights
    toks = list(s.tokens)
    charts_ = by_title(at, "head ")
    assert sorted(charts_) == ["head 1", "head 2"]
    biggest = float(np.abs(scores).max())  # one scale for both heads
    for h in range(2):
        cells = drawn(charts_[f"head {h + 1}"])
        assert len(cells) == 9
        for i, q in enumerate(toks):
            for j, key in enumerate(toks):
                v = values[h, i, j]
                got = cells[(q, key)]
                assert got["value"] == pytest.approx(v, rel=1e-12, abs=1e-15), (h, q, key)
                assert_colour(got["fill"], viridis(v) if page == "softmax" else signed(v, biggest), (h, q, key))
    # one line per head on what it mostly does: here every row's top key is one token, found with numpy
    said = " ".join(texts(at.markdown))
    for h in range(2):
        top = np.argmax(weights[h], axis=-1)
        assert (top == top[0]).all()
        assert f"head {h + 1}: mostly attends to {toks[top[0]]} (3 of 3 rows)" in said.replace("*", ""), said


# --- 2. masked cells are grey ----------------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["scaling", "softmax"])
def test_masked_cells_are_drawn_grey_and_the_others_in_their_colour(page: str) -> None:
    at = journey(page, {"preset": "the_cat_sat_on_the_mat", "mask": "causal"})
    no_exception(at)
    s = session(at)
    assert s.options.mask == ("causal",)
    _, scaled, weights = naive(s, causal=True)
    r, g, b = _rgb(GREY)
    assert r == g == b  # grey
    toks = list(s.labels)
    el = at.get("vega_lite_chart")[0]
    cells = drawn(el)
    finite = scaled[0][np.isfinite(scaled[0])]
    for i, q in enumerate(toks):
        for j, key in enumerate(toks):
            got = cells[(q, key)]
            if j > i:  # masked by the causal mask
                assert_colour(got["fill"], _rgb(GREY), (q, key))
                assert got["text"] in (None, "masked"), got
            else:
                v = (scaled if page == "scaling" else weights)[0, i, j]
                assert got["value"] == pytest.approx(v, rel=1e-12, abs=1e-15)
                want = signed(v, float(np.abs(finite).max())) if page == "scaling" else viridis(v)
                assert_colour(got["fill"], want, (q, key))
                assert np.abs(got["fill"] - _rgb(GREY)).max() > 1.0 or np.allclose(want, _rgb(GREY), atol=1)


# --- 3. now − A has the right sign -----------------------------------------------------------------------------


def test_now_minus_a_draws_now_minus_a_red_where_it_grew() -> None:
    at = journey("softmax", {"preset": "the_cat_sat"})
    at = at.button(key="cmp.pin").click().run()
    _, _, was = naive(session(at))
    at = edit_cell(at, "W_k", 1, "k1", 2.5)
    no_exception(at)
    s = session(at)
    _, _, now = naive(s)
    diff = (now - was)[0]
    assert (diff > 0).any() and (diff < 0).any()
    el = by_title(at, "now − A")["now − A: weights"]
    cells = drawn(el)
    toks = list(s.tokens)
    biggest = float(np.abs(diff).max())
    for i, q in enumerate(toks):
        for j, key in enumerate(toks):
            got = cells[(q, key)]
            assert got["value"] == pytest.approx(diff[i, j], abs=1e-15), (q, key)
            assert_colour(got["fill"], signed(diff[i, j], biggest), (q, key))
            if abs(diff[i, j]) > biggest / 4:  # red where now is larger, blue where smaller
                red, _, blue = got["fill"]
                assert (red > blue) == (diff[i, j] > 0), (q, key, diff[i, j], got["fill"])
    a = by_title(at, "A: ")["A: weights"]
    assert all(
        drawn(a)[(q, key)]["value"] == pytest.approx(was[0, i, j], abs=1e-15)
        for i, q in enumerate(toks)
        for j, key in enumerate(toks)
    )


# --- 4. blocks show what their title says ----------------------------------------------------------------------


def _naive_blocks(a: np.ndarray, f: int, pool: str) -> dict[tuple[str, str], float]:
    n = a.shape[0]
    out = {}
    for bi in range(-(-n // f)):
        for bj in range(-(-n // f)):
            block = a[bi * f : (bi + 1) * f, bj * f : (bj + 1) * f]
            label = (f"{bi * f + 1}–{min(n, (bi + 1) * f)}", f"{bj * f + 1}–{min(n, (bj + 1) * f)}")
            out[label] = float(block.max() if pool == "max" else block.flat[np.argmax(np.abs(block))])
    return out


@pytest.mark.parametrize("page,pool", [("softmax", "max"), ("scores", "extreme")])
def test_blocks_of_a_large_heatmap_show_the_pool_their_title_names(page: str, pool: str) -> None:
    at = journey(page, {"preset": "blank", "size": "100x16x16"})
    no_exception(at)
    s = session(at)
    scores, _, weights = naive(s)
    values = (weights if page == "softmax" else scores)[0]
    el = at.get("vega_lite_chart")[0]
    f = -(-100 // charts.BLOCK_GRID)
    assert f"blocks of {f}×{f}: each {charts.POOL_WORDS[pool]}" == subtitle_of(el)
    want = _naive_blocks(values, f, pool)
    cells = drawn(el)
    assert set(cells) == set(want)
    biggest = float(np.abs(scores).max())
    for where, v in want.items():
        got = cells[where]
        assert got["value"] == pytest.approx(v, rel=1e-9), (where, got["value"], v)
        assert_colour(got["fill"], viridis(v) if page == "softmax" else signed(v, biggest), where)


# --- 5. the zoom window keeps the whole matrix's colours ---------------------------------------------------------


def test_the_zoom_window_is_coloured_on_the_whole_matrixs_scale() -> None:
    at = journey("scores", {"preset": "blank", "size": "100x16x16"})
    no_exception(at)
    s = session(at)
    scores = naive(s)[0][0]
    window = scores[:16, :16]
    biggest = float(np.abs(scores).max())
    assert np.abs(window).max() < 0.95 * biggest  # so a scale of its own would colour it visibly differently
    el = by_title(at, "rows 1–16")["rows 1–16, columns 1–16"]
    cells = drawn(el)
    toks = list(s.labels)
    assert len(cells) == 256
    for i in range(16):
        for j in range(16):
            got = cells[(toks[i], toks[j])]
            assert got["value"] == pytest.approx(window[i, j], rel=1e-12, abs=1e-15)
            assert_colour(got["fill"], signed(window[i, j], biggest), (i, j))


# --- 6. edited cells are highlighted ---------------------------------------------------------------------------


def highlighted(df_el) -> set[tuple[int, int]]:
    """(row, column) of the cells the table's Styler marks with the highlight colour."""
    styler = df_el.proto.arrow_data.styler
    marked = set()
    for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", styler.styles):
        if "background-color" in body:
            marked |= {(int(r), int(c)) for r, c in re.findall(r"_row(\d+)_col(\d+)", selectors)}
    return marked


def test_cells_that_differ_from_the_unedited_preset_are_highlighted_and_no_others() -> None:
    at = open_views(journey("softmax", {"preset": "the_cat_sat"}), "table.")  # the weights as a table, opened
    _, _, before = naive(session(at))
    at = edit_cell(at, "W_q", 1, "q2", 3.0)
    no_exception(at)
    s = session(at)
    assert s.matrices["W_q"][1, 1] == 3.0
    _, _, after = naive(s)
    changed = {(int(i), int(j)) for i, j in zip(*np.nonzero(after[0] != before[0]), strict=True)}
    assert changed and len(changed) < 9  # row 0 ("The") keeps its weights: W_q's row 1 meets X's zero there
    tables = [d for d in at.dataframe if d.value.shape == (3, 3) and not (d.key or "").startswith("ed.")]
    assert tables
    weights_table = tables[0]
    np.testing.assert_allclose(weights_table.value.to_numpy(dtype=float), after[0], rtol=0, atol=5.01e-5)
    assert highlighted(weights_table) == changed
    # and after "Reset to preset", nothing is highlighted
    at = at.sidebar.button[[b.label for b in at.sidebar.button].index("Reset to preset")].click().run()
    results = [d for d in at.dataframe if not (d.key or "").startswith("ed.")]
    assert results and all(not highlighted(d) for d in results)  # the table stays open


def test_the_heads_line_names_a_previous_token_habit() -> None:
    """The one line per head comes from the numbers: a causal mask on "The cat sat" makes row i's top key i or
    earlier; whatever it says must match numpy's argmax counts."""
    at = journey("softmax", {"preset": "the_cat_sat_on_the_mat", "mask": "causal", "heads": "2"})
    no_exception(at)
    s = session(at)
    _, _, w = naive(s, heads=2, causal=True)
    said = " ".join(texts(at.markdown)).replace("*", "")
    for h in range(2):
        top = np.argmax(w[h], axis=-1)[1:]  # row 0 has one key to choose from
        rows = np.arange(1, len(top) + 1)
        counts = {"the previous token": int(np.sum(top == rows - 1)), "itself": int(np.sum(top == rows))}
        line = re.search(rf"head {h + 1}: ([^.]*?\(\d+ of \d+ rows\))", said)
        assert line, said
        for habit, c in counts.items():
            if habit in line.group(1) and "mostly" in line.group(1):
                assert f"({c} of {len(top)} rows)" in line.group(1), (line.group(1), counts)


def test_conventions_heads_switch_redraws_one_chart_per_head() -> None:
    at = journey("scores", {"preset": "the_cat_sat"})
    assert len(by_title(at, "Raw scores")) == 1
    at = conventions(at).selectbox(key="sb.heads").set_value(4).run()
    no_exception(at)
    assert sorted(by_title(at, "head ")) == ["head 1", "head 2", "head 3", "head 4"]
