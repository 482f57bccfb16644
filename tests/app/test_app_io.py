"""AppTest: bring your own numbers (paste, upload, preset file), the shareable link and the exports."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import numpy as np
import pytest

import attention
from attention.io import codegen, links, parse, tables
from attention.names import dimension_labels
from attention.ui.address import url
from attention.ui.core import session as ui_session
from tests.helpers.apptest import (
    conventions,
    edit_cell,
    errors,
    frame_by_shape,
    goto,
    journey,
    no_exception,
    open_expander,
    paste,
    select,
    session,
)

A = np.random.RandomState(7).rand(3, 4) * 2 - 1  # full-precision values for she_likes_coffee's 3 × 4 X
A[0, 0] = 0.1 + 0.2  # 0.30000000000000004: only an exact reader keeps the last bit
A[1, 1] = -0.0


def _rows(a: np.ndarray, sep: str) -> str:
    return "\n".join(sep.join(repr(float(v)) for v in row) for row in a)


LITERALS = {
    "np.array": "np.array(" + repr(A.tolist()) + ")",
    "numpy.array with dtype": "numpy.array(" + repr(A.tolist()) + ", dtype=float64)",
    "assignment": "X = np.array(" + repr(A.tolist()) + ")",
    "nested lists": repr(A.tolist()),
    "batch of one": repr([A.tolist()]),
    "numpy repr": repr(A),
    "numpy print": str(A),
    "print with caption": "X:\n" + str(A),
    "comma rows": _rows(A, ","),
    "tab rows with labels": "token\td1\td2\td3\td4\n"
    + "\n".join(f"w{i}\t" + "\t".join(repr(float(v)) for v in row) for i, row in enumerate(A)),
}
FULL_PRECISION = {
    "np.array",
    "numpy.array with dtype",
    "assignment",
    "nested lists",
    "batch of one",
    "comma rows",
    "tab rows with labels",
}


def successes(at) -> list[str]:
    return [e.value for e in at.success]


def _engine(s) -> attention.Trace:
    m = s.matrices
    return attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=s.tokens, options=s.options)


def check_downstream(at) -> None:
    """Every step page computes from the session's matrices (the engine's numbers, to the last bit)."""
    want = _engine(session(at))
    n = want.scores.shape[-1]
    for page, name, shape in (
        ("qkv", "Q", want.Q.shape),
        ("scores", "scores", (n, n)),
        ("softmax", "weights", (n, n)),
        ("output", "output", want.output.shape),
    ):
        at = goto(at, page)
        no_exception(at)
        assert not errors(at), (page, errors(at))
        np.testing.assert_array_equal(frame_by_shape(at, shape, 0), getattr(want, name), err_msg=page)
    for page in ("overview", "scaling", "reading", "weights"):
        at = goto(at, page)
        no_exception(at)
        assert not errors(at), (page, errors(at))


# ------------------------------------------------------------------------------------------ paste


@pytest.mark.parametrize("form", list(LITERALS))
def test_each_accepted_literal_pasted_into_x_becomes_x_bit_exact_on_every_page(form: str) -> None:
    text = LITERALS[form]
    at = journey("tokens", {"preset": "she_likes_coffee"})
    before = session(at)
    version, w_q = before.version, before.matrices["W_q"].copy()
    at = paste(at, "X", text)
    no_exception(at)
    s = session(at)
    expected = parse.parse_matrix_text(text, "X", (3, 4))
    assert s.matrices["X"].tobytes() == expected.tobytes()
    if form in FULL_PRECISION:
        assert s.matrices["X"].tobytes() == A.tobytes()
    np.testing.assert_array_equal(s.matrices["W_q"], w_q)
    assert s.version == version + 1
    assert any("X replaced" in m and "3 × 4" in m for m in successes(at)), successes(at)
    assert at.text_area(key="imp.X.text").value == ""  # applied: the box is emptied
    check_downstream(at)


HOSTILE = {
    "code": ("__import__('os').system('x')", ["not a matrix literal", "nothing pasted is ever run"]),
    "numpy call": ("np.ones((3, 4))", ["not a matrix literal"]),
    "lambda": ("lambda: 0", ["not a matrix literal"]),
    "ragged literal": ("[[1, 2, 3, 4], [5, 6]]", ["row 2", "row 1", "same number"]),
    "ragged rows": ("1,2,3,4\n1,2,3\n1,2,3,4", ["row 2", "same number"]),
    "wrong shape": ("[[1, 2], [3, 4]]", ["must be 3 × 4", "tokens × d_model", "2 × 2"]),
    "nan": ("[[nan, 1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4]]", ["NaN", "finite"]),
    "inf": ("[[1, 2, 3, 4], [1, inf, 3, 4], [1, 2, 3, 4]]", ["row 2", "finite"]),
    "huge": ("[[1e999, 1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4]]", ["too large"]),
    "formula": ("=1+2,2,3,4\n1,2,3,4\n1,2,3,4", ["'=1+2'", "not a number"]),
}  # an empty box is no refusal: see test_app_editing.py


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_refused_paste_shows_why_and_changes_nothing(case: str) -> None:
    text, words = HOSTILE[case]
    at = journey("tokens", {"preset": "she_likes_coffee"})
    at = edit_cell(at, "X", 2, "d3", 0.125)  # an earlier edit that must survive
    before = session(at)
    version = before.version
    kept = {k: v.copy() for k, v in before.matrices.items()}
    at = paste(at, "X", text)
    no_exception(at)
    msgs = errors(at)
    assert any(all(w in m for w in words) for m in msgs), (words, msgs)
    s = session(at)
    assert s.version == version
    for name, m in kept.items():
        assert s.matrices[name].tobytes() == m.tobytes(), name
    assert s.matrices["X"][2, 2] == 0.125
    assert at.text_area(key="imp.X.text").value == text  # the user's text stays to be fixed
    assert not any("replaced" in m for m in successes(at))
    assert "Change the shape" not in " ".join(b.label for b in at.button) or case == "wrong shape"


def test_w_under_x_at_w_transpose_names_its_axes_and_the_shape_can_be_changed_to_match() -> None:
    at = journey("weights", {"preset": "i_am_batman"})
    s = session(at)
    assert s.options.projection == "x_wt"
    dk, dm = s.matrices["W_q"].shape
    dv = s.matrices["W_v"].shape[0]
    at = paste(at, "W_q", repr(np.ones((dk + 1, dm)).tolist()))
    msgs = errors(at)
    assert any(f"W_q must be {dk} × {dm} (d_k × d_model)" in m and f"{dk + 1} × {dm}" in m for m in msgs), msgs
    assert session(at).matrices["W_q"].shape == (dk, dm)
    buttons = [b for b in at.button if b.key == "imp.W_q.resize"]
    assert buttons and f"d_k = {dk + 1}" in buttons[0].label
    at = buttons[0].click().run()
    no_exception(at)
    s = session(at)
    np.testing.assert_array_equal(s.matrices["W_q"], np.ones((dk + 1, dm)))
    assert s.matrices["W_k"].shape == (dk + 1, dm)
    assert s.matrices["W_v"].shape == (dv, dm)  # d_v is its own width: a new d_k leaves W_v alone
    check_downstream(at)


def test_x_shape_change_to_match_changes_the_tokens() -> None:
    at = journey("tokens", {"preset": "she_likes_coffee"})
    new = np.arange(20, dtype=float).reshape(5, 4) / 7
    at = paste(at, "X", repr(new.tolist()))
    assert session(at).matrices["X"].shape == (3, 4)
    at = at.button(key="imp.X.resize").click().run()
    no_exception(at)
    s = session(at)
    assert s.matrices["X"].tobytes() == new.tobytes()
    assert len(s.tokens) == 5 and s.tokens[:3] == attention.load_preset("she_likes_coffee").tokens
    check_downstream(at)


# ------------------------------------------------------------------------------------------ upload


def test_csv_upload_round_trip_is_bit_exact_and_applied_once() -> None:
    at = journey("tokens", {"preset": "she_likes_coffee"})
    s = session(at)
    rows = list(s.tokens)
    data = tables.matrix_csv(A, rows, dimension_labels("d", 4), corner="token")
    at = open_expander(at, "import.X")  # the import box, opened
    at = at.file_uploader(key="imp.X.file").set_value(("mine.csv", data, "text/csv")).run()
    no_exception(at)
    assert session(at).matrices["X"].tobytes() == A.tobytes()
    assert any("mine.csv" in m for m in successes(at))
    # A later edit is not overwritten by the same upload on the next runs.
    at = edit_cell(at, "X", 0, "d1", 4.5)
    at = at.run()
    at = goto(at, "scores")
    at = goto(at, "tokens")
    no_exception(at)
    assert session(at).matrices["X"][0, 0] == 4.5
    assert session(at).matrices["X"][1, 2] == A[1, 2]


@pytest.mark.parametrize(
    ("filename", "data", "words"),
    [
        ("bad.csv", b"\xff\xfe1,2,3,4", ["not UTF-8"]),
        ("short.csv", b"1,2\n3,4\n", ["must be 3 × 4", "'short.csv' is 2 × 2"]),
        ("formula.csv", b"=HYPERLINK(1),2,3,4\n1,2,3,4\n1,2,3,4\n", ["not a number"]),
        ("preset.txt", b'{"format": "attention-preset/1"}', ["preset"]),
    ],
)
def test_a_refused_upload_shows_why_and_changes_nothing(filename: str, data: bytes, words: list[str]) -> None:
    at = journey("tokens", {"preset": "she_likes_coffee"})
    kept = {k: v.copy() for k, v in session(at).matrices.items()}
    version = session(at).version
    at = open_expander(at, "import.X")  # the import box, opened
    at = at.file_uploader(key="imp.X.file").set_value((filename, data, "text/csv")).run()
    no_exception(at)
    assert any(all(w in m for w in words) for m in errors(at)), errors(at)
    s = session(at)
    assert s.version == version
    for name, m in kept.items():
        assert s.matrices[name].tobytes() == m.tobytes()


# ------------------------------------------------------------------------------------------ link


def _link_query(at) -> dict[str, str]:
    if not [c for c in at.code if "preset=" in c.value]:
        at = open_expander(at, "io")  # the link is drawn inside "Save, share, export"
    codes = [c.value for c in at.code if "preset=" in c.value]
    assert len(codes) == 1, [c.value for c in at.code]
    query = codes[0].split("?", 1)[1]
    return {k: v[0] for k, v in parse_qs(query).items()}


def test_link_round_trip_restores_the_edits_bit_exact() -> None:
    at = journey("weights", {"preset": "the_cat_sat", "seed": "5"})
    at = edit_cell(at, "W_q", 0, "q1", 0.1 + 0.2)
    at = edit_cell(at, "W_v", 2, "v3", -1e-310)  # a subnormal survives too
    no_exception(at)
    s = session(at)
    query = _link_query(at)
    assert query["preset"] == "the_cat_sat" and query["seed"] == "5" and "edits" in query
    assert query["edits"] == url.link(s)[0]["edits"]
    at2 = journey("scores", query)
    no_exception(at2)
    assert not at2.warning, [w.value for w in at2.warning]
    s2 = session(at2)
    for name in ("X", "W_q", "W_k", "W_v"):
        assert s2.matrices[name].tobytes() == s.matrices[name].tobytes(), name
    assert s2.matrices["W_q"][0, 0] == 0.30000000000000004
    check_downstream(at2)


def test_unedited_state_gives_a_link_without_edits() -> None:
    at = journey("weights", {"preset": "random_seed_42"})
    query = _link_query(at)
    assert "edits" not in query and query["preset"] == "random_seed_42"


@pytest.mark.parametrize("how", ["flip", "cut", "garbage", "other sizes"])
def test_a_tampered_link_gives_a_notice_and_the_unedited_preset(how: str) -> None:
    base = attention.load_preset("the_cat_sat").matrices()
    wq = base["W_q"].copy()
    wq[0, 0] = 2.5
    token = links.encode_edits({"W_q": wq})
    if how == "flip":
        token = token[:-3] + ("A" if token[-3] != "A" else "B") + token[-2:]
    elif how == "cut":
        token = token[: len(token) // 2]
    elif how == "garbage":
        token = "__import__('os')"
    else:
        token = links.encode_edits({"W_q": np.ones((5, 5))})
    at = journey("overview", {"preset": "the_cat_sat", "edits": token})  # notices show on the first page drawn
    no_exception(at)
    notes = [w.value for w in at.warning]
    assert any("The link's edits could not be restored" in n and "unedited preset" in n for n in notes), notes
    s = session(at)
    for name in ("X", "W_q", "W_k", "W_v"):
        assert s.matrices[name].tobytes() == base[name].tobytes(), name
    assert "edits" not in at.query_params


def test_edits_too_large_for_a_link_are_said_plainly() -> None:
    """Three edited cells of three 16 × 16 matrices travel as their difference from the rebuilt ones; three whole
    matrices pasted (768 cells changed, more than 512) cannot travel, and the page says so."""
    at = journey("weights", {"preset": "blank", "size": "8x16x16"})
    for name, col in (("W_q", "q1"), ("W_k", "k1"), ("W_v", "v1")):
        at = edit_cell(at, name, 0, col, 3.0)
    no_exception(at)
    assert _link_query(at)["edits"].startswith("d1.")  # the three changed cells alone
    for name in ("W_q", "W_k", "W_v"):
        at = paste(at, name, "\n".join(" ".join("3.5" for _ in range(16)) for _ in range(16)))
    no_exception(at)
    query = _link_query(at)
    assert "edits" not in query
    said = " ".join(c.value for c in [*at.caption, *at.sidebar.warning])
    assert "more than the 512 a link can carry" in said and "preset file" in said


# ------------------------------------------------------------------------------------------ preset file


def test_preset_file_round_trip_through_the_uploader() -> None:
    at = journey("tokens", {"preset": "the_cat_sat_on_the_mat"})  # X is a batch of one in the file
    at = edit_cell(at, "X", 1, "d2", 0.1 + 0.2)
    at = select(conventions(at), "sb.mask", "causal")
    s = session(at)
    data = ui_session.export_preset(s).to_json().encode()
    saved = {k: v.copy() for k, v in s.matrices.items()}
    tokens, options = s.tokens, s.options

    at2 = journey("weights", {"preset": "i_am_batman"})
    version = session(at2).version
    at2 = (
        open_expander(at2, "io")
        .file_uploader(key="io.preset.file")
        .set_value(("mine.json", data, "application/json"))
        .run()
    )
    no_exception(at2)
    assert any("Loaded preset" in m and "mine.json" in m for m in successes(at2)), successes(at2)
    s2 = session(at2)
    assert s2.version > version
    assert s2.tokens == tokens and s2.options == options
    for name, m in saved.items():
        assert s2.matrices[name].ndim == 2
        assert s2.matrices[name].tobytes() == m.tobytes(), name
    check_downstream(at2)


@pytest.mark.parametrize(
    ("what", "mutate", "word"),
    [
        ("not json", lambda d: b"{not json", "not valid JSON"),
        ("missing field", lambda d: json.dumps({k: v for k, v in d.items() if k != "tokens"}).encode(), "tokens"),
        ("extra field", lambda d: json.dumps({**d, "evil": 1}).encode(), "evil"),
        ("nan", lambda d: json.dumps(d).replace("0.3", "NaN", 1).encode(), "finite"),
        ("non-utf8", lambda d: b"\xff\xfe{}", "UTF-8"),
    ],
)
def test_a_bad_preset_file_shows_why_and_changes_nothing(what: str, mutate, word: str) -> None:
    at = journey("weights", {"preset": "she_likes_coffee"})
    at = edit_cell(at, "W_q", 0, "q1", 7.0)
    s = session(at)
    good = json.loads(ui_session.export_preset(s).to_json())
    kept = {k: v.copy() for k, v in s.matrices.items()}
    version, tokens, options = s.version, s.tokens, s.options
    at = (
        open_expander(at, "io")
        .file_uploader(key="io.preset.file")
        .set_value(("bad.json", mutate(good), "application/json"))
        .run()
    )
    no_exception(at)
    assert any(word in m for m in errors(at)), (word, errors(at))
    s = session(at)
    assert (s.version, s.tokens, s.options) == (version, tokens, options)
    for name, m in kept.items():
        assert s.matrices[name].tobytes() == m.tobytes()


# ------------------------------------------------------------------------------------------ exports


def test_export_buttons_are_there_and_describe_the_current_state() -> None:
    at = journey("weights", {"preset": "she_likes_coffee"})
    assert ui_session.export_preset(session(at)).id == "she_likes_coffee"
    at = edit_cell(at, "W_k", 1, "k2", -3.25)
    s = session(at)
    preset = ui_session.export_preset(s)
    assert preset.matrices()["W_k"].tobytes() == s.matrices["W_k"].tobytes()
    script = codegen.python_script(preset)
    assert "-3.25" in script
    nb = json.loads(codegen.notebook(preset))
    assert nb["nbformat"] == 4
    assert not [e for e in at.get("download_button") if "Export" in e.proto.label]  # closed: nothing built
    at = open_expander(at, "io")
    labels = {e.proto.label for e in at.get("download_button")}
    for label in ("Download preset file (.json)", "Export as Python script", "Export as Jupyter notebook (.ipynb)"):
        assert label in labels, labels
