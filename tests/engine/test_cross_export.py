"""The source sentence (cross-attention) travels in preset files and in the exported script and notebook, bit for bit:
a file round-trips its source tokens and numbers, and the generated code prints exactly the engine's cross-attention."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys

import nbformat
import numpy as np
import pytest

import attention
from attention.errors import AttentionError
from attention.io.codegen import notebook, python_script
from attention.source import cross_options, source_rows

NAMES = ("X", "W_q", "W_k", "W_v", "Q", "K", "V", "scores", "scaled", "weights", "output")
SOURCE = ("le", "chat", "t2", "assis", "sur", "le", "tapis")  # "t2" is a token of the sentence: it takes its row of X


def crossed(heads: int = 1, kv: int | None = None, projection: str = "x_w", **options) -> attention.Preset:
    base = attention.blank(4, 4, 8, seed=5)
    m = base.matrices()
    if kv is not None:
        keep = 8 // heads * kv
        m["W_k"], m["W_v"] = m["W_k"][:, :keep], m["W_v"][:, :keep]
    if projection == "x_wt":
        m = {name: (arr.T if name != "X" else arr) for name, arr in m.items()}
    opts = attention.Options(projection=projection, heads=heads, kv_heads=kv, **options)
    return attention.from_state(base.tokens, m, opts, title="Crossed", source_tokens=SOURCE)


CASES = {
    "plain": lambda: crossed(),
    "causal_top_left": lambda: crossed(mask="causal"),
    "gqa_4_2_alibi_window": lambda: crossed(4, 2, mask="causal+window", window=2, positions="alibi"),
    "mqa_transposed_rotary_T": lambda: crossed(2, 1, "x_wt", positions="rotary", temperature=0.5),
    "sinusoidal_global_max": lambda: crossed(2, positions="sinusoidal", softmax="global_max", scale=0.3),
    "padding_left_out": lambda: crossed(mask="padding", padding=(False, True, False, False)),
}


def engine(preset: attention.Preset) -> attention.Trace:
    """The engine's cross-attention, called directly (not through the preset)."""
    m = preset.matrices()
    X_kv = source_rows(m["X"], preset.tokens, preset.source_tokens)
    return attention.cross_attention(m["X"], X_kv, m["W_q"], m["W_k"], m["W_v"], cross_options(preset.options))


def assert_matches(got: dict, trace: attention.Trace) -> None:
    for name in NAMES:
        want = np.asarray(getattr(trace, name))
        arr = np.asarray(got[name], dtype=np.float64)
        assert arr.shape == want.shape, name
        np.testing.assert_array_equal(arr, want, err_msg=name)  # exact (-inf == -inf)


def test_source_rows_reuse_shared_words_and_draw_the_same_vector_for_the_same_word():
    X = attention.blank(4, 4, seed=5).matrices()["X"]
    rows = source_rows(X, ("t1", "t2", "t3", "t4"), SOURCE)
    assert rows.shape == (7, 4)
    np.testing.assert_array_equal(rows[2], X[1])  # "t2"
    np.testing.assert_array_equal(rows[0], rows[5])  # "le" twice
    assert not np.array_equal(rows[0], rows[1])


@pytest.mark.parametrize("case", list(CASES))
def test_a_preset_file_round_trips_the_source_sentence_and_its_numbers(case):
    preset = CASES[case]()
    assert preset.source_tokens == SOURCE
    text = preset.to_json()
    assert json.loads(text)["source_tokens"] == list(SOURCE)
    again = attention.parse_preset(text)
    assert again.source_tokens == SOURCE
    t = again.compute()
    assert t.weights.shape[-2:] == (4, 7) and t.tokens_kv == SOURCE
    assert_matches({n: getattr(t, n) for n in NAMES}, engine(preset))


def test_a_preset_without_a_source_writes_no_source_tokens():
    p = attention.load_preset("the_cat_sat")
    assert p.source_tokens == () and "source_tokens" not in json.loads(p.to_json())


@pytest.mark.parametrize("bad", ["le chat", ["le", ""], ["le chat"], [3], ["x"] * 2049])
def test_a_bad_source_sentence_in_a_file_is_refused_naming_the_field(bad):
    d = json.loads(crossed().to_json())
    d["source_tokens"] = bad
    with pytest.raises(AttentionError, match="source_tokens"):
        attention.parse_preset(json.dumps(d))


@pytest.mark.parametrize("case", list(CASES))
def test_the_script_prints_the_engines_cross_attention_bit_for_bit(case, tmp_path):
    preset = CASES[case]()
    path = tmp_path / "attention_script.py"
    path.write_text(python_script(preset), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-I", str(path), "--json"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.splitlines()[-1][len("RESULTS_JSON ") :])
    assert_matches(got, engine(preset))
    assert "Cross-attention output:" in run.stdout and repr(list(SOURCE)) in run.stdout


@pytest.mark.parametrize("case", ["plain", "gqa_4_2_alibi_window", "sinusoidal_global_max"])
def test_the_notebook_rebuilds_the_cross_attention(case):
    preset = CASES[case]()
    nb = nbformat.reads(notebook(preset), as_version=4)
    nbformat.validate(nb)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in (c for c in nb.cells if c.cell_type == "code"):
            exec(compile(cell.source, f"<cell {cell.id}>", "exec"), namespace)  # noqa: S102 - our own generated code
    assert_matches(namespace, engine(preset))
    assert namespace["source"] == list(SOURCE)
