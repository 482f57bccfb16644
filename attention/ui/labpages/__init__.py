"""The bodies of the pages beyond the steps, by key (see :data:`attention.ui.specs.LABS`), drawn below the title."""

from __future__ import annotations

from collections.abc import Callable

from .. import session
from . import learn

BODIES: dict[str, Callable[[session.Session], None]] = {}
BODIES["learn"] = learn.body
