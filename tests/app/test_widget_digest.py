"""The grid-edit check's matrix digest (attention/ui/core/compute.py, which imports Streamlit, so it is tested in the
app tier; the widget keys' own checks are tests/engine/test_widget_keys.py)."""

from __future__ import annotations

import numpy as np


def test_a_matrix_digest_sees_one_ulp_and_a_shape_but_not_a_copy() -> None:
    from attention.ui.core.compute import matrix_digest

    m = np.random.default_rng(0).normal(size=(4, 3))
    assert matrix_digest(m) == matrix_digest(m.copy()) == matrix_digest(np.asfortranarray(m))
    nudged = m.copy()
    nudged[2, 1] = np.nextafter(nudged[2, 1], np.inf)
    assert matrix_digest(nudged) != matrix_digest(m)
    assert matrix_digest(m.reshape(3, 4)) != matrix_digest(m)
    negzero = np.zeros((2, 2))
    negzero[0, 0] = -0.0
    assert matrix_digest(negzero) != matrix_digest(np.zeros((2, 2)))  # -0.0 is an edit too (edit_cells sees it)
