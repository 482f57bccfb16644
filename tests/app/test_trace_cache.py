"""The trace cache stays within its byte, entry and age bounds."""

from __future__ import annotations

import numpy as np

import attention
from attention.ui.core.cache import TraceCache, trace_bytes


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
