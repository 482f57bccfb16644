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


def fill_new_cells(old: np.ndarray, shape: tuple[int, int], seed: int) -> np.ndarray:
    """Resize ``old`` to ``shape``, keeping every value that still fits; new cells are drawn
    uniformly on [0, 1) from ``seed`` (the same seed always gives the same new cells)."""
    new = np.random.RandomState(seed).rand(*shape)
    r, c = min(old.shape[0], shape[0]), min(old.shape[1], shape[1])
    new[:r, :c] = old[:r, :c]
    return new
