"""The trace cache stays within its byte, entry and age bounds."""

from __future__ import annotations

import numpy as np

import attention
from attention.ui.core.cache import TraceCache, nothing, trace_bytes


def _trace(n: int, seed: int) -> attention.Trace:
    rs = np.random.RandomState(seed)
    return attention.self_attention(rs.rand(n, 4), rs.rand(4, 4), rs.rand(4, 4), rs.rand(4, 4))


def test_evicts_least_recently_used_beyond_the_byte_bound() -> None:
    one = trace_bytes(_trace(64, 0))
    cache = TraceCache(max_bytes=int(one * 2.5), max_entries=100, ttl=1e9)
    calls = []
    for i in range(10):
        cache.get(f"k{i}", lambda i=i: calls.append(i) or _trace(64, i))
        assert cache.total_bytes <= one * 2.5
    assert len(cache) == 2
    cache.get("k9", lambda: calls.append("again") or _trace(64, 9))  # a hit: not recomputed
    assert "again" not in calls


def test_keeps_the_newest_even_when_it_alone_is_over_the_bound() -> None:
    cache = TraceCache(max_bytes=1, max_entries=5, ttl=1e9)
    t = cache.get("big", lambda: _trace(32, 1))
    assert len(cache) == 1 and cache.get("big", lambda: None) is t


def test_entry_and_age_bounds() -> None:
    cache = TraceCache(max_bytes=2**40, max_entries=3, ttl=1e9)
    for i in range(6):
        cache.get(str(i), lambda i=i: _trace(8, i))
    assert len(cache) == 3
    cache.ttl = -1.0  # everything is now too old
    cache.get("new", lambda: _trace(8, 99))
    assert len(cache) == 1


def test_makes_room_before_computing_when_told_the_size() -> None:
    one = trace_bytes(_trace(64, 0))
    cache = TraceCache(max_bytes=int(one * 2.5), max_entries=100, ttl=1e9)
    cache.get("a", lambda: _trace(64, 1))
    cache.get("b", lambda: _trace(64, 2))
    seen = []
    cache.get("c", lambda: seen.append(len(cache)) or _trace(64, 3), expected_bytes=one)
    assert seen == [1]  # "a" was evicted before "c" was computed


def test_any_value_by_any_hashable_key_counted_by_entries_and_listed_oldest_first() -> None:
    """The one cache keeps other values too (a vocabulary, a rebuilt session, an estimate): measured by nothing,
    bounded by entries alone; items() lists them least recently used first."""
    cache = TraceCache(max_bytes=0, max_entries=2, ttl=1e9, measure=nothing)
    for key in (("a", (1, 2)), ("b", (3,)), ("a", (1, 2)), ("c", ())):
        cache.get(key, lambda key=key: {"made": key})
    assert [key for key, _ in cache.items()] == [("a", (1, 2)), ("c", ())]
    assert cache.total_bytes == 0


def test_untold_its_size_the_newest_over_the_bound_stays_while_the_next_is_computed() -> None:
    """A walk over the byte bound is still there to be extended by the next press (told a size, room is made)."""
    one = trace_bytes(_trace(64, 0))
    cache = TraceCache(max_bytes=one // 2, max_entries=8, ttl=1e9)
    cache.get("first", lambda: _trace(64, 1))
    seen = []
    cache.get("next", lambda: seen.append([key for key, _ in cache.items()]) or _trace(64, 2))
    assert seen == [["first"]] and [key for key, _ in cache.items()] == ["next"]

