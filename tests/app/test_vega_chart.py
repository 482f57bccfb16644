"""A heatmap's rows reach the browser as the same columns and values whether Streamlit converts the spec's inline rows
itself (through a pandas frame) or ``widgets.common.vega_chart`` hands them over as an Arrow table.

The oracle is Streamlit's own handling of the whole spec (``st.vega_lite_chart(spec)``), drawn in the same AppTest
run: the same spec text (the rows taken out of it), the same column names, types and values, masked cells null."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from attention import charts


def _page(case: str) -> None:
    import copy

    import numpy as np
    import streamlit as st

    from attention import charts
    from attention.ui.widgets.common import vega_chart

    values = np.array([[0.5, -np.inf, 2.0], [1.25, 0.0, -3.5]])
    allowed = np.isfinite(values)
    if case == "masked scores":
        spec = charts.heatmap(values, ["a", "b"], ["x", "y", "z"], charts.Style(kind="scores", select=True), allowed)
    elif case == "weights":
        spec = charts.heatmap(np.abs(values[:, [0, 2]]) / 4, ["the", "cat"], ["the", "cat"], charts.Style())
    elif case == "diff, nothing written":
        big = np.linspace(-1, 1, 30 * 30).reshape(30, 30)
        labels = [f"t{i}" for i in range(30)]
        spec = charts.heatmap(big, labels, labels, charts.Style(kind="diff"))
    elif case == "panels":  # several heads as one chart: two named tables (the cells, the pictures), no inline rows
        stack = np.stack([np.tril(np.full((5, 5), 0.2 * k)) for k in range(1, 4)])
        heads = tuple((f"layer 1 · head {k}", f"role {k}") for k in range(1, 4))
        labels = [f"t{i}" for i in range(5)]
        allowed = np.tril(np.ones((5, 5), bool))
        spec = charts.heatmap(stack, labels, labels, charts.HEAD.but(panels=heads, image=True), allowed)
    else:  # blocks of a large matrix: a named dataset
        spec = charts.heatmap(np.ones((300, 300)), [f"t{i}" for i in range(300)], [f"t{i}" for i in range(300)])
    st.vega_lite_chart(copy.deepcopy(spec), width="stretch")
    vega_chart(spec, width="stretch")


def _table(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


@pytest.mark.parametrize("case", ["masked scores", "weights", "diff, nothing written", "blocks", "panels"])
def test_vega_chart_sends_what_streamlit_makes_of_the_spec(case: str) -> None:
    at = AppTest.from_function(_page, args=(case,), default_timeout=60).run()  # a busy machine
    assert not at.exception
    theirs, ours = (el.proto for el in at.get("vega_lite_chart"))
    assert json.loads(ours.spec) == json.loads(theirs.spec)
    assert [d.name for d in ours.datasets] == [d.name for d in theirs.datasets]
    for a, b in zip(theirs.datasets, ours.datasets, strict=True):
        _same_columns(_table(a.data.data), _table(b.data.data))
    if case == "panels":
        assert [d.name for d in ours.datasets] == [charts.CELLS, charts.PICTURES] and not ours.data.data
    if not theirs.data.data:
        assert not ours.data.data
        return
    want, got = _table(theirs.data.data), _table(ours.data.data)
    _same_columns(want, got)
    if case == "masked scores":
        assert want.column("value").null_count == got.column("value").null_count == 1


def _same_columns(want: pa.Table, got: pa.Table) -> None:
    """The same column names, values (None as null) and kinds: Streamlit's strings are large, ours plain."""
    assert got.column_names == want.column_names
    for name in want.column_names:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name
        assert pa.types.is_string(got.schema.field(name).type) == pa.types.is_large_string(want.schema.field(name).type)
