"""Changes to the numbers and their shapes: grid edits, tokens, shuffles, projection, imports, resizes."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ... import names
from ..core.session import Session, get
from . import reshapes
from .challenges import refuse_any_locked, refuse_locked
from .core import arrived_whole, say, touch


def edit_cells(name: str, values: Mapping[tuple[int, int], float]) -> dict[tuple[int, int], float]:
    """Set cells of one input matrix: ``{(row, col): value}`` (already checked to be finite). Grid edits do
    not change ``version``: the editor that sent them keeps its key. Returns the cells whose value changed, with
    their old values (empty when none did, or, with a message, when the active challenge locks the matrix)."""
    if refuse_locked(name, f"edit.{name}"):
        return {}
    s = get()
    m = s.matrices[name]
    changed = {rc: v for rc, v in values.items() if m[rc] != v or np.signbit(m[rc]) != np.signbit(v)}
    if not changed:
        return {}
    new = m.copy()
    for (r, c), v in changed.items():
        new[r, c] = v
    s.matrices[name] = new
    touch(s)
    return {rc: float(m[rc]) for rc in changed}


def echo_edit(key: str, pid: str, seq: int) -> bool:
    """Record that grid ``key``'s edits up to ``seq``, sent by page load ``pid``, were taken (applied or refused): the
    grid's data echoes it. False when they were taken already (the page sent them again before the echo reached it).
    Bookkeeping only: no epoch moves."""
    s = get()
    was = s.edit_echo.get(key)
    if was is not None and was[0] == pid and seq <= was[1]:
        return False
    s.edit_echo[key] = (pid, seq)
    return True


def set_tokens(tokens: tuple[str, ...]) -> None:
    """New tokens; with a different count, X (and the padding flags) are resized, keeping what still fits."""
    s = get()
    if len(tokens) == len(s.tokens):
        s.tokens = tokens
        touch(s)
    else:
        resize(tokens=tokens, place="control.sentence")


def shuffle_tokens() -> None:
    """Reorder the tokens (see :func:`.reshapes.shuffle`); refused while a challenge locks X."""
    if refuse_any_locked(("X",), "control.positions"):
        return
    s = get()
    reshapes.shuffle(s)
    s.version += 1
    touch(s)


def set_projection(projection: str) -> None:
    """Switch X·W / X·Wᵀ, transposing W_q, W_k, W_v so Q, K and V stay exactly the same."""
    s = get()
    if projection == s.options.projection or refuse_any_locked(names.WEIGHTS, "sidebar.heads"):
        return
    reshapes.project(s, projection)
    s.version += 1
    touch(s)


def replace_matrix(name: str, value: np.ndarray) -> bool:
    """A whole input matrix replaced (an import), same shape as before. Returns False, with a message, when the
    active challenge locks the matrix."""
    if refuse_locked(name, f"import.{name}"):
        return False
    s = get()
    s.matrices[name] = np.array(value, dtype=np.float64)
    arrived_whole("an imported matrix (a file or a paste)")
    s.version += 1
    touch(s)
    return True


def resize_and_replace(name: str, value: np.ndarray, n: int | None, d_model: int, d_out: int | None) -> bool:
    """An import of another shape: resize everything to fit it (``d_out`` is d_v for W_v, else d_k), then put it in.
    Returns False, with a message and nothing resized, when the active challenge locks the matrix."""
    if refuse_locked(name, f"import.{name}"):
        return False
    s = get()
    if n is not None and n != len(s.tokens):
        tokens = tuple(s.tokens[:n]) + tuple(f"t{i + 1}" for i in range(len(s.tokens), n))
        done = resize(tokens=tokens, d_model=d_model, place=f"import.{name}")
    elif name == "W_v":
        done = resize(d_model=d_model, d_v=d_out, place=f"import.{name}")
    else:
        done = resize(d_model=d_model, d_k=d_out, place=f"import.{name}")
    return done and replace_matrix(name, value)


def resize(
    tokens: tuple[str, ...] | None = None,
    d_model: int | None = None,
    d_k: int | None = None,
    d_v: int | None = None,
    place: str = "sidebar.heads",
) -> bool:
    """Change the number of tokens, d_model, d_k or d_v, keeping existing values where they still fit; says so when
    the heads go back to one. Refused (False, a message at ``place``) when it would change a matrix the running
    challenge locks."""
    s = get()
    if refuse_any_locked(resized(s, tokens, d_model, d_k, d_v), place):
        return False
    note = reshapes.resize(s, tokens, d_model, d_k, d_v)
    s.version += 1
    touch(s)
    if note:
        say("sidebar.heads", "warning", note)  # ours: numbers only
    return True


def resized(
    s: Session, tokens: tuple[str, ...] | None, d_model: int | None, d_k: int | None, d_v: int | None
) -> tuple[str, ...]:
    """The input matrices a resize would change: X with the token count or d_model, the weights with d_model, W_q
    and W_k with d_k, W_v with d_v (a size given equal to the current one changes nothing)."""
    d = s.dims
    rows = tokens is not None and len(tokens) != len(s.tokens)
    width = d_model is not None and d_model != d.d_model
    changed = {"X"} if rows or width else set()
    if width:
        changed |= set(names.WEIGHTS)
    if d_k is not None and d_k != d.d_k:
        changed |= {"W_q", "W_k"}
    if d_v is not None and d_v != d.d_v:
        changed.add("W_v")
    return tuple(n for n in names.INPUTS if n in changed)
