"""Tabular export: one matrix or table as CSV, and a zip of the whole trace (code export is :mod:`.codegen`).

* :func:`matrix_csv` writes one labelled matrix as UTF-8 CSV at full precision (``repr`` of every
  float, so ``-0.0``, ``1e-300`` and subnormals re-read bit-exact), with every text cell guarded
  against spreadsheet formula injection. :func:`attention.io.parse.read_matrix_csv` reads it back.
* :func:`trace_zip` bundles every matrix of a trace, the preset JSON and a README.

No Streamlit here: everything returns bytes or text for the UI to offer as a download.
"""

from __future__ import annotations

import csv
import io
import unicodedata
import zipfile
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .. import names
from ..errors import AttentionError
from ..names import ARRAYS, axis_labels, corner_label, dimension_labels, is_number
from ..trace import Trace
from .parse.cells import is_number_text
from .presets import Preset

# OWASP "CSV injection": a cell starting with one of these may run as a formula in a spreadsheet.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same trace always gives the same zip bytes

_BATCHED = ("X", "Q", "K", "V", "scores", "scaled", "weights", "output")
_DESCRIPTIONS = {
    "X": "input embeddings, one row per token",
    "W_q": "query weights",
    "W_k": "key weights",
    "W_v": "value weights",
    "Q": "queries, Q = X·W_q",
    "K": "keys, K = X·W_k",
    "V": "values, V = X·W_v",
    "scores": "raw scores Q·Kᵀ (rows: queries, columns: keys)",
    "scaled": "scaled (and masked) scores; masked cells are written as -inf",
    "weights": "attention weights, softmax of each row (rows sum to 1; a fully masked row is all 0)",
    "output": "output, weights·V (then ·W_o when W_o.csv is there)",
    "P": "learned positions, added to X before the projections (one row per position)",
    "W_o": "output mixing weights: output = concat·W_o",
    "concat": "the heads' outputs side by side, before W_o",
}


# ------------------------------------------------------------------------------------------------- CSV


def protect_text(text: str) -> str:
    """A text cell made safe for spreadsheets, reversibly.

    Prefixes ``'`` when the text starts with ``=``, ``+``, ``-``, ``@``, tab or CR (the OWASP rule for
    formula injection), when it already starts with ``'`` (so reading strips exactly one again), when
    it would read as a number (so a token such as ``"2"`` comes back as a label, not as data), and when
    it is empty or has surrounding whitespace (so the reader, which strips unguarded cells, keeps it).
    :func:`attention.io.parse.unprotect_label` undoes it.
    """
    text = str(text)
    if (
        not text
        or text != text.strip()
        or text.startswith(FORMULA_START)
        or text.startswith("'")
        or is_number_text(text)
    ):
        return "'" + text
    return text


def matrix_labels(name: str, trace: Trace, tokens: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """(row labels, column labels) of the named matrix of ``trace`` (see :func:`shape_labels`).
    ``tokens`` defaults to the trace's tokens, then to t1..tn."""
    if name not in ARRAYS:
        raise AttentionError(f"unknown matrix {name!r}; choose one of {', '.join(ARRAYS)}")
    n = trace.X.shape[-2]
    toks = list(tokens) if tokens is not None else (list(trace.tokens) or dimension_labels("t", n))
    if len(toks) != n:
        raise AttentionError(f"{len(toks)} token labels given for {n} rows of X; give one label per token")
    d_v = trace.concat.shape[-1] if trace.concat is not None else None  # the heads' width, before W_o
    return axis_labels(
        name, getattr(trace, name).shape[-2:], toks, trace.options.projection, trace.tokens_kv or None, d_v
    )


def matrix_csv(
    matrix: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    corner: str = "token",
    *,
    bom: bool = False,
) -> bytes:
    """One labelled matrix as UTF-8 CSV bytes.

    ``matrix`` is 2-D (rows, cols); the header is ``corner, col_labels...`` and each row starts with its
    row label. Numbers are ``repr(float)`` (shortest text that re-reads to the same float64: ``-0.0``,
    ``1e-300``, ``5e-324``, ``0.30000000000000004``; a masked cell is ``-inf``) and are never prefixed.
    Every text cell (labels, corner) goes through :func:`protect_text`. Quoting is the csv module's
    minimal quoting; lines end with CRLF (RFC 4180). ``bom=True`` adds a UTF-8 byte order mark (helps
    Excel show non-ASCII labels). Raises AttentionError for a non-2-D matrix or a label count mismatch.
    """
    try:
        arr = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError):
        raise AttentionError("the matrix to write must hold numbers") from None
    if arr.ndim != 2:
        raise AttentionError(f"only a 2-D matrix can be written as CSV; got shape {arr.shape}")
    rows, cols = list(row_labels), list(col_labels)
    if len(rows) != arr.shape[0]:
        raise AttentionError(f"{len(rows)} row labels for a matrix with {arr.shape[0]} rows; give one label per row")
    if len(cols) != arr.shape[1]:
        raise AttentionError(
            f"{len(cols)} column labels for a matrix with {arr.shape[1]} columns; give one label per column"
        )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([protect_text(corner)] + [protect_text(c) for c in cols])
    for label, values in zip(rows, arr.tolist(), strict=True):
        writer.writerow([protect_text(label)] + [repr(float(x)) for x in values])
    return ("\ufeff" if bom else "").encode("utf-8") + out.getvalue().encode("utf-8")


def trace_files(
    trace: Trace, tokens: Sequence[str] | None = None
) -> dict[str, tuple[np.ndarray, list[str], list[str]]]:
    """The CSV files of :func:`trace_zip` before writing: ``{file name: (2-D array, row labels, col labels)}``.

    With a batch axis, batch item 0 is used; with h > 1 heads, scores/scaled/weights (h, n, n) become
    one file per head (``scores_head1.csv`` ...).
    """
    out: dict[str, tuple[np.ndarray, list[str], list[str]]] = {}
    batched = trace.X.ndim == 3
    for name in ARRAYS:
        arr = np.asarray(getattr(trace, name))
        if batched and name in _BATCHED:
            arr = arr[0]
        rows, cols = matrix_labels(name, trace, tokens)
        if arr.ndim == 3:  # heads
            for h in range(arr.shape[0]):
                out[f"{name}_head{h + 1}.csv"] = (arr[h], rows, cols)
        else:
            out[f"{name}.csv"] = (arr, rows, cols)
    toks = list(tokens) if tokens is not None else (list(trace.tokens) or dimension_labels("t", trace.X.shape[-2]))
    extras = {"P": trace.positions_added if trace.options.positions == "learned" else None, "W_o": trace.W_o}
    if trace.W_o is not None:
        extras["concat"] = trace.concat[0] if batched else trace.concat
    for name, arr in extras.items():
        if arr is not None:
            label_as = "output" if name == "concat" else name
            out[f"{name}.csv"] = (
                np.asarray(arr),
                *axis_labels(label_as, np.shape(arr), toks, trace.options.projection),
            )
    return out


def _zip_write(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3  # Unix, on every platform: the same bytes everywhere
    info.external_attr = 0o100644 << 16
    zf.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)


def one_line(text: object, limit: int = 200) -> str:
    """User text made safe for one line of a README or a code comment: control and line-break characters
    become spaces, runs of spaces one space, and long text is cut with an ellipsis."""
    s = "".join(" " if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch for ch in str(text))
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def conventions(o) -> str:
    """The options in words, for README files and code comments."""
    proj = "Q = X·W (W is d_model × d_k)" if o.projection == "x_w" else "Q = X·Wᵀ (W is d_k × d_model)"
    soft = f"softmax subtracts {names.SOFTMAX_WORDS[o.softmax].subtracts}"
    soft = "softmax is a plain exp / row sum (nothing subtracted)" if o.softmax == "none" else soft
    scale = "scale 1/√d_k" if o.scale is None else f"scale {float(o.scale)!r}"
    mask = " + ".join(o.mask) + " mask" if o.mask else "no mask"
    parts = [
        proj,
        soft,
        scale,
        f"temperature {float(o.temperature)!r}",
        mask,
        f"{o.heads} head" + ("s" if o.heads > 1 else ""),
        *([f"{o.kv} key/value head" + ("s" if o.kv > 1 else "")] if o.kv != o.heads else []),
        *([f"window {o.window}"] if "window" in o.mask else []),
        *([f"{o.positions} positions"] if o.positions != "none" else []),
        *([rotation_words(o)] if o.positions == "rotary" and not o.plain_rotation else []),
    ]
    return "; ".join(parts)


def rotation_words(o) -> str:
    """How rotary positions turn Q and K when it is not the paper's way: base, pairs, rotated columns, scaling."""
    pairs = "pairs (i, i + r/2)" if o.rotary_layout == "halves" else "pairs (2i, 2i+1)"
    dims = "" if o.rotary_dims is None else f", the first {o.rotary_dims} columns of each head"
    scaled = "" if o.rope_scaling == "none" else f", {o.rope_scaling} scaling by {float(o.rope_factor):g}"
    return f"RoPE base {float(o.rope_theta):.10g}, {pairs}{dims}{scaled}"


def trace_zip(trace: Trace, preset: Preset) -> bytes:
    """A zip of every matrix of ``trace`` as CSV, plus ``preset.json`` and ``README.txt``; deterministic bytes.

    Files: X, W_q, W_k, W_v, Q, K, V, scores, scaled, weights, output (``.csv``, labelled as
    :func:`matrix_labels`; masked cells of ``scaled`` are ``-inf``), ``preset.json`` (=
    ``preset.to_json()``: settings and matrices, loadable with :func:`attention.parse_preset`) and
    ``README.txt`` (file list with shapes). A batched trace (X of shape (B, n, d)) is written for batch
    item 0, and the README says so. Every entry has a fixed 1980-01-01 timestamp.
    """
    tokens = list(trace.tokens) or list(preset.tokens)
    files = trace_files(trace, tokens)
    batched = trace.X.ndim == 3
    kind = "self" if trace.X_kv is None else "cross"
    lines = [
        f"{one_line(preset.title)}: scaled dot-product {kind}-attention, every step",
        "",
        f"Tokens: {', '.join(one_line(t) for t in tokens)}",
        *(
            [f"Source tokens (keys and values): {', '.join(one_line(t) for t in trace.tokens_kv)}"]
            if trace.tokens_kv
            else []
        ),
        f"Conventions: {conventions(trace.options)}",
        "",
        "Files (rows × columns):",
    ]
    for fname, (arr, _, _) in files.items():
        base = fname.rsplit(".", 1)[0].split("_head")[0]
        head = f", head {fname.split('_head')[1].split('.')[0]}" if "_head" in fname else ""
        lines.append(f"  {fname:<20} {arr.shape[0]} × {arr.shape[1]}  {_DESCRIPTIONS[base]}{head}")
    lines += [
        "  preset.json          the settings and the input matrices (load it in the dashboard, or with "
        "attention.parse_preset)",
        "  README.txt           this file",
        "",
        "Numbers are written at full precision (Python's repr of each 64-bit float), so they re-read bit-exact.",
        "Masked cells of scaled.csv (forbidden by the causal or padding mask) are written as -inf; their weights are "
        "0.",
        "Text cells that a spreadsheet could run as a formula (starting with = + - @, tab or CR), that start with ', "
        "or",
        "that look like numbers are prefixed with ' ; strip one leading ' to get the label back.",
    ]
    if batched:
        lines.append(
            f"X has a batch axis (shape {trace.X.shape}); the CSV files hold batch item 1 of {trace.X.shape[0]} "
            "(index 0), and preset.json keeps the full shape."
        )
    if trace.options.heads > 1:
        lines.append(
            f"{trace.options.heads} heads: Q, K, V and output hold all heads side by side (head i is the i-th block of "
            "columns); scores, scaled and weights are written once per head."
        )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for fname, (arr, rows, cols) in files.items():
            base = fname.rsplit(".", 1)[0].split("_head")[0]
            _zip_write(zf, fname, matrix_csv(arr, rows, cols, corner=corner_label(base)))
        _zip_write(zf, "preset.json", preset.to_json().encode("utf-8"))
        _zip_write(zf, "README.txt", ("\n".join(lines) + "\n").encode("utf-8"))
    return buf.getvalue()


def table_csv(df: pd.DataFrame) -> bytes:
    """A small table (text and number columns) as UTF-8 CSV: numbers at full precision, every text
    cell guarded against formula injection like :func:`matrix_csv`'s labels."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([protect_text(str(c)) for c in df.columns])
    for row in df.itertuples(index=False):
        writer.writerow([repr(float(v)) if is_number(v) else protect_text(str(v)) for v in row])
    return out.getvalue().encode("utf-8")
