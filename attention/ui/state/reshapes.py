"""The reshapes a state can undergo: shuffle, positions, W_o, key/value heads, projection, resize.

Each changes the ``Session`` it is given, and nothing else (no message, no epoch): the writer's named changes
(:mod:`.edits`, :mod:`.options`, :mod:`.presets`, :mod:`.learning`) call them on the live session, and
:mod:`attention.ui.address.url` calls them on a session it rebuilds from an address, so a link reproduces a
resize exactly as the controls made it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ... import heads, names, positions, rng
from ..core.session import Session, identical


def shuffle(s: Session) -> None:
    """Move every token one place on (the last to the front); each keeps its row of X, its padding flag and its row
    and column of a custom mask, so without positions the outputs only move with their tokens."""
    order = np.roll(np.arange(len(s.tokens)), 1)
    s.rolled = (s.rolled + 1) % len(s.tokens)
    s.tokens = tuple(s.tokens[i] for i in order)
    s.matrices["X"] = s.matrices["X"][order].copy()
    o = s.options
    grid = tuple(tuple(o.custom_mask[i][j] for j in order) for i in order) if o.custom_mask else ()
    s.options = replace(o, padding=tuple(o.padding[i] for i in order) if o.padding else (), custom_mask=grid)


def use_positions(s: Session, kind: str) -> str:
    """Switch the positions; "learned" brings an editable P (n × d_model) that starts as the sinusoidal code, and
    leaving "learned" drops P. Returns a note saying so ("" when there is nothing to say)."""
    note = ""
    if kind == "learned" and "P" not in s.matrices:
        s.matrices["P"] = positions.sinusoidal(*s.matrices["X"].shape[-2:])  # (n, d_model)
        note = "P starts as the sinusoidal code: edit any cell on the Tokens page to change what is added to X."
    elif kind != "learned" and "P" in s.matrices:
        edited = not np.array_equal(s.matrices["P"], positions.sinusoidal(*s.matrices["P"].shape))
        del s.matrices["P"]
        note = "P was dropped (positions are no longer learned)" + (", with your edits to it." if edited else ".")
    s.options = replace(s.options, positions=kind)
    return note


def w_o_width(s: Session, d_v: int) -> int:
    """The width W_o has with d_v rows: the preset's own W_o keeps its width when it is not square or is a model head's
    (its rows of the model's W_o write d_model wide, whatever d_v is); otherwise W_o is square, d_v × d_v."""
    base = s.origin.base.get("W_o")
    fixed = base is not None and (base.shape[0] != base.shape[1] or s.model_head is not None)
    return int(base.shape[1]) if fixed else d_v


def use_w_o(s: Session, on: bool) -> str:
    """Mix the heads' outputs by W_o, or drop W_o. W_o comes back as the preset's own when it has one (a model's head:
    its rows of the model's W_o, d_v × d_model), fitted to d_v as a resize fits it, otherwise as the identity (d_v ×
    d_v), so nothing changes until it is edited. Returns a note saying so."""
    base, d_v = s.origin.base.get("W_o"), s.dims.d_v
    if base is None:
        start = np.eye(d_v)  # (d_v, d_v)
    else:
        start = rng.fill_new_cells(base, (d_v, w_o_width(s, d_v)), s.seed or 0, stream=4)  # (d_v, d_out)
    if on and "W_o" not in s.matrices:
        s.matrices["W_o"] = start
        if base is not None:
            return "W_o is the preset's own again, unedited: edit any cell to change what the output is."
        return "W_o starts as the identity (the output is unchanged): edit any cell to mix the heads' outputs."
    if not on and "W_o" in s.matrices:
        edited = not identical(s.matrices["W_o"], start)
        del s.matrices["W_o"]
        return "W_o was dropped: the output is the heads' outputs side by side" + (
            ", and your edits to W_o are gone." if edited else "."
        )
    return ""


def use_kv_heads(s: Session, g: int) -> None:
    """g key/value heads (g divides the heads): W_k and W_v regrouped by :func:`attention.heads.regroup`."""
    o = s.options
    for name in ("W_k", "W_v"):
        s.matrices[name] = heads.regroup(s.matrices[name], o.heads, o.kv, g, o.projection)
    s.options = replace(o, kv_heads=None if g == o.heads else g)


def project(s: Session, projection: str) -> None:
    """Switch X·W / X·Wᵀ: W_q, W_k, W_v transposed, so Q, K and V stay exactly the same."""
    for name in names.WEIGHTS:
        s.matrices[name] = np.ascontiguousarray(s.matrices[name].T)
    s.options = replace(s.options, projection=projection)


def resize(
    s: Session,
    tokens: tuple[str, ...] | None = None,
    d_model: int | None = None,
    d_k: int | None = None,
    d_v: int | None = None,
) -> str:
    """New sizes, keeping every value that still fits; new cells are drawn from the seed, each a function of its
    place only (the same sizes always give the same numbers). W_v keeps its d_v unless ``d_v`` is given. Returns a
    note when the heads no longer divide d_k and d_v and go back to one head ("" otherwise)."""
    if s.options.kv != s.options.heads:  # first one key/value block per head again (copies: no change)
        use_kv_heads(s, s.options.heads)
    seed, dims = s.seed or 0, s.dims
    n = len(tokens) if tokens is not None else dims.n
    dm = d_model if d_model is not None else dims.d_model
    dk = d_k if d_k is not None else dims.d_k
    dv = d_v if d_v is not None else dims.d_v
    s.matrices["X"] = rng.fill_new_cells(s.matrices["X"], (n, dm), seed, stream=0)
    for i, name in enumerate(names.WEIGHTS):  # each W its own new cells; W_v keeps d_v
        out = dv if name == "W_v" else dk
        s.matrices[name] = rng.fill_new_cells(
            s.matrices[name], names.weight_shape(dm, out, s.options.projection), seed, stream=1 + i
        )
    if "W_o" in s.matrices:  # (d_v, d_v), or (d_v, d_model) for a model's head: its width stays the model's
        s.matrices["W_o"] = rng.fill_new_cells(s.matrices["W_o"], (dv, w_o_width(s, dv)), seed, stream=4)
    if "P" in s.matrices:  # (n, d_model): one row per position
        s.matrices["P"] = rng.fill_new_cells(s.matrices["P"], (n, dm), seed, stream=5)
    note = ""
    if dk % s.options.heads or dv % s.options.heads:
        note = f"{s.options.heads} heads do not divide d_k = {dk} and d_v = {dv}: back to one head."
        s.options, s.head = replace(s.options, heads=1), 0
    if n != dims.n:
        s.rolled = 0  # no longer a pure reordering of the preset's rows (a link carries X as edits)
    if tokens is not None:
        _retoken(s, tokens, n)
    return " ".join(x for x in (note, fit_gains(s, dk // s.options.heads)) if x)


def fit_gains(s: Session, width: int) -> str:
    """QK-norm's gains fitted to heads ``width`` columns wide (after a resize or another number of heads): each kept
    where it fits; a new column's gain the unedited state's own gain there when it has one (so splitting a head and
    joining it again gives back its gains), else 1 (the norm alone); a note when they change ("" otherwise)."""
    o = s.options
    had = {name: g for name in ("q_norm", "k_norm") if (g := getattr(o, name)) and len(g) != width}
    if not had:
        return ""
    own = s.origin.preset.options if s.origin is not None else o
    fitted = {name: _fitted(g, tuple(getattr(own, name) or ()), width) for name, g in had.items()}
    s.options = replace(o, **fitted)
    old = len(next(iter(had.values())))
    reach = len(getattr(own, next(iter(had))) or ())  # how far the unedited gains go
    new = "the head's own" if reach >= width else "1" if reach <= old else "the head's own where it has them, else 1"
    return (
        f"QK-norm's gains were for heads of {old} columns; each head now has {width}: the first "
        f"{min(old, width)} gains are kept" + (f", the new ones are {new}." if width > old else ".")
    )


def _fitted(gains: tuple[float, ...], own: tuple[float, ...], width: int) -> tuple[float, ...]:
    """``gains`` cut or extended to ``width``: extended by the unedited gains ``own`` where they reach, then 1s."""
    kept = tuple(gains[:width])
    tail = own[len(kept) : width]
    return kept + tuple(tail) + (1.0,) * (width - len(kept) - len(tail))


def _retoken(s: Session, tokens: tuple[str, ...], n: int) -> None:
    """New tokens: the padding flags and a custom mask kept where they fit; new tokens may attend and be attended."""
    s.tokens = tokens
    if len(s.options.padding) != n:
        pad = tuple(s.options.padding[:n]) + (False,) * max(0, n - len(s.options.padding))
        s.options = replace(s.options, padding=pad)
    grid = s.options.custom_mask
    if grid and len(grid) != n:
        grid = tuple(tuple(grid[i][j] if i < len(grid) and j < len(grid) else True for j in range(n)) for i in range(n))
        s.options = replace(s.options, custom_mask=grid)
