"""What a parsed matrix must look like: the axis names messages use, and the final 2-D shape check."""

from __future__ import annotations

import numpy as np

from ...errors import AttentionError

DEFAULT_DIMS = {
    "X": ("tokens", "d_model"),
    "W_q": ("d_model", "d_k"),
    "W_k": ("d_model", "d_k"),
    "W_v": ("d_model", "d_v"),
    "Q": ("tokens", "d_k"),
    "K": ("tokens", "d_k"),
    "V": ("tokens", "d_v"),
    "scores": ("queries", "keys"),
    "scaled": ("queries", "keys"),
    "weights": ("queries", "keys"),
    "output": ("tokens", "d_v"),
}


def dims_for(name: str, dims: tuple[str, str] | None) -> tuple[str, str]:
    """What the rows and columns of ``name`` are called in messages (``dims`` when given)."""
    return dims or DEFAULT_DIMS.get(name, ("rows", "columns"))


def shape_error(
    name: str, expected: tuple[int, int], got: tuple[int, ...], dims: tuple[str, str] | None, source: str
) -> AttentionError:
    d = dims_for(name, dims)
    got_text = " × ".join(str(g) for g in got)
    return AttentionError(
        f"{name} must be {expected[0]} × {expected[1]} ({d[0]} × {d[1]}); the {source} is {got_text}",
        matrix=name,
    )


def final_shape(
    arr: np.ndarray, name: str, expected: tuple[int, int] | None, dims: tuple[str, str] | None, source: str
) -> np.ndarray:
    """Bring a parsed 1-D/2-D/batch-of-one array to 2-D and check it against ``expected``."""
    if arr.ndim == 3:
        if arr.shape[0] != 1:
            raise AttentionError(
                f"{name}: the {source} is 3-D with shape {arr.shape}; only a single matrix (or a batch of one) can "
                f"be read",
                matrix=name,
            )
        arr = arr[0]
    elif arr.ndim == 1:
        if expected is not None and expected[1] == 1 and expected[0] == arr.shape[0] != 1:
            arr = arr.reshape(-1, 1)
        else:
            arr = arr.reshape(1, -1)
    if expected is not None and tuple(arr.shape) != tuple(expected):
        raise shape_error(name, expected, arr.shape, dims, source)
    return arr
