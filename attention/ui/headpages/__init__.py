"""The pages inside a model that read its heads' patterns, by key (specs.INSIDE); drawn below the title."""

from __future__ import annotations

from collections.abc import Callable

from ..core import session
from . import every_head, first_token, generate, watch_it_learn

BODIES: dict[str, Callable[[session.Session], None]] = {
    "every_head": every_head.body,
    "watch_it_learn": watch_it_learn.body,
    "generate": generate.body,
    "first_token": first_token.body,
}
