"""Presets: the list and its order, loading and validation, schema errors naming file and field,
and bit-exact save/load round trips."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import attention
from attention import AttentionError
from tests.helpers import ROOT

SEEDS_DIR = ROOT.parent / "shared" / "seeds"
DOCUMENTS = {  # from ../shared/seeds/README.md
    "she_likes_coffee": "000_9fd09a0c5543c146.txt",
    "i_am_batman": "001_88050f199df7cad7.txt",
    "the_cat_sat": "002_0c1033769fdee89e.txt",
    "the_cat_sat_on_the_mat": "003_0bf7ff419bbeba6a.txt",
    "random_seed_42": "004_ab895bb7ebeb8173.txt",
}
PRESET_FILE = Path(attention.io.presets.PRESET_DIR)


def test_list_presets_in_document_order():
    assert attention.list_presets() == [
        "she_likes_coffee",
        "i_am_batman",
        "the_cat_sat",
        "the_cat_sat_on_the_mat",
        "random_seed_42",
        "glove_the_cat_sat_on_the_mat",
    ]  # the documents' presets first, then the GloVe one


@pytest.mark.parametrize("preset_id", list(DOCUMENTS))
def test_each_preset_loads_and_validates(preset_id):
    p = attention.load_preset(preset_id)
    assert p.id == preset_id
    assert p.title
    assert p.source["document"] == DOCUMENTS[preset_id]
    if SEEDS_DIR.is_dir():
        assert (SEEDS_DIR / DOCUMENTS[preset_id]).is_file()
    t = p.compute()
    assert isinstance(t, attention.Trace)
    for name in attention.ARRAY_NAMES:
        arr = getattr(t, name)
        assert isinstance(arr, np.ndarray) and np.isfinite(arr).all(), name
    assert t.X.shape[-2] == len(p.tokens)
    np.testing.assert_allclose(t.weights.sum(axis=-1), 1.0, atol=1e-12)
    # the file on disk parses on its own through the public parser too
    again = attention.parse_preset((PRESET_FILE / f"{preset_id}.json").read_bytes(), f"{preset_id}.json")
    assert again.id == preset_id


@pytest.mark.parametrize(
    ("preset_id", "random"),
    [
        ("she_likes_coffee", False),
        ("i_am_batman", False),
        ("the_cat_sat", True),
        ("the_cat_sat_on_the_mat", True),
        ("random_seed_42", True),
    ],
)
def test_random_or_fixed(preset_id, random):
    """The preset draws at random exactly when its document does, with the seed the document sets (read from the
    document's own text), and its draws are numpy's legacy stream for that seed in the declared order (drawn here
    independently of attention.rng). A document without a seed (003) leaves the preset to pick one."""
    p = attention.load_preset(preset_id)
    assert p.is_random is random
    if not SEEDS_DIR.is_dir():
        pytest.skip("the source documents are not next to the repository")
    text = (SEEDS_DIR / DOCUMENTS[preset_id]).read_text(encoding="utf-8")
    assert ("np.random.rand(" in text) is random
    seeds = [int(v) for v in re.findall(r"np\.random\.seed\((\d+)\)", text)]
    assert len(seeds) <= 1
    if not random:
        return
    if seeds:
        assert p.random.seed == seeds[0]
    else:  # the preset says it picked one, the seed whose first row of weights comes closest to the printed one
        assert "no seed" in (p.description + json.dumps(p.notes)).lower()
        start = text.index("Row 1 weights: first token is 'The' : ---> [") + 45
        printed = [float(v) for v in text[start : text.index("]", start)].split()]
        np.testing.assert_allclose(p.compute().weights[0, 0], printed, rtol=0, atol=0.006)
    rs, m = np.random.RandomState(p.random.seed), p.matrices()
    for name, shape in p.random.draws:
        assert bits_equal(m[name], rs.rand(*shape)), name


# The first matrix each seeded document prints after its draws: (the caption printed above it, the matrix).
FIRST_PRINTED = {"the_cat_sat": ("Weight matrix W_q:", "W_q"), "random_seed_42": ("Input embeddings (X):", "X")}


@pytest.mark.parametrize("preset_id", list(FIRST_PRINTED))
def test_a_seeded_preset_draws_the_numbers_its_document_prints(preset_id):
    if not SEEDS_DIR.is_dir():
        pytest.skip("the source documents are not next to the repository")
    text = (SEEDS_DIR / DOCUMENTS[preset_id]).read_text(encoding="utf-8")
    caption, name = FIRST_PRINTED[preset_id]
    start = text.index(caption + "\n") + len(caption)
    block = text[start : text.index("]]", start) + 2]
    printed = np.array([float(v) for v in re.findall(r"-?\d+\.\d*(?:e[-+]?\d+)?", block)])
    got = attention.load_preset(preset_id).matrices()[name].ravel()
    assert printed.shape == got.shape
    np.testing.assert_allclose(got, printed, rtol=0, atol=5e-9)  # numpy prints 8 decimals


def test_the_cat_sat_on_the_mat_says_it_picked_a_seed():
    p = attention.load_preset("the_cat_sat_on_the_mat")
    text = (p.description + json.dumps(p.notes)).lower()
    assert "no seed" in text
    assert p.random.draws == (("X", (1, 6, 8)), ("W_q", (8, 8)), ("W_k", (8, 8)), ("W_v", (8, 8)))


# ---------------------------------------------------------------- schema failures name file and field


def base() -> dict:
    return json.loads((PRESET_FILE / "the_cat_sat.json").read_text(encoding="utf-8"))


def broken(mutate) -> str:
    d = copy.deepcopy(base())
    mutate(d)
    return json.dumps(d)


def expect_error(text, pattern):
    with pytest.raises(AttentionError, match=r"^broken\.json: " + pattern):
        attention.parse_preset(text, "broken.json")


def test_base_is_valid():
    assert attention.parse_preset(json.dumps(base()), "broken.json").id == "the_cat_sat"


@pytest.mark.parametrize("field", ["format", "id", "title", "tokens", "options"])
def test_missing_required_field(field):
    expect_error(broken(lambda d: d.pop(field)), rf"field '{field}' is missing")


def test_missing_nested_field():
    expect_error(broken(lambda d: d["random"].pop("seed")), r"field 'random\.seed' is missing")
    expect_error(
        broken(lambda d: d["random"]["draws"][1].pop("shape")), r"field 'random\.draws\[1\]\.shape' is missing"
    )


def test_missing_matrix():
    def drop_w_v(d):
        d["random"]["draws"].pop()

    expect_error(broken(drop_w_v), r"field 'matrices\.W_v' is missing")


@pytest.mark.parametrize(
    ("where", "pattern"),
    [
        ((), r"field 'colour' is not a known field"),
        (("options",), r"field 'options\.colour' is not a known field"),
        (("random",), r"field 'random\.colour' is not a known field"),
        (("expected",), r"field 'expected\.colour' is not a known field"),
        (("matrices",), r"field 'matrices\.colour' is not a known field"),
    ],
)
def test_extra_field(where, pattern):
    def add(d):
        target = d
        for key in where:
            target = target[key]
        target["colour"] = "red"

    expect_error(broken(add), pattern)


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (lambda d: d.update(title=5), r"field 'title' must be text, got int"),
        (lambda d: d.update(tokens="The cat sat"), r"field 'tokens' must be a non-empty list"),
        (lambda d: d.update(tokens=[]), r"field 'tokens' must be a non-empty list"),
        (lambda d: d.update(tokens=["The", 2, "sat"]), r"field 'tokens\[1\]' must be text, got int"),
        (lambda d: d.update(options=[]), r"field 'options' must be an object, got list"),
        (
            lambda d: d["options"].update(heads="1"),
            r"field 'options\.heads' must be a whole number from 1 to 256; got '1'",
        ),
        (
            lambda d: d["options"].update(heads=True),
            r"field 'options\.heads' must be a whole number from 1 to 256; got True",
        ),
        (lambda d: d["options"].update(scale="big"), r"field 'options\.scale' must be a finite number, got 'big'"),
        (lambda d: d["options"].update(scale=0), r"field 'options\.scale' must be a finite number > 0"),
        (lambda d: d["options"].update(temperature=-1), r"field 'options\.temperature' must be a finite number > 0"),
        (
            lambda d: d["options"].update(projection="X@W"),
            r"field 'options\.projection' must be 'x_w' \(X @ W\) or 'x_wt' \(X @ W.T\); got 'X@W'",
        ),
        (
            lambda d: d["options"].update(softmax="max"),
            r"field 'options\.softmax' must be 'row_max', 'global_max' or 'none'",
        ),
        (lambda d: d["options"].update(mask="diag"), r"field 'options\.mask' must be one of none, causal, padding"),
        (lambda d: d["options"].update(mask="padding"), r"field 'options\.padding' must list 3 flags"),
        (
            lambda d: d["options"].update(padding=[True]),
            r"field 'options\.padding' must be a list of 3 true/false flags",
        ),
        (
            lambda d: d["matrices"].update(X=[[1, 0, 1, "0"], [0, 2, 0, 2], [1, 1, 1, 1]]),
            r"field 'matrices\.X\[0\]\[3\]' must be a finite number, got '0'",
        ),
        (
            lambda d: d["matrices"].update(X=[[1, 0, 1, 0], [0, 2, 0], [1, 1, 1, 1]]),
            r"field 'matrices\.X' has rows of different lengths",
        ),
        (
            lambda d: d["matrices"].update(X=[1, 0, 1, 0]),
            r"field 'matrices\.X' must be a 2-D matrix \(or 3-D with a batch axis\), got 1-D",
        ),
        (
            lambda d: d["matrices"].update(X=[[1, 0, 1, 0], [], [1, 1, 1, 1]]),
            r"field 'matrices\.X\[1\]' is an empty list",
        ),
        (
            lambda d: d["random"]["draws"][0].update(shape=[4, "4"]),
            r"field 'random\.draws\[0\]\.shape' must be a list of 1 to 3 whole numbers",
        ),
        (
            lambda d: d["random"]["draws"][0].update(name="W_o"),
            r"field 'random\.draws\[0\]\.name' must be one of X, W_q, W_k, W_v, got 'W_o'",
        ),
        (
            lambda d: d["random"]["draws"][1].update(name="W_q"),
            r"field 'random\.draws\[1\]\.name' 'W_q' is given twice",
        ),
        (lambda d: d["random"]["draws"][0].update(name="X"), r"field 'random\.draws\[0\]\.name' 'X' is given twice"),
        (lambda d: d["random"].update(draws=[]), r"field 'random\.draws' must be a non-empty list"),
        (lambda d: d.update(notes=[]), r"field 'notes' must be an object"),
        (
            lambda d: d["expected"].update(weights=[[0.5, "x"]]),
            r"field 'expected\.weights\[0\]\[1\]' must be a finite number",
        ),
        (
            lambda d: d.update(format="attention-preset/2"),
            r"field 'format' must be 'attention-preset/1', got 'attention-preset/2'",
        ),
        (lambda d: d.update(id="the cat sat"), r"field 'id' must be letters, digits, '_' or '-', got 'the cat sat'"),
    ],
)
def test_wrong_type_or_value(mutate, pattern):
    expect_error(broken(mutate), pattern)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_literals(literal):
    text = json.dumps(base()).replace("[1.0, 0.0, 1.0, 0.0]", f"[1.0, {literal}, 1.0, 0.0]", 1)
    assert literal in text
    expect_error(
        text,
        rf"field 'matrices\.X\[0\]\[1\]' is {literal}, which is not allowed in a preset; every number must be finite",
    )


def test_nan_literal_anywhere_is_refused():
    text = json.dumps(base()).replace('"notes": {', '"notes": {"x": NaN, ', 1)
    expect_error(text, r"field 'notes\.x' is NaN, which is not allowed")


def test_non_utf8_bytes():
    data = json.dumps(base(), ensure_ascii=False).encode("utf-8").replace(b"The cat sat", b"The \xff sat", 1)
    expect_error(data, r"the preset file is not UTF-8 text")


def test_non_utf8_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_bytes(b'{"title": "caf\xe9"}')
    with pytest.raises(AttentionError, match=r"^broken\.json: the preset file is not UTF-8 text"):
        attention.io.presets.read_preset_file(path)


def test_missing_file(tmp_path):
    with pytest.raises(AttentionError, match=r"^absent\.json: cannot read the preset file"):
        attention.io.presets.read_preset_file(tmp_path / "absent.json")


@pytest.mark.parametrize("text", ['{"format": "attention-preset/1",', "", "[1, 2", "{'single': 'quotes'}"])
def test_invalid_json(text):
    expect_error(text, r"not valid JSON \(line \d+, column \d+: ")


def test_top_level_not_an_object():
    expect_error("[1, 2, 3]", r"field '\(top level\)' must be an object, got list")


def test_wrong_generator():
    expect_error(
        broken(lambda d: d["random"].update(generator="numpy.random.default_rng")),
        r"field 'random\.generator' must be 'numpy\.random\.RandomState\(seed\)\.rand'",
    )


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, "0", True, None])
def test_bad_seed_in_file(seed):
    expect_error(
        broken(lambda d: d["random"].update(seed=seed)),
        r"field 'random\.seed' must be a whole number from 0 to 4294967295, got ",
    )


def test_token_count_differs_from_x_rows():
    expect_error(
        broken(lambda d: d.update(tokens=["The", "cat", "sat", "down"])),
        r"field 'tokens' lists 4 tokens but X has 3 rows",
    )
    expect_error(broken(lambda d: d.update(tokens=["The", "cat"])), r"field 'tokens' lists 2 tokens but X has 3 rows")


def test_shape_mismatch_between_x_and_drawn_w():
    def narrow_x(d):
        d["matrices"]["X"] = [[1.0, 0.0, 1.0], [0.0, 2.0, 0.0], [1.0, 1.0, 1.0]]

    expect_error(broken(narrow_x), r"field 'random\.draws \(W_q\)': W_q has 4 rows but X has 3 columns \(d_model\)")


def test_shape_mismatch_between_fixed_matrices():
    d = json.loads((PRESET_FILE / "she_likes_coffee.json").read_text(encoding="utf-8"))
    d["matrices"]["W_k"] = [row[:3] for row in d["matrices"]["W_k"]]
    expect_error(json.dumps(d), r"field 'matrices\.W_k': W_q gives queries of width 4 but W_k gives keys of width 3")


def test_drawn_shape_mismatch():
    expect_error(
        broken(lambda d: d["random"]["draws"][2].update(shape=[3, 4])),
        r"field 'random\.draws \(W_v\)': W_v has 3 rows but X has 4 columns",
    )


# ---------------------------------------------------------------- round trips


TRICKY = [0.1 + 0.2, 1e-300, 2.0**-1074, -0.0, 1 / 3, 2.0**-1022, 1.2345678901234567e100, -123456.789e-5, 0.0, 1.0]


def bits_equal(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return (
        a.dtype == b.dtype == np.float64 and a.shape == b.shape and np.array_equal(a, b) and a.tobytes() == b.tobytes()
    )


def test_save_load_round_trip_is_bit_exact():
    X = np.array([TRICKY[:4], TRICKY[4:8], [TRICKY[8], TRICKY[9], -(2.0**-1074), 5e-324]])
    W_q = np.array([[0.1 + 0.2, -0.0], [1e-300, 2.0**-1074], [1.0, 3.0], [math.pi, -math.e]])
    W_k = np.array([[1 / 7, 2 / 7], [3 / 7, 4 / 7], [5 / 7, 6 / 7], [-1e-12, 1e12]]) / 1e12
    W_v = np.array([[0.3, 0.6, 0.9], [0.7, 0.2, -0.0], [1e-5, 2.5e-7, 1e-300], [0.5, 0.25, 0.125]])
    mats = {"X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v}
    opts = attention.Options(projection="x_w", softmax="row_max", scale=0.1 + 0.2, temperature=1 / 3, mask="causal")
    p = attention.from_state(["a", "b", "c"], mats, opts, id="tricky", title="Tricky values")
    text = p.to_json()
    q = attention.parse_preset(text, "tricky.json")
    for name, value in mats.items():
        assert bits_equal(q.fixed[name], value), name
        assert bits_equal(q.matrices()[name], value), name
    assert q.options == opts
    assert q.options.scale == 0.1 + 0.2 and q.options.temperature == 1 / 3
    assert math.copysign(1.0, q.fixed["X"][0, 3]) == -1.0  # -0.0 kept its sign
    assert q.fixed["X"][0, 2] == 2.0**-1074
    assert q.tokens == ("a", "b", "c")
    assert q.to_json() == text  # saving again gives the same file
    t1, t2 = p.compute(), q.compute()
    for name in attention.ARRAY_NAMES:
        assert bits_equal(getattr(t1, name), getattr(t2, name)), name


def test_from_state_round_trip_from_a_trace():
    t = attention.load_preset("i_am_batman").compute()
    p = attention.from_state(
        ["I", "am", "Batman"],
        {n: getattr(t, n) for n in ("X", "W_q", "W_k", "W_v")},
        t.options,
        id="mine",
        title="Mine",
        description="saved",
        source={"note": "from the dashboard"},
    )
    assert (
        p.id == "mine" and p.title == "Mine" and p.description == "saved" and p.source == {"note": "from the dashboard"}
    )
    assert p.options.projection == "x_wt"
    q = attention.parse_preset(p.to_json(), "mine.json")
    t2 = q.compute()
    for name in attention.ARRAY_NAMES:
        assert bits_equal(getattr(t, name), getattr(t2, name)), name


def test_from_state_with_padding_options_round_trips():
    X = np.array([[0.1, 0.2], [0.3, 0.4], [0.0, 0.0]])
    opts = attention.Options(mask="padding", padding=(False, False, True))
    p = attention.from_state(["x", "y", "<pad>"], {"X": X, "W_q": np.eye(2), "W_k": np.eye(2), "W_v": np.eye(2)}, opts)
    q = attention.parse_preset(p.to_json(), "pad.json")
    assert q.options == opts
    assert np.all(q.compute().weights[:, 2] == 0.0)


def test_from_state_validates():
    with pytest.raises(AttentionError, match=r"^my_preset\.json: field 'tokens' lists 2 tokens but X has 3 rows"):
        attention.from_state(
            ["a", "b"], {"X": np.eye(3), "W_q": np.eye(3), "W_k": np.eye(3), "W_v": np.eye(3)}, attention.Options()
        )
    with pytest.raises(
        AttentionError, match=r"^my_preset\.json: field 'matrices\.W_q': W_q has 2 rows but X has 3 columns"
    ):
        attention.from_state(
            ["a", "b", "c"], {"X": np.eye(3), "W_q": np.eye(2), "W_k": np.eye(3), "W_v": np.eye(3)}, attention.Options()
        )


@pytest.mark.parametrize(
    ("preset_id", "seed"),
    [
        ("the_cat_sat", 5),
        ("random_seed_42", 123),
        ("the_cat_sat_on_the_mat", None),
        ("she_likes_coffee", None),
        ("i_am_batman", 3),
    ],
)
def test_preset_round_trip(preset_id, seed):
    p = attention.load_preset(preset_id, seed=seed)
    q = attention.parse_preset(p.to_json(), f"{preset_id}.json")
    assert q.seed == p.seed
    assert q.tokens == p.tokens and q.options == p.options
    for name, value in p.matrices().items():
        assert bits_equal(q.matrices()[name], value), name
    for name, value in p.expected.items():
        assert bits_equal(q.expected[name], value), name
    assert q.expected_shapes == p.expected_shapes
    assert q.notes == p.notes


def test_random_preset_round_trip_keeps_the_new_seed():
    p = attention.load_preset("the_cat_sat", seed=9)
    q = attention.parse_preset(p.to_json(), "x.json")
    assert q.seed == 9 and q.random.seed == 9
    assert bits_equal(q.matrices()["W_q"], np.random.RandomState(9).rand(4, 4))


# ---------------------------------------------------------------- blank


@pytest.mark.parametrize(("n", "d_model", "d_k"), [(1, 1, None), (3, 4, None), (5, 8, 2), (16, 3, 6)])
def test_blank_sizes(n, d_model, d_k):
    p = attention.blank(n, d_model, d_k, seed=3)
    dk = d_model if d_k is None else d_k
    m = p.matrices()
    assert m["X"].shape == (n, d_model)
    assert m["W_q"].shape == m["W_k"].shape == m["W_v"].shape == (d_model, dk)
    assert p.tokens == tuple(f"t{i + 1}" for i in range(n))
    t = p.compute()
    assert t.weights.shape == (n, n) and t.output.shape == (n, dk)
    rs = np.random.RandomState(3)  # centred values: normal draws in the declared order, W with variance 1/d_model
    for name in ("X", "W_q", "W_k", "W_v"):
        want = rs.randn(*m[name].shape) * (1 / np.sqrt(d_model) if name != "X" else 1.0)
        assert bits_equal(m[name], want), name


def test_blank_is_deterministic_and_in_declared_order():
    a, b = attention.blank(4, 3, seed=11), attention.blank(4, 3, seed=11)
    for name in ("X", "W_q", "W_k", "W_v"):
        assert bits_equal(a.matrices()[name], b.matrices()[name])
    rs = np.random.RandomState(11)
    for name, shape in (("X", (4, 3)), ("W_q", (3, 3)), ("W_k", (3, 3)), ("W_v", (3, 3))):
        assert bits_equal(a.matrices()[name], rs.randn(*shape) * (1 / np.sqrt(3) if name != "X" else 1.0)), name
    c = attention.blank(4, 3, seed=12)
    assert not np.array_equal(a.matrices()["X"], c.matrices()["X"])
    assert attention.blank(4, 3, seed=11).with_seed(12).matrices()["X"].tobytes() == c.matrices()["X"].tobytes()


def test_blank_custom_tokens_and_round_trip():
    p = attention.blank(2, 2, tokens=["yes", "no"], seed=1)
    assert p.tokens == ("yes", "no")
    q = attention.parse_preset(p.to_json(), "blank.json")
    for name, value in p.matrices().items():
        assert bits_equal(q.matrices()[name], value)
