"""A run does only what changed: on a step page an edit reruns the page's body (an ``st.fragment``), not the
navigation and the sidebar's controls, yet the address follows it; a change made in the body that reaches beyond it
(a new sentence resizes every matrix) reruns the whole page.

Driven over Streamlit's own websocket protocol (``benchmarks/st_client.py``), as a browser tab: what the server
sends is what a browser would draw, run by run. The numbers are checked against the preset file and numpy, never
against the app's own output.
"""

from __future__ import annotations

import asyncio
import io
import urllib.parse

import numpy as np
import pyarrow as pa
import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState

from attention.io import links
from benchmarks.classroom import Server, attention_weights, preset_file, preset_inputs
from benchmarks.st_client import Tab, find, find_widget, grid_frame


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("fragments") / "server.log")
    yield s
    s.stop()


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, 180))


def test_an_edit_reruns_the_body_only_and_the_address_and_heatmap_follow(server) -> None:
    async def go():
        tab = Tab(server.url)
        try:
            await tab.open(page="softmax", query="preset=the_cat_sat")
            sidebar_box = find(tab.elements, "selectbox", label="Preset")
            assert sidebar_box, "the sidebar's preset box is drawn by the whole run"
            grid = find_widget(tab, "editor", "X")
            frame = grid_frame(grid)
            run = await tab.edit_cells(grid, {(1, str(frame.columns[1])): "1.75"})
            return tab, run, frame
        finally:
            await tab.close()

    tab, run, frame = _run(go())
    assert not run.problems, run.problems
    assert run.fragments, "an edit beside the heatmap reran the whole page, not only its body"
    assert find(tab.elements, "selectbox", label="Preset"), "the sidebar's controls stay while the body reruns"
    # the address carries the edit (written by the body's rerun): X as the preset's, with the one cell changed
    query = dict(urllib.parse.parse_qsl(tab.query))
    assert query.get("preset") == "the_cat_sat" and "edits" in query, query
    preset = preset_file("the_cat_sat")
    want = preset_inputs(preset)
    want["X"][1, 1] = 1.75
    sent = links.decode_any(query["edits"], {"X": preset_inputs(preset)["X"]})  # against the preset's own X
    np.testing.assert_array_equal(np.asarray(sent["X"]).reshape(want["X"].shape), want["X"])
    # the heatmap beside the grid was redrawn with the new weights (its data holds every cell's value)
    weights = attention_weights(want, preset["options"])
    chart = find(tab.elements, "vega_lite_chart")[0].proto
    data = pa.ipc.open_stream(io.BytesIO(chart.data.data)).read_all().to_pandas()
    shown = np.sort(np.concatenate([data[c].to_numpy(float) for c in data.columns if data[c].dtype.kind == "f"]))
    for w in weights.ravel():
        assert np.isclose(shown, w, rtol=0, atol=1e-12).any(), f"the heatmap does not show the new weight {w}"


def test_a_body_control_that_resizes_reruns_the_whole_page(server) -> None:
    async def go():
        tab = Tab(server.url)
        try:
            await tab.open(page="tokens", query="preset=the_cat_sat")
            box = next(e for e in tab.elements if e.kind == "text_input" and e.key.startswith("tok.sentence."))
            return await tab.rerun([WidgetState(id=box.widget_id, string_value="the cat sat down")])
        finally:
            await tab.close()

    run = _run(go())
    assert not run.problems, run.problems
    assert not run.fragments, "a new sentence (every matrix resized) reran only the body: the sidebar may be stale"
    grid = find_widget(_Elements(run.elements), "editor", "X")
    assert grid is not None and grid_frame(grid).shape[0] == 4


class _Elements:
    """What :func:`find_widget` reads of a tab: its last run's elements."""

    def __init__(self, elements) -> None:
        self.elements = elements


def test_while_a_challenge_runs_an_edit_reruns_the_whole_page(server) -> None:
    """The sidebar says whether the numbers meet the running challenge's goal: an edit must redraw it."""
    from attention.labs import challenges as ch

    challenge = ch.load_challenge("spread_out")  # W_q editable
    query = urllib.parse.urlencode({"preset": challenge.preset, "playing": ch.encode_link(challenge)})

    async def go():
        tab = Tab(server.url)
        try:
            await tab.open(page="weights", query=query)
            grid = find_widget(tab, "editor", "W_q")
            frame = grid_frame(grid)
            return await tab.edit_cells(grid, {(0, str(frame.columns[0])): "2.5"})
        finally:
            await tab.close()

    run = _run(go())
    assert not run.problems, run.problems
    assert not run.fragments, "an edit during a challenge reran only the body: the sidebar's standing may be stale"
    assert any(e.kind == "alert" and "Challenge" in e.proto.body for e in run.elements), "no challenge standing shown"
