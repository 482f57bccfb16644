"""W_o (the heads' outputs mixed, editable on the Weights page) and learned positions P (editable on the Tokens
page): each reproduces its formula, travels in links, and every export carries it and gives the same numbers."""

from __future__ import annotations

import contextlib
import io
import math
import zipfile

import numpy as np
import pandas as pd

import attention
from attention.io import codegen, presets, tables
from attention.ui.address import url
from attention.ui.core import session as session_mod
from tests.helpers.apptest import edit_cell, goto, journey, no_exception, session, texts


def _trace(s) -> attention.Trace:
    m = s.matrices
    return attention.self_attention(
        m["X"], m["W_q"], m["W_k"], m["W_v"], W_o=m.get("W_o"), P=m.get("P"), tokens=s.tokens, options=s.options
    )


def _with_w_o(query: dict[str, str]):
    at = journey("weights", query)
    at = at.checkbox(key="w.w_o").check().run()
    no_exception(at)
    return at


def test_w_o_starts_as_the_identity_and_changes_nothing() -> None:
    before = journey("weights", {"preset": "the_cat_sat", "heads": "2"})
    at = _with_w_o({"preset": "the_cat_sat", "heads": "2"})
    s = session(at)
    d_v = s.dims.d_v
    np.testing.assert_array_equal(s.matrices["W_o"], np.eye(d_v))
    np.testing.assert_array_equal(_trace(s).output, _trace(session(before)).output)
    assert any("identity" in t for t in texts(at.info)), texts(at.info)


def test_an_edited_w_o_mixes_the_heads_outputs() -> None:
    at = _with_w_o({"preset": "the_cat_sat", "heads": "2"})
    cols = session(at).axis_labels("W_o", session(at).matrices["W_o"].shape)[1]
    at = edit_cell(at, "W_o", 0, cols[1], "0.75")
    no_exception(at)
    s = session(at)
    assert s.matrices["W_o"][0, 1] == 0.75
    concat = _trace(s).concat
    want = np.array(
        [
            [
                math.fsum(concat[i, k] * s.matrices["W_o"][k, j] for k in range(concat.shape[1]))
                for j in range(s.matrices["W_o"].shape[1])
            ]
            for i in range(concat.shape[0])
        ]
    )  # naive loops
    np.testing.assert_allclose(_trace(s).output, want, rtol=1e-12, atol=1e-15)
    at = goto(at, "output")
    no_exception(at)
    assert any("W_o" in m.value for m in at.markdown)


def test_unticking_w_o_drops_it_and_says_so() -> None:
    at = _with_w_o({"preset": "the_cat_sat"})
    at = at.checkbox(key="w.w_o").uncheck().run()
    s = session(at)
    assert "W_o" not in s.matrices and session_mod.is_unedited(s)
    assert any("dropped" in t for t in texts(at.info))


def test_learned_positions_start_as_the_sinusoidal_code_and_p_is_added_to_x() -> None:
    at = journey("tokens", {"preset": "the_cat_sat"})
    at = at.selectbox(key="tok.positions").set_value("learned").run()
    no_exception(at)
    s = session(at)
    n, d = s.matrices["X"].shape
    pe = np.array(  # the formula of "Attention is all you need", cell by cell
        [
            [math.sin(p / 10000 ** (c / d)) if c % 2 == 0 else math.cos(p / 10000 ** ((c - 1) / d)) for c in range(d)]
            for p in range(n)
        ]
    )
    np.testing.assert_allclose(s.matrices["P"], pe, rtol=1e-12, atol=1e-15)
    cols = s.axis_labels("P", s.matrices["P"].shape)[1]
    at = edit_cell(at, "P", 1, cols[0], "3.5")
    s = session(at)
    t = _trace(s)
    assert s.matrices["P"][1, 0] == 3.5
    np.testing.assert_array_equal(t.X_in, s.matrices["X"] + s.matrices["P"])
    at = at.selectbox(key="tok.positions").set_value("none").run()
    assert "P" not in session(at).matrices
    assert any("dropped" in t and "edits" in t for t in texts(at.info)), texts(at.info)


def _edited_state():
    at = _with_w_o({"preset": "the_cat_sat", "heads": "2", "pos": "learned"})
    s = session(at)
    cols = s.axis_labels("W_o", s.matrices["W_o"].shape)[1]
    at = edit_cell(at, "W_o", 1, cols[0], "-0.5")
    at = goto(at, "tokens")
    cols = session(at).axis_labels("P", session(at).matrices["P"].shape)[1]
    at = edit_cell(at, "P", 0, cols[1], "2")
    no_exception(at)
    return session(at)


def test_w_o_and_p_travel_in_the_link() -> None:
    s = _edited_state()
    q, notes = url.link(s)
    assert q.get("wo") == "1" and q.get("pos") == "learned" and "edits" in q and not notes, (q, notes)
    at = journey("output", q)
    no_exception(at)
    r = session(at)
    for name in ("X", "W_q", "W_k", "W_v", "W_o", "P"):
        assert session_mod.identical(r.matrices[name], s.matrices[name]), name
    np.testing.assert_array_equal(_trace(r).output, _trace(s).output)


def test_every_export_carries_w_o_and_p_and_reproduces_the_numbers() -> None:
    s = _edited_state()
    want = _trace(s)
    preset = session_mod.export_preset(s)
    again = presets.parse_preset(preset.to_json(), "mine.json")
    np.testing.assert_array_equal(again.compute().output, want.output)
    scope: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(codegen.python_script(preset), scope)  # noqa: S102 - our own generated script
    np.testing.assert_array_equal(scope["output"], want.output)
    archive = zipfile.ZipFile(io.BytesIO(tables.trace_zip(want, preset)))
    assert {"W_o.csv", "P.csv", "concat.csv", "preset.json"} <= set(archive.namelist())
    for name, value in (("W_o", s.matrices["W_o"]), ("P", s.matrices["P"]), ("concat", want.concat)):
        read = pd.read_csv(io.BytesIO(archive.read(f"{name}.csv")), index_col=0).to_numpy(dtype=float)
        np.testing.assert_array_equal(read, value)
