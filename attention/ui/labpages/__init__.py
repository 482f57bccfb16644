"""The bodies of the pages beyond the steps, by key (see :data:`attention.ui.app.specs.LABS`), drawn below the title."""

from __future__ import annotations

from collections.abc import Callable

from ..core import session
from . import board, challenges, flash, learn, stability, why_sqrt_dk

BODIES: dict[str, Callable[[session.Session], None]] = {
    "why_sqrt_dk": why_sqrt_dk.body,
    "stability": stability.body,
    "challenges": challenges.body,
    "learn": learn.body,
    "flash": flash.body,
    "class_board": board.body,
}
