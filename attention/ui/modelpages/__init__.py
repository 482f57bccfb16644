"""The pages inside a trained model, by key (see :data:`attention.ui.app.specs.INSIDE`), drawn below the title."""

from __future__ import annotations

from collections.abc import Callable

from ..core import session
from . import every_head, first_token, generate, on_steps, patching, watch_it_learn

ANSWERS: dict[str, on_steps.Answer] = {  # panels a step page's spec asks for below its results
    "model": on_steps.Answer(on_steps.is_model_head, on_steps.panel),
}
BODIES: dict[str, Callable[[session.Session], None]] = {
    "every_head": every_head.body,
    "watch_it_learn": watch_it_learn.body,
    "generate": generate.body,
    "first_token": first_token.body,
    "patching": patching.body,
}
