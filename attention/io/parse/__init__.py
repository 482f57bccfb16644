"""Reading matrices people bring: CSV files, numpy literals pasted from a notebook, plain rows, .npy and .npz.

Nothing here ever evaluates code. Accepted forms (all give a float64 2-D array):

* ``np.array([[0.2, 0.9], [0.1, 0.5]])``, ``numpy.array(...)``, ``array([[1., 2.]], dtype=float64)``
  (numpy's repr), optionally after ``W_q = ``;
* nested Python lists ``[[1, 2], [3, 4]]`` (also with parentheses as inner brackets);
* numpy's printed form ``[[0.33 0.89]\\n [0.84 0.44]]`` (space separated, ``1.``, ``-0.``, ``1.2e-05``,
  rows wrapped over several lines);
* any of these after a printed caption line such as ``Attention weights:`` (as ``print("Q:\\n", Q)`` shows it);
* plain rows separated by commas, tabs, semicolons or spaces, with or without a label row and/or
  a label column (a first row / first column that is not numeric; pandas' ``to_csv`` and ``print``
  layouts are recognised too);
* numpy's own ``.npy`` and ``.npz`` files (never unpickled).

A batch of one (3-D with a leading axis of 1, as the 'The cat sat on the mat' example's X) is read as its single
2-D matrix. A 1-D list is read as one row (or as one column when the expected shape is n × 1). Every failure raises
:class:`attention.AttentionError` naming the matrix and what is wrong. The functions are pure: they only read their
arguments.

The modules: :mod:`.dispatch` (the accepted formats, an upload by its extension, a paste by its form),
:mod:`.limits` (sizes checked before any pattern or parser runs), :mod:`.cells` (the cell rule),
:mod:`.shapes` (axis names and the final shape check), :mod:`.numpy_files` (``.npy``/``.npz``),
:mod:`.literal` (the bracket-literal parser) and :mod:`.rows` (CSV and plain rows).
"""

from __future__ import annotations

from ...names import MAX_UPLOAD_BYTES, MAX_UPLOAD_MB
from .cells import NONFINITE, NUMBER, cell_number, is_number_text, number_too_long, unprotect_label
from .dispatch import MATRIX_FORMATS, PRESET_FORMATS, parse_matrix_text, read_upload, uploader_types
from .limits import MAX_CELLS, MAX_DEPTH, MAX_LINE_CHARS
from .numpy_files import read_numpy
from .rows import read_matrix_csv

__all__ = [
    "MATRIX_FORMATS",
    "MAX_CELLS",
    "MAX_DEPTH",
    "MAX_LINE_CHARS",
    "MAX_UPLOAD_BYTES",
    "MAX_UPLOAD_MB",
    "NONFINITE",
    "NUMBER",
    "PRESET_FORMATS",
    "cell_number",
    "is_number_text",
    "number_too_long",
    "parse_matrix_text",
    "read_matrix_csv",
    "read_numpy",
    "read_upload",
    "unprotect_label",
    "uploader_types",
]
