"""The Softmax page's "row sums" tab (issue 49 §4): its numbers in the digits setting's format, as every other table
of the page (it mixed precisions: 1.1029, 1.557, 10.5735), and equal to the engine's row sums to the last digit."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from attention.explain import explain_cell
from attention.ui.core import compute
from tests.helpers.apptest import choose_tab, journey, no_exception, open_expander, session


def _sums_table(at):  # noqa: ANN001, ANN202 - the AppTest and its dataframe element
    return next(d for d in at.dataframe if "sum of exps" in list(d.value.columns))


def test_the_row_sums_use_the_digits_setting() -> None:
    at = journey("softmax")
    at = open_expander(at, "view.softmax_steps")
    at = choose_tab(at, "softmax_steps", "row sums")
    no_exception(at)
    digits = session(at).digits
    element = _sums_table(at)
    assert element.proto.arrow_data.HasField("styler"), "the table's texts are not written on the server"
    table = pa.ipc.open_stream(element.proto.arrow_data.styler.display_values).read_all().to_pandas()
    trace = compute.session_trace(session(at))
    for row, cell in enumerate(table["sum of exps"]):
        text = str(cell)
        significant = len(text.lstrip("-").split("e")[0].replace(".", "").lstrip("0"))
        assert significant == digits or text.lstrip("-").startswith("0."), (text, digits)
        want = explain_cell(trace, row, 0, 0).row_sum
        assert abs(float(text) - want) <= 0.5 * 10 ** (np.floor(np.log10(abs(want))) - digits + 1) + 1e-12, (text, want)
