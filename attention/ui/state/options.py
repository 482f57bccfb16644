"""Changes to the options: softmax, scale, temperature, masks, positions, heads, key/value heads, QK-norm's gains."""

from __future__ import annotations

import math
from dataclasses import replace

from ... import heads, masks, names
from ..core.session import get, valid_heads
from . import reshapes
from .challenges import refuse_locked
from .core import say, touch


def set_option(**changes: object) -> None:
    """Change options (softmax, scale, temperature, mask, padding...); the matrices stay as they are."""
    s = get()
    new = replace(s.options, **changes)
    if new != s.options:
        s.options = new
        touch(s)


GAIN_NAMES = {"q_norm": "g_q", "k_norm": "g_k"}  # QK-norm's gains, as the Q·K·V page names them


def set_gains(gains: dict[str, tuple[float, ...]]) -> list[str]:
    """QK-norm's gains (``q_norm``, ``k_norm``: one per column of a head, as the norm applies them) replaced, when
    each is as wide as the gains it replaces and every gain is finite; what changed, in words ("g_q c3 1.2 → 1.5").
    Anything else changes nothing and is said at "edit.gains"."""
    s = get()
    old = {n: getattr(s.options, n, None) for n in gains}
    if any(n not in GAIN_NAMES or not old[n] or len(v) != len(old[n]) for n, v in gains.items()) or not all(
        math.isfinite(g) for v in gains.values() for g in v
    ):
        say("edit.gains", "error", "QK-norm's gains must be finite numbers, one per column of a head; nothing changed.")
        return []
    changed = [
        f"{GAIN_NAMES[n]} c{i + 1} {a:.6g} → {b:.6g}" if f"{a:.6g}" != f"{b:.6g}" else f"{GAIN_NAMES[n]} c{i + 1} {b!r}"
        for n, v in gains.items()
        for i, (a, b) in enumerate(zip(old[n], v, strict=True))
        if a != b
    ]
    if changed:
        set_option(**{n: tuple(float(g) for g in v) for n, v in gains.items()})
    return changed


def set_mask(kind: str) -> None:
    """Choose the mask (``kind`` as the select box spells it, "causal+padding"); padding flags and a custom grid
    (all allowed at first) are sized to the tokens."""
    parts = masks.parts(kind)  # (part, ...)
    s = get()
    n = len(s.tokens)
    pad = s.options.padding if len(s.options.padding) == n else (False,) * n
    grid = s.options.custom_mask if len(s.options.custom_mask) == n else ((True,) * n,) * n
    s.options = replace(s.options, mask=parts, padding=pad, custom_mask=grid if "custom" in parts else ())
    touch(s)


def set_custom_mask(grid: tuple[tuple[bool, ...], ...]) -> None:
    """The custom mask's grid (query × key, True = may attend), already checked to be n × n."""
    set_option(custom_mask=grid)


def set_heads(h: int) -> None:
    """Split attention into ``h`` heads (h must divide d_k and d_v; the control offers only those)."""
    s = get()
    if h not in valid_heads(s):
        say(
            "sidebar.heads",
            "error",
            f"{h} heads do not divide d_k = {s.dims.d_k} and d_v = {s.dims.d_v}; "
            f"choose one of {', '.join(map(str, valid_heads(s)))}.",
        )
        return
    s.head = min(s.head, h - 1)
    grouped = s.options.kv != s.options.heads
    if grouped:  # one key/value block per head again first (copies: nothing changes)
        reshapes.use_kv_heads(s, s.options.heads)
        s.version += 1
    set_option(heads=h)
    fitted = reshapes.fit_gains(s, s.dims.d_k // h)  # QK-norm's gains, one per column of the new heads
    if grouped:
        touch(s)
        say(
            "sidebar.kv_heads",
            "info",
            f"Key/value heads are back to one per head ({h} heads): W_k and W_v were widened by copying their "
            "shared blocks.",
        )
    if fitted:
        say("sidebar.heads", "info", fitted)  # ours: numbers


def set_kv_heads(g: int) -> None:
    """Share key/value heads: g of them, each serving heads / g query heads (g must divide the heads). W_k and W_v
    are regrouped (:func:`attention.heads.regroup`): copied when g is a multiple of the old count (no output
    changes), averaged otherwise (fewer, or 2 -> 3 of 6: the numbers change)."""
    s = get()
    h, old = s.options.heads, s.options.kv
    if not names.is_whole(g) or g < 1 or h % g:
        say(
            "sidebar.kv_heads",
            "error",
            f"Key/value heads must divide the {h} heads: one of {', '.join(map(str, heads.divisors(h)))}; nothing "
            "was changed.",
        )
        return
    if g == old or refuse_locked("W_k", "sidebar.kv_heads") or refuse_locked("W_v", "sidebar.kv_heads"):
        return
    reshapes.use_kv_heads(s, g)
    s.version += 1
    touch(s)
    how = (
        "the shared blocks were copied to the heads that now have their own, so nothing changes until you edit"
        if g % old == 0
        else "each shared block is the mean of the blocks of the heads it now serves (how the GQA paper converts a "
        "multi-head model), so the numbers change"
    )
    say("sidebar.kv_heads", "info", f"W_k and W_v now have {g} block(s) of columns for {h} query heads: {how}.")


def set_positions(kind: str) -> None:
    """None, sinusoidal, learned (an editable P, starting as the sinusoidal code) or rotary."""
    s = get()
    if kind == s.options.positions:
        return
    note = reshapes.use_positions(s, kind)
    s.version += 1
    touch(s)
    if note:
        say("control.positions", "info", note)  # ours: our wording


def set_w_o(on: bool) -> None:
    """Mix the heads' outputs by an editable W_o (starting as the identity), or drop it."""
    s = get()
    note = reshapes.use_w_o(s, on)
    if note:
        s.version += 1
        touch(s)
        say("control.w_o", "info", note)  # ours: our wording
