"""The Patching page's shared test parts: a model of the tests' own, the naive patch's shares (each patch the whole
corrupted run again, with the engine's own patch()), the page's two heatmaps read back, and a patch run to its end."""

from __future__ import annotations

import numpy as np

from attention.model import builtin, patch, patch_stream, restored
from attention.ui.core import jobs
from tests.helpers.apptest import drawn_cells, no_exception, session
from tests.helpers.drawn import title_of

ENGINE = builtin("induction")  # a model of its own, not the page's


def naive_shares(m, clean: list[int], corrupt: list[int], answer: int, wrong: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = m.run(clean), m.run(corrupt)
    L, H, n = m.config.n_layers, m.config.n_heads, len(clean)
    heads = np.array(
        [[restored(patch(m, clean, corrupt, [(la, h)]), a, b, -1, answer, wrong) for h in range(H)] for la in range(L)]
    )
    streams = np.array(
        [
            [
                restored(m.run(corrupt, [patch_stream(la, p, a.residuals[la][p])]), a, b, -1, answer, wrong)
                for p in range(n)
            ]
            for la in range(L)
        ]
    )
    return heads, streams


TITLES = {
    "Each head's output patched": "heads",
    "The stream entering each layer, patched at one position": "streams",
}


def charts_of(at) -> dict[str, list[dict]]:
    """The page's two heatmaps' cells, by what they show ("heads", "streams")."""
    out = {}
    for chart in at.get("vega_lite_chart"):
        title = title_of(chart)
        if title in TITLES:
            out[TITLES[title]] = drawn_cells(chart)[0]
    return out


def grid_of(cells: list[dict], rows: list[str], cols: list[str]) -> np.ndarray:
    by = {(c["query"], c["key"]): c["value"] for c in cells}
    return np.array([[by[(r, k)] for k in cols] for r in rows], dtype=float)


def patch_to_end(at):
    """Press the button, wait for the job, draw the page again with its result."""
    at = at.button(key="inside.patch.run").click().run()
    no_exception(at)
    job = jobs.wait(session(at).patching.job)
    assert job.state == "done", job.message
    at = at.run()
    no_exception(at)
    return at, job
