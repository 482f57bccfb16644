"""What the pages inside a trained model share: runs, walks, the chooser, the answers, the readout of the stream.

The pages themselves are in :mod:`attention.ui.headpages` and :mod:`attention.ui.readouts`."""

from __future__ import annotations

from . import on_steps

ANSWERS: dict[str, on_steps.Answer] = {  # panels a step page's spec asks for below its results
    "model": on_steps.Answer(on_steps.is_model_head, on_steps.panel),
}
