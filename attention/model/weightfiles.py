"""Reading model.safetensors, or the shards a model.safetensors.index.json lists, as float32 or float64 arrays.

A safetensors file is 8 bytes (N, little-endian), N bytes of JSON naming each tensor's dtype, shape and byte range,
then the bytes. The header is read and checked first (every range inside the file and the size its shape and dtype
need); a tensor's bytes are read only when it is asked for, through a read-only memory map, and copied out.

Stored dtypes read: F64, F32, F16 and BF16. numpy has no bfloat16, and none is needed: a bfloat16 is the upper half
of a float32 (the same sign, the same 8 exponent bits, 7 of the 23 mantissa bits), so widening its 16 bits to 32
and shifting them left by 16 gives exactly the float32 that torch's ``.float()`` gives. That is one line, so no
library (such as ml_dtypes) is added for it. Pickled weights are never opened (see :mod:`.checkpoint`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import AttentionError

STORED = {"F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2")}
MAX_HEADER_BYTES = 100 * 1024**2  # the safetensors format's own bound
MAX_INDEX_BYTES = 16 * 1024**2
SHARD_NAME = re.compile(r"^[\w.\-]{1,200}\.safetensors$")


def widen_bfloat16(bits: np.ndarray) -> np.ndarray:
    """bfloat16 values given as their raw 16 bits (uint16) -> the same values as float32, exactly."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


class WeightFile:
    """One safetensors file: its header read and checked; :meth:`read` gives one tensor."""

    def __init__(self, path: Path):
        self.path, self.name = path, path.name
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else -1
            if not 2 <= n <= min(MAX_HEADER_BYTES, size - 8):
                self.fail(f"its header length {n} does not fit the file's {size:,} bytes")
            raw = f.read(n)
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.fail(f"its header is not JSON ({exc})")
        if not isinstance(header, dict):
            self.fail("its header is not a JSON object")
        self.start, self.data_bytes = 8 + n, size - 8 - n
        self.tensors: dict[str, dict[str, Any]] = {}
        for name, entry in header.items():
            if name != "__metadata__":
                self.tensors[name] = self._checked(name, entry)

    def fail(self, why: str) -> None:
        raise AttentionError(f"{self.name} could not be read as a safetensors file: {why}", field=self.name)

    def _checked(self, name: str, entry: object) -> dict[str, Any]:
        """A header entry whose byte range lies in the file and, for a dtype read here, fits its shape."""
        ok = isinstance(entry, dict) and isinstance(entry.get("dtype"), str)
        shape, span = (entry.get("shape"), entry.get("data_offsets")) if ok else (None, None)  # type: ignore[union-attr]
        ok = ok and isinstance(shape, list) and all(isinstance(k, int) and k >= 0 for k in shape)
        ok = ok and isinstance(span, list) and len(span) == 2 and all(isinstance(k, int) for k in span)
        if not ok or not 0 <= span[0] <= span[1] <= self.data_bytes:  # type: ignore[index]
            self.fail(f"the header's entry for {name[:80]!r} is malformed or points outside the file")
        stored = STORED.get(entry["dtype"])  # type: ignore[index]
        if stored is not None and span[1] - span[0] != math.prod(shape) * stored.itemsize:  # type: ignore[index]
            self.fail(f"{name[:80]!r} has {span[1] - span[0]} bytes, not what its shape {shape} needs")  # type: ignore
        return {"dtype": entry["dtype"], "shape": tuple(shape), "span": span}  # type: ignore[index,arg-type]

    def read(self, name: str, dtype: np.dtype) -> np.ndarray:
        """Tensor ``name`` as a new array of ``dtype`` (float32 or float64), its bytes copied out of the file."""
        entry = self.tensors[name]
        stored = STORED[entry["dtype"]]
        begin, end = entry["span"]
        count = (end - begin) // stored.itemsize
        raw = np.memmap(self.path, dtype=stored, mode="r", offset=self.start + begin, shape=(count,)) if count else None
        values = np.zeros(0, stored) if raw is None else raw
        if entry["dtype"] == "BF16":
            values = widen_bfloat16(values)  # a new float32 array
        out = values.astype(dtype, copy=entry["dtype"] != "BF16")  # a new array: nothing keeps the file open
        del raw, values
        return out.reshape(entry["shape"])


def open_weights(folder: Path) -> dict[str, WeightFile]:
    """Every tensor name of the folder's weights and the file that holds it: model.safetensors, or the shards its
    model.safetensors.index.json lists (each a plain file name in the folder, each tensor in one shard)."""
    single = folder / "model.safetensors"
    if single.is_file():
        f = WeightFile(single)
        return dict.fromkeys(f.tensors, f)
    index = folder / "model.safetensors.index.json"
    weight_map = _read_index(index)
    files: dict[str, WeightFile] = {}
    found: dict[str, WeightFile] = {}
    for tensor, shard in weight_map.items():
        if shard not in files:
            if not (folder / shard).is_file():
                raise AttentionError(f"{index.name} lists {shard!r}, which is not in the folder", field=index.name)
            files[shard] = WeightFile(folder / shard)
            for name in files[shard].tensors:
                if name in found:
                    raise AttentionError(f"{name[:80]!r} is in two shards, {found[name].name} and {shard}", field=name)
                found[name] = files[shard]
        if tensor not in files[shard].tensors:
            raise AttentionError(f"{index.name} puts {tensor[:80]!r} in {shard}, which does not hold it", field=tensor)
    return found


def _read_index(index: Path) -> dict[str, str]:
    """model.safetensors.index.json's weight_map: tensor name -> shard file name, every name checked."""
    size = index.stat().st_size
    if size > MAX_INDEX_BYTES:
        raise AttentionError(f"{index.name} is {size:,} bytes; at most {MAX_INDEX_BYTES:,} are read", field=index.name)
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map")
    except (UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        raise AttentionError(f"{index.name} is not a JSON object with a weight_map ({exc})", field=index.name) from None
    if not isinstance(weight_map, dict) or not weight_map:
        raise AttentionError(f"{index.name} has no weight_map of tensor names to shard files", field=index.name)
    for tensor, shard in weight_map.items():
        if not (isinstance(shard, str) and SHARD_NAME.match(shard)):
            raise AttentionError(
                f"{index.name} names the shard {str(shard)[:80]!r} for {tensor[:80]!r}; a shard is a .safetensors "
                "file in the same folder",
                field=index.name,
            )
    return weight_map
