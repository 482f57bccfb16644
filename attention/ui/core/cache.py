"""What the UI keeps between runs, one mechanism: TraceCache (and kept, a cached function) and Registry.

A value made again from its key is kept in a :class:`TraceCache`, bounded by bytes, entries and age (:func:`kept`
gives a function one of its own); what cannot be made again is held in a :class:`Registry`.

Its rule is written with the state's (attention/ui/state/__init__.py, docs/architecture.md).

``st.cache_resource(max_entries=...)`` bounds the number of entries, but one trace at n = 2048 holds
three 2048 × 2048 float64 arrays (~100 MB), so a handful of edits at that size would hold most of a
gigabyte. This cache evicts least-recently-used traces once their arrays together exceed
``max_bytes`` (always keeping the newest), and drops any entry older than ``ttl`` seconds.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import math
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from ...trace import Trace

F = TypeVar("F", bound=Callable[..., Any])
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


class _Once:
    """A lock for one key of a kept function, dropped with its last holder."""

    __slots__ = ("lock", "__weakref__")

    def __init__(self) -> None:
        self.lock = threading.Lock()


def kept(
    entries: int,
    ttl: float = math.inf,
    max_bytes: int = 0,
    measure: Callable[[Any], int] = nothing,
    key: Callable[..., Hashable] | None = None,
) -> Callable[[F], F]:
    """A function whose results are kept in a :class:`TraceCache` of their own, by its arguments: at most ``entries``,
    each for ``ttl`` seconds, within ``max_bytes`` by ``measure`` (the default: by count alone). ``key(*args)`` is the
    key when the arguments are not all hashable, or hold more than what the result depends on (a trace passed with
    its content key, a file's bytes by their digest). The function gains ``clear()`` (and ``cache``, its cache)."""

    def wrap(fn: F) -> F:
        cache = TraceCache(max_bytes=max_bytes, max_entries=entries, ttl=ttl, measure=measure)
        making: weakref.WeakValueDictionary[Hashable, _Once] = weakref.WeakValueDictionary()
        guard = threading.Lock()

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            k = key(*args, **kwargs) if key is not None else (args, tuple(sorted(kwargs.items())))
            with guard:
                once = making.setdefault(k, _Once())  # held while in use: two sessions asking at once make it once
            with once.lock:
                return cache.get(k, lambda: fn(*args, **kwargs))

        call.cache, call.clear = cache, cache.clear  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap


class Registry:
    """What cannot be made again (a running job, a model a learner uploaded or trained), by key, in the order added
    (``by_use``: or last read): beyond ``most`` entries the oldest that ``may_go`` lets go is dropped (when it lets
    none go, such as jobs that all still run, all are kept). Its own lock guards each call; a caller that reads and
    then writes holds its own lock around both."""

    def __init__(self, most: int, may_go: Callable[[Any], bool] = lambda _: True, by_use: bool = False):
        self.most, self.may_go, self.by_use = most, may_go, by_use
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value held for ``key`` (``by_use``: now the newest), or None."""
        with self._lock:
            if key not in self._items:
                return None
            if self.by_use:
                self._items.move_to_end(key)
            return self._items[key]

    def add(self, key: Hashable, value: Any) -> Any:
        """Hold ``value`` for ``key`` (a value already held for it stays); the value held."""
        with self._lock:
            self._items[key] = self._items.get(key, value)
            self._items.move_to_end(key)
            while len(self._items) > self.most and (old := next(self._goes(), None)) is not None:
                del self._items[old]
            return self._items[key]

    def pop(self, key: Hashable) -> Any:
        """Let the value held for ``key`` go (a KeyError when none is held); the value."""
        with self._lock:
            return self._items.pop(key)

    def values(self) -> list[Any]:
        """What is held, oldest first (a copy)."""
        with self._lock:
            return list(self._items.values())

    def _goes(self):  # noqa: ANN202
        return (k for k, v in self._items.items() if self.may_go(v))

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
