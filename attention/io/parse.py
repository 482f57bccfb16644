"""Reading matrices people bring: CSV files, numpy literals pasted from a notebook, plain rows.

Nothing here ever evaluates code. Pasted text is split by a hand-written tokenizer into brackets,
commas and "atoms"; an atom becomes a number only when it matches a strict decimal pattern
(``-1.5``, ``1.``, ``.5``, ``1.2e-05``) and is then converted with ``float``. ``eval``, ``exec`` and
``ast.literal_eval`` are not used at all, so ``__import__('os').system('x')``, ``np.ones((3, 3))``,
``[1]*3`` or ``lambda: 0`` are refused as "not a matrix literal" without running anything.

Accepted forms (all give a float64 2-D array):

* ``np.array([[0.2, 0.9], [0.1, 0.5]])``, ``numpy.array(...)``, ``array([[1., 2.]], dtype=float64)``
  (numpy's repr), optionally after ``W_q = ``;
* nested Python lists ``[[1, 2], [3, 4]]`` (also with parentheses as inner brackets);
* numpy's printed form ``[[0.33 0.89]\\n [0.84 0.44]]`` (space separated, ``1.``, ``-0.``, ``1.2e-05``,
  rows wrapped over several lines);
* any of these after a printed caption line such as ``Attention weights:`` (as ``print("Q:\\n", Q)`` shows it);
* plain rows separated by commas, tabs, semicolons or spaces, with or without a label row and/or
  a label column (a first row / first column that is not numeric; pandas' ``to_csv`` and ``print``
  layouts are recognised too).

A batch of one (3-D with a leading axis of 1, as document 003's X) is read as its single 2-D matrix.
A 1-D list is read as one row (or as one column when the expected shape is n × 1).

Every failure raises :class:`attention.AttentionError` naming the matrix and what is wrong. The
functions are pure: they only read their arguments.

Size limits (see :data:`MAX_UPLOAD_BYTES`): the largest supported matrix is 2048 tokens × 256
dimensions. A float written at full ``repr`` precision takes at most 24 characters
(``-1.2345678901234567e-100``), plus one separator: 2048 × 256 × 25 = 13,107,200 bytes, plus labels
(2048 rows × up to ~64 characters ≈ 0.13 MB) ≈ 13.2 MB = 12.6 MiB. The limit is therefore 16 MiB
(Streamlit's ``server.maxUploadSize`` counts MiB: ``maxUploadSize = 16`` in ``.streamlit/config.toml``).
Input over the limit is refused before any parsing. :data:`MAX_CELLS` (2²⁰, twice the largest
supported matrix) stops a small-but-dense text such as ``0,0,0,...`` from building millions of cells.

Linear time. Every pattern here is matched in time linear in its input (no nested or overlapping quantifiers: the
number pattern once had ``[0-9]+\\.?[0-9]*``, which backtracks quadratically on ``"1" * 50_000 + "a" * 50_000``:
a minute holding the interpreter), and every text is measured before one runs: a whole paste or file against
:data:`MAX_UPLOAD_BYTES` and the expected shape, each line against :data:`MAX_LINE_CHARS`, each number (a grid
cell, an atom of a paste, a CSV cell) against :data:`attention.names.MAX_NUMBER_CHARS`.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import re
import tokenize
import zipfile
from collections.abc import Sequence

import numpy as np

from ..errors import AttentionError, cell_name
from ..names import MAX_NUMBER_CHARS, MAX_TOKENS, MAX_UPLOAD_BYTES, MAX_UPLOAD_MB

MATRIX_FORMATS = ("csv", "tsv", "txt", "npy", "npz")  # what a matrix upload may be: the uploader offers exactly these
PRESET_FORMATS = ("json",)  # what a preset upload may be


def uploader_types(formats: Sequence[str]) -> list[str]:
    """The ``type=`` list for a Streamlit file uploader offering ``formats``. Its browser filter offers exactly
    these; one MIME type in the list makes Streamlit leave the server-side check to us, so a file of another type
    (sent by a client that ignores the filter) reaches the parser, which refuses it with a message naming the
    file and this list, instead of Streamlit raising an uncaught "Invalid file extension"."""
    return [f".{f}" for f in formats] + ["text/csv" if "csv" in formats else "application/json"]


# MAX_UPLOAD_MB = 16 and MAX_UPLOAD_BYTES = 16,777,216 (what Streamlit's maxUploadSize = 16 allows): in names
MAX_CELLS = 1 << 20  # 1,048,576 cells = 2 × (2048 × 256)
MAX_DEPTH = 3  # a batch of one: [[[...]]]

# A decimal number, strictly: no underscores, no hex, no words. float() is only called on these. Each character
# can be matched in one way only (digits, then an optional "." and digits, then an optional exponent), so a failing
# match costs one pass: linear, whatever the text.
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
NONFINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)

_DEFAULT_DIMS = {
    "X": ("tokens", "d_model"),
    "W_q": ("d_model", "d_k"),
    "W_k": ("d_model", "d_k"),
    "W_v": ("d_model", "d_v"),
    "Q": ("tokens", "d_k"),
    "K": ("tokens", "d_k"),
    "V": ("tokens", "d_v"),
    "scores": ("queries", "keys"),
    "scaled": ("queries", "keys"),
    "weights": ("queries", "keys"),
    "output": ("tokens", "d_v"),
}
_DTYPES = {
    "float64",
    "float32",
    "float16",
    "float",
    "double",
    "int64",
    "int32",
    "int16",
    "int8",
    "int",
    "uint64",
    "uint32",
    "uint16",
    "uint8",
}
_WRAPPER = re.compile(
    r"(?:(?:np|numpy)\s*\.\s*)?(?:array|asarray)\s*\((?P<body>.*?)"
    r"(?:,\s*dtype\s*=\s*(?P<dtype>[\w.'\"]+)\s*)?\)\s*;?",
    re.DOTALL,
)
_ASSIGN = re.compile(r"[A-Za-z_]\w*\s*=(?!=)\s*")
_LEX = re.compile(r"\s+|[\[\]()]|,|[^\s\[\](),]+")
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
    "file 'w.txt'"). The work is bounded before any row is built (:func:`_bound_work`). Raises AttentionError,
    never evaluates code.
    """
    if not isinstance(text, str):
        raise AttentionError(f"{name}: the {source} must be text, got {type(text).__name__}", matrix=name)
    _check_size(len(text), name, source)
    if len(text) > MAX_UPLOAD_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_UPLOAD_BYTES:
        _check_size(MAX_UPLOAD_BYTES + 1, name, source)
    body = text.strip().lstrip("\ufeff").strip()
    if not body:
        raise AttentionError(
            f"{name}: the {source} is empty; paste a matrix such as [[0.2, 0.9], [0.1, 0.5]]", matrix=name
        )
    _bound_work(body, name, expected_shape, dims, source)
    first = body.find("\n", 0, 200)
    caption = _CAPTION.fullmatch(body, 0, first) if first > 0 else None
    if caption and body[first + 1 :].lstrip().startswith(("[", "array(", "np.array(", "numpy.array(")):
        body = body[first + 1 :].strip()  # a printed caption line such as "Attention weights:"
    literal = _literal_body(body, name, source)
    if literal is not None:
        arr = _parse_brackets(literal, name, source)
        return _final_shape(arr, name, expected_shape, dims, source)
    if _CODE.search(body):
        raise AttentionError(
            f"{name}: the {source} is not a matrix literal ({_short(body)}); only numbers, brackets, commas and spaces "
            "are read, and nothing pasted is ever run",
            matrix=name,
        )
    _bound_lines(body, name, source)
    matrix, _, _ = _parse_rows(body, name, expected_shape, dims, source, allow_neg_inf=False)
    return matrix


# The most characters one cell can take (a full-precision float is at most 24, numpy pads with spaces) and one
# label (a token), and the widest row any matrix has (scores: one column per token, plus the label column).
_CELL_CHARS, _LABEL_CHARS = 64, 256
MAX_LINE_CHARS = (MAX_TOKENS + 1) * _CELL_CHARS


def _bound_work(
    text: str, name: str, expected: tuple[int, int] | None, dims: tuple[str, str] | None, source: str
) -> None:
    """Refuse, before building anything, text that cannot be a matrix of the expected shape: more characters
    than its cells and labels could take, or (whatever the shape) more numbers than any supported matrix has,
    counted from its commas. Costs a few C-level passes over the text, so a 16 MB paste is refused at once."""
    if expected is not None:
        r, c = expected
        limit = (r + 1) * (c + 1) * _CELL_CHARS + (r + c) * _LABEL_CHARS + 4096
        if len(text) > limit:
            d = _dims(name, dims)
            raise AttentionError(
                f"{name} must be {r} × {c} ({d[0]} × {d[1]}); the {source} has {len(text):,} characters, more than "
                f"such a "
                f"matrix can take (about {limit:,}), so it was not read",
                matrix=name,
            )
    at_least = text.count(",") - text.count("]") - text.count(")") - text.count("\n")  # numbers separated by commas
    if at_least > MAX_CELLS:
        raise AttentionError(
            f"{name}: the {source} has more than {MAX_CELLS:,} numbers; that is larger than any supported matrix",
            matrix=name,
        )


def _bound_lines(text: str, name: str, source: str) -> None:
    """Plain rows and CSV: refuse, before splitting a line into cells, one longer than the widest row of any matrix,
    or one longer than a number may be with no separator in it (a single cell too long to read)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if end - start > MAX_LINE_CHARS:
            line = text.count("\n", 0, start) + 1
            raise AttentionError(
                f"{name}: line {line} of the {source} has {end - start:,} characters; a matrix row has at "
                f"most {MAX_TOKENS + 1:,} cells (about {MAX_LINE_CHARS:,} characters), so it was not read",
                matrix=name,
            )
        if end - start > MAX_NUMBER_CHARS and all(text.find(c, start, end) < 0 for c in " \t,;"):
            line = text.count("\n", 0, start) + 1
            raise AttentionError(
                f"{name}: line {line} of the {source} is one cell of {end - start:,} characters "
                f"({_short(text[start : start + 40])}); a number has at most {MAX_NUMBER_CHARS:,}",
                matrix=name,
            )
        start = end + 1


def read_matrix_csv(
    data: bytes | str,
    name: str,
    expected_shape: tuple[int, int] | None = None,
    *,
    dims: tuple[str, str] | None = None,
    allow_neg_inf: bool = False,
) -> tuple[np.ndarray, list[str] | None, list[str] | None]:
    """Read a CSV (comma, tab or semicolon separated) into ``(matrix, row_labels, col_labels)``.

    The label row and label column are optional and detected: a first row with no numbers after its
    first cell is a label row; a first column with no numbers is a label column (pandas' ``to_csv``
    layout, an empty corner and 0..n-1 indices, is recognised). When ``expected_shape`` is given and
    the detection leaves one row/column too many, a first row/column holding text is taken as labels.
    Labels lose one leading ``'`` (the formula-injection guard written by
    :func:`attention.io.tables.matrix_csv`), so ``matrix_csv`` output re-reads bit-exact, labels included.
    ``allow_neg_inf`` accepts ``-inf`` cells (masked cells of the ``scaled`` matrix); everything else
    must be finite. Returns labels as None when the file has none.
    """
    if isinstance(data, bytes):
        text = _decode(data, name)
    elif isinstance(data, str):
        _check_size(len(data), name, "file")
        text = data
    else:
        raise AttentionError(f"{name}: expected the file's bytes or text, got {type(data).__name__}", matrix=name)
    text = text.lstrip("\ufeff")
    if not text.strip():
        raise AttentionError(f"{name}: the file is empty; it needs at least one row of numbers", matrix=name)
    _bound_lines(text, name, "file")
    return _parse_rows(text, name, expected_shape, dims, "file", allow_neg_inf=allow_neg_inf, csv_mode=True)


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
    _check_size(len(data), name, source)
    ext = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    if ext not in MATRIX_FORMATS:
        kind = f"a .{_short(ext, 12)[1:-1]} file" if ext else "a file with no extension"
        raise AttentionError(
            f"{name}: {label} is {kind}; upload one of {', '.join('.' + f for f in MATRIX_FORMATS)}"
            + (" (save a spreadsheet as CSV)" if ext in ("xlsx", "xls", "ods") else ""),
            matrix=name,
        )
    if ext in ("npy", "npz"):
        return _final_shape(read_numpy(data, name, label, ext), name, expected_shape, dims, source)
    text = _decode(data, name, label)
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


def read_numpy(data: bytes, name: str, label: str = "the file", ext: str = "npy") -> np.ndarray:
    """numpy's own ``.npy`` (one array) or ``.npz`` (exactly one array inside) as float64, read with
    ``allow_pickle=False``: an object array (which would need unpickling, and so could run code) is refused."""
    try:
        loaded = np.load(io.BytesIO(data), allow_pickle=False)
        if isinstance(loaded, np.lib.npyio.NpzFile):
            with loaded:
                keys = list(loaded.files)
                if len(keys) != 1:
                    raise AttentionError(
                        f"{name}: {label} holds {len(keys)} arrays ({', '.join(map(repr, keys[:5]))}); "
                        "save one matrix per .npz file (np.savez(path, M))",
                        matrix=name,
                    )
                arr = np.asarray(loaded[keys[0]])
        else:
            arr = np.asarray(loaded)
    except AttentionError:
        raise
    except ValueError as exc:
        why = (
            "it holds Python objects, which are never unpickled here"
            if "pickle" in str(exc)
            else "numpy cannot read it"
        )
        raise AttentionError(f"{name}: {label} is not a readable .{ext} array ({why})", matrix=name) from None
    except (OSError, EOFError, KeyError, zipfile.BadZipFile, tokenize.TokenError):  # TokenError: a garbled header
        raise AttentionError(
            f"{name}: {label} is not a valid .{ext} file (it may be cut short or renamed)", matrix=name
        ) from None
    if arr.dtype.kind not in "biuf":
        raise AttentionError(f"{name}: {label} holds {arr.dtype} values; a matrix needs numbers", matrix=name)
    if arr.size > MAX_CELLS:
        raise AttentionError(
            f"{name}: {label} has {arr.size:,} numbers; that is larger than any supported matrix", matrix=name
        )
    arr = arr.astype(np.float64)
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        where = ", ".join(str(i + 1) for i in bad[0])
        raise AttentionError(
            f"{name}: {label} has {arr[tuple(bad[0])]} at index ({where}); every value must be a finite number",
            matrix=name,
        )
    if arr.ndim not in (1, 2, 3):
        raise AttentionError(
            f"{name}: {label} holds a {arr.ndim}-D array of shape {arr.shape}; a matrix is 2-D", matrix=name
        )
    return arr


def unprotect_label(text: str) -> str:
    """A label cell as text: undo :func:`attention.io.tables.protect_text`.

    A guarded cell (``'`` after optional spaces) loses the spaces and that one ``'`` and keeps the
    rest exactly, trailing spaces included; an unguarded cell is stripped of surrounding whitespace.
    """
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith("'") else text.strip()


def is_number_text(text: str) -> bool:
    """True when ``text`` (stripped) would be read as a number or as a non-finite word (nan, inf); text longer than
    :data:`attention.names.MAX_NUMBER_CHARS` never is (it is not matched at all)."""
    t = text.strip()
    return len(t) <= MAX_NUMBER_CHARS and bool(NUMBER.fullmatch(t) or NONFINITE.fullmatch(t))


def number_too_long(raw: object) -> bool:
    """True for text too long to be read as a number (over :data:`attention.names.MAX_NUMBER_CHARS` characters once
    stripped): the callers' messages name the limit instead of calling it "not a number"."""
    return isinstance(raw, str) and len(raw) > MAX_NUMBER_CHARS and len(raw.strip()) > MAX_NUMBER_CHARS


def cell_number(raw: object) -> float | None:
    """The one numeric-cell rule, for grid cells and any single typed value: the number in ``raw`` (text or a
    number), or None when it is blank or not a number. Text must be a plain decimal number (``0.5``,
    ``-1e-3``, ``+2``) or nan / inf / infinity; numbers too large for a 64-bit float (``1e400``, a 400-digit
    integer) come back as ±inf, never as an exception. Callers decide whether a non-finite value is allowed.
    Text over :data:`attention.names.MAX_NUMBER_CHARS` characters is None, measured before any pattern runs
    (:func:`number_too_long` tells the caller why)."""
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, (int, float, np.integer, np.floating)):
        try:
            return float(raw)
        except OverflowError:  # an integer beyond the float range
            return math.inf if raw > 0 else -math.inf
    if not isinstance(raw, str) or number_too_long(raw):
        return None
    t = raw.strip()
    if not (NUMBER.fullmatch(t) or NONFINITE.fullmatch(t)):
        return None
    return float(t)


# ---------------------------------------------------------------------------------------------- helpers


def _check_size(size: int, name: str, what: str) -> None:
    if size > MAX_UPLOAD_BYTES:
        raise AttentionError(
            f"{name}: the {what} is too large ({size / 1024 / 1024:.1f} MB); the limit is {MAX_UPLOAD_MB} MB, "
            "enough for a 2048 × 256 matrix at full precision",
            matrix=name,
        )


def _decode(data: bytes, name: str, label: str = "the file") -> str:
    _check_size(len(data), name, "file")
    if data.startswith(b"PK\x03\x04"):
        raise AttentionError(
            f"{name}: {label} is a zip archive (an Excel workbook or an .npz), not CSV text; save the matrix "
            "as CSV, or upload an .npz with its own extension",
            matrix=name,
        )
    if data.startswith(b"\x93NUMPY"):
        raise AttentionError(f"{name}: {label} is a binary .npy array; upload it with the .npy extension", matrix=name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AttentionError(
            f"{name}: {label} is not UTF-8 text (byte 0x{data[exc.start]:02x} at position {exc.start}); save it as "
            f"UTF-8 CSV",
            matrix=name,
        ) from None
    if "\x00" in text:
        raise AttentionError(f"{name}: {label} contains NUL bytes, so it is binary, not CSV text", matrix=name)
    return text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _short(text: str, limit: int = 40) -> str:
    """``text`` quoted, shortened to ``limit`` characters."""
    text = str(text)
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _dims(name: str, dims: tuple[str, str] | None) -> tuple[str, str]:
    return dims or _DEFAULT_DIMS.get(name, ("rows", "columns"))


def _shape_error(
    name: str, expected: tuple[int, int], got: tuple[int, ...], dims: tuple[str, str] | None, source: str
) -> AttentionError:
    d = _dims(name, dims)
    got_text = " × ".join(str(g) for g in got)
    return AttentionError(
        f"{name} must be {expected[0]} × {expected[1]} ({d[0]} × {d[1]}); the {source} is {got_text}",
        matrix=name,
    )


def _cell_value(text: str, name: str, where: str, cell: tuple[int, int], allow_neg_inf: bool) -> float:
    """One cell's text as a finite float, or raise naming the cell."""
    t = text.strip()
    if len(t) > MAX_NUMBER_CHARS:
        raise AttentionError(
            f"{name} {where} is {len(t):,} characters long ({_short(t)}); a number has at most {MAX_NUMBER_CHARS:,}",
            matrix=name,
            cell=cell,
        )
    if NUMBER.fullmatch(t):
        value = float(t)
        if math.isinf(value):
            raise AttentionError(
                f"{name} {where} is {_short(t)}, which is too large for a 64-bit float (the largest is about 1.8e308)",
                matrix=name,
                cell=cell,
            )
        return value
    if NONFINITE.fullmatch(t):
        if allow_neg_inf and t.lower() in ("-inf", "-infinity"):
            return -math.inf
        raise AttentionError(
            f"{name} {where} is {_short(t)}: NaN and infinity are not allowed; every value must be a finite number",
            matrix=name,
            cell=cell,
        )
    if not t:
        raise AttentionError(f"{name} {where} is blank; every cell needs a number", matrix=name, cell=cell)
    raise AttentionError(f"{name} {where} is {_short(t)}, which is not a number", matrix=name, cell=cell)


def _final_shape(
    arr: np.ndarray, name: str, expected: tuple[int, int] | None, dims: tuple[str, str] | None, source: str
) -> np.ndarray:
    """Bring a parsed 1-D/2-D/batch-of-one array to 2-D and check it against ``expected``."""
    if arr.ndim == 3:
        if arr.shape[0] != 1:
            raise AttentionError(
                f"{name}: the {source} is 3-D with shape {arr.shape}; only a single matrix (or a batch of one) can "
                f"be read",
                matrix=name,
            )
        arr = arr[0]
    elif arr.ndim == 1:
        if expected is not None and expected[1] == 1 and expected[0] == arr.shape[0] != 1:
            arr = arr.reshape(-1, 1)
        else:
            arr = arr.reshape(1, -1)
    if expected is not None and tuple(arr.shape) != tuple(expected):
        raise _shape_error(name, expected, arr.shape, dims, source)
    return arr


# ------------------------------------------------------------------------------------ bracketed literals


def _literal_body(body: str, name: str, source: str = "paste") -> str | None:
    """The bracketed part of a numpy/Python literal, or None when ``body`` is not one.

    Strips ``W = ``, ``np.array(``/``numpy.array(``/``array(`` and a trailing ``dtype=...``.
    """
    rest = body
    m = _ASSIGN.match(rest)
    if m and (rest[m.end() :].startswith("[") or _WRAPPER.fullmatch(rest[m.end() :])):
        rest = rest[m.end() :]
    w = _WRAPPER.fullmatch(rest)
    if w:
        dtype = w.group("dtype")
        if dtype is not None:
            plain = dtype.strip("'\"").removeprefix("np.").removeprefix("numpy.")
            if plain not in _DTYPES:
                raise AttentionError(
                    f"{name}: the {source} is not a matrix literal (dtype={_short(dtype, 20)} is not a number type)",
                    matrix=name,
                )
        inner = w.group("body").strip()
        if not inner.startswith("["):
            raise AttentionError(
                f"{name}: the {source} is not a matrix literal ({_short(body)}); inside np.array(...) there must be "
                "a bracketed list of numbers, and nothing pasted is ever run",
                matrix=name,
            )
        return inner
    if rest.startswith("["):
        return rest
    return None


def _where_in(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line}, character {col}"


def _parse_brackets(text: str, name: str, source: str = "paste") -> np.ndarray:
    """Tokenize and parse a bracketed literal into an array (1-D, 2-D or 3-D); never evaluates."""

    def not_literal(why: str) -> AttentionError:
        return AttentionError(
            f"{name}: the {source} is not a matrix literal ({why}); only numbers, brackets, commas and spaces "
            "are read, and nothing pasted is ever run",
            matrix=name,
        )

    stack: list[list] = []
    closers: list[str] = []
    root: list | None = None
    after_item = False  # the last thing in the current list was an element (so ',' is allowed)
    cells = 0
    for m in _LEX.finditer(text):
        tok = m.group()
        if tok[0].isspace():
            continue
        if root is not None:
            raise not_literal(
                f"unexpected {_short(tok, 20)} after the closing bracket, at {_where_in(text, m.start())}"
            )
        if tok in "[(":
            if len(stack) >= MAX_DEPTH:
                raise AttentionError(
                    f"{name}: the {source} is nested more than {MAX_DEPTH} levels deep; a matrix is [[row], [row], "
                    f"...]",
                    matrix=name,
                )
            new: list = []
            if stack:
                stack[-1].append(new)
            stack.append(new)
            closers.append("]" if tok == "[" else ")")
            after_item = False
        elif tok in "])":
            if not stack or tok != closers[-1]:
                raise not_literal(f"unmatched {tok!r} at {_where_in(text, m.start())}")
            closers.pop()
            done = stack.pop()
            after_item = True
            if not stack:
                root = done
        elif tok == ",":
            if not stack or not after_item:
                raise not_literal(f"a comma with nothing before it at {_where_in(text, m.start())}")
            after_item = False
        else:
            if not stack:
                raise not_literal(f"{_short(tok, 20)} outside the brackets")
            if tok == "..." or tok == "…":
                raise AttentionError(
                    f"{name}: the {source} contains '...', so numpy shortened the array when printing it; print it "
                    f"in full "
                    "with np.set_printoptions(threshold=sys.maxsize) and paste again",
                    matrix=name,
                )
            if len(tok) > MAX_NUMBER_CHARS:
                raise AttentionError(
                    f"{name}: the {source} has {len(tok):,} characters without a break at "
                    f"{_where_in(text, m.start())} ({_short(tok, 20)}); a number has at most {MAX_NUMBER_CHARS:,}",
                    matrix=name,
                )
            if not (NUMBER.fullmatch(tok) or NONFINITE.fullmatch(tok)):
                raise not_literal(f"{_short(tok, 20)} at {_where_in(text, m.start())} is not a number")
            cells += 1
            if cells > MAX_CELLS:
                raise AttentionError(
                    f"{name}: the {source} has more than {MAX_CELLS:,} numbers; that is larger than any supported "
                    f"matrix",
                    matrix=name,
                )
            stack[-1].append(tok)
            after_item = True
    if stack:
        raise not_literal(f"{len(stack)} bracket(s) left open at the end")
    if root is None:
        raise AttentionError(f"{name}: the {source} is empty", matrix=name)
    return _nested_to_array(root, name, source)


def _nested_to_array(root: list, name: str, source: str = "paste") -> np.ndarray:
    """Check a nested list of atom strings is rectangular, then convert every atom (row/column named on error)."""
    depth, node = 1, root
    while node and isinstance(node[0], list):
        depth, node = depth + 1, node[0]
    levels = {1: ["numbers"], 2: ["row", "numbers"], 3: ["batch item", "row", "numbers"]}[depth]

    def shape_of(node: list, level: int, where: str) -> tuple[int, ...]:
        if not node:
            raise AttentionError(f"{name}: {where or 'the ' + source} is empty; every row needs numbers", matrix=name)
        kinds = {isinstance(x, list) for x in node}
        if len(kinds) > 1 or (True in kinds) != (level < depth - 1):
            raise AttentionError(
                f"{name}: {where or 'the ' + source} mixes numbers and bracketed rows; every row must be a list of "
                f"numbers",
                matrix=name,
            )
        if level == depth - 1:
            return (len(node),)
        label = levels[level]
        prefix = f"{where}, " if where else ""
        first = shape_of(node[0], level + 1, f"{prefix}{label} 1")
        for i, child in enumerate(node[1:], start=2):
            s = shape_of(child, level + 1, f"{prefix}{label} {i}")
            if s != first:
                if len(s) == 1:
                    raise AttentionError(
                        f"{name}: {prefix}{label} {i} has {_count(s[0], 'number')} but {label} 1 has {first[0]}; "
                        "every row needs the same number of columns",
                        matrix=name,
                        cell=(i - 1, min(s[0], first[0])),
                    )
                raise AttentionError(
                    f"{name}: {prefix}{label} {i} has shape {s} but {label} 1 has {first}; the rows are ragged",
                    matrix=name,
                )
        return (len(node),) + first

    shape = shape_of(root, 0, "")
    flat: list[str] = []

    def walk(node: list) -> None:
        for x in node:
            if isinstance(x, list):
                walk(x)
            else:
                flat.append(x)

    walk(root)
    out = np.empty(len(flat), dtype=np.float64)
    cols = shape[-1]
    rows = shape[-2] if len(shape) >= 2 else 1
    for k, tok in enumerate(flat):
        r, c = (k // cols) % rows, k % cols
        where = (f"batch item {k // (rows * cols) + 1}, " if len(shape) == 3 else "") + f"row {r + 1}, column {c + 1}"
        out[k] = _cell_value(tok, name, where, (r, c), allow_neg_inf=False)
    return out.reshape(shape)


# ------------------------------------------------------------------------------------------- plain rows


def _sniff(text: str) -> str | None:
    """The separator (comma, tab or semicolon) that splits the first rows into equal widths above 1.

    Each candidate is scored on the first 50 rows: the share of rows with the most common width, then
    that width (a candidate whose common width is 1 splits nothing and is skipped); ties go to comma,
    then tab. None when no candidate splits anything (space separated).
    """
    sample = text[:65536]
    truncated = len(text) > len(sample)
    best, best_score = None, (0.0, 0)
    for delim in (",", "\t", ";"):
        if delim not in sample:
            continue
        try:
            rows = [
                r
                for r in itertools.islice(csv.reader(io.StringIO(sample, newline=""), delimiter=delim), 51)
                if any(c.strip() for c in r)
            ]
        except csv.Error:
            continue
        if truncated and len(rows) > 1:
            rows = rows[:-1]
        widths = [len(r) for r in rows[:50]]
        mode = max(set(widths), key=lambda w: (widths.count(w), w)) if widths else 1
        if mode < 2:
            continue
        score = (widths.count(mode) / len(widths), mode)
        if score > best_score:
            best, best_score = delim, score
    return best


def _split(text: str, csv_mode: bool) -> tuple[list[list[str]], list[int]]:
    """Rows of stripped cell strings and each row's line number; blank lines are skipped."""
    delim = _sniff(text) or ("," if csv_mode else None)
    rows: list[list[str]] = []
    lines: list[int] = []
    cells = 0
    if delim is None:
        for i, line in enumerate(text.splitlines(), start=1):
            cells_ = line.split()
            if cells_:
                rows.append(cells_)
                lines.append(i)
                cells += len(cells_)
                if cells > MAX_CELLS:
                    break
    else:
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
        try:
            for row in reader:
                cells_ = list(row)
                if any(c.strip() for c in cells_):
                    rows.append(cells_)
                    lines.append(reader.line_num)
                    cells += len(cells_)
                    if cells > MAX_CELLS:
                        break
        except csv.Error as exc:
            raise AttentionError(f"the text is not valid CSV (line {reader.line_num}: {exc})") from None
    if cells > MAX_CELLS:
        raise AttentionError(f"the input has more than {MAX_CELLS:,} cells; that is larger than any supported matrix")
    # A trailing separator on every row leaves an empty last column: drop it.
    while rows and all(len(r) > 1 and not r[-1].strip() for r in rows):
        rows = [r[:-1] for r in rows]
    return rows, lines


def _textual(cell: str) -> bool:
    return bool(cell.strip()) and not is_number_text(cell)


def _formula(cell: str) -> bool:
    """An unguarded cell a spreadsheet would run as a formula (= + - @ tab CR): not a label we wrote."""
    return cell.lstrip(" ").startswith(("=", "+", "-", "@", "\t", "\r"))


def _is_index(cells: Sequence[str], start: int) -> bool:
    """True for 0..n-1 or 1..n written as integers (pandas' default index / column names)."""
    try:
        values = [int(c) for c in cells]
    except ValueError:
        return False
    return values == list(range(start, start + len(values)))


def _parse_rows(
    text: str,
    name: str,
    expected: tuple[int, int] | None,
    dims: tuple[str, str] | None,
    source: str,
    *,
    allow_neg_inf: bool,
    csv_mode: bool = False,
) -> tuple[np.ndarray, list[str] | None, list[str] | None]:
    try:
        rows, lines = _split(text, csv_mode)
    except AttentionError as exc:
        raise AttentionError(f"{name}: {exc.message}", matrix=name) from None
    if not rows:
        raise AttentionError(f"{name}: the {source} is empty; it needs at least one row of numbers", matrix=name)
    width = max(len(r) for r in rows)

    # Label row: no numbers after its first cell (and some text), or pandas' "  ,0,1,2" header.
    row0 = rows[0]
    header = len(rows) > 1 and not any(is_number_text(c) for c in row0) and any(_textual(c) for c in row0)
    pandas_header = len(rows) > 1 and not row0[0].strip() and len(row0) > 1 and _is_index(row0[1:], 0)
    short_header = (
        not csv_mode
        and len(rows) > 1
        and len(row0) == width - 1
        and all(len(r) == width for r in rows[1:])
        and (header or _is_index(row0, 0))
    )
    header = header or pandas_header or short_header
    if expected is not None:
        # The expected shape settles doubtful cases: a formula such as =1+1 where the shape needs a number is
        # bad data (labels written by matrix_csv never start with one), and a first row that must be labels is labels.
        if (
            header
            and len(rows) == expected[0]
            and not (pandas_header or short_header)
            and any(_formula(c) for c in row0)
        ):
            header = False
        elif not header and len(rows) == expected[0] + 1 and (any(_textual(c) for c in row0) or _is_index(row0, 0)):
            header = True
    body = rows[1:] if header else rows
    body_lines = lines[1:] if header else lines
    if not body:
        raise AttentionError(f"{name}: the {source} has a label row but no rows of numbers", matrix=name)

    # Label column: no numbers in the first column, or pandas' index under an empty corner.
    col0 = [r[0] for r in body]
    label_col = width > 1 and not any(is_number_text(c) for c in col0) and any(_textual(c) for c in col0)
    if (pandas_header or short_header) and (all(_textual(c) for c in col0) or _is_index(col0, 0) or _is_index(col0, 1)):
        label_col = True
    if header and not label_col and not row0[0].strip() and width > 1:
        label_col = True
    if expected is not None:
        if (
            label_col
            and width == expected[1]
            and not (pandas_header or short_header)
            and any(_formula(c) for c in col0)
        ):
            label_col = False
        elif not label_col and width == expected[1] + 1 and (header or any(_textual(c) for c in col0)):
            label_col = True

    ncols = width - 1 if label_col else width
    # Ragged rows: every data row must have the same number of cells.
    data_width = len(body[0])
    for i, r in enumerate(body):
        if len(r) != data_width:
            what = f"row {i + 1}" + (f" ({unprotect_label(r[0])!r})" if label_col and r else "")
            raise AttentionError(
                f"{name}: {what} (line {body_lines[i]}) has {_count(len(r), 'cell')} but row 1 has {data_width}; "
                "every row needs the same number of cells",
                matrix=name,
                cell=(i, min(len(r), data_width) - (1 if label_col else 0)),
            )
    ncols = data_width - 1 if label_col else data_width
    if ncols < 1:
        raise AttentionError(f"{name}: the {source} has labels but no columns of numbers", matrix=name)
    row_labels = [unprotect_label(r[0]) for r in body] if label_col else None
    col_labels: list[str] | None = None
    if header:
        names = row0[1:] if label_col and len(row0) == data_width else row0
        if len(names) != ncols:
            raise AttentionError(
                f"{name}: the label row has {len(row0)} cells but the rows have {data_width}; they must line up",
                matrix=name,
            )
        col_labels = [unprotect_label(c) for c in names]
    if expected is not None and (len(body), ncols) != tuple(expected):
        raise _shape_error(name, expected, (len(body), ncols), dims, source)

    out = np.empty((len(body), ncols), dtype=np.float64)
    off = 1 if label_col else 0
    for i, r in enumerate(body):
        for j in range(ncols):
            where = cell_name((i, j), row_labels, col_labels)
            out[i, j] = _cell_value(r[j + off], name, where, (i, j), allow_neg_inf)
    return out, row_labels, col_labels
