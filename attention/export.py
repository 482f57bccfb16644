"""Taking the numbers home: CSV per matrix, a zip of the whole trace, and the state as runnable code.

* :func:`matrix_csv` writes one labelled matrix as UTF-8 CSV at full precision (``repr`` of every
  float, so ``-0.0``, ``1e-300`` and subnormals re-read bit-exact), with every text cell guarded
  against spreadsheet formula injection. :func:`attention.parse.read_matrix_csv` reads it back.
* :func:`trace_zip` bundles every matrix of a trace, the preset JSON and a README.
* :func:`python_script` and :func:`notebook` turn a preset (the current state) into a numpy-only
  script / Jupyter notebook that rebuilds it and prints every step like the documents do.

No Streamlit here: everything returns bytes or text for the UI to offer as a download.
"""

from __future__ import annotations

import csv
import html
import io
import json
import unicodedata
import zipfile
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .errors import AttentionError
from .parse import is_number_text
from .presets import Preset
from .trace import ARRAY_NAMES, Trace

# OWASP "CSV injection": a cell starting with one of these may run as a formula in a spreadsheet.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same trace always gives the same zip bytes

_SQUARE = ("scores", "scaled", "weights")
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
    "output": "output, weights·V",
}


# ------------------------------------------------------------------------------------------------- CSV


def protect_text(text: str) -> str:
    """A text cell made safe for spreadsheets, reversibly.

    Prefixes ``'`` when the text starts with ``=``, ``+``, ``-``, ``@``, tab or CR (the OWASP rule for
    formula injection), when it already starts with ``'`` (so reading strips exactly one again), when
    it would read as a number (so a token such as ``"2"`` comes back as a label, not as data), and when
    it is empty or has surrounding whitespace (so the reader, which strips unguarded cells, keeps it).
    :func:`attention.parse.unprotect_label` undoes it.
    """
    text = str(text)
    if not text or text != text.strip() or text.startswith(FORMULA_START) or text.startswith("'") or is_number_text(text):
        return "'" + text
    return text


def dimension_labels(prefix: str, n: int) -> list[str]:
    """``[prefix1, prefix2, ..., prefix<n>]``, e.g. ``dimension_labels("d", 3) == ["d1", "d2", "d3"]``."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise AttentionError(f"the number of dimension labels must be a whole number ≥ 0; got {n!r}")
    return [f"{prefix}{i}" for i in range(1, int(n) + 1)]


def matrix_labels(name: str, trace: Trace, tokens: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """(row labels, column labels) of the named matrix of ``trace`` (see :func:`shape_labels`).
    ``tokens`` defaults to the trace's tokens, then to t1..tn."""
    if name not in ARRAY_NAMES:
        raise AttentionError(f"unknown matrix {name!r}; choose one of {', '.join(ARRAY_NAMES)}")
    n = trace.X.shape[-2]
    toks = list(tokens) if tokens is not None else (list(trace.tokens) or dimension_labels("t", n))
    if len(toks) != n:
        raise AttentionError(f"{len(toks)} token labels given for {n} rows of X; give one label per token")
    return shape_labels(name, getattr(trace, name).shape[-2:], toks, trace.options.projection)


def token_labels(tokens: Sequence[str]) -> list[str]:
    """Token names made unique for axes, tables and CSVs: a repeated token gets its position, 'the (5)'."""
    counts: dict[str, int] = {}
    for t in tokens:
        counts[t] = counts.get(t, 0) + 1
    return [t if counts[t] == 1 else f"{t} ({i + 1})" for i, t in enumerate(tokens)]


def shape_labels(name: str, shape: Sequence[int], tokens: Sequence[str], projection: str = "x_w") -> tuple[list[str], list[str]]:
    """(row labels, column labels) of a named matrix of the given 2-D shape.

    X: tokens × d1..d_model; W_q, W_k: d1.. × k1.. (projection "x_wt": k1.. × d1..); W_v: d1.. × v1..
    ("x_wt": v1.. × d1..); Q, K: tokens × k1..; V, output: tokens × v1..; scores, scaled, weights:
    tokens (queries) × tokens (keys).
    """
    toks = [str(t) for t in tokens]
    r, c = int(shape[-2]), int(shape[-1])
    if name in _SQUARE:
        return list(toks), list(toks)
    if name in ("W_q", "W_k", "W_v"):
        out = "v" if name == "W_v" else "k"
        if projection == "x_wt":
            return dimension_labels(out, r), dimension_labels("d", c)
        return dimension_labels("d", r), dimension_labels(out, c)
    cols = {"X": "d", "Q": "k", "K": "k", "V": "v", "output": "v"}.get(name)
    if cols is None:
        raise AttentionError(f"unknown matrix {name!r}; choose one of {', '.join(ARRAY_NAMES)}")
    return list(toks), dimension_labels(cols, c)


def matrix_csv(matrix: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str], corner: str = "token", *,
               bom: bool = False) -> bytes:
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
        raise AttentionError(f"{len(cols)} column labels for a matrix with {arr.shape[1]} columns; give one label per column")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([protect_text(corner)] + [protect_text(c) for c in cols])
    for label, values in zip(rows, arr.tolist(), strict=True):
        writer.writerow([protect_text(label)] + [repr(float(x)) for x in values])
    return ("\ufeff" if bom else "").encode("utf-8") + out.getvalue().encode("utf-8")


def _corner(name: str) -> str:
    if name in _SQUARE:
        return "query \\ key"
    if name.startswith("W_"):
        return "dim"
    return "token"


def trace_files(trace: Trace, tokens: Sequence[str] | None = None) -> dict[str, tuple[np.ndarray, list[str], list[str]]]:
    """The CSV files of :func:`trace_zip` before writing: ``{file name: (2-D array, row labels, col labels)}``.

    With a batch axis, batch item 0 is used; with h > 1 heads, scores/scaled/weights (h, n, n) become
    one file per head (``scores_head1.csv`` ...).
    """
    out: dict[str, tuple[np.ndarray, list[str], list[str]]] = {}
    batched = trace.X.ndim == 3
    for name in ARRAY_NAMES:
        arr = np.asarray(getattr(trace, name))
        if batched and name in _BATCHED:
            arr = arr[0]
        rows, cols = matrix_labels(name, trace, tokens)
        if arr.ndim == 3:  # heads
            for h in range(arr.shape[0]):
                out[f"{name}_head{h + 1}.csv"] = (arr[h], rows, cols)
        else:
            out[f"{name}.csv"] = (arr, rows, cols)
    return out


def _zip_write(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3  # Unix, on every platform: the same bytes everywhere
    info.external_attr = 0o100644 << 16
    zf.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)


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
    lines = [
        f"{_one_line(preset.title)}: scaled dot-product self-attention, every step",
        "",
        f"Tokens: {', '.join(_one_line(t) for t in tokens)}",
        f"Conventions: {_conventions(trace.options)}",
        "",
        "Files (rows × columns):",
    ]
    for fname, (arr, _, _) in files.items():
        base = fname.rsplit(".", 1)[0].split("_head")[0]
        head = f", head {fname.split('_head')[1].split('.')[0]}" if "_head" in fname else ""
        lines.append(f"  {fname:<20} {arr.shape[0]} × {arr.shape[1]}  {_DESCRIPTIONS[base]}{head}")
    lines += [
        "  preset.json          the settings and the input matrices (load it in the dashboard, or with attention.parse_preset)",
        "  README.txt           this file",
        "",
        "Numbers are written at full precision (Python's repr of each 64-bit float), so they re-read bit-exact.",
        "Masked cells of scaled.csv (forbidden by the causal or padding mask) are written as -inf; their weights are 0.",
        "Text cells that a spreadsheet could run as a formula (starting with = + - @, tab or CR), that start with ', or",
        "that look like numbers are prefixed with ' ; strip one leading ' to get the label back.",
    ]
    if batched:
        lines.append(f"X has a batch axis (shape {trace.X.shape}); the CSV files hold batch item 1 of {trace.X.shape[0]} "
                     "(index 0), and preset.json keeps the full shape.")
    if trace.options.heads > 1:
        lines.append(f"{trace.options.heads} heads: Q, K, V and output hold all heads side by side (head i is the i-th block of "
                     "columns); scores, scaled and weights are written once per head.")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for fname, (arr, rows, cols) in files.items():
            base = fname.rsplit(".", 1)[0].split("_head")[0]
            _zip_write(zf, fname, matrix_csv(arr, rows, cols, corner=_corner(base)))
        _zip_write(zf, "preset.json", preset.to_json().encode("utf-8"))
        _zip_write(zf, "README.txt", ("\n".join(lines) + "\n").encode("utf-8"))
    return buf.getvalue()


# ------------------------------------------------------------------------------------------ code export


def _one_line(text: object, limit: int = 200) -> str:
    """User text made safe for a comment line: control and line-break characters become spaces."""
    s = "".join(" " if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch for ch in str(text))
    s = " ".join(s.split())
    return s if len(s) <= limit else s[:limit - 1] + "…"


def _md(text: object) -> str:
    """User text made safe for notebook markdown (no HTML, no markdown syntax)."""
    s = html.escape(_one_line(text), quote=False)
    for ch in "\\`*_{}[]()#+!|~":
        s = s.replace(ch, "\\" + ch)
    return s


def _conventions(o) -> str:
    proj = "Q = X·W (W is d_model × d_k)" if o.projection == "x_w" else "Q = X·Wᵀ (W is d_k × d_model)"
    soft = {"row_max": "softmax subtracts each row's max", "global_max": "softmax subtracts the whole matrix's max",
            "none": "softmax is a plain exp / row sum (nothing subtracted)"}[o.softmax]
    scale = "scale 1/√d_k" if o.scale is None else f"scale {float(o.scale)!r}"
    mask = {"none": "no mask", "causal": "causal mask", "padding": "padding mask"}[o.mask]
    parts = [proj, soft, scale, f"temperature {float(o.temperature)!r}", mask, f"{o.heads} head" + ("s" if o.heads > 1 else "")]
    return "; ".join(parts)


def _num(x: float) -> str:
    return repr(float(x))


def _literal(arr: np.ndarray, indent: str = "") -> str:
    """A nested list literal of ``arr`` with full-precision floats, one row per line."""
    if arr.ndim == 1:
        return "[" + ", ".join(_num(x) for x in arr.tolist()) + "]"
    inner = indent + "    "
    return "[\n" + ",\n".join(inner + _literal(sub, inner) for sub in arr) + ",\n" + indent + "]"


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class _Builder:
    """The steps as (markdown, code) sections, shared by the script and the notebook."""

    def __init__(self, preset: Preset):
        if not isinstance(preset, Preset):
            raise AttentionError(f"expected a Preset, got {type(preset).__name__}")
        self.p = preset
        self.o = preset.options
        self.m = preset.matrices()
        self.X = self.m["X"]
        self.batched = self.X.ndim == 3
        self.n, self.d_model = self.X.shape[-2], self.X.shape[-1]
        t = self.o.projection == "x_wt"
        self.d_k = self.m["W_q"].shape[0 if t else 1]
        self.d_v = self.m["W_v"].shape[0 if t else 1]
        self.h = self.o.heads
        self.seed = None
        if preset.random is not None:
            self.seed = preset.seed if preset.seed is not None else preset.random.seed
        self.draws = list(preset.random.draws) if preset.random is not None else []
        self.seeded = False

    # -- pieces
    def draw_lines(self, names: Sequence[str]) -> list[str]:
        out = []
        for name, shape in self.draws:
            if name in names:
                if not self.seeded:
                    out.append(f"np.random.seed({self.seed})  # numpy's legacy global generator: the documents' stream")
                    self.seeded = True
                out.append(f"{name} = np.random.rand({', '.join(str(s) for s in shape)})  # uniform on [0, 1), shape {_shape_text(shape)}")
        return out

    def fixed_lines(self, name: str) -> list[str]:
        if name not in self.p.fixed:
            return []
        arr = np.asarray(self.p.fixed[name], dtype=np.float64)
        return [f"{name} = np.array({_literal(arr)})  # shape {_shape_text(arr.shape)}"]

    def sections(self) -> list[tuple[str, str]]:
        p, o, h = self.p, self.o, self.h
        drawn = [n for n, _ in self.draws]
        secs: list[tuple[str, str]] = []
        n, dm, dk, dv = self.n, self.d_model, self.d_k, self.d_v
        xshape = _shape_text(self.X.shape)

        # 1. tokens and X
        code = [f"tokens = {list(p.tokens)!r}"]
        if "X" in drawn and drawn[0] != "X":
            code += self.fixed_lines("X") + self.draw_lines(drawn)  # keep the declared draw order
        else:
            code += self.fixed_lines("X") + self.draw_lines(["X"])
        code += ['print("Input tokens:", tokens)', 'print("X:\\n", X)']
        md = (f"## Step 1: tokens and embeddings (X)\n\nEach of the {n} tokens is one row of X, a vector of d_model = {dm} numbers: "
              f"X has shape {xshape}.")
        if self.batched:
            md += (f" X carries a batch axis (a batch of {self.X.shape[0]}), as in the document: every step below uses `@`, "
                   "which keeps that axis.")
        secs.append((md, "\n".join(code)))

        # 2. weights
        code = []
        for name in ("W_q", "W_k", "W_v"):
            code += self.fixed_lines(name)
        code += self.draw_lines([w for w in ("W_q", "W_k", "W_v")])
        code += ['print("W_q:\\n", W_q)', 'print("W_k:\\n", W_k)', 'print("W_v:\\n", W_v)']
        layout = "d_model × d_k" if o.projection == "x_w" else "d_k × d_model (the transposed layout)"
        md = (f"## Step 2: weights W_q, W_k, W_v\n\nThree weight matrices, each {layout}, turn an embedding into a query, "
              f"a key and a value. Here d_k = {dk} and d_v = {dv}.")
        if self.draws:
            md += (f" The random ones come from `np.random.seed({self.seed})` followed by `np.random.rand` in the order "
                   f"{', '.join(drawn)}: numpy's legacy generator, so the numbers are the same on every machine.")
        secs.append((md, "\n".join(code)))

        # 3. Q, K, V
        t = ".T" if o.projection == "x_wt" else ""
        op_q, op_k, op_v = (f"X·{w}ᵀ" if t else f"X·{w}" for w in ("W_q", "W_k", "W_v"))
        if h == 1:
            qshape = _shape_text(self.X.shape[:-1] + (dk,))
            wshape = _shape_text(self.m["W_q"].shape)
            code = [f"Q = X @ W_q{t}  # {xshape} @ {wshape}{t} -> {qshape}",
                    f"K = X @ W_k{t}",
                    f"V = X @ W_v{t}"]
            md = f"## Step 3: queries, keys and values\n\nQ = {op_q}, K = {op_k}, V = {op_v}: one query, key and value per token."
        else:
            if t:
                sl_q, sl_v = "W_q[i * d_head:(i + 1) * d_head, :].T", "W_v[i * dv_head:(i + 1) * dv_head, :].T"
                sl_k = "W_k[i * d_head:(i + 1) * d_head, :].T"
                wd = "W_q.shape[0]", "W_v.shape[0]"
            else:
                sl_q, sl_v = "W_q[:, i * d_head:(i + 1) * d_head]", "W_v[:, i * dv_head:(i + 1) * dv_head]"
                sl_k = "W_k[:, i * d_head:(i + 1) * d_head]"
                wd = "W_q.shape[1]", "W_v.shape[1]"
            code = [f"h = {h}  # heads",
                    f"d_head = {wd[0]} // h  # query/key width per head",
                    f"dv_head = {wd[1]} // h  # value width per head",
                    f"Q_heads = [X @ {sl_q} for i in range(h)]",
                    f"K_heads = [X @ {sl_k} for i in range(h)]",
                    f"V_heads = [X @ {sl_v} for i in range(h)]",
                    "Q = np.concatenate(Q_heads, axis=-1)  # all heads side by side",
                    "K = np.concatenate(K_heads, axis=-1)",
                    "V = np.concatenate(V_heads, axis=-1)"]
            md = (f"## Step 3: queries, keys and values, split into {h} heads\n\nQ = {op_q}, K = {op_k}, V = {op_v}, computed per head: "
                  f"head i uses the i-th block of d_k / h = {dk // h} columns of the weights (and {dv // h} for values). "
                  "Each head then attends on its own.")
        if self.batched:
            code.append("# `@` keeps the batch axis: (1, n, d_model) @ (d_model, d_k) -> (1, n, d_k).")
        code += ['print("Q:\\n", Q)', 'print("K:\\n", K)', 'print("V:\\n", V)']
        secs.append((md, "\n".join(code)))

        # 4. scores
        kt = "np.swapaxes({}, -1, -2)" if self.batched else "{}.T"
        if h == 1:
            code = [f"scores = Q @ {kt.format('K')}  # (..., {n}, {n}): query i · key j"]
        else:
            code = [f"scores = np.stack([Q_i @ {kt.format('K_i')} for Q_i, K_i in zip(Q_heads, K_heads)], axis=-3)"
                    f"  # (..., h, {n}, {n})"]
        if self.batched:
            code.insert(0, "# Not np.dot: on 3-D arrays np.dot pairs every batch item with every other, giving (1, n, 1, n);\n"
                           "# `@` (matmul) treats the first axis as a batch and gives (1, n, n).")
        code.append('print("Scores (Q @ K.T):\\n", scores)')
        md = ("## Step 4: scores\n\nEntry (i, j) of Q·Kᵀ is the dot product of token i's query with token j's key: how well they match. "
              "Rows are queries, columns are keys.")
        secs.append((md, "\n".join(code)))

        # 5. scale and mask
        width = "d_head" if h > 1 else "d_k"
        code = [] if h > 1 else ["d_k = Q.shape[-1]"]
        if o.scale is None:
            code.append(f"scale = 1.0 / np.sqrt({width})  # 1/√{width}")
            md = (f"## Step 5: scaling\n\nEvery score is multiplied by 1/√{width} = 1/√{dk // h}, which keeps the scores' spread "
                  "near 1 so the softmax does not saturate.")
        else:
            code.append(f"scale = {_num(o.scale)}  # a chosen factor instead of 1/√{width}")
            md = f"## Step 5: scaling\n\nEvery score is multiplied by the chosen factor {_num(o.scale)}."
        code.append(f"scaled = scores * scale  # as the dashboard does; scores / np.sqrt({width}) can differ in the last bit"
                    if o.scale is None else "scaled = scores * scale")
        if o.mask == "causal":
            code += ["n = len(tokens)",
                     "allowed = np.tril(np.ones((n, n), dtype=bool))  # causal: token i may attend tokens 1..i",
                     "scaled = np.where(allowed, scaled, -np.inf)  # forbidden cells get -inf, so their weight is 0"]
            md += "\n\nA causal mask forbids each token to look at later tokens: those cells become -inf."
        elif o.mask == "padding":
            code += [f"is_padding = np.array({list(o.padding)!r})  # one flag per token",
                     "n = len(tokens)",
                     "allowed = np.broadcast_to(~is_padding, (n, n))  # no token may attend a padding token",
                     "scaled = np.where(allowed, scaled, -np.inf)  # forbidden cells get -inf, so their weight is 0"]
            md += "\n\nA padding mask forbids every token to attend the tokens flagged as padding: those cells become -inf."
        code.append('print("Scaled scores:\\n", scaled)')
        secs.append((md, "\n".join(code)))

        # 6. softmax
        masked = o.mask != "none"
        if o.softmax == "none":
            body = ["    e = np.exp(x)  # nothing subtracted (exp overflows above about 709.78)"]
            doc = "exp / row sum, nothing subtracted, as document 000 does"
        elif o.softmax == "global_max":
            body = ["    m = np.max(x, axis=(-2, -1), keepdims=True)  # the whole matrix's max"]
            doc = "subtracting the whole matrix's max"
        else:
            body = ["    m = np.max(x, axis=-1, keepdims=True)  # each row's own max (stable)"]
            doc = "each row minus its own max, which is numerically stable"
        if o.softmax != "none":
            if masked:
                body.append("    m = np.where(np.isfinite(m), m, 0.0)  # a fully masked row (all -inf) has max -inf")
            body.append("    e = np.exp(x - m)")
        body.append("    total = np.sum(e, axis=-1, keepdims=True)")
        if masked:
            body.append("    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)  # a fully masked row gets all 0")
        else:
            body.append("    return e / total")
        code = ["def softmax(x):", f'    """Row-wise softmax: {doc}."""'] + body + [""]
        if o.temperature != 1:
            code += [f"temperature = {_num(o.temperature)}  # T > 1 flattens the weights, T < 1 sharpens them",
                     "weights = softmax(scaled / temperature)"]
            tmd = f" Dividing by the temperature T = {_num(o.temperature)} first flattens (T > 1) or sharpens (T < 1) them."
        else:
            code.append("weights = softmax(scaled)")
            tmd = ""
        code.append('print("Attention weights:\\n", weights)')
        md = f"## Step 6: softmax\n\nEach row of scaled scores becomes weights that are positive and sum to 1 ({doc}).{tmd}"
        secs.append((md, "\n".join(code)))

        # 7. output
        if h == 1:
            code = ["output = weights @ V  # each output row mixes the value vectors by that row's weights"]
            md = "## Step 7: output\n\nOutput row i is the weighted sum of the value vectors, with token i's weights."
        else:
            code = ["output = np.concatenate([weights[..., i, :, :] @ V_heads[i] for i in range(h)], axis=-1)  # heads side by side"]
            md = ("## Step 7: output\n\nEach head mixes its own value vectors with its weights; the heads' outputs are concatenated "
                  "side by side (there is no output projection W_o here).")
        code.append('print("Self-attention output:\\n", output)')
        secs.append((md, "\n".join(code)))

        # 8. reading
        w = "weights[0]" if self.batched else "weights"
        if h == 1:
            code = [f"A = {w}  # ({n}, {n})",
                    "for i, token in enumerate(tokens):",
                    "    if A[i].sum() == 0:",
                    "        print(f\"{token!r} attends to nothing (every key is masked)\")",
                    "        continue",
                    "    j = int(np.argmax(A[i]))",
                    "    print(f\"{token!r} attends most to {tokens[j]!r} ({A[i, j]:.4f})\")"]
        else:
            code = [f"A = {w}  # (h, {n}, {n})",
                    "for head in range(h):",
                    "    for i, token in enumerate(tokens):",
                    "        if A[head, i].sum() == 0:",
                    "            print(f\"head {head + 1}: {token!r} attends to nothing (every key is masked)\")",
                    "            continue",
                    "        j = int(np.argmax(A[head, i]))",
                    "        print(f\"head {head + 1}: {token!r} attends most to {tokens[j]!r} ({A[head, i, j]:.4f})\")"]
        md = "## Reading the weights\n\nFor each token, the key with the largest weight is the token it attends to most."
        if any(w in drawn for w in ("W_q", "W_k", "W_v")):
            md += " The weights here are random, so this means nothing yet: training is what makes it meaningful."
        secs.append((md, "\n".join(code)))
        return secs

    def intro(self) -> str:
        p = self.p
        src = p.source.get("document") if p.source else None
        return "\n".join(filter(None, [
            f"{_one_line(p.title)}: scaled dot-product self-attention, step by step.",
            f"Rebuilt from the dashboard's preset {_one_line(p.id)!r}" + (f" (document {_one_line(src)})." if src else "."),
            f"Conventions: {_conventions(self.o)}.",
        ]))


_RESULT_NAMES = ARRAY_NAMES


def python_script(preset: Preset) -> str:
    """A self-contained, numpy-only Python script that rebuilds ``preset`` and prints every step.

    The script writes tokens, fixed matrices as ``np.array([...])`` literals (full ``repr`` precision)
    and random ones as ``np.random.seed(seed)`` + ``np.random.rand(...)`` in the preset's draw order,
    then follows the preset's conventions (X @ W or X @ W.T, softmax variant, scale, temperature, mask,
    heads) with the same numpy operations as the engine, so the arrays are bit-identical to
    ``preset.compute()``. It prints each step like the documents (``print("Q:\\n", Q)``, numpy's default
    8 decimals). Choice for exact checking: run with ``--json`` and it also prints one final line
    ``RESULTS_JSON {...}``: every array as nested lists of full-precision floats (JSON; masked cells are
    ``-Infinity``). A batched X (1, n, d) is handled with ``@`` (np.dot would give 4-D scores).
    """
    b = _Builder(preset)
    lines = ["#!/usr/bin/env python3"]
    lines += [f"# {line}" for line in b.intro().splitlines()]
    lines += [
        "#",
        "# Needs only numpy. Run it:",
        "#     python this_file.py           prints every step (numpy's default 8 decimals, like the documents)",
        "#     python this_file.py --json    also prints a last line RESULTS_JSON {...} with every array at full precision",
        "",
        "import json",
        "import sys",
        "",
        "import numpy as np",
        "",
    ]
    for md, code in b.sections():
        title, _, text = md.partition("\n\n")
        lines.append("# " + "-" * 98)
        lines.append("# " + title.lstrip("# "))
        for para in text.split("\n\n"):
            lines += _wrap_comment(para.replace("`", ""))
        lines.append("")
        lines.append(code)
        lines.append("")
    lines += [
        "# " + "-" * 98,
        "if \"--json\" in sys.argv[1:]:",
        "    results = {" + ", ".join(f"{n!r}: {n}" for n in _RESULT_NAMES) + "}",
        "    print(\"RESULTS_JSON \" + json.dumps({name: np.asarray(value).tolist() for name, value in results.items()}))",
        "",
    ]
    return "\n".join(lines)


def _wrap_comment(text: str, width: int = 100) -> list[str]:
    words, out, line = text.split(), [], "#"
    for word in words:
        if len(line) + 1 + len(word) > width and line != "#":
            out.append(line)
            line = "#"
        line += " " + word
    if line != "#":
        out.append(line)
    return out


def notebook(preset: Preset) -> str:
    """The same steps as :func:`python_script` as a Jupyter notebook (nbformat 4.5 JSON text).

    A markdown cell explains each step, a code cell computes and prints it; code cells have no outputs
    (run the notebook to fill them). Cell ids are fixed (``step-1-md`` ...), so the text is deterministic.
    """
    b = _Builder(preset)
    p = preset
    intro = [f"# {_md(p.title)}", "", "Scaled dot-product self-attention, step by step, in numpy."]
    if p.description:
        intro += ["", _md(p.description)]
    intro += ["", f"Conventions: {_md(_conventions(b.o))}.", "",
              "Generated by the attention dashboard; running every cell in order rebuilds exactly the numbers it showed."]
    cells = [_cell("markdown", "intro", "\n".join(intro)), _cell("code", "setup", "import numpy as np")]
    for i, (md, code) in enumerate(b.sections(), start=1):
        cells.append(_cell("markdown", f"step-{i}-md", md))
        cells.append(_cell("code", f"step-{i}-code", code))
    nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def _cell(kind: str, cell_id: str, text: str) -> dict:
    cell: dict = {"cell_type": kind, "id": cell_id, "metadata": {}, "source": text.splitlines(keepends=True)}
    if kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


__all__ = [
    "FORMULA_START",
    "dimension_labels",
    "matrix_csv",
    "matrix_labels",
    "notebook",
    "protect_text",
    "python_script",
    "trace_files",
    "trace_zip",
]


def table_csv(df: pd.DataFrame) -> bytes:
    """A small table (text and number columns) as UTF-8 CSV: numbers at full precision, every text
    cell guarded against formula injection like :func:`matrix_csv`'s labels."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([protect_text(str(c)) for c in df.columns])
    for row in df.itertuples(index=False):
        writer.writerow([repr(float(v)) if isinstance(v, (float, np.floating, int, np.integer)) and not isinstance(v, bool)
                         else protect_text(str(v)) for v in row])
    return out.getvalue().encode("utf-8")
