"""How rotary positions turn a head's queries and keys: one record of eight fields and their rules.

Checkpoints vary RoPE in eight ways (see :func:`attention.positions.rotate` and
:func:`attention.positions.scaled_frequencies`):

    rope_theta               the base θ of the frequencies ω_i = θ^(−2i/r)
    rotary_layout            "interleaved": the pairs (2i, 2i+1), the paper's; "halves": (i, i + r/2), rotate_half
    rotary_dims              r, how many of each head's columns turn (None: all, less one when a head's width is odd)
    rope_scaling             "none", "linear" (ω / rope_factor) or "llama3" (ω / rope_factor for long wavelengths,
    rope_factor, rope_low_freq_factor,             ω for the short ones, a mix between, set by the two factors
    rope_high_freq_factor, rope_original_context   and the original context)

:class:`Rotation` declares them once, with their defaults (the paper's rotation); a model's
:class:`~attention.model.Config` and a pass's :class:`~attention.Options` are both Rotations, so each field, its
rule (:data:`RULES`) and the rule that ties two of them (:func:`check`: llama3's high factor above its low) are
written here and nowhere else.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import names, positions
from .errors import AttentionError

MAX_CONTEXT = 1 << 20  # rope_original_context: the longest context a scaling may name
MAX_ROTATED = 1 << 14  # rotary_dims: the widest head a rotation may turn (a model's head_dim is at most this)


@dataclass(frozen=True, kw_only=True)
class Rotation:
    """The rotation's eight fields (see the module's table); the defaults are the paper's rotation."""

    rope_theta: float = 10000.0
    rotary_layout: str = "interleaved"
    rotary_dims: int | None = None
    rope_scaling: str = "none"
    rope_factor: float = 1.0
    rope_low_freq_factor: float = 1.0
    rope_high_freq_factor: float = 4.0
    rope_original_context: int = 8192

    @property
    def rotation(self) -> Rotation:
        """These eight fields alone, as a Rotation (a Config or Options holds more)."""
        return Rotation(**{name: getattr(self, name) for name in FIELDS})

    @property
    def plain_rotation(self) -> bool:
        """Whether the rotation is the paper's: base 10000, interleaved pairs, every column, no scaling."""
        return all(getattr(self, name) == value for name, value in DEFAULTS.items())

    def frequencies(self, d_head: int) -> np.ndarray:
        """The rotation's frequencies for heads of width ``d_head`` (r / 2,): θ^(−2i/r) over the rotated width r
        (rotary_dims, or d_head), stretched as rope_scaling says (see :func:`positions.scaled_frequencies`)."""
        width = d_head if self.rotary_dims is None else int(self.rotary_dims)
        omega = positions.frequencies(width, float(self.rope_theta))  # (r/2,)
        return positions.scaled_frequencies(
            omega,
            self.rope_scaling,
            float(self.rope_factor),
            float(self.rope_low_freq_factor),
            float(self.rope_high_freq_factor),
            int(self.rope_original_context),
        )

    def rotate(self, x: np.ndarray, inverse: bool = False) -> np.ndarray:
        """x (..., n, d_head), one head's queries or keys at positions 0 .. n − 1, turned as these fields say."""
        return positions.rotate(x, self.frequencies(x.shape[-1]), 0, self.rotary_layout, inverse)


FIELDS = tuple(f.name for f in dataclasses.fields(Rotation))
DEFAULTS = {f.name: f.default for f in dataclasses.fields(Rotation)}
FLOATS = ("rope_theta", "rope_factor", "rope_low_freq_factor", "rope_high_freq_factor")  # JSON numbers read as floats


def _positive(value: object) -> bool:
    if not names.is_number(value):
        return False
    try:
        return math.isfinite(float(value)) and float(value) > 0  # type: ignore[arg-type]
    except OverflowError:  # a whole number beyond the float range
        return False


def _one_of(choices: tuple[str, ...]) -> Callable[[object], bool]:
    return lambda value: isinstance(value, str) and value in choices


def _whole(value: object, low: int, high: int) -> bool:
    return names.is_whole(value) and low <= value <= high  # type: ignore[operator]


def _rotary_width(value: object) -> bool:
    return value is None or (_whole(value, 2, MAX_ROTATED) and value % 2 == 0)  # type: ignore[operator]


# field -> (the rule, what the message says when it is broken)
RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "rope_theta": (_positive, "must be a finite number > 0 (the rotation's base θ, 10000 in the paper)"),
    "rotary_layout": (
        _one_of(positions.LAYOUTS),
        "must be 'interleaved' (pairs 2i, 2i+1) or 'halves' (pairs i, i + r/2)",
    ),
    "rotary_dims": (
        _rotary_width,
        f"must be an even whole number from 2 to {MAX_ROTATED}, at most a head's width (or None for all columns)",
    ),
    "rope_scaling": (_one_of(positions.SCALINGS), f"must be one of {', '.join(positions.SCALINGS)}"),
    "rope_factor": (_positive, "must be a finite number > 0"),
    "rope_low_freq_factor": (_positive, "must be a finite number > 0"),
    "rope_high_freq_factor": (_positive, "must be a finite number > 0"),
    "rope_original_context": (
        lambda v: _whole(v, 1, MAX_CONTEXT),
        f"must be a whole number of tokens from 1 to {MAX_CONTEXT}",
    ),
}


def to_json(r: Rotation) -> dict[str, object]:
    """The eight fields as JSON types, in order (a preset's and a model head's options carry them so)."""
    return {
        "rope_theta": float(r.rope_theta),
        "rotary_layout": r.rotary_layout,
        "rotary_dims": None if r.rotary_dims is None else int(r.rotary_dims),
        "rope_scaling": r.rope_scaling,
        "rope_factor": float(r.rope_factor),
        "rope_low_freq_factor": float(r.rope_low_freq_factor),
        "rope_high_freq_factor": float(r.rope_high_freq_factor),
        "rope_original_context": int(r.rope_original_context),
    }


def check_field(name: str, value: object, prefix: str = "") -> None:
    """One field's rule: raise AttentionError ("{prefix}{name} must be …; got …", ``field`` the name)."""
    rule, message = RULES[name]
    if not rule(value):
        raise AttentionError(f"{prefix}{name} {message}; got {names.short(value)}", field=name)


def check(r: Rotation, prefix: str = "") -> None:
    """Every field's rule, then the rule that ties two (:func:`check_together`)."""
    for name in FIELDS:
        check_field(name, getattr(r, name), prefix)
    check_together(r, prefix)


def check_together(r: Rotation, prefix: str = "") -> None:
    """The rule that ties two fields: with llama3 scaling the high factor is above the low one."""
    if r.rope_scaling == "llama3" and not r.rope_high_freq_factor > r.rope_low_freq_factor:
        raise AttentionError(
            f"{prefix}rope_high_freq_factor must be above rope_low_freq_factor "
            f"({names.short(r.rope_low_freq_factor)}) with llama3 scaling; got {names.short(r.rope_high_freq_factor)}",
            field="rope_high_freq_factor",
        )
