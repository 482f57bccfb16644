"""The run cache: the layer boundaries of recent forward passes, kept by content key within a bound in bytes.

An entry is (residuals, concats, logits): the streams entering layers 0 .. l, the heads' outputs (the
concatenation) of layers 0 .. l − 1 (a run's traces are made from them when read: :mod:`.layertraces`), and
the logits once every layer has run (else None). Its key is the token ids and the interventions of the layers
before l, so an intervention on layer l reuses layers 0 .. l − 1 and recomputes from l on. Every array an entry
holds is made read-only (later runs share it) and counted once in the byte bound, however many entries share it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator

import numpy as np

CACHE_RUNS = 4  # the cache keeps the layer boundaries of about this many recent runs
CACHE_BYTES = 1 << 30  # and at most about this much of their arrays

Entry = tuple  # (residuals, concats, logits or None)


class RunCache:
    """Entries by key, oldest first out past ``CACHE_RUNS`` runs of ``layers + 1`` boundaries or ``CACHE_BYTES``.
    ``ignored`` are arrays never counted (the model's own weights, which traces point at)."""

    def __init__(self, layers: int, ignored: Iterable[np.ndarray] = ()):
        self.layers = layers
        self._ignored = {id(a) for a in ignored}
        self._entries: OrderedDict[bytes, Entry] = OrderedDict()
        self._held: dict[int, list] = {}  # id(array) -> [the array, how many entries hold it]
        self.bytes = 0  # the bytes of the distinct arrays in _held

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: bytes) -> bool:
        return key in self._entries

    def values(self) -> Iterator[Entry]:
        """Every entry, oldest first."""
        return iter(list(self._entries.values()))

    def ignore(self, arrays: Iterable[np.ndarray]) -> None:
        """Never count these arrays (weights the model made after the cache)."""
        self._ignored.update(id(a) for a in arrays)

    def get(self, key: bytes) -> Entry:
        """The entry under ``key``, now the most recent."""
        self._entries.move_to_end(key)
        return self._entries[key]

    def put(self, key: bytes, entry: Entry) -> None:
        """Keep an entry (its arrays made read-only); the oldest go first past the bound in runs or in bytes."""
        if key in self._entries:
            self._let_go(self._entries[key])
        for a in self._arrays(entry):
            a.flags.writeable = False
            held = self._held.setdefault(id(a), [a, 0])
            held[1] += 1
            self.bytes += a.nbytes if held[1] == 1 else 0
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > 1 and (
            len(self._entries) > CACHE_RUNS * (self.layers + 1) or self.bytes > CACHE_BYTES
        ):
            self._let_go(self._entries.popitem(last=False)[1])

    def clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()
        self._held.clear()
        self.bytes = 0

    def _let_go(self, entry: Entry) -> None:
        """Stop counting an entry's arrays; an array's bytes leave the count when no entry holds it."""
        for a in self._arrays(entry):
            held = self._held[id(a)]
            held[1] -= 1
            if held[1] == 0:
                del self._held[id(a)]
                self.bytes -= a.nbytes

    def _arrays(self, entry: Entry) -> list[np.ndarray]:
        """The distinct arrays of an entry (streams, concatenations, logits), not the ignored ones."""
        residuals, concats, logits = entry
        found = [*residuals, logits, *concats]
        return list({id(a): a for a in found if isinstance(a, np.ndarray) and id(a) not in self._ignored}.values())
