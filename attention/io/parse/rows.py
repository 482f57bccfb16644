"""CSV and plain rows: cells split by commas, tabs, semicolons or spaces, with label rows and columns detected."""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from ...errors import AttentionError, cell_name
from .cells import cell_value, count, is_number_text, unprotect_label
from .limits import MAX_CELLS, bound_lines, check_size, decode_text
from .shapes import shape_error


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
        text = decode_text(data, name)
    elif isinstance(data, str):
        check_size(len(data), name, "file")
        text = data
    else:
        raise AttentionError(f"{name}: expected the file's bytes or text, got {type(data).__name__}", matrix=name)
    text = text.lstrip("\ufeff")
    if not text.strip():
        raise AttentionError(f"{name}: the file is empty; it needs at least one row of numbers", matrix=name)
    bound_lines(text, name, "file")
    return parse_rows(text, name, expected_shape, dims, "file", allow_neg_inf=allow_neg_inf, csv_mode=True)


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


def _cells_by_line(text: str, delim: str | None) -> Iterator[tuple[list[str], int]]:
    """Each non-blank row's cells and its line number: split on whitespace without a delimiter, else read as CSV."""
    if delim is None:
        for i, line in enumerate(text.splitlines(), start=1):
            cells = line.split()
            if cells:
                yield cells, i
        return
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    try:
        for row in reader:
            if any(c.strip() for c in row):
                yield list(row), reader.line_num
    except csv.Error as exc:
        raise AttentionError(f"the text is not valid CSV (line {reader.line_num}: {exc})") from None


def _split(text: str, csv_mode: bool) -> tuple[list[list[str]], list[int]]:
    """Rows of stripped cell strings and each row's line number; blank lines are skipped."""
    delim = _sniff(text) or ("," if csv_mode else None)
    rows: list[list[str]] = []
    lines: list[int] = []
    cells = 0
    for row, line in _cells_by_line(text, delim):
        rows.append(row)
        lines.append(line)
        cells += len(row)
        if cells > MAX_CELLS:
            break
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


def parse_rows(
    text: str,
    name: str,
    expected: tuple[int, int] | None,
    dims: tuple[str, str] | None,
    source: str,
    *,
    allow_neg_inf: bool,
    csv_mode: bool = False,
) -> tuple[np.ndarray, list[str] | None, list[str] | None]:
    """Rows of cells as ``(matrix, row_labels, col_labels)``: the label row and label column found (the expected
    shape settles doubtful cases), every row checked to be as wide as the first, then every cell read."""
    rows, lines = _rows(text, name, source, csv_mode)
    _some_numbers(rows, name, source)
    width = max(len(r) for r in rows)
    header, indexed = _header(rows, width, expected, csv_mode)
    body, body_lines = (rows[1:], lines[1:]) if header else (rows, lines)
    if not body:
        raise AttentionError(f"{name}: the {source} has a label row but no rows of numbers", matrix=name)
    label_col = _label_column([r[0] for r in body], rows[0], width, header, indexed, expected)
    data_width = _same_width(body, body_lines, label_col, name)
    ncols = data_width - 1 if label_col else data_width
    if ncols < 1:
        raise AttentionError(f"{name}: the {source} has labels but no columns of numbers", matrix=name)
    row_labels = [unprotect_label(r[0]) for r in body] if label_col else None
    col_labels = _column_labels(rows[0], label_col, data_width, ncols, name) if header else None
    if expected is not None and (len(body), ncols) != tuple(expected):
        raise shape_error(name, expected, (len(body), ncols), dims, source)
    return _numbers(body, ncols, label_col, row_labels, col_labels, name, allow_neg_inf), row_labels, col_labels


def _rows(text: str, name: str, source: str, csv_mode: bool) -> tuple[list[list[str]], list[int]]:
    """:func:`_split`, its messages naming the matrix; at least one row."""
    try:
        rows, lines = _split(text, csv_mode)
    except AttentionError as exc:
        raise AttentionError(f"{name}: {exc.message}", matrix=name) from None
    if not rows:
        raise AttentionError(f"{name}: the {source} is empty; it needs at least one row of numbers", matrix=name)
    return rows, lines


def _some_numbers(rows: list[list[str]], name: str, source: str) -> None:
    """Refuse text that is words, not numbers (prose, a letter): no cell is a number, or the words outnumber the
    numbers more than the labels of a table could (a label row and a label column beside at least one number)."""
    cells = [c for r in rows for c in r if c.strip()]
    numbers = sum(map(is_number_text, cells))
    labels = max(len(r) for r in rows) + len(rows)  # at most a label row and a label column
    if numbers == 0 or len(cells) - numbers > max(labels, numbers):
        found = f"only {count(numbers, 'number')} among {len(cells):,} words" if numbers else "no numbers were found"
        raise AttentionError(
            f"{name}: {found} in the {source}: it reads as text, not a matrix. It needs rows of numbers, one row per "
            "line, separated by commas, tabs or spaces (a label row and column may frame them).",
            matrix=name,
        )


def _label_row(rows: list[list[str]]) -> bool:
    """A first row with no numbers and some text, above more rows."""
    row0 = rows[0]
    return len(rows) > 1 and not any(is_number_text(c) for c in row0) and any(_textual(c) for c in row0)


def _index_header(rows: list[list[str]], width: int, csv_mode: bool) -> bool:
    """pandas' headers: ``to_csv``'s empty corner then 0, 1, 2...; ``print``'s row one cell short of the others
    (labels or 0, 1, 2..., in plain rows). Either says the first column is an index or labels too."""
    row0 = rows[0]
    several = len(rows) > 1
    to_csv = several and not row0[0].strip() and len(row0) > 1 and _is_index(row0[1:], 0)
    printed = (
        not csv_mode
        and several
        and len(row0) == width - 1
        and all(len(r) == width for r in rows[1:])
        and (_label_row(rows) or _is_index(row0, 0))
    )
    return to_csv or printed


def _header(rows: list[list[str]], width: int, expected: tuple[int, int] | None, csv_mode: bool) -> tuple[bool, bool]:
    """(the first row is labels, it is one of pandas' index headers)."""
    indexed = _index_header(rows, width, csv_mode)
    header = _label_row(rows) or indexed
    if expected is None:
        return header, indexed
    # The expected shape settles doubtful cases: a formula such as =1+1 where the shape needs a number is bad
    # data (labels written by matrix_csv never start with one), and a first row that must be labels is labels.
    row0 = rows[0]
    if header and len(rows) == expected[0] and not indexed and any(_formula(c) for c in row0):
        return False, indexed
    if not header and len(rows) == expected[0] + 1 and (any(_textual(c) for c in row0) or _is_index(row0, 0)):
        return True, indexed
    return header, indexed


def _label_column(
    col0: list[str],
    row0: list[str],
    width: int,
    header: bool,
    indexed: bool,
    expected: tuple[int, int] | None,
) -> bool:
    """The first column is labels: no numbers in it; or pandas' index (or labels) under an index header; or an
    empty corner above it. The expected width settles doubtful cases as for the label row."""
    label = width > 1 and not any(is_number_text(c) for c in col0) and any(_textual(c) for c in col0)
    if indexed and (all(_textual(c) for c in col0) or _is_index(col0, 0) or _is_index(col0, 1)):
        label = True
    if header and not label and not row0[0].strip() and width > 1:
        label = True
    if expected is None:
        return label
    if label and width == expected[1] and not indexed and any(_formula(c) for c in col0):
        return False
    if not label and width == expected[1] + 1 and (header or any(_textual(c) for c in col0)):
        return True
    return label


def _same_width(body: list[list[str]], body_lines: list[int], label_col: bool, name: str) -> int:
    """The cells of a data row (label included); a ragged row is refused, named by its label and line."""
    data_width = len(body[0])
    for i, r in enumerate(body):
        if len(r) != data_width:
            what = f"row {i + 1}" + (f" ({unprotect_label(r[0])!r})" if label_col and r else "")
            raise AttentionError(
                f"{name}: {what} (line {body_lines[i]}) has {count(len(r), 'cell')} but row 1 has {data_width}; "
                "every row needs the same number of cells",
                matrix=name,
                cell=(i, min(len(r), data_width) - (1 if label_col else 0)),
            )
    return data_width


def _column_labels(row0: list[str], label_col: bool, data_width: int, ncols: int, name: str) -> list[str]:
    """The label row's labels, one per column of numbers (its corner cell left out when it has one)."""
    names = row0[1:] if label_col and len(row0) == data_width else row0
    if len(names) != ncols:
        raise AttentionError(
            f"{name}: the label row has {len(row0)} cells but the rows have {data_width}; they must line up",
            matrix=name,
        )
    return [unprotect_label(c) for c in names]


def _numbers(
    body: list[list[str]],
    ncols: int,
    label_col: bool,
    row_labels: list[str] | None,
    col_labels: list[str] | None,
    name: str,
    allow_neg_inf: bool,
) -> np.ndarray:
    """Every data cell read by the cell rule, a bad one named by its labels."""
    out = np.empty((len(body), ncols), dtype=np.float64)  # (rows, cols)
    off = 1 if label_col else 0
    for i, r in enumerate(body):
        for j in range(ncols):
            where = cell_name((i, j), row_labels, col_labels)
            out[i, j] = cell_value(r[j + off], name, where, (i, j), allow_neg_inf)
    return out
