"""The pages inside a model that read what the heads write (lens, shares, patching, routes), by key.

Each is a ``Lab`` of :data:`attention.ui.app.specs.INSIDE`; its body is drawn below the title."""

from __future__ import annotations

from collections.abc import Callable

from ..core import session
from . import attribution, lens, patching, routes

BODIES: dict[str, Callable[[session.Session], None]] = {
    "logit_lens": lens.body,
    "attribution": attribution.body,
    "patching": patching.body,
    "routes": routes.body,
}
