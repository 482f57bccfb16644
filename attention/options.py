"""The options of one attention pass: a frozen dataclass, its rules, and the one reader of options from JSON.

Every field has one rule (:data:`RULES`); :meth:`Options.validate` applies them to an ``Options`` built in code.
:func:`from_json` is the one reader of options written in JSON (a preset's ``options``, a challenge's overrides,
:meth:`Options.from_dict`): it turns JSON's forms into the dataclass's (lists into tuples), checks the numbers fit a
float, lays the values over a base, applies the same rules and, given the number of tokens, the sizes. Its messages
start with the option's name ("temperature must be a finite number > 0; got 0"); each caller adds its path.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import masks, names, positions, rotation, steps
from .errors import AttentionError
from .heads import divisors
from .names import short
from .rotation import Rotation


@dataclass(frozen=True)
class Options(Rotation):
    """The conventions of one computation (the documents differ in these, so they are options).

    projection: "x_w" (Q = X @ W_q, W is d_model × d_k) or "x_wt" (Q = X @ W_q.T, the 'I am Batman' example).
    softmax: "row_max" (default), "global_max" or "none" (the 'She likes coffee' example); see :func:`steps.softmax`.
    scale: the factor applied to the scores; None means 1/√d_k (1/√(d_k/h) per head), 1.0 means no scaling.
    temperature: T > 0 in softmax(S'/T); 1 leaves the weights as they are, T > 1 flattens them.
    mask: the mask's parts, a tuple in this order: "causal" (token i sees tokens 0..i), "padding" (no token attends a
    padding token), "custom" (``custom_mask``), "window"; () for no mask. A cell may be attended only where every
    part allows it. Given as files, links and keywords spell it, "none", "causal" or parts joined with "+"
    ("causal+custom"), it is split on the way in (``Options(mask="causal+custom").mask == ("causal", "custom")``);
    :meth:`to_dict` joins it again.
    padding: one flag per token, True where the token is padding (used when the mask has "padding").
    heads: number of heads h; d_k and d_v must divide by h (1 = single-head attention).
    custom_mask: an n × n grid of flags (query × key), True where the query may attend the key.
    positions: "none", "sinusoidal" (PE added to X), "learned" (a matrix P added to X), "rotary" (RoPE on each
    head's Q and K) or "alibi" (a per-head bias −m_h·(i − j) added to the scaled scores); see
    :mod:`attention.positions`.
    kv_heads: the number of key/value heads (grouped-query attention); it divides ``heads``, and each of its
    column blocks of W_k and W_v serves heads / kv_heads query heads. 1 is multi-query attention; None (the
    default) means as many as ``heads``: ordinary multi-head attention.
    window: w, the width of the mask part "window" (query i sees keys i − w + 1 … i, itself and the w − 1 tokens
    before it); it does nothing while the mask has no "window".

    q_norm, k_norm: QK-norm (Qwen3, Gemma 3), a step between X·W and the rotation: each row of a head's q (k) is
    divided by its root mean square and scaled per column by these gains, one per column of a head, as the model
    applies them (Gemma's 1 + w); () leaves q (k) as X·W gives it. qk_norm_eps: the ε under the root.

    The rotation, as checkpoints vary it (its eight fields, rope_theta … rope_original_context, are a
    :class:`~attention.rotation.Rotation`'s, declared and checked there; they do nothing without rotary positions).
    A model's head records its layer's (:func:`attention.model.attend`).

    In a preset file the options are a JSON object with these field names as keys (padding a list of booleans,
    custom_mask a list of lists of booleans, scale a number or null); see :meth:`to_dict` and :meth:`from_dict`.
    """

    projection: steps.Projection = "x_w"
    softmax: steps.SoftmaxVariant = "row_max"
    scale: float | None = None
    temperature: float = 1.0
    mask: tuple[str, ...] = ()  # the parts; "causal+custom" is accepted and split (see __post_init__)
    padding: tuple[bool, ...] = ()
    heads: int = 1
    custom_mask: tuple[tuple[bool, ...], ...] = ()
    positions: str = "none"
    kv_heads: int | None = None
    window: int = 3
    q_norm: tuple[float, ...] = ()
    k_norm: tuple[float, ...] = ()
    qk_norm_eps: float = 1e-6

    def __post_init__(self) -> None:
        if isinstance(self.mask, str) and self.mask in masks.KINDS:  # spelled as a file or link spells it
            object.__setattr__(self, "mask", masks.parts(self.mask))

    @property
    def kv(self) -> int:
        """The number of key/value heads in force: ``kv_heads``, or ``heads`` when it is None."""
        return self.heads if self.kv_heads is None else int(self.kv_heads)

    def validate(self) -> Options:
        """Raise AttentionError naming the first option that is out of range (its ``field`` is the option's name);
        return self. The same rules as :meth:`from_dict`."""
        for name in RULES:  # the pass's own options first, then the rotation's
            _check(name, getattr(self, name), name)
        _check_together(self, "")
        return self

    def replace(self, **changes: object) -> Options:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON types (tuples as lists); ``Options.from_dict(o.to_dict()) == o``."""
        return {
            "projection": self.projection,
            "softmax": self.softmax,
            "scale": None if self.scale is None else float(self.scale),
            "temperature": float(self.temperature),
            "mask": masks.join(self.mask) if isinstance(self.mask, tuple) else self.mask,  # unchecked: as given
            "padding": [bool(p) for p in self.padding],
            "heads": int(self.heads),
            "custom_mask": [[bool(v) for v in row] for row in self.custom_mask],
            "positions": self.positions,
            "kv_heads": None if self.kv_heads is None else int(self.kv_heads),
            "window": int(self.window),
            "q_norm": [float(g) for g in self.q_norm],
            "k_norm": [float(g) for g in self.k_norm],
            "qk_norm_eps": float(self.qk_norm_eps),
            **rotation.to_json(self),
        }

    @classmethod
    def from_dict(cls, d: object, where: str = "options", n: int | None = None) -> Options:
        """Options from a JSON object (missing keys take their defaults) through :func:`from_json`, messages naming
        ``where.field``. With ``n`` (the number of tokens) the padding flags and the custom grid must fit n, and a
        mask part that needs them (padding, custom) must have them."""
        if not isinstance(d, Mapping):
            raise AttentionError(f"{where} must be an object of option names and values; got {type(d).__name__}")
        known = list(RULES)
        unknown = sorted(str(k) for k in d if k not in known)
        if unknown:
            raise AttentionError(
                f"{where}.{unknown[0]} is not an option; the options are {', '.join(known)}", field=unknown[0]
            )
        try:
            return from_json(d, n=n)
        except AttentionError as exc:
            raise AttentionError(f"{where}.{exc.message}", field=exc.field) from None

    def check_sizes(self, n: int) -> None:
        """A mask part that needs one flag per token (padding) or an n × n grid (custom) has it."""
        parts = self.mask
        if "padding" in parts and len(self.padding) != n:
            raise AttentionError(
                f"padding must list {n} flags, one per token, when the mask has 'padding'", field="padding"
            )
        if "custom" in parts and len(self.custom_mask) != n:
            raise AttentionError(
                f"custom_mask must be given ({n} × {n}) when the mask has 'custom'", field="custom_mask"
            )


def from_json(value: Mapping[str, object], base: Options | None = None, n: int | None = None) -> Options:
    """The one reader of options from JSON: ``value`` (option name -> JSON value, names already known) laid over
    ``base`` (the defaults when None), then every rule. Scale and temperature must be numbers that fit a float;
    padding a list of true/false flags and custom_mask a list of rows of them (with ``n``, of n flags and n × n,
    and a mask part that needs them must have them). Raises AttentionError whose ``field`` is the option and whose
    message starts with its name."""
    unknown = [str(k) for k in value if k not in RULES]
    if unknown:
        raise AttentionError(f"{unknown[0]} is not an option; the options are {', '.join(RULES)}", field=unknown[0])
    kw = {name: _json_value(name, value[name], n) for name in RULES if name in value}
    options = (base or Options()).replace(**kw).validate()
    if n is not None:
        options.check_sizes(n)
    return options


def _json_value(name: str, value: object, n: int | None) -> object:
    """One option's JSON value in the dataclass's form; strings and whole numbers are left for :data:`RULES`."""
    if name in _FLOATS or (name == "scale" and value is not None):
        return _json_number(name, value)
    if name == "padding":
        return _json_flags(value, n)
    if name == "custom_mask":
        return _json_grid(value, n)
    if name in ("q_norm", "k_norm"):
        return _json_gains(name, value)
    return value


def _json_number(name: str, value: object) -> object:
    """A number that fits a float, as a float when its rule can hold (> 0); else as written, for the rule to name."""
    if not names.is_number(value):
        raise AttentionError(f"{name} must be a finite number, got {short(value)}", field=name)
    try:
        x = float(value)  # type: ignore[arg-type]
    except OverflowError:  # a whole number beyond the float range
        x = math.inf
    if math.isnan(x):
        raise AttentionError(f"{name} must be a finite number, got {short(value)}", field=name)
    if math.isinf(x):
        raise AttentionError(
            f"{name} is a number too large for a 64-bit float (the largest is about 1.8e308)", field=name
        )
    return x if x > 0 else value


def _json_flags(value: object, n: int | None) -> tuple[bool, ...]:
    """Padding: a list of true/false flags (of n, with n, unless empty)."""
    ok = isinstance(value, list) and all(isinstance(p, bool) for p in value)
    if not ok or (n is not None and value and len(value) != n):  # type: ignore[arg-type]
        count = "" if n is None else f"{n} "
        raise AttentionError(
            f"padding must be a list of {count}true/false flags, one per token; got {short(value)}", field="padding"
        )
    return tuple(value)  # type: ignore[arg-type]


def _json_grid(value: object, n: int | None) -> tuple[tuple[bool, ...], ...]:
    """The custom mask: a list of rows of true/false flags (n rows of n, with n)."""
    ok = isinstance(value, list) and all(isinstance(r, list) and all(isinstance(b, bool) for b in r) for r in value)
    if n is None and not ok:
        raise AttentionError(
            "custom_mask must be a list of rows of true/false flags (query × key)", field="custom_mask"
        )
    if n is not None and not (ok and len(value) == n and all(len(r) == n for r in value)):  # type: ignore[arg-type]
        raise AttentionError(f"custom_mask must be {n} rows of {n} true/false flags (query × key)", field="custom_mask")
    return tuple(tuple(r) for r in value)  # type: ignore[union-attr]


def _json_gains(name: str, value: object) -> tuple[float, ...]:
    """A norm's gains: a list of finite numbers, at most a head's width."""
    if not (isinstance(value, list) and len(value) <= names.MAX_DIM and all(finite(g) for g in value)):
        raise AttentionError(
            f"{name} must be a list of at most {names.MAX_DIM} finite numbers, one gain per column of a head; "
            f"got {short(value)}",
            field=name,
        )
    return tuple(float(g) for g in value)


def finite(value: object) -> bool:
    """A finite real number (a Python int too large for a float is not finite here, and never an OverflowError)."""
    if not names.is_number(value):
        return False
    try:
        return math.isfinite(float(value))  # type: ignore[arg-type]
    except OverflowError:
        return False


def _positive(value: object) -> bool:
    return finite(value) and float(value) > 0  # type: ignore[arg-type]


def _whole(value: object, low: int, high: int) -> bool:
    return names.is_whole(value) and low <= value <= high  # type: ignore[operator]


def _is_flag(value: object) -> bool:
    return isinstance(value, (bool, np.bool_))


def _one_of(choices: tuple[str, ...]) -> Callable[[object], bool]:
    return lambda value: isinstance(value, str) and value in choices


_MASK_PARTS = frozenset(masks.parts(kind) for kind in masks.KINDS)  # every mask as a tuple of parts, in order


def _mask_kind(value: object) -> bool:
    """A mask as files spell it ("causal+padding"), or as the dataclass holds it (its parts, in order)."""
    if isinstance(value, str):
        return value in masks.KINDS
    return isinstance(value, tuple) and all(isinstance(p, str) for p in value) and value in _MASK_PARTS


def _square_grid(value: object) -> bool:
    return (
        isinstance(value, tuple)
        and all(isinstance(r, tuple) and len(r) == len(value) for r in value)
        and all(_is_flag(v) for r in value for v in r)
    )


def _gains(value: object) -> bool:
    return isinstance(value, tuple) and len(value) <= names.MAX_DIM and all(finite(g) for g in value)


_FLOATS = ("temperature", "qk_norm_eps", *rotation.FLOATS)


# field -> (the rule, what the message says when it is broken)
RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "projection": (_one_of(names.PROJECTIONS), "must be 'x_w' (X @ W) or 'x_wt' (X @ W.T)"),
    "softmax": (_one_of(names.SOFTMAX_VARIANTS), "must be 'row_max', 'global_max' or 'none'"),
    "scale": (lambda v: v is None or _positive(v), "must be a finite number > 0 (or None for 1/√d_k)"),
    "temperature": (_positive, "must be a finite number > 0"),
    "mask": (_mask_kind, f"must be one of {', '.join(masks.KINDS)}"),
    "padding": (
        lambda v: isinstance(v, tuple) and all(_is_flag(p) for p in v),
        "must be true/false flags, one per token",
    ),
    "heads": (lambda v: _whole(v, 1, names.MAX_DIM), f"must be a whole number from 1 to {names.MAX_DIM}"),
    "custom_mask": (_square_grid, "must be a square grid of true/false (query × key, true = may attend)"),
    "positions": (_one_of(positions.KINDS), f"must be one of {', '.join(positions.KINDS)}"),
    "kv_heads": (
        lambda v: v is None or _whole(v, 1, names.MAX_DIM),
        f"must be a whole number from 1 to {names.MAX_DIM} that divides heads (or None for as many as heads)",
    ),
    "window": (
        lambda v: _whole(v, 1, names.MAX_TOKENS),
        f"must be a whole number of tokens from 1 to {names.MAX_TOKENS} (query i sees keys i − window + 1 … i)",
    ),
    "q_norm": (_gains, f"must be at most {names.MAX_DIM} finite numbers, one gain per column of a head (or none)"),
    "k_norm": (_gains, f"must be at most {names.MAX_DIM} finite numbers, one gain per column of a head (or none)"),
    "qk_norm_eps": (lambda v: _positive(v) and float(v) < 1, "must be a number between 0 and 1"),  # type: ignore[arg-type]
    **rotation.RULES,
}
ROTATION_DEFAULTS = rotation.DEFAULTS


def _check_together(o: Options, prefix: str) -> None:
    """The rules that tie two options: kv_heads divides heads; llama3 scaling's high factor is above its low."""
    rotation.check_together(o, prefix)
    if o.kv_heads is not None and o.heads % o.kv_heads:
        raise AttentionError(
            f"{prefix}kv_heads must divide heads = {o.heads} (each key/value head serves the same number of query "
            f"heads): one of {', '.join(map(str, divisors(o.heads)))}; got {short(o.kv_heads)}",
            field="kv_heads",
        )


def _check(name: str, value: object, path: str) -> None:
    rule, message = RULES[name]
    if not rule(value):
        raise AttentionError(f"{path} {message}; got {short(value)}", field=name)
