"""The UI's one process-wide cache: traces and any value made again from its key, bounded by bytes, entries and age.

Its rule is written with the state's (attention/ui/state/__init__.py).

``st.cache_resource(max_entries=...)`` bounds the number of entries, but one trace at n = 2048 holds
three 2048 × 2048 float64 arrays (~100 MB), so a handful of edits at that size would hold most of a
gigabyte. This cache evicts least-recently-used traces once their arrays together exceed
``max_bytes`` (always keeping the newest), and drops any entry older than ``ttl`` seconds.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from ...trace import Trace

M_MMAP_THRESHOLD = -3  # glibc mallopt parameter


def return_large_frees_to_the_os(threshold: int = 1 << 20) -> bool:
    """Make glibc serve every allocation of ``threshold`` bytes or more with its own mmap.

    By default glibc raises its mmap threshold after a large block is freed, so later n×n arrays come
    from per-thread heaps that are never given back; with one script thread per session, the server's
    memory then grew by about one trace per session (measured: +25 MB per session at n = 1024, 567 MB
    after 14 sessions) even though the cache held at most 8 traces. Fixing the threshold (which also
    turns the adjustment off) lets freed arrays go back to the OS (plateau at ~408 MB in the same run).
    Returns False where this is not glibc."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, threshold))
    except (OSError, AttributeError):
        return False


LARGE_N = 256  # from this many tokens on, each run starts with a full garbage collection


def collect_if_large(n: int) -> bool:
    """A full garbage collection before the run of a state with ``n`` ≥ :data:`LARGE_N` tokens; returns whether.

    Streamlit's own collection after every run is off (``runner.postScriptGC``): it took ~90 ms of each run
    of a small page, where a person waits for the edit. Cyclic garbage holding n × n arrays of a large state
    (~32 MB each at n = 2048) would then wait for Python's own collector, so large states collect here, at the
    start of their runs, where 90 ms is a small part of a run that takes most of a second."""
    if n < LARGE_N:
        return False
    gc.collect()
    return True


def nothing(_: object) -> int:
    """The measure of a value kept by count alone (a small dict, a session rebuilt from a link)."""
    return 0


def trace_bytes(trace: Trace) -> int:
    return sum(a.nbytes for a in trace.arrays().values()) + (0 if trace.allowed is None else trace.allowed.nbytes)


class TraceCache:
    """Traces by key, LRU within the bounds; ``measure`` gives an entry's bytes (another kind of result, such as a
    FlashAttention pass, a model's vocabulary or a rebuilt session, is kept with its own measure; :func:`nothing`:
    bounded by entries alone). A key is any hashable value."""

    def __init__(self, max_bytes: int, max_entries: int, ttl: float, measure: Callable[[Any], int] = trace_bytes):
        self.max_bytes, self.max_entries, self.ttl, self.measure = max_bytes, max_entries, ttl, measure
        self._items: OrderedDict[Hashable, tuple[float, int, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], Any], expected_bytes: int = 0) -> Any:
        """The cached trace for ``key``, or ``compute()``'s. ``expected_bytes`` (the new trace's size)
        makes room before computing, so the peak is the bound plus one trace, not plus two; untold, the newest entry
        stays while the next is computed, even over the bound (a walk is extended from the one before it)."""
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][2]
            while self._items and expected_bytes and self.total_bytes + expected_bytes > self.max_bytes:
                self._items.popitem(last=False)
        trace = compute()  # outside the lock: other sessions are not blocked by a long computation
        with self._lock:
            self._items[key] = (now, self.measure(trace), trace)
            self._items.move_to_end(key)
            while len(self._items) > 1 and (len(self._items) > self.max_entries or self.total_bytes > self.max_bytes):
                self._items.popitem(last=False)
        return trace

    def items(self) -> list[tuple[Hashable, Any]]:
        """What is kept, least recently used first (a copy: a walk looks for the longest one to extend)."""
        with self._lock:
            return [(key, value) for key, (_, _, value) in self._items.items()]

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def _expire(self, now: float) -> None:
        for key in [k for k, (t, _, _) in self._items.items() if now - t > self.ttl]:
            del self._items[key]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
