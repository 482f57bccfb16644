"""Size limits, checked before any pattern or parser runs: bytes, characters, cells, lines, nesting.

The largest supported matrix is 2048 tokens × 256 dimensions. A float written at full ``repr`` precision takes at
most 24 characters (``-1.2345678901234567e-100``), plus one separator: 2048 × 256 × 25 = 13,107,200 bytes, plus
labels (2048 rows × up to ~64 characters ≈ 0.13 MB) ≈ 13.2 MB = 12.6 MiB. The limit is therefore 16 MiB
(:data:`attention.names.MAX_UPLOAD_BYTES`; Streamlit's ``server.maxUploadSize`` counts MiB: ``maxUploadSize = 16``
in ``.streamlit/config.toml``). Input over the limit is refused before any parsing. :data:`MAX_CELLS` (2²⁰, twice
the largest supported matrix) stops a small-but-dense text such as ``0,0,0,...`` from building millions of cells.

Linear time. Every pattern of the parser is matched in time linear in its input (no nested or overlapping
quantifiers: the number pattern once had ``[0-9]+\\.?[0-9]*``, which backtracks quadratically on
``"1" * 50_000 + "a" * 50_000``: a minute holding the interpreter), and every text is measured before one runs: a
whole paste or file against :data:`MAX_UPLOAD_BYTES` and the expected shape, each line against
:data:`MAX_LINE_CHARS`, each number (a grid cell, an atom of a paste, a CSV cell) against
:data:`attention.names.MAX_NUMBER_CHARS`.
"""

from __future__ import annotations

from ...errors import AttentionError
from ...names import MAX_NUMBER_CHARS, MAX_TOKENS, MAX_UPLOAD_BYTES, MAX_UPLOAD_MB
from .cells import short
from .shapes import dims_for

# MAX_UPLOAD_MB = 16 and MAX_UPLOAD_BYTES = 16,777,216 (what Streamlit's maxUploadSize = 16 allows): in names
MAX_CELLS = 1 << 20  # 1,048,576 cells = 2 × (2048 × 256)
MAX_DEPTH = 3  # a batch of one: [[[...]]]


# The most characters one cell can take (a full-precision float is at most 24, numpy pads with spaces) and one
# label (a token), and the widest row any matrix has (scores: one column per token, plus the label column).
CELL_CHARS, LABEL_CHARS = 64, 256
MAX_LINE_CHARS = (MAX_TOKENS + 1) * CELL_CHARS


def check_size(size: int, name: str, what: str) -> None:
    """Refuse ``size`` bytes (or characters) over :data:`MAX_UPLOAD_BYTES`, before anything is read."""
    if size > MAX_UPLOAD_BYTES:
        raise AttentionError(
            f"{name}: the {what} is too large ({size / 1024 / 1024:.1f} MB); the limit is {MAX_UPLOAD_MB} MB, "
            "enough for a 2048 × 256 matrix at full precision",
            matrix=name,
        )


def decode_text(data: bytes, name: str, label: str = "the file") -> str:
    """An uploaded file's bytes as UTF-8 text (size checked first); a zip, an .npy or binary data is named."""
    check_size(len(data), name, "file")
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


def bound_work(
    text: str, name: str, expected: tuple[int, int] | None, dims: tuple[str, str] | None, source: str
) -> None:
    """Refuse, before building anything, text that cannot be a matrix of the expected shape: more characters
    than its cells and labels could take, or (whatever the shape) more numbers than any supported matrix has,
    counted from its commas. Costs a few C-level passes over the text, so a 16 MB paste is refused at once."""
    if expected is not None:
        r, c = expected
        limit = (r + 1) * (c + 1) * CELL_CHARS + (r + c) * LABEL_CHARS + 4096
        if len(text) > limit:
            d = dims_for(name, dims)
            raise AttentionError(
                f"{name} must be {r} × {c} ({d[0]} × {d[1]}); the {source} has {len(text):,} characters, more than "
                f"such a matrix can take (about {limit:,}), so it was not read",
                matrix=name,
            )
    at_least = text.count(",") - text.count("]") - text.count(")") - text.count("\n")  # numbers separated by commas
    if at_least > MAX_CELLS:
        raise AttentionError(
            f"{name}: the {source} has more than {MAX_CELLS:,} numbers; that is larger than any supported matrix",
            matrix=name,
        )


def bound_lines(text: str, name: str, source: str) -> None:
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
                f"({short(text[start : start + 40])}); a number has at most {MAX_NUMBER_CHARS:,}",
                matrix=name,
            )
        start = end + 1
