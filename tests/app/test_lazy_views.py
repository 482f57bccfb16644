"""A step page sends at once only the heatmap, the input grid and the explanation (and what the learner opened): every
other view (the result as a table, softmax's middle steps, the explained cell, what a step takes in, the downloads)
is a closed expander whose contents the server does not send. Opening one draws it, with the numbers numpy gives,
and it stays open across an edit and a page switch, since whether it is open is kept in the Session."""

from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState

from tests.helpers.apptest import (
    app,
    edit_cell,
    goto,
    journey,
    matrix_grids,
    no_exception,
    open_expander,
    session,
    texts,
)


def weights_of(s) -> np.ndarray:
    """The attention weights from the session's matrices with plain numpy (x·W, ÷√d_k, row-max softmax)."""
    m = {k: np.squeeze(v) for k, v in s.matrices.items()}
    q, k = m["X"] @ m["W_q"], m["X"] @ m["W_k"]
    z = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def labels(at) -> list[str]:
    return [e.label for e in at.expander]


def keyed(at, kind: str) -> list[str]:
    return [str(w.key) for w in at.get(kind) if getattr(w, "key", None)]


LAZY = {  # page -> the expanders (their places) its views sit in, closed at first
    "scores": ("table.scores", "view.takes_q_k", "view.explain_cell", "downloads"),
    "scaling": ("table.scaled", "view.takes_scores", "view.explain_cell", "downloads"),
    "softmax": ("table.weights", "view.takes_scaled", "view.softmax_steps", "view.explain_cell", "downloads"),
    "output": ("table.output", "view.takes_v_weights", "view.explain_cell", "downloads"),
}


@pytest.mark.parametrize("page", list(LAZY))
def test_a_closed_view_is_not_sent(page: str) -> None:
    at = journey(page, {"preset": "the_cat_sat"})
    no_exception(at)
    ids = [e.proto.id for e in at.expander]
    for place in LAZY[page]:
        assert any(i.endswith(f"-open.{place}") for i in ids), (place, ids)
    assert len(at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart")) == 1  # the heatmap
    assert len(matrix_grids(at)) == 1 and len(at.dataframe) == 0  # the input grid only: no tables
    assert not keyed(at, "download_button")  # no downloads, nor the chart's file menu's buttons
    assert not [k for k in keyed(at, "selectbox") if k.startswith("cell.")]  # the explained cell's pickers
    said = " ".join(texts(at.markdown))
    assert "Explain a cell" not in said and "What this step takes in" not in said
    explanation = [m for m in texts(at.markdown) if len(m) > 80]
    assert explanation, "the step's explanation is drawn at once"


def test_opening_a_view_draws_it_and_it_stays_open_across_an_edit_and_a_page_switch() -> None:
    at = journey("softmax", {"preset": "the_cat_sat", "digits": "6"})  # the explanation written at 6 digits
    at = open_expander(at, "view.explain_cell")
    no_exception(at)
    assert session(at).tabs["view.explain_cell"] == "open"
    assert {"cell.softmax.q", "cell.softmax.k"} <= set(keyed(at, "selectbox"))
    w = weights_of(session(at))
    said = " ".join(texts(at.markdown))
    assert f"**{w[0, 0]:.6g}**" in said, said  # the explained weight (The, The) is numpy's
    at = edit_cell(at, "W_q", 0, "d1", 2.5)  # an edit reruns the page: the view is still drawn, with the new numbers
    no_exception(at)
    w = weights_of(session(at))
    assert f"**{w[0, 0]:.6g}**" in " ".join(texts(at.markdown))
    at = goto(at, "scores")  # another page with the same view: it is open there too
    assert {"cell.scores.q", "cell.scores.k"} <= set(keyed(at, "selectbox"))
    at = goto(at, "softmax")
    assert {"cell.softmax.q", "cell.softmax.k"} <= set(keyed(at, "selectbox"))
    assert "view.softmax_steps" not in session(at).tabs  # the other views stayed closed
    assert len(at.dataframe) == 1  # the explained cell's table (the grid is no dataframe); no steps


def test_the_result_table_opens_with_numpys_numbers_and_closes_again() -> None:
    at = journey("softmax", {"preset": "the_cat_sat"})
    assert len(at.dataframe) == 0
    at = open_expander(at, "table.weights")
    no_exception(at)
    tables = [d for d in at.dataframe if not str(d.key or "").startswith("ed.")]
    assert len(tables) == 1
    shown = tables[0].value
    w = weights_of(session(at))
    np.testing.assert_allclose(shown.to_numpy(dtype=float), w, rtol=1e-12)  # the table's data, every digit
    found = [e for e in at.expander if e.proto.id.endswith("-open.table.weights")]
    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=found[0].proto.id, bool_value=False))
    at = at._run(states)
    assert session(at).tabs["table.weights"] == "closed" and len(at.dataframe) == 0


def test_the_downloads_open_with_every_csv_of_the_page() -> None:
    at = journey("softmax", {"preset": "the_cat_sat"})
    assert not keyed(at, "download_button")
    at = open_expander(at, "downloads")
    no_exception(at)
    assert {"dl.softmax.weights", "dl.softmax.zip"} <= set(keyed(at, "download_button"))
    at = goto(at, "weights")  # open on every step page: the inputs' CSVs there
    assert {"dl.weights.W_q", "dl.weights.W_k", "dl.weights.W_v", "dl.weights.zip"} <= set(keyed(at, "download_button"))


def test_a_click_on_a_heatmap_cell_opens_its_explanation() -> None:
    at = journey("softmax", {"preset": "the_cat_sat", "digits": "6"})  # the explanation written at 6 digits
    chart = (at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart"))[0]
    states = at._tree.get_widget_states()
    event = {"selection": {"cell": [{"query": "cat", "key": "sat"}]}}
    states.widgets.append(WidgetState(id=chart.proto.id, string_value=json.dumps(event)))
    at = at._run(states)
    no_exception(at)
    s = session(at)
    assert s.cell == (1, 2) and s.tabs["view.explain_cell"] == "open"
    assert at.selectbox(key="cell.softmax.q").value == "cat" and at.selectbox(key="cell.softmax.k").value == "sat"
    assert f"**{weights_of(s)[1, 2]:.6g}**" in " ".join(texts(at.markdown))


def test_closed_downloads_and_import_boxes_build_nothing_until_opened() -> None:
    at = app("tokens", {"preset": "the_cat_sat"})  # opened by its address (the overview offers the zip at once)
    no_exception(at)
    assert "download.zip" not in session(at).memo and "download.X.csv" not in session(at).memo  # no file made
    assert not at.text_area and not at.get("file_uploader")  # the import box's boxes are not sent
    assert "Import X: upload a CSV or paste a numpy array" in labels(at)
    at = open_expander(at, "import.X")
    assert [w.key for w in at.text_area] == ["imp.X.text"] and len(at.get("file_uploader")) == 1
    at = open_expander(at, "downloads")
    assert {"dl.tokens.X", "dl.tokens.zip"} <= set(keyed(at, "download_button"))
    assert "download.zip" in session(at).memo
