"""A highlighted or −∞ table is sent to the browser exactly as pandas' own Styler would have it.

``number_tables._given`` hands Streamlit its cell texts and highlights ready-made instead of letting pandas compute
them; the oracle here is pandas' general Styler (``df.style.format(...).apply(...)``, the code it replaced), both
marshalled by Streamlit's own ``marshall_styler``: the same CSS rules, the same display texts, the same numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from streamlit.dataframe_util import (
    convert_arrow_bytes_to_pandas_df,
    convert_arrow_table_to_arrow_bytes,
    convert_pandas_df_to_arrow_bytes,
    is_pandas_styler,
)
from streamlit.elements.lib.pandas_styler_utils import marshall_styler
from streamlit.proto.ArrowData_pb2 import ArrowData

from attention.ui.widgets import number_tables


def _pandas_styler(df: pd.DataFrame, pattern: str, highlight: np.ndarray | None):
    styler = df.style.format(lambda v: "−∞" if np.isneginf(v) else pattern.format(v))
    if highlight is not None and highlight.any():
        styler = styler.apply(lambda _: np.where(highlight, number_tables._HIGHLIGHT, ""), axis=None)
    return styler


def _given(df: pd.DataFrame, pattern: str, highlight: np.ndarray | None):
    values = df.to_numpy(dtype=float)
    texts = [["−∞" if np.isneginf(v) else pattern.format(v) for v in row] for row in values.tolist()]
    return number_tables._given(df, texts, highlight if highlight is not None and highlight.any() else None)


def _sent(styler) -> tuple[str, pd.DataFrame, str]:
    proto = ArrowData()
    marshall_styler(proto, styler, "unused")
    texts = convert_arrow_bytes_to_pandas_df(proto.styler.display_values)
    return proto.styler.styles.replace(proto.styler.uuid, "UUID"), texts, proto.styler.uuid


CASES = {
    "one cell marked": (np.array([[0.25, 0.5, 0.25], [0.1, 0.2, 0.7], [1.0, 0.0, 0.0]]), "{:.4f}", [(1, 1)]),
    "several marked, negative": (np.array([[-1.5, 2.25], [3.125, -0.0625]]), "{:.3f}", [(0, 0), (0, 1), (1, 0)]),
    "−∞ without marks": (np.array([[0.3, -np.inf], [1.2, 0.4]]), "{:.2f}", []),
    "−∞ and a mark": (np.array([[0.3, -np.inf, 2.0], [1.2, 0.4, -np.inf]]), "{:.2f}", [(1, 2)]),
    "every digit": (np.array([[1 / 3, 2 / 3], [0.1, 1e-17]]), "{!r}", [(0, 1)]),
    "nan and +∞": (np.array([[np.nan, np.inf], [0.5, -np.inf]]), "{:.2f}", [(0, 0)]),
    "one row": (np.array([[0.5, 0.25, 0.125, 0.0625]]), "{:.1f}", [(0, 3)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_given_styler_sends_what_pandas_styler_sends(case: str) -> None:
    values, pattern, marks = CASES[case]
    rows, cols = [f"tok{i}" for i in range(values.shape[0])], [f"key {j}" for j in range(values.shape[1])]
    df = pd.DataFrame(values, index=rows, columns=cols)
    highlight = np.zeros(values.shape, bool)
    for r, c in marks:
        highlight[r, c] = True
    want_css, want_texts, _ = _sent(_pandas_styler(df, pattern, highlight))
    got_css, got_texts, _ = _sent(_given(df, pattern, highlight))
    assert got_css == want_css
    pd.testing.assert_frame_equal(got_texts, want_texts)
    # and what a person reads: the pattern's text of each number, −∞ written so, the marked cells' CSS and no other
    for r in range(values.shape[0]):
        for c in range(values.shape[1]):
            v = values[r, c]
            assert got_texts.iloc[r, c] == ("−∞" if v == -np.inf else pattern.format(float(v)))  # nan: "nan"
    assert got_css.count("{") == (1 if marks else 0)
    for r, c in marks:
        assert f"#T_UUID_row{r}_col{c}" in got_css
    assert ("background-color: #fff3b0; font-weight: 600" in got_css) == bool(marks)


def test_a_table_with_a_highlight_still_sends_its_numbers() -> None:
    df = pd.DataFrame([[0.25, 0.75], [0.5, 0.5]], index=["a", "b"], columns=["a", "b"])
    proto = ArrowData()
    marshall_styler(proto, _given(df, "{:.4f}", np.array([[True, False], [False, False]])), "unused")
    assert proto.styler.uuid  # the CSS is scoped to this table


def test_streamlit_takes_it_for_a_styler() -> None:
    df = pd.DataFrame([[0.25, -np.inf]], index=["a"], columns=["a", "b"])
    assert is_pandas_styler(_given(df, "{:.2f}", np.array([[True, False]])))  # else st.dataframe refuses it


ARROW_CASES = {
    "tokens": pd.DataFrame([[0.25, 0.5, 0.25], [0.1, 0.2, 0.7]], index=["The", "cat"], columns=["The", "cat", "sat"]),
    "named labels": pd.DataFrame(
        [[1.0], [2.0]], index=pd.Index(["a", "b"], name="query"), columns=pd.Index(["k"], name="key")
    ),
    "number labels": pd.DataFrame([[1.0, 2.0]], index=[3], columns=[0, 1]),
    "one cell": pd.DataFrame([[0.5]], index=["x"], columns=["y"]),
}


@pytest.mark.parametrize("case", list(ARROW_CASES))
def test_a_plain_table_reaches_streamlit_as_the_bytes_it_makes_itself(case: str) -> None:
    """The oracle is Streamlit's own conversion of the frame (``pa.Table.from_pandas``, then Arrow IPC)."""
    df = ARROW_CASES[case]
    for _ in range(2):  # the second time from the cached schema
        table = number_tables.arrow_table(df, df.to_numpy(dtype=float))
        assert isinstance(table, pa.Table)
        assert convert_arrow_table_to_arrow_bytes(table) == convert_pandas_df_to_arrow_bytes(df)
    moved = df * 3 - 1  # new numbers, the same labels: the cached schema, the new numbers
    table = number_tables.arrow_table(moved, moved.to_numpy(dtype=float))
    assert convert_arrow_table_to_arrow_bytes(table) == convert_pandas_df_to_arrow_bytes(moved)


def test_a_table_whose_labels_repeat_or_count_or_numbers_are_not_float64_goes_to_streamlit_as_the_frame() -> None:
    counted = pd.DataFrame([[1.5, -2.0], [0.0, 3.25]], columns=["d1", "d2"])  # a range index
    assert number_tables.arrow_table(counted, counted.to_numpy(dtype=float)) is counted
    repeated = pd.DataFrame([[1.0, 2.0]], index=["the"], columns=["the", "the"])
    assert number_tables.arrow_table(repeated, repeated.to_numpy(dtype=float)) is repeated
    small = pd.DataFrame(np.ones((2, 2), np.float32), index=["a", "b"], columns=["c", "d"])
    assert number_tables.arrow_table(small, small.to_numpy(dtype=float)) is small


def _two_tables(case: str) -> None:
    import numpy as np
    import pandas as pd
    import streamlit as st

    from attention.ui.widgets import number_tables

    values, pattern, marks = {
        "marked": (np.array([[0.25, 0.5, 0.25], [0.1, 0.2, 0.7]]), "{:.4f}", [(1, 1), (0, 2)]),
        "−∞": (np.array([[0.3, -np.inf], [1.2, 0.4]]), "{:.2f}", []),
    }[case]
    df = pd.DataFrame(values, index=["The", "cat"], columns=[f"k{j}" for j in range(values.shape[1])])
    highlight = np.zeros(values.shape, bool)
    for r, c in marks:
        highlight[r, c] = True
    styler = df.style.format(lambda v: "−∞" if np.isneginf(v) else pattern.format(v))
    if marks:
        styler = styler.apply(lambda _: np.where(highlight, number_tables._HIGHLIGHT, ""), axis=None)
    st.dataframe(styler, width="stretch", height=number_tables.fit_height(len(df)))
    number_tables.number_table(df, pattern, highlight=highlight)


@pytest.mark.parametrize("case", ["marked", "−∞"])
def test_st_dataframe_sends_the_same_table_for_pandas_styler_and_the_given_one(case: str) -> None:
    """The whole of st.dataframe: the numbers (bytes), the display texts and the CSS (its table id aside)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_two_tables, args=(case,), default_timeout=60).run()
    assert not at.exception
    theirs, ours = (el.proto.arrow_data for el in at.dataframe)
    assert ours.data == theirs.data  # the numbers
    pd.testing.assert_frame_equal(
        convert_arrow_bytes_to_pandas_df(ours.styler.display_values),
        convert_arrow_bytes_to_pandas_df(theirs.styler.display_values),
    )
    assert ours.styler.styles.replace(ours.styler.uuid, "ID") == theirs.styler.styles.replace(theirs.styler.uuid, "ID")
