"""Real word vectors: the 50,000 most frequent GloVe 6B 50-d words, looked up and compared by cosine.

The table is ``attention/data/glove50.npz`` (built by scripts/build_glove.py; GloVe 6B 50d, Pennington,
Socher, Manning 2014, PDDL 1.0): ``vectors`` (50000, 50) float16, row i the vector of word i, and ``words``,
the 50,000 words as UTF-8 joined by newlines, most frequent first. It is read once, on first use, with
``np.load(..., allow_pickle=False)``, and kept (about 20 MB as float64).

Words are looked up lower-cased (``str.lower``; GloVe 6B was trained on lower-cased text). A word not in the
table gets a stand-in row drawn from the caller's seed and the word alone:

    row = mean + std * z,   z ~ N(0, I_50)   drawn by numpy's PCG64 from SeedSequence([seed, *sha256(word)])

where mean and std are the table's per-dimension mean and standard deviation (50,), and sha256(word) is the
SHA-256 of the lower-cased word's UTF-8 bytes as eight 32-bit numbers. So the same word gets the same row
wherever it stands and whatever the other words are, and another seed gives another row. ``lookup`` reports
these rows in its ``found`` mask.
"""

from __future__ import annotations

import functools
import hashlib
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import AttentionError
from ..names import MAX_SEED, is_whole

DIM = 50
TABLE_PATH = Path(__file__).resolve().parents[1] / "data" / "glove50.npz"


@dataclass(frozen=True)
class _Table:
    """The loaded table: words, their vectors and norms, the index of each word, per-dimension mean and std."""

    words: tuple[str, ...]  # (V,)
    vectors: np.ndarray  # (V, 50) float64, the stored float16 values exactly
    norms: np.ndarray  # (V,)
    index: dict[str, int]
    mean: np.ndarray  # (50,)
    std: np.ndarray  # (50,)


@functools.cache
def _table() -> _Table:
    """Read the table file once (no pickle); later calls return the same object."""
    try:
        with np.load(TABLE_PATH, allow_pickle=False) as data:
            vectors = data["vectors"].astype(np.float64)  # (V, 50), exact: every float16 is a float64
            words = tuple(data["words"].tobytes().decode("utf-8").split("\n"))  # (V,)
    except (OSError, KeyError, ValueError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
        raise AttentionError(f"the word-vector table {TABLE_PATH.name} cannot be read ({exc})") from None
    norms = np.linalg.norm(vectors, axis=1)  # (V,)
    if vectors.shape != (len(words), DIM) or not np.isfinite(vectors).all() or not (norms > 0).all():
        raise AttentionError(
            f"the word-vector table {TABLE_PATH.name} is damaged: vectors {vectors.shape} "
            f"for {len(words)} words, or a row is not finite or all zeros"
        )
    index = {word: i for i, word in enumerate(words)}
    return _Table(words, vectors, norms, index, vectors.mean(axis=0), vectors.std(axis=0))


def clear_cache() -> None:
    """Forget the loaded table, so the next call reads the file again (for tests and the build script)."""
    _table.cache_clear()


def vocabulary_size() -> int:
    """The number of words in the table (50,000)."""
    return len(_table().words)


def in_vocabulary(word: str) -> bool:
    """Whether ``word``, lower-cased, is in the table."""
    return _check_word(word, "word").lower() in _table().index


def lookup(words: Sequence[str], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The GloVe rows of ``words`` (lower-cased) and which were found.

    Returns ``(matrix, found)``: matrix (n, 50) float64, row i the vector of ``words[i]``; found (n,) bool,
    False where the word is not in the table and its row is the seeded stand-in of the module docstring.
    """
    if isinstance(words, str):
        raise AttentionError(f"lookup takes a list of words, not one string; got {words!r}")
    seed = _check_seed(seed)
    table = _table()
    keys = [_check_word(w, f"word {i + 1}").lower() for i, w in enumerate(words)]  # (n,)
    matrix = np.empty((len(keys), DIM), dtype=np.float64)  # (n, 50)
    found = np.array([k in table.index for k in keys], dtype=bool)  # (n,)
    for i, key in enumerate(keys):
        matrix[i] = table.vectors[table.index[key]] if found[i] else _stand_in(key, seed, table)
    return matrix, found


def nearest(word_or_vector: str | Sequence[float] | np.ndarray, k: int = 8) -> list[tuple[str, float]]:
    """The ``k`` table words with the largest cosine similarity to a word or a (50,) vector, largest first.

    cos(a, b) = a·b / (|a| |b|). A word (lower-cased) must be in the table and is left out of its own
    list; a vector leaves nothing out. Equal cosines keep the more frequent word first.
    """
    table = _table()
    if isinstance(word_or_vector, str):
        key = word_or_vector.lower()
        if key not in table.index:
            raise AttentionError(
                f"{word_or_vector!r} is not among the {len(table.words):,} GloVe words, so it has "
                "no vector to compare; choose a word from the table or give a vector"
            )
        skip = table.index[key]
        query = table.vectors[skip]  # (50,)
    else:
        skip = -1
        query = _check_vector(word_or_vector)
    limit = len(table.words) - (skip >= 0)
    if not is_whole(k) or not 1 <= k <= limit:
        raise AttentionError(f"k (how many nearest words) must be a whole number from 1 to {limit:,}; got {k!r}")
    cos = table.vectors @ query / (table.norms * np.linalg.norm(query))  # (V,)
    if skip >= 0:
        cos[skip] = -np.inf
    cut = cos[np.argpartition(-cos, k - 1)[k - 1]]  # the k-th largest cosine
    candidates = np.flatnonzero(cos >= cut)  # (m,) m >= k, in rank order
    order = candidates[np.argsort(-cos[candidates], kind="stable")][:k]  # (k,) largest first, ties by rank
    return [(table.words[i], float(cos[i])) for i in order]


def _stand_in(key: str, seed: int, table: _Table) -> np.ndarray:
    """The seeded row for a word not in the table: mean + std * z, z from (seed, sha256(word)). (50,)"""
    digest = np.frombuffer(hashlib.sha256(key.encode("utf-8")).digest(), dtype="<u4")  # (8,)
    z = np.random.default_rng(np.random.SeedSequence([seed, *digest.tolist()])).standard_normal(DIM)  # (50,)
    return table.mean + table.std * z


def _check_word(word: object, where: str) -> str:
    if not isinstance(word, str):
        raise AttentionError(f"{where} must be text, got {type(word).__name__} {word!r}")
    return word


def _check_seed(seed: object) -> int:
    if not is_whole(seed) or not 0 <= int(seed) <= MAX_SEED:
        raise AttentionError(f"seed must be a whole number from 0 to {MAX_SEED}; got {seed!r}")
    return int(seed)


def _check_vector(vector: object) -> np.ndarray:
    try:
        v = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError):
        raise AttentionError(f"nearest needs a word or a vector of {DIM} numbers") from None
    if v.shape != (DIM,):
        raise AttentionError(f"nearest needs a vector of {DIM} numbers; got shape {v.shape}")
    if not np.isfinite(v).all():
        bad = int(np.flatnonzero(~np.isfinite(v))[0])
        raise AttentionError(f"the vector's value {bad + 1} is {v[bad]}; every value must be a finite number")
    if not np.any(v):
        raise AttentionError("the vector is all zeros, so it has no direction to compare by cosine")
    return v
