"""The KV cache's arithmetic: what a decoder keeps per generated token, and how grouped-query heads shrink it.

When a model generates text it keeps every past token's keys and values, so each new token costs one query
against all of them. Per token and per layer the cache holds one key vector (d_k / heads numbers) and one value
vector (d_v / heads numbers) per key/value head:

    bytes per token = layers · kv_heads · (d_k/h + d_v/h) · bytes per number

which is 2 · layers · kv_heads · d_head · bytes per number when keys and values are equally wide (most models).

Multi-head attention has kv_heads = heads; grouped-query attention a divisor g of heads; multi-query attention
kv_heads = 1. The query heads do not count: queries are not cached.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import AttentionError
from .names import is_whole

MAX_VALUE = 10**7  # layers, heads, widths and tokens a learner may type (far above any model's)


@dataclass(frozen=True)
class Cache:
    """One configuration's cache: bytes per token, and for ``tokens`` tokens."""

    kv_heads: int
    bytes_per_token: int
    tokens: int
    total_bytes: int


def _whole(value: object, name: str, low: int = 1, high: int = MAX_VALUE) -> int:
    if not is_whole(value) or not low <= value <= high:
        raise AttentionError(f"{name} must be a whole number from {low} to {high:,}; got {value!r}", field=name)
    return value


def bytes_per_token(
    layers: int, kv_heads: int, d_head: int, bytes_per_value: int = 2, d_v_head: int | None = None
) -> int:
    """layers · kv_heads · (d_head + d_v_head) · bytes_per_value: a key of d_head = d_k/h numbers and a value of
    d_v_head = d_v/h numbers (d_head when not given) per key/value head and layer; 2 bytes: float16/bfloat16."""
    d_v_head = d_head if d_v_head is None else d_v_head
    for name, v in (
        ("layers", layers),
        ("kv_heads", kv_heads),
        ("d_head", d_head),
        ("d_v_head", d_v_head),
        ("bytes_per_value", bytes_per_value),
    ):
        _whole(v, name)
    return layers * kv_heads * (d_head + d_v_head) * bytes_per_value


def compare(
    layers: int,
    heads: int,
    kv_heads: int,
    d_head: int,
    tokens: int = 1,
    bytes_per_value: int = 2,
    d_v_head: int | None = None,
) -> dict[str, Cache]:
    """The cache for MHA (kv_heads = heads), the given kv_heads, and MQA (1), for ``tokens`` tokens; keys d_head
    wide and values d_v_head wide (d_head when not given) per head."""
    _whole(heads, "heads")
    _whole(tokens, "tokens")
    if _whole(kv_heads, "kv_heads") > heads or heads % kv_heads:
        raise AttentionError(f"kv_heads must divide heads = {heads}; got {kv_heads}", field="kv_heads")
    out = {}
    for label, g in (("MHA", heads), ("this", kv_heads), ("MQA", 1)):
        per = bytes_per_token(layers, g, d_head, bytes_per_value, d_v_head)
        out[label] = Cache(g, per, tokens, per * tokens)
    return out


def readable(n_bytes: float) -> str:
    """Bytes in the largest binary unit that keeps the number >= 1: '512 B', '1.5 KiB', '3.2 GiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n_bytes) < 1024 or unit == "PiB":
            return f"{n_bytes:,.0f} {unit}" if unit == "B" else f"{n_bytes:,.1f} {unit}"
        n_bytes /= 1024
    return f"{n_bytes:,.1f} PiB"  # not reached
