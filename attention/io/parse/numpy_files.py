"""numpy's own ``.npy`` and ``.npz`` files, read without ever unpickling."""

from __future__ import annotations

import io
import tokenize
import zipfile

import numpy as np

from ...errors import AttentionError
from .limits import MAX_CELLS


def read_numpy(data: bytes, name: str, label: str = "the file", ext: str = "npy") -> np.ndarray:
    """numpy's own ``.npy`` (one array) or ``.npz`` (exactly one array inside) as float64, read with
    ``allow_pickle=False``: an object array (which would need unpickling, and so could run code) is refused."""
    try:
        loaded = np.load(io.BytesIO(data), allow_pickle=False)
        if isinstance(loaded, np.lib.npyio.NpzFile):
            with loaded:
                keys = list(loaded.files)
                if len(keys) != 1:
                    raise AttentionError(
                        f"{name}: {label} holds {len(keys)} arrays ({', '.join(map(repr, keys[:5]))}); "
                        "save one matrix per .npz file (np.savez(path, M))",
                        matrix=name,
                    )
                arr = np.asarray(loaded[keys[0]])
        else:
            arr = np.asarray(loaded)
    except AttentionError:
        raise
    except ValueError as exc:
        why = (
            "it holds Python objects, which are never unpickled here"
            if "pickle" in str(exc)
            else "numpy cannot read it"
        )
        raise AttentionError(f"{name}: {label} is not a readable .{ext} array ({why})", matrix=name) from None
    except (OSError, EOFError, KeyError, zipfile.BadZipFile, tokenize.TokenError):  # TokenError: a garbled header
        raise AttentionError(
            f"{name}: {label} is not a valid .{ext} file (it may be cut short or renamed)", matrix=name
        ) from None
    if arr.dtype.kind not in "biuf":
        raise AttentionError(f"{name}: {label} holds {arr.dtype} values; a matrix needs numbers", matrix=name)
    if arr.size > MAX_CELLS:
        raise AttentionError(
            f"{name}: {label} has {arr.size:,} numbers; that is larger than any supported matrix", matrix=name
        )
    arr = arr.astype(np.float64)
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        where = ", ".join(str(i + 1) for i in bad[0])
        raise AttentionError(
            f"{name}: {label} has {arr[tuple(bad[0])]} at index ({where}); every value must be a finite number",
            matrix=name,
        )
    if arr.ndim not in (1, 2, 3):
        raise AttentionError(
            f"{name}: {label} holds a {arr.ndim}-D array of shape {arr.shape}; a matrix is 2-D", matrix=name
        )
    return arr
