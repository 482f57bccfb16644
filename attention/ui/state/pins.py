"""The pinned state A, display-only settings (explained cell, head, digits), grids and held imports."""

from __future__ import annotations

import numpy as np

from ..core.session import Pinned, get, is_unedited, preset_label
from .core import arrived_whole, touch


def pin() -> None:
    """Snapshot the whole current state as A (replacing an earlier pin)."""
    s = get()
    label = f"{preset_label(s.preset_id)}" + ("" if is_unedited(s) else ", edited")
    s.pin = Pinned(s.tokens, {k: v.copy() for k, v in s.matrices.items()}, s.options, label)
    touch(s)


def swap_pin() -> None:
    """Make A the current state and the current state A."""
    s = get()
    if s.pin is None:
        return
    now = Pinned(s.tokens, dict(s.matrices), s.options, "the state before the swap")
    arrived_whole("the pinned state A (Swap)")
    s.tokens, s.matrices, s.options = s.pin.tokens, {k: v.copy() for k, v in s.pin.matrices.items()}, s.pin.options
    s.pin = now
    s.version += 1
    touch(s)


def clear_pin() -> None:
    s = get()
    s.pin = None
    touch(s)


def set_tab(place: str, label: str) -> None:
    """Display only: the open tab of the tab set at ``place``, or "open"/"closed" for an expander (only what is open
    is drawn)."""
    get().tabs[place] = label


def renew_grids() -> None:
    """Give every widget keyed by ``grids`` (boxes, the mask's tick grid) a fresh key: a value that was refused must
    not stay in its widget state. The matrices are not touched (the matrix editors show them as they are)."""
    get().grids += 1


def hold_import(name: str, held: tuple[np.ndarray, str] | None) -> None:
    """Keep (or drop, with None) an import whose shape differs, so a button can apply it with a resize."""
    s = get()
    if held is None:
        s.held.pop(name, None)
    else:
        s.held[name] = held


def set_view(cell: tuple[int, int] | None = None, head: int | None = None, digits: int | None | str = "keep") -> None:
    """Display-only settings: the explained (query, key) cell and its head, and the digits numbers are shown with
    (None: every digit). Values out of range are ignored; nothing computed changes."""
    s = get()
    if cell is not None and 0 <= cell[0] < len(s.tokens) and 0 <= cell[1] < len(s.source or s.tokens):
        s.cell = cell
    if head is not None and 0 <= head < s.options.heads:
        s.head = head
    if digits != "keep":
        s.digits = digits  # type: ignore[assignment]
