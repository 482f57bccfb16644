"""Bringing numbers in: every accepted form round-trips, every hostile or malformed input is refused clearly."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attention import AttentionError
from attention.io.parse import (
    MAX_CELLS,
    MAX_UPLOAD_BYTES,
    MAX_UPLOAD_MB,
    parse_matrix_text,
    read_matrix_csv,
    read_upload,
)
from attention.io.tables import matrix_csv
from tests.helpers import ROOT


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


def refused(match: str, fn, *args, **kwargs) -> AttentionError:
    with pytest.raises(AttentionError, match=match) as info:
        fn(*args, **kwargs)
    return info.value


# ---------------------------------------------------------------------------------------------- limits


def test_upload_limit_fits_the_largest_supported_matrix():
    worst_cell = len(repr(-1.2345678901234567e-100)) + 1  # 24 characters and a separator
    assert worst_cell == 25
    assert 2048 * 256 * worst_cell + 2048 * 65 < MAX_UPLOAD_BYTES == MAX_UPLOAD_MB * 1024 * 1024
    assert MAX_CELLS >= 2048 * 256


def test_config_toml_matches_the_limit():
    config = ROOT / ".streamlit" / "config.toml"
    if not config.exists():
        pytest.skip("no .streamlit/config.toml")
    assert f"maxUploadSize = {MAX_UPLOAD_MB}" in config.read_text()


def test_largest_supported_matrix_round_trips_within_the_limit():
    rs = np.random.RandomState(0)
    m = -rs.rand(2048, 256) * 1e-100
    data = matrix_csv(m, [f"token{i}" for i in range(2048)], [f"d{j + 1}" for j in range(256)])
    assert len(data) <= MAX_UPLOAD_BYTES
    back = read_upload(data, "X.csv", "X", (2048, 256))
    assert bits_equal(back, m)


# ------------------------------------------------------------------------------------------ round trips


labels = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=8)
floats = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), shape=st.tuples(st.integers(1, 5), st.integers(1, 5)))
def test_matrix_csv_round_trip_bit_exact(data, shape):
    m = data.draw(arrays(np.float64, shape, elements=floats))
    rows = data.draw(st.lists(labels, min_size=shape[0], max_size=shape[0]))
    cols = data.draw(st.lists(labels, min_size=shape[1], max_size=shape[1]))
    corner = data.draw(st.sampled_from(["token", "query \\ key", "dim"]))
    raw = matrix_csv(m, rows, cols, corner=corner)
    for expected in (shape, None):
        back, r, c = read_matrix_csv(raw, "X", expected)
        assert bits_equal(back, m)
        assert r == rows and c == cols
    text_back, _, _ = read_matrix_csv(raw.decode("utf-8"), "X", shape)
    assert bits_equal(text_back, m)


def test_round_trip_injection_labels_are_restored():
    toks = ["=1+1", "@cmd", "+x", "-x", "\tx", "'s"]
    m = np.arange(12.0).reshape(6, 2) - 5.5
    back, r, c = read_matrix_csv(matrix_csv(m, toks, ["=SUM(A1)", "@x"]), "X", (6, 2))
    assert bits_equal(back, m) and r == toks and c == ["=SUM(A1)", "@x"]


@settings(max_examples=100, deadline=None)
@given(
    m=arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.integers(1, 9)),
        elements=st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False),
    )
)
def test_numpy_repr_and_str_parse_to_the_printed_precision(m):
    for text in (repr(m), str(m), np.array2string(m, separator=", ")):
        got = parse_matrix_text(text, "W_q", m.shape)
        assert got.dtype == np.float64 and got.shape == m.shape
        np.testing.assert_allclose(got, m, rtol=1e-7, atol=1e-8 * max(1.0, float(np.abs(m).max())))


@settings(max_examples=100, deadline=None)
@given(m=arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 12)), elements=floats))
def test_numpy_repr_at_full_precision_is_bit_exact(m):
    with np.printoptions(floatmode="unique", threshold=10**6):
        for text in (repr(m), str(m)):
            assert bits_equal(parse_matrix_text(text, "X", m.shape), m)
    assert bits_equal(parse_matrix_text(str(m.tolist()), "X"), m)  # nested lists, Python's repr


@pytest.mark.parametrize(
    "text, want",
    [
        ("np.array([[0.2, 0.9], [0.1, 0.5]])", [[0.2, 0.9], [0.1, 0.5]]),
        ("numpy.array([[0.2, 0.9], [0.1, 0.5]])", [[0.2, 0.9], [0.1, 0.5]]),
        ("array([[1., 2.],\n       [3., 4.]])", [[1, 2], [3, 4]]),
        ("array([[1., 2.],\n       [3., 4.]], dtype=float32)", [[1, 2], [3, 4]]),
        ("np.array([[1, 2], [3, 4]], dtype=np.float64)", [[1, 2], [3, 4]]),
        ("W_q = np.array([[1, 2], [3, 4]])", [[1, 2], [3, 4]]),
        ("X = [[1, 2], [3, 4]]", [[1, 2], [3, 4]]),
        ("[[1, 2], [3, 4]]", [[1, 2], [3, 4]]),
        ("[[1, 2,], [3, 4],]", [[1, 2], [3, 4]]),
        ("[(1, 2), (3, 4)]", [[1, 2], [3, 4]]),
        ("[[0.33 0.89]\n [0.84 0.44]]", [[0.33, 0.89], [0.84, 0.44]]),
        ("[[1.  0. ]\n [-0.  1.2e-05]]", [[1, 0], [-0.0, 1.2e-05]]),
        (
            "[[ 3.53553391  0.          2.82842712]\n [ 0.          0.          0.        ]]",
            [[3.53553391, 0, 2.82842712], [0, 0, 0]],
        ),
        ("[[1.e-300 5.e-324]]", [[1e-300, 5e-324]]),
        ("[[+1, .5, -2E3]]", [[1, 0.5, -2000]]),
        ("[[[1, 2], [3, 4]]]", [[1, 2], [3, 4]]),  # a batch of one, as document 003's X
        ("Attention weights:\n [[0.5 0.5]\n [1.  0. ]]", [[0.5, 0.5], [1, 0]]),
        ("Raw attention scores (Q·Kᵀ / sqrt(dk)):\n [[ 2.5  6.2]\n [ 4.6 10.5]]", [[2.5, 6.2], [4.6, 10.5]]),
        ("1,2\n3,4", [[1, 2], [3, 4]]),
        ("1\t2\n3\t4\n", [[1, 2], [3, 4]]),
        ("1;2\n3;4", [[1, 2], [3, 4]]),
        ("1 2\n\n3 4\n", [[1, 2], [3, 4]]),
        ("  1.5   -2\n 3e2   4 ", [[1.5, -2], [300, 4]]),
        ("d1,d2\n1,2\n3,4", [[1, 2], [3, 4]]),
        ("she,1,2\nlikes,3,4", [[1, 2], [3, 4]]),
        ("token,d1,d2\nshe,1,2\nlikes,3,4", [[1, 2], [3, 4]]),
        ("1,2,\n3,4,\n", [[1, 2], [3, 4]]),
    ],
)
def test_accepted_forms(text, want):
    got = parse_matrix_text(text, "X")
    assert got.dtype == np.float64
    assert bits_equal(got, np.array(want, dtype=np.float64))


def test_numpy_printed_rows_wrapped_over_lines():
    m = np.random.RandomState(1).rand(2, 13)
    text = str(m)
    assert text.count("\n") > 1  # numpy wrapped each row
    np.testing.assert_allclose(parse_matrix_text(text, "X", (2, 13)), m, atol=5e-9)


def test_documents_printed_matrices():
    text = """[[0.5488135  0.71518937 0.60276338 0.54488318]
 [0.4236548  0.64589411 0.43758721 0.891773  ]
 [0.96366276 0.38344152 0.79172504 0.52889492]
 [0.56804456 0.92559664 0.07103606 0.0871293 ]]"""
    got = parse_matrix_text(text, "W_q", (4, 4))
    np.testing.assert_allclose(got, np.random.RandomState(0).rand(4, 4), atol=5e-9)


def test_one_dimensional_lists():
    assert parse_matrix_text("[1, 2, 3]", "X").shape == (1, 3)
    assert parse_matrix_text("[1, 2, 3]", "X", (1, 3)).shape == (1, 3)
    assert parse_matrix_text("[1, 2, 3]", "X", (3, 1)).tolist() == [[1], [2], [3]]


def test_pandas_layouts():
    m = np.random.RandomState(3).rand(3, 2)
    toks = ["she", "likes", "coffee"]
    plain = pd.DataFrame(m)
    named = pd.DataFrame(m, index=toks, columns=["d1", "d2"])
    for frame in (plain, named):
        got, _, _ = read_matrix_csv(frame.to_csv(), "X", (3, 2))
        assert bits_equal(got, m)
        assert bits_equal(parse_matrix_text(frame.to_csv(), "X", (3, 2)), m)
        np.testing.assert_allclose(parse_matrix_text(frame.to_string(), "X", (3, 2)), m, atol=1e-6)
    got, rows, cols = read_matrix_csv(named.to_csv(), "X")
    assert rows == toks and cols == ["d1", "d2"]
    got, rows, cols = read_matrix_csv(plain.to_csv(index=False), "X", (3, 2))
    assert bits_equal(got, m) and rows is None and cols == ["0", "1"]
    got, rows, cols = read_matrix_csv(plain.to_csv(sep="\t"), "X", (3, 2))
    assert bits_equal(got, m)


def test_np_savetxt_upload():
    import io

    m = np.random.RandomState(5).randn(4, 3)
    buf = io.StringIO()
    np.savetxt(buf, m, delimiter=",")
    assert bits_equal(read_upload(buf.getvalue().encode(), "w.csv", "W_q", (4, 3)), m)
    buf = io.StringIO()
    np.savetxt(buf, m)
    np.testing.assert_allclose(read_upload(buf.getvalue().encode(), "w.txt", "W_q", (4, 3)), m, rtol=1e-15)


def test_read_matrix_csv_labels_absent():
    m, rows, cols = read_matrix_csv(b"1,2\r\n3,4\r\n", "X")
    assert m.tolist() == [[1, 2], [3, 4]] and rows is None and cols is None


def test_read_upload_forms():
    assert read_upload(b"\xef\xbb\xbftoken,d1\r\nshe,0.5\r\n", "x.csv", "X", (1, 1)).tolist() == [[0.5]]
    assert read_upload(b"[[1, 2], [3, 4]]", "w.txt", "W_q", (2, 2)).tolist() == [[1, 2], [3, 4]]
    assert read_upload(b"np.array([[1, 2], [3, 4]])", "w.txt", "W_q", (2, 2)).tolist() == [[1, 2], [3, 4]]
    assert read_upload(b"1\t2\n3\t4", "w.tsv", "W_q", (2, 2)).tolist() == [[1, 2], [3, 4]]
    assert read_upload(bytearray(b"1,2\n3,4"), "w.csv", "W_q", (2, 2)).tolist() == [[1, 2], [3, 4]]
    # one list of accepted formats (what the uploader offers); anything else is refused naming the file and the list
    refused(
        r"'w\.json' is a \.json file; upload one of \.csv, \.tsv, \.txt, \.npy, \.npz",
        read_upload,
        b"[[1]]",
        "w.json",
        "W_q",
    )
    refused(r"'w' is a file with no extension", read_upload, b"1,2", "w", "W_q")


def test_parsing_is_pure():
    data = bytearray(b"1,2\n3,4")
    before = bytes(data)
    out = read_upload(data, "w.csv", "W_q", (2, 2))
    out[0, 0] = 99.0
    assert bytes(data) == before
    assert read_upload(data, "w.csv", "W_q", (2, 2))[0, 0] == 1.0


# -------------------------------------------------------------------------------------- hostile battery


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('x')",
        "np.ones((3,3))",
        "np.ones((2, 2))",
        "[1]*3",
        "[[1, 2]] * 2",
        "[[1, 2]] + [[3, 4]]",
        "lambda: [[1, 2], [3, 4]]",
        "exec('import os')",
        "eval('[[1]]')",
        "[x for x in range(3)]",
        "[[1, 2], [3, __import__('os').getpid()]]",
        "np.array([[1, 2], [3, 4]]).T",
        "np.array([[1, 2]], dtype=object)",
        "np.array(open('/etc/passwd').read())",
        "{'a': 1}",
        "[[1, 2], [3, 4]]; import os",
        "[[1, 'a']]",
        "[[1, x]]",
        "[[1, 2]]]",
        "[[1, 2]",
        "[[1,, 2]]",
        "[, 1]",
        "[[0x10, 1]]",
        "[[1_000, 1]]",
        "[[1+2j, 1]]",
    ],
)
def test_code_like_pastes_are_not_matrix_literals(text):
    refused("not a matrix literal", parse_matrix_text, text, "W_q", (2, 2))


def test_code_in_a_paste_is_never_run(tmp_path):
    marker = tmp_path / "pwned"
    for text in (
        f"__import__('os').system('touch {marker}')",
        f"[[1, 2], [3, open({str(marker)!r}, 'w').write('x')]]",
        f"np.array([[1, 2], [3, __import__('pathlib').Path({str(marker)!r}).touch()]])",
    ):
        with pytest.raises(AttentionError):
            parse_matrix_text(text, "X", (2, 2))
    assert not marker.exists()


@pytest.mark.parametrize(
    "text, where",
    [
        ("1,=1+1\n3,4", "row 1, column 2"),
        ("=1+1,2\n3,4", "row 1, column 1"),
        ("1,2\n@cmd,4", "row 2, column 1"),
        ("=1+1,2\n@cmd,4", "row 1, column 1"),
        ('1,2\n3,=HYPERLINK("x")', "row 2, column 2"),
        ("1,2\n3,+x", "row 2, column 2"),
        ("1,abc\n3,4", "row 1, column 2"),
    ],
)
def test_formula_cells_in_numeric_positions(text, where):
    err = refused("which is not a number", read_matrix_csv, text.encode(), "W_q", (2, 2))
    assert where in str(err) and str(err).startswith("W_q")
    # A paste with brackets or parentheses is refused before any cell is read, as code.
    err = refused("which is not a number|not a matrix literal", parse_matrix_text, text, "W_q", (2, 2))
    assert "(" in text or where in str(err)


def test_non_numeric_cell_names_the_labels_and_shortens_the_value():
    long = "x" * 500
    err = refused("not a number", read_matrix_csv, f"token,d1,d2\nshe,1,{long}\n", "X", (1, 2))
    msg = str(err)
    assert "row 1 ('she'), column 2 ('d2')" in msg and "…" in msg and len(msg) < 200
    assert err.matrix == "X" and err.cell == (0, 1)


@pytest.mark.parametrize(
    "text",
    [
        "[[nan, 1]]",
        "[[1, inf]]",
        "[[-inf, 1]]",
        "[[1, Infinity]]",
        "[[NaN, 1]]",
        "nan,1\n2,3",
        "1,inf\n2,3",
        "1,2\n-Infinity,3",
        "np.array([[1, nan], [2, 3]])",
    ],
)
def test_nan_and_inf_text(text):
    refused("NaN and infinity are not allowed", parse_matrix_text, text, "W_q", None)


@pytest.mark.parametrize("text", ["[[1e400, 1]]", "1,-1e309\n2,3", "[[1, 2], [3, 9" + "9" * 400 + "]]"])
def test_numbers_that_overflow_float64(text):
    refused("too large for a 64-bit float", parse_matrix_text, text, "W_q", None)


@pytest.mark.parametrize(
    "text, match",
    [
        ("[[1, 2], [3]]", "row 2 has 1 number but row 1 has 2"),
        ("[[1, 2, 3], [4, 5, 6], [7, 8]]", "row 3 has 2 numbers but row 1 has 3"),
        ("[[1, 2], 3]", "mixes numbers and bracketed rows"),
        ("1,2\n3,4,5", r"row 2 \(line 2\) has 3 cells but row 1 has 2"),
        ("1 2\n3", r"row 2 \(line 2\) has 1 cell but row 1 has 2"),
        ("token,d1,d2\nshe,1,2\nlikes,3", r"row 2 \('likes'\) \(line 3\) has 2 cells but row 1 has 3"),
        ("[[[1, 2]], [[3]]]", "batch item 2"),
    ],
)
def test_ragged_rows(text, match):
    refused(match, parse_matrix_text, text, "W_q", None)


PROSE = (
    "Attention is a way for each word to look at the others.\n"
    "It weighs them, then it sums what they carry, and that is all.\n"
    "In 2017 a paper called it all you need.\n"
)


@pytest.mark.parametrize("text", [PROSE, PROSE.replace("2017", "twenty-seventeen"), "hello\n", "one, two\nthree"])
def test_a_file_of_prose_says_no_numbers_were_found(text):
    """Prose is refused as text, not as rows of different widths ("row 2 has 2 cells but row 1 has 1")."""
    for read in (
        lambda: read_upload(text.encode(), "notes.txt", "X", (3, 4), dims=("tokens", "d_model")),
        lambda: read_upload(text.encode(), "notes.csv", "X", None, dims=("tokens", "d_model")),
        lambda: parse_matrix_text(text, "X", (3, 4)),
    ):
        with pytest.raises(AttentionError) as info:
            read()
        said = info.value.message
        assert "reads as text, not a matrix" in said and "cells but row" not in said, said
        assert "no numbers were found" in said or "2017" in text, said  # a year may be read as one number


def test_a_table_with_labels_is_not_taken_for_prose():
    values, rows, cols = read_matrix_csv(b"token,d1,d2\nshe,1,2\nlikes,3,4\n", "X")
    assert values.tolist() == [[1, 2], [3, 4]] and rows == ["she", "likes"] and cols == ["d1", "d2"]
    ragged = "token,d1,d2\nshe,1,2\nlikes,3"  # a table with a short row is still named as one
    refused(r"row 2 \('likes'\) \(line 3\) has 2 cells", parse_matrix_text, ragged, "W_q", None)


def test_wrong_shape_messages():
    three_by_four = "[[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4]]"
    refused(r"W_q must be 4 × 4 \(d_model × d_k\); the paste is 3 × 4", parse_matrix_text, three_by_four, "W_q", (4, 4))
    refused(
        r"X must be 3 × 4 \(tokens × d_model\); the paste is 2 × 2", parse_matrix_text, "[[1, 2], [3, 4]]", "X", (3, 4)
    )
    refused(r"W_v must be 2 × 2 \(d_model × d_v\)", parse_matrix_text, "[1, 2, 3]", "W_v", (2, 2))
    refused(
        r"W_q must be 2 × 3 \(d_k × d_model\)", parse_matrix_text, "1,2\n3,4", "W_q", (2, 3), dims=("d_k", "d_model")
    )
    refused(r"W_k must be 2 × 2 \(d_model × d_k\); the file is 3 × 2", read_matrix_csv, b"1,2\n3,4\n5,6", "W_k", (2, 2))
    refused(r"only a single matrix \(or a batch of one\)", parse_matrix_text, "[[[1]], [[2]]]", "X", None)
    refused("nested more than 3 levels", parse_matrix_text, "[[[[1]]]]", "X", None)


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n", "\ufeff"])
def test_empty_input(text):
    refused("empty", parse_matrix_text, text, "X", (2, 2))
    refused("empty", read_matrix_csv, text.encode(), "X", (2, 2))


@pytest.mark.parametrize(
    "text, match",
    [
        ("[]", "empty"),
        ("[[]]", "empty"),
        ("np.array([])", "empty"),
        ("[[1, 2], []]", "empty"),
        ("token,d1,d2", "empty|no rows of numbers|not a number|no numbers were found"),
    ],
)
def test_empty_structures(text, match):
    refused(match, parse_matrix_text, text, "X", None)


def test_summarised_numpy_output():
    with np.printoptions(threshold=10):
        text = str(np.zeros((20, 20)))
    refused(r"numpy shortened the array", parse_matrix_text, text, "X", (20, 20))


@pytest.mark.parametrize(
    "data, match",
    [
        (b"\xff\xfe1\x002\x00", "not UTF-8"),
        (b"1,2\n3,\xe9", r"not UTF-8 text \(byte 0xe9 at position 6\)"),
        (b"PK\x03\x04rest-of-a-workbook", "Excel"),
        (b"\x93NUMPY\x01\x00", "npy"),
        (b"1,2\x00\n3,4", "NUL"),
    ],
)
def test_bad_bytes(data, match):
    refused(match, read_upload, data, "W_q.csv", "W_q", (2, 2))
    refused(match, read_matrix_csv, data, "W_q", (2, 2))


def test_unsupported_and_preset_uploads():
    refused(
        r"\.xlsx file; upload one of .*save a spreadsheet as CSV", read_upload, b"PK\x03\x04", "w.xlsx", "W_q", (2, 2)
    )
    refused(r"'w\.exe' is a \.exe file; upload one of", read_upload, b"1,2", "w.exe", "W_q", (2, 2))
    refused("looks like a preset file", read_upload, b'{"format": "attention-preset/1"}', "p.txt", "W_q", (2, 2))


def test_huge_input_is_refused_quickly():
    big = b"1," * (50 * 1024 * 1024)  # 100 MiB
    start = time.perf_counter()
    refused(f"too large .*the limit is {MAX_UPLOAD_MB} MB", read_upload, big, "X.csv", "X", (2, 2))
    refused("too large", read_matrix_csv, big, "X")
    text = big.decode("ascii")
    refused("too large", parse_matrix_text, text, "X")
    refused("too large", read_matrix_csv, text, "X")
    assert time.perf_counter() - start < 1.0


def test_multibyte_text_over_the_limit_is_refused():
    text = "é" * (MAX_UPLOAD_BYTES // 2 + 10)  # under the limit in characters, over it in UTF-8 bytes
    refused("too large", parse_matrix_text, text, "X")


def test_too_many_cells_refused_quickly():
    start = time.perf_counter()
    refused("more than 1,048,576", parse_matrix_text, "0," * (MAX_CELLS + 10), "X")
    refused("more than 1,048,576", parse_matrix_text, "[" + "0," * (MAX_CELLS + 10) + "]", "X")
    refused("nested more than 3", parse_matrix_text, "[" * 1_000_000, "X")
    assert time.perf_counter() - start < 10.0


def test_non_text_arguments():
    refused("must be text", parse_matrix_text, b"[[1]]", "X")
    refused("expected the file", read_matrix_csv, 3, "X")
    refused("expected the uploaded file's bytes", read_upload, "1,2", "x.csv", "X", None)


def test_error_carries_the_matrix_name():
    err = refused("not a matrix literal", parse_matrix_text, "np.ones((2,2))", "W_k", (2, 2))
    assert err.matrix == "W_k" and str(err).startswith("W_k")
