"""The one home of names and shapes: input and array names, sizes, each matrix's shape, axis labels, the batch squeeze.

Every other module asks here what a matrix is called, what shape it has for given sizes, and how its rows
and columns are labelled, so no two files work a shape out for themselves. The options' vocabularies live here too:
the mask's parts, the softmax variants and how each is said.

Shapes for n tokens, under the projection "x_w" (Q = X·W) or "x_wt" (Q = X·Wᵀ, the 'I am Batman' example):

    X            (n, d_model)
    P            (n, d_model)              learned positions, added to X
    W_q, W_k     (d_model, d_k)            "x_wt": (d_k, d_model)
    W_v          (d_model, d_v)            "x_wt": (d_v, d_model)
    W_o          (d_v, d_out)              mixes the concatenated heads; d_out = d_v unless a model's head writes
                                           its output into the model's width (a head's W_o block: d_head × d_model)
    Q, K         (n, d_k)
    V            (n, d_v)
    output       (n, d_v), or (n, d_out) with W_o
    scores, scaled, weights   (n, n), or (h, n, n) with h > 1 heads
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .errors import AttentionError

INPUTS = ("X", "W_q", "W_k", "W_v")  # what a preset defines and a person edits
EXTRAS = ("W_o", "P")  # inputs a state has only when used: W_o mixes the heads' outputs, P is learned positions
WEIGHTS = ("W_q", "W_k", "W_v")
PROJECTED = ("Q", "K", "V")
SQUARE = ("scores", "scaled", "weights")  # queries × keys
# the arrays of a trace, in pipeline order
ARRAYS = ("X", "W_q", "W_k", "W_v", "Q", "K", "V", "scores", "scaled", "weights", "output")
PROJECTIONS = ("x_w", "x_wt")
# The masks that can be combined (their AND); no part is no mask. Inside the app a mask is a tuple of parts in this
# order; files and links write it joined with "+", "causal+padding" ("none" for no part): attention.masks.parts and
# attention.masks.join turn one into the other.
MASK_PARTS = ("causal", "padding", "custom", "window")
# What softmax subtracts from each row before exp (:func:`attention.steps.softmax`): the values options, preset files
# and links hold. Each is said in the words of SOFTMAX_WORDS.
SOFTMAX_VARIANTS = ("row_max", "global_max", "none")

# Limits. The dashboard edits up to MAX_TOKENS × MAX_DIM; files (presets, uploads) may describe the same.
MAX_TOKENS = 2048
MAX_DIM = 256
MAX_SEED = 2**32 - 1
MAX_TOKEN_CHARS = 200  # one token's text
# How much text each input may carry, checked before any pattern or parser looks at it (so a hostile value costs
# one len(), whatever it holds). A number: float64 keeps 17 significant digits, and 1,000 characters leave room for
# any float64 written out exactly in scientific notation (at most 767 significant digits).
MAX_NUMBER_CHARS = 1000  # one grid cell, one number in a paste or a file
MAX_SENTENCE_CHARS = MAX_TOKENS * (MAX_TOKEN_CHARS + 1)  # 411,648: every token at its longest, one space apart
MAX_LINK_CHARS = 16_384  # one value in an address: an edits or a challenge token (the longest a link writes)
MAX_UPLOAD_MB = 16  # a pasted or uploaded matrix, a preset file (Streamlit's maxUploadSize counts MiB)
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 1024 * 1024


def is_number(value: object) -> bool:
    """A real number to compute with, numpy's scalars included (``np.float64``, ``np.int64``), but never a bool:
    ``True`` is a flag, though Python counts it as 1. Says nothing of finiteness (nan and inf are numbers here)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def is_whole(value: object) -> bool:
    """A whole number, Python's or numpy's integers (never a bool, never a float such as 2.0); the caller checks
    its range."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


_OUT_DIM = {"W_q": "d_k", "W_k": "d_k", "W_v": "d_v", "W_o": "d_v"}
_COL_PREFIX = {"X": "d", "P": "d", "Q": "q", "K": "k", "V": "v", "output": "v"}
_OUT_PREFIX = {
    "W_q": "q",
    "W_k": "k",
    "W_v": "v",
}  # W_q makes query columns q1.., W_k key columns k1.., W_v value columns v1..


@dataclass(frozen=True)
class Dims:
    """The sizes of one attention state: n tokens, d_model, d_k (Q and K), d_v (V), heads, projection, and d_out,
    the width W_o writes (None: W_o, where there is one, is square, d_v × d_v)."""

    n: int
    d_model: int
    d_k: int
    d_v: int
    heads: int = 1
    projection: str = "x_w"
    d_out: int | None = None

    def shape(self, name: str) -> tuple[int, int]:
        """The 2-D shape of a named matrix for these sizes."""
        if name in ("X", "P"):
            return (self.n, self.d_model)
        if name in WEIGHTS:
            return weight_shape(self.d_model, self.d_k if name != "W_v" else self.d_v, self.projection)
        if name == "W_o":
            return (self.d_v, self.d_out or self.d_v)
        if name in ("Q", "K"):
            return (self.n, self.d_k)
        if name in ("V", "output"):
            return (self.n, self.d_v)
        if name in SQUARE:
            return (self.n, self.n)
        raise KeyError(f"unknown matrix {name!r}")


@dataclass(frozen=True)
class SoftmaxWords:
    """How one softmax variant is said: ``subtracts`` what m is (files, lab pages), ``one_row`` m for one row
    (the cell explanation), ``short`` one line of a select box (the sidebar), ``aside`` an error message's aside."""

    subtracts: str
    one_row: str
    short: str
    aside: str


SOFTMAX_WORDS = {
    "row_max": SoftmaxWords("each row's max", "the row's largest value", "row's max (stable)", "row max subtracted"),
    "global_max": SoftmaxWords(
        "the whole matrix's max",
        "the whole matrix's largest value",
        "whole matrix's max",
        "whole-matrix max subtracted",
    ),
    "none": SoftmaxWords("nothing", "nothing", "nothing (She likes coffee)", "nothing subtracted"),
}


def inputs_of(matrices: Sequence[str] | dict) -> tuple[str, ...]:
    """The input matrices a state has, in order: X, W_q, W_k, W_v, then W_o and P where present."""
    return INPUTS + tuple(name for name in EXTRAS if name in matrices)


def weight_shape(d_in: int, d_out: int, projection: str) -> tuple[int, int]:
    """A projection matrix: d_in × d_out for X·W, d_out × d_in for X·Wᵀ."""
    return (d_in, d_out) if projection == "x_w" else (d_out, d_in)


def out_axis(projection: str) -> int:
    """The axis of W that gives the width of Q, K or V (1 for X·W, 0 for X·Wᵀ); the other axis is d_model."""
    return 1 if projection == "x_w" else 0


def axis_names(name: str, projection: str = "x_w") -> tuple[str, str]:
    """What the rows and columns of a named matrix are, for messages: ("tokens", "d_model"), ("d_model", "d_k")..."""
    if name in WEIGHTS:
        return ("d_model", _OUT_DIM[name]) if projection == "x_w" else (_OUT_DIM[name], "d_model")
    if name == "W_o":
        return ("d_v", "d_out")
    if name in SQUARE:
        return ("queries", "keys")
    cols = {"X": "d_model", "P": "d_model", "Q": "d_k", "K": "d_k", "V": "d_v", "output": "d_v"}
    if name not in cols:
        raise KeyError(f"unknown matrix {name!r}")
    return ("tokens", cols[name])


def dims_of(matrices: dict[str, np.ndarray], projection: str = "x_w", heads: int = 1, kv: int | None = None) -> Dims:
    """The sizes implied by X, W_q, W_v and W_o (2-D, or X with a batch of one). With kv < heads key/value heads
    (grouped query attention) W_v holds kv blocks of d_v/h: d_v is the heads' concatenated width, W_v's times heads /
    kv. d_out is W_o's width when W_o is not square (a model's head), None otherwise."""
    n, d_model = matrices["X"].shape[-2:]
    ax = out_axis(projection)
    d_v = int(matrices["W_v"].shape[ax]) * heads // (heads if kv is None else kv)
    w_o = matrices.get("W_o")
    d_out = int(w_o.shape[1]) if w_o is not None and w_o.shape[1] != w_o.shape[0] else None
    return Dims(int(n), int(d_model), int(matrices["W_q"].shape[ax]), d_v, heads, projection, d_out)


def squeeze_batch(a: np.ndarray) -> np.ndarray:
    """The matrix a person sees: a leading batch of one dropped ((1, n, d) -> (n, d)); 2-D arrays as they are."""
    return a[0] if a.ndim == 3 and a.shape[0] == 1 else a


def token_labels(tokens: Sequence[str]) -> list[str]:
    """Token names made unique for axes, tables and CSVs, by construction.

    A token that occurs once keeps its text; a repeated one gets its position, 'the (5)'. If that collides
    with another token's text (tokens 'a', 'a', 'a (2)'), primes are added to it until it is unique.
    """
    texts = [str(t) for t in tokens]
    counts: dict[str, int] = {}
    for t in texts:
        counts[t] = counts.get(t, 0) + 1
    taken = {t for t in texts if counts[t] == 1}  # a token that occurs once keeps its own text
    out = []
    for i, t in enumerate(texts):
        if counts[t] == 1:
            out.append(t)
            continue
        label = f"{t} ({i + 1})"
        while label in taken:
            label += "′"
        taken.add(label)
        out.append(label)
    return out


def dimension_labels(prefix: str, n: int) -> list[str]:
    """``[prefix1, prefix2, ..., prefix<n>]``, e.g. ``dimension_labels("d", 3) == ["d1", "d2", "d3"]``."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise AttentionError(f"the number of dimension labels must be a whole number ≥ 0; got {n!r}")
    return [f"{prefix}{i}" for i in range(1, int(n) + 1)]


def axis_labels(
    name: str,
    shape: Sequence[int],
    tokens: Sequence[str],
    projection: str = "x_w",
    key_tokens: Sequence[str] | None = None,
    d_v: int | None = None,
) -> tuple[list[str], list[str]]:
    """(row labels, column labels) of a named matrix of the given shape (the last two axes count).

    X: tokens × d1..d_model; W_q: d1.. × q1.. ("x_wt": q1.. × d1..); W_k: d1.. × k1..; W_v: d1.. × v1..;
    W_o: v1.. × v1..; Q: tokens × q1..; K: tokens × k1..; V, output: tokens × v1..; scores, scaled, weights:
    tokens × tokens. (Q's columns are q1.., not k1..: they are the query's dimensions.) A W_o that is not square (a
    model's head writing into the model's width d_out) has columns o1..; so has the output when ``d_v`` (the heads'
    concatenated width) is given and differs from its width.
    Token labels are made unique by :func:`token_labels`. Cross-attention: ``key_tokens`` (the source) label the
    rows of K and V and the columns of scores, scaled and weights (queries × source keys).
    """
    r, c = int(shape[-2]), int(shape[-1])
    keys = token_labels(key_tokens) if key_tokens else None
    if name in SQUARE:
        toks = token_labels(tokens)
        return toks, list(keys or toks)
    if keys is not None and name in ("K", "V"):
        return keys, dimension_labels(_COL_PREFIX[name], c)
    if name in WEIGHTS:
        out = _OUT_PREFIX[name]
        if projection == "x_wt":
            return dimension_labels(out, r), dimension_labels("d", c)
        return dimension_labels("d", r), dimension_labels(out, c)
    if name == "W_o":
        return dimension_labels("v", r), dimension_labels("v" if c == r else "o", c)
    if name == "output" and d_v is not None and c != d_v:
        return token_labels(tokens), dimension_labels("o", c)
    if name not in _COL_PREFIX:
        raise KeyError(f"unknown matrix {name!r}")
    return token_labels(tokens), dimension_labels(_COL_PREFIX[name], c)


def corner_label(name: str) -> str:
    """The top-left cell of a matrix's CSV: what its rows are."""
    if name in SQUARE:
        return "query \\ key"
    return "dim" if name in WEIGHTS or name == "W_o" else "token"


def short(value: object, limit: int = 60) -> str:
    """A value for a message: its repr cut to ``limit`` characters; a huge integer is described, not printed
    (Python refuses to print one of more than 4300 digits)."""
    if isinstance(value, int) and value.bit_length() > 200:
        return f"a whole number of about {int(value.bit_length() * math.log10(2))} digits"
    try:
        text = repr(value)
    except ValueError:  # a container holding a huge integer
        text = f"a {type(value).__name__} that cannot be printed"
    return text if len(text) <= limit else text[: limit - 1] + "…"
