"""Every head's attention weights on one text, as one download: an .npz of arrays, or a zip of labelled CSVs.

Both carry what the weights were measured on, as ``about.json``: the model (its name and id), the text (its tokens as
read and their ids), the ablations (layer and head counted from 1, zero or mean) and the weights' shape. The formats
are the import's own (:data:`attention.io.parse.MATRIX_FORMATS`: ``.npz`` and ``.csv``), so a head's file reads back
through the dashboard's uploader.

* :func:`heads_npz`: ``weights`` (layers, heads, n, n) float64, ``tokens`` (n,) and ``ids`` (n,) as arrays, and
  ``about`` the JSON as a 0-d text array; every member is read with ``np.load(..., allow_pickle=False)``.
* :func:`heads_zip`: ``layer{l}_head{h}.csv`` per head (rows: the query tokens, columns: the key tokens, as
  :func:`attention.io.tables.matrix_csv` writes them, full precision), ``about.json`` and ``README.txt``.

No Streamlit here; the bytes are deterministic (fixed zip timestamps).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import AttentionError
from ..names import token_labels
from .tables import _zip_write, matrix_csv, one_line

FORMATS = ("npz", "csv")  # the files written: each one of the import's MATRIX_FORMATS (a test checks)
CORNER = "query \\ key"


@dataclass(frozen=True)
class Measured:
    """What the weights were measured on: the model's name and id, the text's tokens (as a person reads them) and ids,
    the ablations ((layer, head, "zero" or "mean"), 0-based) and the weights (layers, heads, n, n)."""

    model: str
    model_id: str
    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    ablations: tuple[tuple[int, int, str], ...]
    weights: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.tokens)
        if self.weights.ndim != 4 or self.weights.shape[-2:] != (n, n) or len(self.ids) != n:
            raise AttentionError(
                f"every head's weights must be (layers, heads, n, n) for {n} tokens and {len(self.ids)} ids; "
                f"got {self.weights.shape}"
            )


def about(m: Measured) -> dict:
    """The record both files carry, counted from 1 as a person counts heads."""
    L, H, n, _ = m.weights.shape
    return {
        "what": "every head's attention weights on one text: weights[layer, head, query, key], rows sum to 1",
        "model": m.model,
        "model_id": m.model_id,
        "text": list(m.tokens),
        "ids": [int(i) for i in m.ids],
        "ablations": [{"layer": la + 1, "head": h + 1, "how": how} for la, h, how in m.ablations],
        "shape": {"layers": L, "heads": H, "queries": n, "keys": n},
    }


def heads_npz(m: Measured) -> bytes:
    """The weights, tokens, ids and :func:`about` as one compressed .npz (no pickled member)."""
    out = io.BytesIO()
    np.savez_compressed(
        out,
        weights=np.asarray(m.weights, dtype=np.float64),  # (L, H, n, n)
        tokens=np.array(m.tokens, dtype=str),  # (n,)
        ids=np.array(m.ids, dtype=np.int64),  # (n,)
        about=np.array(json.dumps(about(m), ensure_ascii=False)),  # 0-d text
    )
    return out.getvalue()


def head_file(layer: int, head: int) -> str:
    """A head's CSV in the zip, counted from 1: "layer2_head1.csv"."""
    return f"layer{layer + 1}_head{head + 1}.csv"


def heads_zip(m: Measured) -> bytes:
    """One CSV per head (rows and columns named by the tokens), ``about.json`` and ``README.txt``, as a zip."""
    L, H, n, _ = m.weights.shape
    labels = token_labels(list(m.tokens))  # unique: a repeated token is numbered
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for layer in range(L):
            for head in range(H):
                _zip_write(zf, head_file(layer, head), matrix_csv(m.weights[layer, head], labels, labels, CORNER))
        _zip_write(zf, "about.json", json.dumps(about(m), ensure_ascii=False, indent=1).encode("utf-8"))
        _zip_write(zf, "README.txt", readme(m, labels).encode("utf-8"))
    return out.getvalue()


def readme(m: Measured, labels: Sequence[str]) -> str:
    L, H, n, _ = m.weights.shape
    ablated = ", ".join(f"layer {la + 1} · head {h + 1} ({how})" for la, h, how in m.ablations) or "none"
    return "\n".join(
        [
            f"Every head's attention weights: {one_line(m.model)} ({L} layers × {H} heads) on a text of {n} tokens",
            "",
            f"Tokens: {', '.join(one_line(t, 40) for t in labels)}",
            f"Ablations: {ablated}",
            "",
            f"layer<l>_head<h>.csv  {n} × {n}  rows: the query token, columns: the key it attends to (each row sums "
            "to 1; a key after the query, or outside a sliding layer's window, has weight 0)",
            "about.json           the model, the text (tokens and ids), the ablations and the shape",
            "",
            "Numbers are written at full precision (Python's repr of each 64-bit float), so they re-read bit-exact.",
            "Labels a spreadsheet could run as a formula, or that look like numbers, are prefixed with ' .",
            "",
        ]
    )
