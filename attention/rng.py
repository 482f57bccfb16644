"""The documents' random draws: numpy's legacy generator, a seed, and a declared draw order.

``np.random.seed(s); np.random.rand(*shape)`` and ``np.random.RandomState(s).rand(*shape)`` give the
same stream, so a preset that says "seed 0, then W_q (4, 4), W_k (4, 4), W_v (4, 4)" reproduces the
document exactly. ``np.random.default_rng`` would give other numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

GENERATOR = "numpy.random.RandomState(seed).rand"  # uniform on [0, 1): what the documents draw
NORMAL = "numpy.random.RandomState(seed).randn"  # standard normal: centred values, for blank presets
GENERATORS = {GENERATOR: "rand", NORMAL: "randn"}


def draw(
    seed: int,
    order: Sequence[tuple[str, tuple[int, ...]]],
    generator: str = GENERATOR,
    scales: Mapping[str, float] | None = None,
) -> dict[str, np.ndarray]:
    """Draw each (name, shape) in order from one stream: uniform on [0, 1) (``rand``) or standard normal (``randn``),
    each times its factor in ``scales`` (1 when absent)."""
    rs = np.random.RandomState(seed)
    method = getattr(rs, GENERATORS[generator])
    scales = scales or {}
    return {name: method(*shape) * scales[name] if name in scales else method(*shape) for name, shape in order}


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # splitmix64's increment
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on an array of uint64 (wrapping arithmetic): a well-spread 64-bit hash of each value."""
    x = (x + _GOLDEN) * np.uint64(1)  # a copy, wrapped mod 2**64
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def cell_uniforms(seed: int, stream: int, shape: tuple[int, int]) -> np.ndarray:
    """Uniform numbers on [0, 1) of ``shape``, where cell (i, j) depends only on (seed, stream, i, j).

    A counter-based hash rather than a stream: a cell keeps its value whatever the matrix's size, so growing a
    matrix and shrinking it back, or reaching one size by two routes, gives the same numbers. Any seed from 0 to
    2**32 - 1 (and any stream) is fine: keys wrap mod 2**64, nothing overflows. ``(rows, cols)`` → ``(rows, cols)``.
    """
    key = _mix(np.array([seed % 2**64], dtype=np.uint64) ^ _mix(np.array([stream % 2**64], dtype=np.uint64)))  # (1,)
    rows = np.arange(shape[0], dtype=np.uint64)[:, None] << np.uint64(32)  # (rows, 1)
    cols = np.arange(shape[1], dtype=np.uint64)[None, :]  # (1, cols)
    bits = _mix(_mix(key + rows) ^ cols)  # (rows, cols)
    return (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53  # 53 random bits → [0, 1)


def fill_new_cells(old: np.ndarray, shape: tuple[int, int], seed: int, stream: int = 0) -> np.ndarray:
    """Resize ``old`` to ``shape``, keeping every value that still fits; new cells are uniform on [0, 1), each a
    function of (seed, stream, row, column) only (see :func:`cell_uniforms`), so the same seed and sizes always
    give the same numbers, however they were reached."""
    new = cell_uniforms(seed, stream, shape)  # (rows, cols)
    r, c = min(old.shape[0], shape[0]), min(old.shape[1], shape[1])
    new[:r, :c] = old[:r, :c]
    return new
