"""A small state's downloads are built with the page once per state: a page switch sends the bytes already made, and
an edit makes them again from the new numbers (never a file of the numbers before)."""

from __future__ import annotations

import csv
import io
import zipfile

import numpy as np

from tests.helpers.apptest import edit_cell, goto, journey, no_exception, open_views, session


def _weights_in(zipped: bytes) -> np.ndarray:
    with zipfile.ZipFile(io.BytesIO(zipped)) as zf:
        rows = list(csv.reader(io.StringIO(zf.read("weights.csv").decode("utf-8"))))
    return np.array([[float(v) for v in row[1:]] for row in rows[1:]])


def _softmax_weights(X: np.ndarray, W_q: np.ndarray, W_k: np.ndarray) -> np.ndarray:
    """The oracle: softmax(X W_q (X W_k)ᵀ / √d_k) row by row, in plain numpy (no mask, T = 1: "The cat sat")."""
    scores = (X @ W_q) @ (X @ W_k).T / np.sqrt(W_k.shape[1])
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_the_zip_is_built_once_per_state_and_again_after_an_edit() -> None:
    at = open_views(journey("softmax", {"preset": "the_cat_sat"}), "downloads")  # built once opened
    no_exception(at)
    kept = session(at).memo["download.zip"][1]
    at = goto(at, "output")
    no_exception(at)
    assert session(at).memo["download.zip"][1] is kept  # the same bytes, not built again
    s = session(at)
    np.testing.assert_allclose(
        _weights_in(kept), _softmax_weights(s.matrices["X"], s.matrices["W_q"], s.matrices["W_k"])
    )
    at = edit_cell(at, "X", 1, "d2", "3.5")
    no_exception(at)
    s = session(at)
    assert s.matrices["X"][1, 1] == 3.5
    zipped = s.memo["download.zip"][1]
    assert zipped != kept
    np.testing.assert_allclose(
        _weights_in(zipped), _softmax_weights(s.matrices["X"], s.matrices["W_q"], s.matrices["W_k"])
    )
