"""CSV and zip downloads: content, labels, precision, formula-injection protection, round trips."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from dataclasses import replace

import numpy as np
import pytest

import attention
from attention import AttentionError
from attention.io.parse import read_matrix_csv
from attention.io.tables import matrix_csv, matrix_labels, protect_text, trace_files, trace_zip
from attention.names import dimension_labels


def rows_of(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


# ------------------------------------------------------------------------------------------- matrix_csv


def test_header_labels_and_values():
    data = matrix_csv(np.array([[0.2, 0.9], [0.1, 0.5]]), ["she", "likes"], ["d1", "d2"])
    assert data == b"token,d1,d2\r\nshe,0.2,0.9\r\nlikes,0.1,0.5\r\n"


def test_custom_corner_and_bom():
    data = matrix_csv(np.eye(1), ["a"], ["k1"], corner="query \\ key", bom=True)
    assert data.startswith(b"\xef\xbb\xbfquery \\ key,k1\r\n")
    m, rows, cols = read_matrix_csv(data, "X")
    assert rows == ["a"] and cols == ["k1"] and m.tolist() == [[1.0]]


@pytest.mark.parametrize(
    "value, text",
    [
        (0.1 + 0.2, "0.30000000000000004"),
        (-0.0, "-0.0"),
        (1e-300, "1e-300"),
        (5e-324, "5e-324"),
        (2.225073858507201e-308, "2.225073858507201e-308"),
        (-0.5, "-0.5"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (123456789012345.67, "123456789012345.67"),
        (1.0, "1.0"),
        (-np.inf, "-inf"),
    ],
)
def test_numbers_full_precision_and_never_prefixed(value, text):
    data = matrix_csv(np.array([[value]]), ["t"], ["d1"])
    assert rows_of(data)[1] == ["t", text]


@pytest.mark.parametrize(
    "token, written",
    [
        ("=1+1", "'=1+1"),
        ("@cmd", "'@cmd"),
        ("+x", "'+x"),
        ("-x", "'-x"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ('=HYPERLINK("http://evil","click")', '\'=HYPERLINK("http://evil","click")'),
        ("'s", "''s"),
        ("2", "'2"),
        ("nan", "'nan"),
        ("", "'"),
        (" the", "' the"),
        ("she", "she"),
        ("a,b", "a,b"),
        ('say "hi"', 'say "hi"'),
    ],
)
def test_formula_injection_guard_on_text_cells(token, written):
    data = matrix_csv(np.array([[-1.5]]), [token], [token], corner=token)
    header, row = rows_of(data)
    assert header == [written, written]
    assert row == [written, "-1.5"]  # the number is not text: never prefixed


def test_no_text_cell_starts_with_a_formula_character():
    hostile = ["=1+1", "@cmd", "+x", "-x", "\tx", "\r=x", "=cmd|' /C calc'!A0"]
    data = matrix_csv(np.zeros((len(hostile), 2)), hostile, hostile[:2])
    for r, row in enumerate(rows_of(data)):
        cells = row if r == 0 else row[:1]
        assert all(not c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells), row


def test_protect_text_is_reversed_by_the_reader():
    from attention.io.parse import unprotect_label

    for token in ["=1+1", "@cmd", "'s", "''", "2", "-x", "x", "", " a ", "é", "a\nb"]:
        assert unprotect_label(protect_text(token)) == token


def test_round_trip_bit_exact_with_hostile_labels():
    rs = np.random.RandomState(7)
    m = rs.randn(5, 3) * 10.0 ** rs.randint(-300, 300, size=(5, 3))
    m[0, 0], m[1, 1], m[2, 2] = -0.0, 5e-324, 0.1 + 0.2
    rows = ["=1+1", "@cmd", "'s", "2", 'héllo, "world"']
    cols = ["+x", "-x", "\tx"]
    back, r, c = read_matrix_csv(matrix_csv(m, rows, cols), "X", (5, 3))
    assert bits_equal(back, m)
    assert r == rows and c == cols


def test_round_trip_without_expected_shape():
    m = np.array([[1.0, -2.0], [3.5, 4e-7]])
    back, r, c = read_matrix_csv(matrix_csv(m, ["1", "2"], ["d1", "d2"]), "X")
    assert bits_equal(back, m) and r == ["1", "2"] and c == ["d1", "d2"]


@pytest.mark.parametrize("bad", [np.zeros(3), np.zeros((1, 2, 2)), np.float64(1.0)])
def test_matrix_csv_needs_2d(bad):
    with pytest.raises(AttentionError, match="2-D"):
        matrix_csv(bad, ["a"], ["b"])


def test_matrix_csv_label_counts():
    with pytest.raises(AttentionError, match="2 row labels for a matrix with 3 rows"):
        matrix_csv(np.zeros((3, 2)), ["a", "b"], ["x", "y"])
    with pytest.raises(AttentionError, match="1 column labels for a matrix with 2 columns"):
        matrix_csv(np.zeros((3, 2)), ["a", "b", "c"], ["x"])


def test_matrix_csv_does_not_modify_input():
    m = np.array([[1.0, 2.0]])
    before = m.copy()
    matrix_csv(m, ["a"], ["b", "c"])
    assert bits_equal(m, before)


# -------------------------------------------------------------------------------------------- labels


def test_dimension_labels():
    assert dimension_labels("d", 3) == ["d1", "d2", "d3"]
    assert dimension_labels("k", 0) == []
    with pytest.raises(AttentionError):
        dimension_labels("d", -1)


def test_matrix_labels_x_w():
    t = attention.load_preset("she_likes_coffee").compute()
    toks = ["she", "likes", "coffee"]
    d4 = ["d1", "d2", "d3", "d4"]
    assert matrix_labels("X", t, toks) == (toks, d4)
    assert matrix_labels("W_q", t, toks) == (d4, ["q1", "q2", "q3", "q4"])
    assert matrix_labels("W_v", t, toks) == (d4, ["v1", "v2", "v3", "v4"])
    assert matrix_labels("Q", t, toks) == (toks, ["q1", "q2", "q3", "q4"])
    assert matrix_labels("V", t, toks) == (toks, ["v1", "v2", "v3", "v4"])
    assert matrix_labels("output", t) == (toks, ["v1", "v2", "v3", "v4"])
    for name in ("scores", "scaled", "weights"):
        assert matrix_labels(name, t) == (toks, toks)


def test_matrix_labels_transposed_projection():
    t = attention.load_preset("i_am_batman").compute()
    assert matrix_labels("W_q", t) == (["q1", "q2"], ["d1", "d2"])
    assert matrix_labels("W_v", t) == (["v1", "v2"], ["d1", "d2"])
    assert matrix_labels("X", t) == (["I", "am", "Batman"], ["d1", "d2"])


def test_matrix_labels_errors_and_defaults():
    m = attention.blank(2, 3, 4).matrices()
    t = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"])
    assert matrix_labels("X", t) == (["t1", "t2"], ["d1", "d2", "d3"])
    assert matrix_labels("K", t) == (["t1", "t2"], ["k1", "k2", "k3", "k4"])
    with pytest.raises(AttentionError, match="3 token labels given for 2 rows"):
        matrix_labels("X", t, ["a", "b", "c"])
    with pytest.raises(AttentionError, match="unknown matrix"):
        matrix_labels("W_o", t)


# --------------------------------------------------------------------------------------------- zip

CSV_NAMES = ["X", "W_q", "W_k", "W_v", "Q", "K", "V", "scores", "scaled", "weights", "output"]


def zip_members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None
        return {info.filename: zf.read(info) for info in zf.infolist()}


@pytest.mark.parametrize("preset_id", attention.list_presets())
def test_trace_zip_contents_round_trip(preset_id):
    preset = attention.load_preset(preset_id)
    trace = preset.compute()
    members = zip_members(trace_zip(trace, preset))
    assert sorted(members) == sorted([f"{n}.csv" for n in CSV_NAMES] + ["preset.json", "README.txt"])
    batched = trace.X.ndim == 3
    for name in CSV_NAMES:
        want = np.asarray(getattr(trace, name))
        if batched and want.ndim == 3 and name not in ("W_q", "W_k", "W_v"):
            want = want[0]
        got, rows, cols = read_matrix_csv(members[f"{name}.csv"], name, want.shape, allow_neg_inf=True)
        assert bits_equal(got, want), name
        assert (rows, cols) == matrix_labels(name, trace)
    again = attention.parse_preset(members["preset.json"], "preset.json")
    for name, arr in again.matrices().items():
        assert bits_equal(arr, preset.matrices()[name]), name
    assert again.options == preset.options
    readme = members["README.txt"].decode("utf-8")
    for name in CSV_NAMES:
        assert f"{name}.csv" in readme
    assert "-inf" in readme
    if batched:
        assert "batch" in readme and "(1, 6, 8)" in readme


def test_trace_zip_is_deterministic_and_dated_1980():
    preset = attention.load_preset("the_cat_sat")
    a = trace_zip(preset.compute(), preset)
    b = trace_zip(attention.load_preset("the_cat_sat").compute(), preset)
    assert a == b
    with zipfile.ZipFile(io.BytesIO(a)) as zf:
        assert {info.date_time for info in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_trace_zip_masked_cells_are_minus_inf():
    base = attention.blank(4, 4, seed=3)
    preset = attention.from_state(base.tokens, base.matrices(), base.options.replace(mask="causal"))
    trace = preset.compute()
    members = zip_members(trace_zip(trace, preset))
    rows = rows_of(members["scaled.csv"])
    assert rows[1][2:] == ["-inf", "-inf", "-inf"]
    got, _, _ = read_matrix_csv(members["scaled.csv"], "scaled", (4, 4), allow_neg_inf=True)
    assert bits_equal(got, trace.scaled)
    with pytest.raises(AttentionError, match="NaN and infinity are not allowed"):
        read_matrix_csv(members["scaled.csv"], "scaled", (4, 4))


def test_trace_zip_with_heads_writes_one_file_per_head():
    base = attention.blank(4, 4, seed=1)
    preset = attention.from_state(
        base.tokens, base.matrices(), base.options.replace(heads=2, mask="causal", temperature=2.0)
    )
    trace = preset.compute()
    members = zip_members(trace_zip(trace, preset))
    for name in ("scores", "scaled", "weights"):
        for h in range(2):
            got, rows, cols = read_matrix_csv(members[f"{name}_head{h + 1}.csv"], name, (4, 4), allow_neg_inf=True)
            assert bits_equal(got, getattr(trace, name)[h])
        assert f"{name}.csv" not in members
    assert "2 heads" in members["README.txt"].decode()


def test_trace_zip_hostile_tokens_are_guarded():
    base = attention.blank(3, 2, seed=0)
    toks = ["=1+1", "@cmd", "+x"]
    preset = attention.from_state(toks, base.matrices(), base.options)
    trace = preset.compute()
    members = zip_members(trace_zip(trace, preset))
    for fname in ("X.csv", "weights.csv"):
        text_cells = [r[0] for r in rows_of(members[fname])[1:]]
        assert text_cells == ["'=1+1", "'@cmd", "'+x"]
    header = rows_of(members["weights.csv"])[0]
    assert header[1:] == ["'=1+1", "'@cmd", "'+x"]
    _, rows, cols = read_matrix_csv(members["weights.csv"], "weights", (3, 3))
    assert rows == toks and cols == toks


def test_trace_files_shapes_for_the_batched_preset():
    trace = attention.load_preset("the_cat_sat_on_the_mat").compute()
    files = trace_files(trace)
    assert files["X.csv"][0].shape == (6, 8)
    assert files["scores.csv"][0].shape == (6, 6)
    assert files["W_q.csv"][0].shape == (8, 8)


def test_preset_json_in_zip_is_the_preset_to_json():
    preset = attention.load_preset("random_seed_42")
    members = zip_members(trace_zip(preset.compute(), preset))
    assert members["preset.json"].decode("utf-8") == preset.to_json()
    json.loads(members["preset.json"])


def test_trace_zip_for_an_edited_state_round_trips():
    preset = attention.load_preset("the_cat_sat")
    m = preset.matrices()
    m["W_q"] = m["W_q"].copy()
    m["W_q"][1, 2] = -0.0
    m["X"] = m["X"].copy()
    m["X"][0, 0] = 5e-324
    edited = attention.from_state(preset.tokens, m, preset.options)
    trace = edited.compute()
    members = zip_members(trace_zip(trace, replace(edited)))
    got, _, _ = read_matrix_csv(members["W_q.csv"], "W_q", (4, 4))
    assert bits_equal(got, m["W_q"])
    again = attention.parse_preset(members["preset.json"])
    assert bits_equal(again.matrices()["X"], m["X"])


def test_table_csv_guards_text_and_keeps_full_precision() -> None:
    import pandas as pd

    from attention.io.tables import table_csv

    df = pd.DataFrame({"token": ["=1+1", "@cmd", "cat"], "weight": [0.1 + 0.2, 1e-300, 0.5]})
    text = table_csv(df).decode("utf-8").splitlines()
    assert text[0] == "token,weight"
    assert text[1] == "'=1+1,0.30000000000000004"
    assert text[2] == "'@cmd,1e-300"
    assert text[3] == "cat,0.5"


def test_token_labels_make_repeated_tokens_unique_for_axes_and_csvs() -> None:
    from attention.names import token_labels

    assert token_labels(["the", "cat", "the"]) == ["the (1)", "cat", "the (3)"]
    assert token_labels(["a", "b"]) == ["a", "b"]
