"""The KV cache page's state: the Session's ``kvcache`` record, made on first use, changed by callbacks.

The one writer of :class:`attention.ui.core.session.KvCache`, with ``dataclasses.replace``: the text studied (the
shipped long text, or the text the other model pages read), the eviction policy, the budget as typed (keys or a
share; a bad one is named under its box and nothing changes), and this session's jobs (:mod:`attention.ui.core.jobs`).
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from ...errors import AttentionError
from ...model.eviction import POLICIES, long_text
from ...model.vocab import WordVocab
from ..core import jobs, keys, models
from ..core.cache import TraceCache, nothing
from ..core.session import KvCache, get
from . import inside

TEXTS = {"long": "The shipped long text (up to 2,048 tokens)", "pages": "The text the other model pages read"}
UNITS = {"keys": "keys per head", "share": "a share of the cache"}
MAX_BUDGET_CHARS = 40  # a typed budget is at most this long (checked before it is read)
_LONG = TraceCache(max_bytes=0, max_entries=8, ttl=3600, measure=nothing)  # the long text's ids, by model


def now() -> KvCache:
    """The page's state, made on first use (the model pages' state too)."""
    inside.ensure()
    s = get()
    if s.kvcache is None:
        s.kvcache = KvCache()
    return s.kvcache


def _set(**changes: object) -> None:
    s = get()
    s.kvcache = replace(now(), **changes)


def reads_long(model_id: str) -> bool:
    """Whether the model can read the shipped long text (it has a tokenizer, not a word list)."""
    return not isinstance(models.get(model_id).vocab, WordVocab)


def ids() -> tuple[int, ...]:
    """The token ids the page studies: the shipped long text cut to the model's context and
    :data:`~attention.ui.core.jobs.KV_TOKENS`, when chosen and the model reads it; else the model pages' text."""
    model_id = inside.model_id()
    if now().text == "long" and reads_long(model_id):
        return _LONG.get(model_id, lambda: _long_ids(model_id))
    return inside.current()[0]


def _long_ids(model_id: str) -> tuple[int, ...]:
    m = models.get(model_id)
    return tuple(m.encode(long_text())[: min(jobs.KV_TOKENS, m.config.n_ctx)])


def on_text() -> None:
    """The text to study was chosen (one of :data:`TEXTS`; anything else is ignored)."""
    value = st.session_state.get(keys.KV_TEXT)
    if value in TEXTS:
        _set(text=value, extra=None)


def on_policy() -> None:
    """A policy was chosen (one of the engine's; anything else is ignored): redrawn from the study, not recomputed."""
    value = st.session_state.get(keys.KV_POLICY)
    if value in POLICIES:
        _set(policy=value)


def on_unit() -> None:
    """The budget's unit was chosen: the budget goes back to the curve's default, said in that unit."""
    value = st.session_state.get(keys.KV_UNIT)
    if value in UNITS:
        _set(unit=value, budget="", message="")
        st.session_state[keys.KV_BUDGET] = ""


def read_budget(typed: object, unit: str, p: int) -> int:
    """A typed budget as a number of keys (1 to p, the prefix's keys): a whole number of keys, or a share of the
    cache (0 < share ≤ 1, or a percentage like "25%"); an AttentionError naming what is wrong."""
    text = str(typed).strip()
    if len(text) > MAX_BUDGET_CHARS:
        raise AttentionError(f"the budget is {len(text):,} characters long; type a number", field="budget")
    if unit == "keys":
        if not text.isdigit() or not 1 <= int(text) <= p:
            raise AttentionError(f"the budget {text[:20]!r} is not a whole number of keys from 1 to {p:,}",
                                 field="budget")
        return int(text)
    percent = text.endswith("%")
    try:
        share = float(text.rstrip("%").strip()) / (100 if percent else 1)
    except ValueError:
        share = float("nan")
    if not 0 < share <= 1:  # NaN fails too
        raise AttentionError(f"the share {text[:20]!r} is not a number above 0 and at most 1 (or 100%)",
                             field="budget")
    return max(1, round(share * p))


def on_budget(p: int) -> None:
    """A budget was typed (Enter): kept when it reads as a budget for a prefix of p keys; else its box says why and
    the budget in force stays."""
    typed = st.session_state.get(keys.KV_BUDGET, "")
    if not str(typed).strip():
        _set(budget="", message="", extra=None)
        return
    try:
        read_budget(typed, now().unit, p)
    except AttentionError as e:
        _set(message=f"{e}. The budget in force is unchanged.")
        return
    _set(budget=str(typed).strip(), message="", extra=None)


def budget(p: int, budgets: tuple[int, ...]) -> int:
    """The budget in force, in keys: the one typed, else the curve's middle one."""
    k = now()
    return read_budget(k.budget, k.unit, p) if k.budget else budgets[(len(budgets) - 1) // 2]


def start(model_id: str, ids: tuple[int, ...]) -> None:
    """Study the text in the background (a finished study of the same model and text is shown at once)."""
    jobs.cancel(now().job)
    try:
        job = jobs.kv_study(model_id, ids, reads_long(model_id))
    except AttentionError as e:
        _set(job=None, message=f"{e}. Nothing started.")
        return
    _set(job=job.id, message="")


def start_extra(model_id: str, ids: tuple[int, ...], budget: int) -> None:
    """Measure every policy at one budget off the curve, in the background."""
    jobs.cancel(now().extra)
    try:
        job = jobs.kv_budget(model_id, ids, budget)
    except AttentionError as e:
        _set(extra=None, message=f"{e}. Nothing started.")
        return
    _set(extra=job.id, message="")


def cancel() -> None:
    """Stop this session's study and extra budget at their next layer (nothing of them is kept)."""
    k = now()
    jobs.cancel(k.job)
    jobs.cancel(k.extra)
    _set(job=None, extra=None)
