"""What a page shows of a trace array: 2-D tables (a batch of one dropped, heads stacked) and reading lines."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ... import masks, names, reading
from ...names import squeeze_batch, token_labels
from ...trace import Trace
from . import session
from .text import esc


def as_2d(a: np.ndarray) -> np.ndarray:
    """The matrix a page shows: the single item of a batch of one; h heads' (h, n, n) stacked as (h·n, n)."""
    a = a[0] if a.ndim == 4 else squeeze_batch(a)  # (1, h, n, n) -> (h, n, n); (1, n, d) -> (n, d)
    return a.reshape(-1, a.shape[-1]) if a.ndim == 3 else a


def per_head(a: np.ndarray) -> np.ndarray:
    """A square array as (h, n, n): one matrix per head (h = 1 without heads), a batch of one dropped."""
    a = a[0] if a.ndim == 4 else squeeze_batch(a)
    return a if a.ndim == 3 else a[None]


def key_labels(s: session.Session) -> list[str]:
    """The keys' labels: the source sentence's in cross-attention, else the tokens' (the same as ``s.labels``)."""
    return token_labels(s.source or s.tokens)


def shown(s: session.Session, trace: Trace, name: str) -> tuple[np.ndarray, list[str], list[str]]:
    """A trace array as the 2-D table a page shows, with its row and column labels (rows "head 2 · cat" with heads)."""
    m = as_2d(getattr(trace, name))
    rows, cols = s.axis_labels(name, m.shape)
    if m.shape[0] != len(rows):  # heads stacked
        rows = [f"head {k + 1} · {t}" for k in range(m.shape[0] // len(rows)) for t in rows]
    return m, rows, cols


def top_keys(t: Trace, i: int, head: int = 0) -> list[int]:
    """The keys that row ``i`` (in ``head``) gives its largest weight, every one of them when several tie."""
    r = t.reading
    pick = (lambda a: a[head]) if r.top.ndim == 2 else (lambda a: a)
    if pick(r.top_count)[i] == 1:
        return [int(pick(r.top)[i])]
    w = per_head(t.weights)[head][i]  # (n,)
    return [int(j) for j in np.flatnonzero(reading.tied(w, pick(r.top_weight)[i]))]


def reading_lines(t: Trace, tokens: Sequence[str], rows: Sequence[int], head: int = 0) -> list[str]:
    """“**The** attends most to **on** (89.7%)” for each of ``rows`` (or that the row is fully masked), in ``head``;
    keys that tie are all named (“to **the (1)** and **the (5)** (33.5% each)”). The top keys are found once per
    trace (``Trace.reading``)."""
    r = t.reading
    pick = (lambda a: a[head]) if r.top.ndim == 2 else (lambda a: a)
    weight, masked = pick(r.top_weight), pick(r.fully_masked)
    tk = [esc(t) for t in token_labels(tokens)]
    keys = [esc(x) for x in token_labels(t.tokens_kv)] if t.tokens_kv else tk  # cross-attention: the source's

    def line(i: int) -> str:
        if masked[i]:
            return f"**{tk[i]}** attends to nothing (every key is masked; its weights and output are 0)"
        top = top_keys(t, i, head)
        if len(top) == 1:
            return f"**{tk[i]}** attends most to **{keys[top[0]]}** ({weight[i]:.1%})"
        named = [f"**{keys[j]}**" for j in top[:4]] + ([f"{len(top) - 4} more"] if len(top) > 4 else [])
        return f"**{tk[i]}** attends most, equally, to {', '.join(named[:-1])} and {named[-1]} ({weight[i]:.1%} each)"

    return [line(i) for i in rows]


def habit_line(t: Trace, tokens: Sequence[str], head: int) -> str:
    """One line (Markdown, tokens escaped) on what ``head`` mostly does, from the engine's reading of its weights:
    “mostly attends to the previous token (5 of 5 rows)”, “to **cat**”, “spreads its weight almost evenly”."""
    r = t.reading
    h = reading.habit(r, head if r.top.ndim == 2 else None)
    tk = [esc(x) for x in token_labels(t.tokens_kv or tokens)]  # key labels (the source's in cross-attention)
    rows = f"{h.rows} of {h.of} rows"
    what = {
        "previous": "the previous token",
        "self": "itself (each token to its own key)",
        "next": "the next token",
        "key": f"**{tk[h.key]}**" if h.key is not None else "",
    }
    if h.kind == "none":
        return "no row has two keys to choose from (the mask leaves one or none)"
    if h.kind == "spread":
        return f"spreads its weight almost evenly over the keys (entropy {h.share:.0%} of the most possible)"
    if h.kind == "mixed":
        return f"no single habit; most often to {what[h.strongest] or 'one key'} ({rows})"
    return f"mostly attends to {what[h.kind]} ({rows})"


# How the banner of an edited example names an option that differs from the example's (plain words, no user text).
OPTION_WORDS = {
    "mask": lambda v: f"the mask ({masks.join(v) if v else 'none'})",
    "heads": lambda v: f"heads ({v})",
    "kv_heads": lambda v: f"key/value heads ({v if v is not None else 'as many as the heads'})",
    "temperature": lambda v: f"the temperature (T = {v:g})",
    "scale": lambda v: "the scale (" + ("1/√d_k" if v is None else f"× {v:g}") + ")",
    "softmax": lambda v: f"the softmax ({v})",
    "projection": lambda v: "the projection (" + ("X·W" if v == "x_w" else "X·Wᵀ") + ")",
    "positions": lambda v: f"the positions ({v})",
    "padding": lambda v: "the padding tokens",
    "custom_mask": lambda v: "the custom mask's cells",
}


def _in_effect(name: str, value: object) -> object:
    """An option's value as it acts: padding as the tokens flagged (no flags and all flags off are the same: the mask
    controls make flags for every token when they open), a custom mask as its blocked cells (none: every cell open)."""
    if name == "padding":
        return tuple(i for i, flag in enumerate(value) if flag)
    if name == "custom_mask":
        return tuple((i, j) for i, row in enumerate(value) for j, open_ in enumerate(row) if not open_)
    return value


def what_changed(s: session.Session) -> list[str]:
    """What differs from the unedited example, in plain words: the sentence, each matrix edited (by name) and each
    option changed (with its value now), so a banner can name it instead of only saying that something did."""
    preset, base = s.origin.preset, s.origin.base
    said = []
    if (s.tokens, s.source) != (preset.tokens, preset.source_tokens):
        said.append("the sentence")
    edited = [
        n
        for n in names.inputs_of(s.matrices)
        if n not in base or s.matrices[n].shape != base[n].shape or not session.identical(s.matrices[n], base[n])
    ]
    said += [f"{n} edited" for n in edited]
    for field in dataclasses.fields(s.options):
        now, was = getattr(s.options, field.name), getattr(preset.options, field.name)
        if _in_effect(field.name, now) != _in_effect(field.name, was):
            words = OPTION_WORDS.get(field.name, lambda v, f=field.name: f"{f.replace('_', ' ')} ({v})")
            said.append(words(now))
    return said

