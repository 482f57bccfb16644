"""Settings of the family's views: the KV cache's model size, the FlashAttention lab's tiles, the source sentence.

The numbers change no matrix or option, so they live in ``st.session_state`` under :data:`KEY` (kept across pages);
the source sentence is the Session's ``source`` (it travels in links). Both are written only here, from widget
callbacks. A typed setting is read by :func:`..widgets.common.whole_number` first (a refused value leaves a
message at its place and the setting as it was); a refused source sentence leaves a message here.
"""

from __future__ import annotations

import streamlit as st

from ...names import is_whole
from ..core.session import get
from ..core.text import esc
from .core import say, touch
from .pins import renew_grids

KEY = "family_settings"
# name -> (what the learner sees, lowest, highest, default)
SETTINGS: dict[str, tuple[str, int, int, int]] = {
    "layers": ("Layers", 1, 10_000, 1),
    "tokens": ("Tokens of context", 1, 10_000_000, 4096),
    "bytes": ("Bytes per number", 1, 8, 2),
    "m_layers": ("The model's layers", 1, 10_000, 32),
    "m_heads": ("The model's query heads", 1, 4096, 32),
    "m_kv": ("The model's key/value heads", 1, 4096, 8),
    "m_dhead": ("The model's d_head", 1, 65_536, 128),
    "tile": ("Tile size", 1, 2048, 2),
    "step": ("Tile", 0, 10_000_000, 0),
    "flash_head": ("Head", 0, 255, 0),
    "flash_n": ("Sequence length n", 1, 10_000_000, 8192),
    "flash_d": ("Head width d", 1, 65_536, 128),
}


def settings() -> dict[str, int]:
    """Every setting, its default where none was set."""
    stored = st.session_state.get(KEY, {})
    return {name: int(stored.get(name, spec[3])) for name, spec in SETTINGS.items()}


def set_setting(name: str, value: int) -> None:
    """Store a setting: a whole number in its range, read by :func:`..widgets.common.whole_number` or offered by
    a control (the head chooser, the tile steps)."""
    _, lo, hi, _ = SETTINGS[name]
    if not is_whole(value) or not lo <= value <= hi:
        raise ValueError(f"setting {name} is a whole number from {lo} to {hi}; got {value!r}")  # a caller's bug
    st.session_state[KEY] = {**st.session_state.get(KEY, {}), name: value}


MAX_SOURCE_CHARS = 4000


def source_problem(text: object, limits: tuple[int, int]) -> str | None:
    """What is wrong with a source sentence (Markdown, user text escaped), or None; checked after its length."""
    most, chars = limits
    if not isinstance(text, str) or len(text) > MAX_SOURCE_CHARS:
        return f"The source sentence must be text of at most {MAX_SOURCE_CHARS:,} characters"
    words = text.split()
    if len(words) > most:
        return f"The source sentence has {len(words):,} tokens; at most {most:,} are allowed"
    if (long := next((w for w in words if len(w) > chars), None)) is not None:
        return f"The source token {esc(long, 40)} is {len(long):,} characters long; at most {chars} are allowed"
    return None


def set_source(text: object, limits: tuple[int, int]) -> bool:
    """A new source sentence (split on spaces; empty clears it), checked against ``limits`` = (most tokens, most
    characters per token); else a message at "cross.source" and False (the sentence stays)."""
    problem = source_problem(text, limits)
    if problem:
        say("cross.source", "error", problem + ". The previous source sentence is kept.")  # ours: user text escaped
        renew_grids()
        return False
    s = get()
    words = tuple(text.split())  # type: ignore[union-attr]
    if words != s.source:
        s.source = words
        touch(s)
    return True
