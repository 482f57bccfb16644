"""Attention masks, with PyTorch's meaning: a boolean mask is True where a query MAY attend a key.

Every helper returns a boolean array of shape (n_queries, n_keys); combine them with
:func:`combine`, which keeps a cell only where every mask allows it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import AttentionError
from .names import MASK_PARTS, is_whole

PARTS = MASK_PARTS  # the masks that can be combined; "none" is none of them


def kinds() -> tuple[str, ...]:
    """Every mask option: "none", each part, and each combination joined with "+" in the order of PARTS."""
    combos = [[p for k, p in enumerate(PARTS) if bits >> k & 1] for bits in range(1, 2 ** len(PARTS))]
    return ("none", *("+".join(c) for c in sorted(combos, key=lambda c: (len(c), [PARTS.index(p) for p in c]))))


KINDS = kinds()  # "none", "causal", "padding", "custom", "window", "causal+padding", ..., all four joined


def parts(kind: str | tuple[str, ...]) -> tuple[str, ...]:
    """The masks a mask option combines, as a file or link spells it: ``parts("causal+custom") == ("causal",
    "custom")``; () for "none". A tuple is already split and comes back as it is (``Options.mask`` is one)."""
    if isinstance(kind, tuple):
        return kind
    return () if kind == "none" else tuple(kind.split("+"))


def join(chosen: object) -> str:
    """The mask option for a set of parts as files and links spell it, in the canonical order:
    ``join({"custom", "causal"}) == "causal+custom"``, ``join(()) == "none"``. Raises AttentionError for a part
    that is not one of PARTS."""
    chosen = set(chosen)  # type: ignore[call-overload]
    chosen.discard("none")
    unknown = sorted(str(p) for p in chosen - set(PARTS))
    if unknown:
        raise AttentionError(f"mask part {unknown[0]!r} is not one of {', '.join(PARTS)}", field="mask")
    return "+".join(p for p in PARTS if p in chosen) or "none"


def causal(n_queries: int, n_keys: int | None = None) -> np.ndarray:
    """Query i may attend key j only when j <= i (top-left aligned, as ``torch.tril``). Shape (L, S)."""
    n_keys = n_queries if n_keys is None else n_keys
    return np.tril(np.ones((n_queries, n_keys), dtype=bool))  # (L, S)


def window(n_queries: int, w: int, n_keys: int | None = None) -> np.ndarray:
    """Sliding window (Longformer, Mistral): query i may attend keys i − w + 1 … i, the w most recent tokens
    itself included, so the window is causal too. w = 1 is each token alone; w >= n_keys is the causal mask.
    Shape (L, S), top-left aligned as :func:`causal`."""
    if not (is_whole(w) and w >= 1):
        raise AttentionError(f"the window must be a whole number of tokens >= 1; got {w!r}", field="window")
    n_keys = n_queries if n_keys is None else n_keys
    offset = np.arange(n_queries)[:, None] - np.arange(n_keys)[None, :]  # (L, S): i − j
    return (offset >= 0) & (offset < w)  # (L, S)


def padding(is_padding: Sequence[bool], n_queries: int | None = None) -> np.ndarray:
    """No query may attend a key flagged as padding. Shape (L, S), S = len(is_padding).

    Padding queries still attend the real keys (like PyTorch's ``key_padding_mask``); their rows are
    usually ignored downstream. If every key is padding, every row is fully masked.
    """
    keep = ~np.asarray(is_padding, dtype=bool)  # (S,)
    n_queries = keep.shape[0] if n_queries is None else n_queries
    return np.broadcast_to(keep, (n_queries, keep.shape[0])).copy()  # (L, S)


def custom(allowed: object, n_queries: int, n_keys: int) -> np.ndarray:
    """A user's own boolean mask, checked to be (L, S). True = may attend."""
    arr = np.asarray(allowed)
    if arr.shape != (n_queries, n_keys):
        raise AttentionError(
            f"mask must have shape ({n_queries}, {n_keys}) (queries × keys); got {arr.shape}", matrix="mask"
        )
    if arr.dtype != bool:
        raise AttentionError("a custom mask must be boolean (True = may attend)", matrix="mask")
    return arr


def combine(*masks: np.ndarray | None) -> np.ndarray | None:
    """Logical AND of the given boolean masks (None entries are ignored); None if all are None."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    out = present[0]
    for m in present[1:]:
        out = out & m
    return out


def fully_masked_rows(allowed: np.ndarray | None) -> np.ndarray:
    """Indices of query rows that may attend no key at all (their weights are all 0)."""
    if allowed is None:
        return np.zeros(0, dtype=int)
    return np.flatnonzero(~allowed.reshape(-1, allowed.shape[-1]).any(axis=-1))
