"""Where a matrix people bring goes: the accepted formats, an upload by its extension, a paste by its form."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ...errors import AttentionError
from ...names import MAX_UPLOAD_BYTES
from .cells import short
from .limits import bound_lines, bound_work, check_size, decode_text
from .literal import literal_body, parse_brackets
from .numpy_files import read_numpy
from .rows import parse_rows, read_matrix_csv
from .shapes import final_shape

MATRIX_FORMATS = ("csv", "tsv", "txt", "npy", "npz")  # what a matrix upload may be: the uploader offers exactly these
PRESET_FORMATS = ("json",)  # what a preset upload may be


def uploader_types(formats: Sequence[str]) -> list[str]:
    """The ``type=`` list for a Streamlit file uploader offering ``formats``. Its browser filter offers exactly
    these; one MIME type in the list makes Streamlit leave the server-side check to us, so a file of another type
    (sent by a client that ignores the filter) reaches the parser, which refuses it with a message naming the
    file and this list, instead of Streamlit raising an uncaught "Invalid file extension"."""
    return [f".{f}" for f in formats] + ["text/csv" if "csv" in formats else "application/json"]


_CAPTION = re.compile(r"[^\n\[\]=]{1,80}:[ \t]*\r?")  # matched against the first line only (under 200 chars)
_CODE = re.compile(r"[()\[\]{}]|__|\b(?:lambda|import|exec|eval)\b")


def parse_matrix_text(
    text: str,
    name: str,
    expected_shape: tuple[int, int] | None = None,
    *,
    dims: tuple[str, str] | None = None,
    source: str = "paste",
) -> np.ndarray:
    """Parse pasted text (any form listed in the module docstring) into a float64 (rows, cols) array.

    ``expected_shape`` (rows, cols), when given, must match; ``dims`` names the two axes in the
    message (default by ``name``: X is tokens × d_model, W_q/W_k d_model × d_k, W_v d_model × d_v; pass
    ``("d_k", "d_model")`` for the X @ W.T convention). ``source`` names the input in messages ("paste", or
    "file 'w.txt'"). The work is bounded before any row is built (:func:`bound_work`). Raises AttentionError,
    never evaluates code.
    """
    if not isinstance(text, str):
        raise AttentionError(f"{name}: the {source} must be text, got {type(text).__name__}", matrix=name)
    check_size(len(text), name, source)
    if len(text) > MAX_UPLOAD_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_UPLOAD_BYTES:
        check_size(MAX_UPLOAD_BYTES + 1, name, source)
    body = text.strip().lstrip("\ufeff").strip()
    if not body:
        raise AttentionError(
            f"{name}: the {source} is empty; paste a matrix such as [[0.2, 0.9], [0.1, 0.5]]", matrix=name
        )
    bound_work(body, name, expected_shape, dims, source)
    first = body.find("\n", 0, 200)
    caption = _CAPTION.fullmatch(body, 0, first) if first > 0 else None
    if caption and body[first + 1 :].lstrip().startswith(("[", "array(", "np.array(", "numpy.array(")):
        body = body[first + 1 :].strip()  # a printed caption line such as "Attention weights:"
    literal = literal_body(body, name, source)
    if literal is not None:
        arr = parse_brackets(literal, name, source)
        return final_shape(arr, name, expected_shape, dims, source)
    if _CODE.search(body):
        raise AttentionError(
            f"{name}: the {source} is not a matrix literal ({short(body)}); only numbers, brackets, commas and spaces "
            "are read, and nothing pasted is ever run",
            matrix=name,
        )
    bound_lines(body, name, source)
    matrix, _, _ = parse_rows(body, name, expected_shape, dims, source, allow_neg_inf=False)
    return matrix


def read_upload(
    data: bytes,
    filename: str,
    name: str,
    expected_shape: tuple[int, int] | None = None,
    *,
    dims: tuple[str, str] | None = None,
) -> np.ndarray:
    """An uploaded matrix file as a float64 (rows, cols) array; every message names the file.

    The file's extension must be one of :data:`MATRIX_FORMATS`: ``.csv``/``.tsv`` go through
    :func:`read_matrix_csv`; ``.txt`` (a numpy literal, numpy's printed form or plain rows) through
    :func:`parse_matrix_text`; numpy's own ``.npy`` and ``.npz`` through :func:`read_numpy` (never
    unpickling). Preset files are not matrices: load them with :func:`attention.parse_preset`. Refuses input
    over :data:`MAX_UPLOAD_BYTES` before reading.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise AttentionError(f"{name}: expected the uploaded file's bytes, got {type(data).__name__}", matrix=name)
    data = bytes(data)
    label = repr(filename) if filename else "the file"
    source = f"file {label}"
    check_size(len(data), name, source)
    ext = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    if ext not in MATRIX_FORMATS:
        kind = f"a .{short(ext, 12)[1:-1]} file" if ext else "a file with no extension"
        raise AttentionError(
            f"{name}: {label} is {kind}; upload one of {', '.join('.' + f for f in MATRIX_FORMATS)}"
            + (" (save a spreadsheet as CSV)" if ext in ("xlsx", "xls", "ods") else ""),
            matrix=name,
        )
    if ext in ("npy", "npz"):
        return final_shape(read_numpy(data, name, label, ext), name, expected_shape, dims, source)
    text = decode_text(data, name, label)
    stripped = text.lstrip("\ufeff").strip()
    if stripped.startswith("{"):
        raise AttentionError(
            f"{name}: {label} looks like a preset file (a JSON object), not a single matrix; load it as a preset "
            f"instead",
            matrix=name,
        )
    if ext == "txt" or stripped.startswith(("[", "np.", "numpy.", "array(")):
        return parse_matrix_text(text, name, expected_shape, dims=dims, source=source)
    try:
        matrix, _, _ = read_matrix_csv(text, name, expected_shape, dims=dims)
    except AttentionError as exc:
        raise AttentionError(
            exc.message.replace(" the file ", f" {label} ", 1), matrix=exc.matrix, cell=exc.cell
        ) from None
    return matrix
