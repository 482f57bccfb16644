"""The options part of an address (softmax, scale, temperature, masks, window, positions, heads), read with notices.

Each refused value gets a notice; every value is user text, quoted in it through :func:`attention.ui.core.text.quoted`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from ... import masks, names, positions
from ...trace import MASK_KINDS
from ..core import session
from ..core.text import quoted

SOFTMAXES = names.SOFTMAX_VARIANTS  # the values a link may give


def whole(text: str, lo: int, hi: int) -> int | None:
    """The whole number ``text`` spells, if it is plain digits from ``lo`` to ``hi``; else None."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 10 and lo <= int(text) <= hi else None


def number(text: str) -> float | None:
    """The number ``text`` spells, if it is a finite scale or temperature in range; else None."""
    try:
        value = float(text) if len(text) <= 40 else math.nan
    except ValueError:
        return None
    lo, hi = session.FACTOR_RANGE
    return value if math.isfinite(value) and lo <= value <= hi else None


def read_options(s: session.Session, qp: Mapping[str, str], notices: list[str]) -> None:
    """Apply the address's options to ``s`` (a session being rebuilt), adding a notice for each refused value."""
    o, changes = s.options, {}
    if "softmax" in qp:
        if qp["softmax"] in SOFTMAXES:
            changes["softmax"] = qp["softmax"]
        else:
            notices.append(
                f"The link's softmax {quoted(qp['softmax'])} is not one of {', '.join(SOFTMAXES)}; keeping the "
                f"preset's."
            )
    if "scale" in qp:
        value = {"default": None, "none": 1.0}.get(qp["scale"], number(qp["scale"]))
        if value is None and qp["scale"] != "default":
            notices.append(
                f"The link's scale {quoted(qp['scale'])} is not default, none or a number from "
                f"{session.FACTOR_RANGE[0]:g} to {session.FACTOR_RANGE[1]:g}; keeping the preset's."
            )
        else:
            changes["scale"] = value
    if "temp" in qp:
        value = number(qp["temp"])
        if value is None:
            notices.append(
                f"The link's temperature {quoted(qp['temp'])} is not a number from {session.FACTOR_RANGE[0]:g} "
                f"to {session.FACTOR_RANGE[1]:g}; keeping the preset's."
            )
        else:
            changes["temperature"] = value
    if "mask" in qp:
        if qp["mask"] in MASK_KINDS:
            changes["mask"] = masks.parts(qp["mask"])
        else:
            notices.append(f"The link's mask {quoted(qp['mask'])} is not one of {', '.join(MASK_KINDS)}; no mask.")
    n = len(s.tokens)
    pad = [False] * n
    for part in qp.get("pad", "").split(",") if qp.get("pad") else []:
        i = whole(part, 1, n)
        if i is None:
            notices.append(f"The link's padding token {quoted(part)} is not a token number from 1 to {n}; ignored.")
        else:
            pad[i - 1] = True
    if any(pad) or "padding" in changes.get("mask", o.mask):
        changes["padding"] = tuple(pad)
    if "pos" in qp:
        if qp["pos"] in positions.KINDS:
            changes["positions"] = qp["pos"]
        else:
            notices.append(
                f"The link's positions {quoted(qp['pos'])} are not one of {', '.join(positions.KINDS)}; none."
            )
    if "cmask" in qp:
        rows = qp["cmask"].split(".")
        if len(rows) == n and all(len(r) == n and set(r) <= {"0", "1"} for r in rows):
            changes["custom_mask"] = tuple(tuple(c == "1" for c in r) for r in rows)
        else:
            notices.append(f"The link's custom mask {quoted(qp['cmask'])} is not {n} rows of {n} 0/1 flags; ignored.")
    if "custom" in changes.get("mask", o.mask) and len(changes.get("custom_mask", o.custom_mask)) != n:
        changes["custom_mask"] = ((True,) * n,) * n  # a custom mask with no grid allows everything
    if "heads" in qp:
        h = whole(qp["heads"], 1, names.MAX_DIM)
        if h is None or h not in session.valid_heads(s):
            notices.append(f"The link's heads {quoted(qp['heads'])} do not divide d_k and d_v; one head.")
        else:
            changes["heads"] = h
    if "win" in qp:
        w = whole(qp["win"], 1, names.MAX_TOKENS)
        if w is None:
            notices.append(
                f"The link's window {quoted(qp['win'])} is not a whole number from 1 to {names.MAX_TOKENS}; "
                f"keeping {o.window}."
            )
        else:
            changes["window"] = w
    s.options = replace(o, **changes)
