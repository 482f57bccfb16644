"""Changes that replace the state: a listed preset, a preset file, a reset, a new seed, a blank of a new size."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ... import names, rng
from ...errors import AttentionError
from ...io.presets import Preset
from ..core import models, parts
from ..core.models import HeadRef
from ..core.session import (
    BLANK,
    FACTOR_RANGE,
    Origin,
    Session,
    file_origin,
    get,
    head_session,
    is_unedited,
    matrices_2d,
    new_session,
    preset_and_base,
)
from ..core.text import esc
from . import reshapes
from .challenges import start_challenge
from .core import replace_session, say, touch


def load_preset(preset_id: str, seed: int | None = None, blank_shape: tuple[int, int, int] | None = None) -> None:
    """Replace the state with a preset; every editor gets a fresh key, so no pending edit of the old matrices
    is re-applied to the new ones."""
    replace_session(new_session(preset_id, seed, blank_shape or get().blank_shape))


def reset() -> None:
    """Back to the unedited preset; during a challenge, back to the challenge's start."""
    s = get()
    if s.challenge is not None:
        start_challenge(s.challenge)
    elif s.origin.kind is parts.FILE_KIND and s.loaded is not None:
        apply_preset(s.loaded)
    elif s.origin.kind is parts.MODEL_KIND and s.model_head is not None:
        open_head(s.model_head)
    else:
        load_preset(s.preset_id, s.seed, s.blank_shape)


def set_seed(seed: int) -> None:
    """Redraw only what the preset draws at random; the user's edits to fixed parts are kept."""
    s = get()
    kind = s.origin.kind
    if not kind.seeded:
        say("sidebar.seed", "error", f"{kind.keeps[0].upper()}{kind.keeps[1:]}; the seed was not applied.")
        return
    preset, fresh = preset_and_base(s.preset_id, seed, s.blank_shape)
    if not preset.is_random:
        say("sidebar.seed", "error", "This preset has no random parts; the seed was not applied.")
        return
    s.seed, s.origin = preset.seed, Origin(preset, fresh, kind)
    for i, name in enumerate(preset.random.names):
        # the fresh draw, fitted to the current shape (the user may have resized): cells beyond the
        # preset's shape are new draws too, so nothing keeps a value from the old seed
        s.matrices[name] = rng.fill_new_cells(fresh[name], s.matrices[name].shape, preset.seed, stream=101 + i)
    s.version += 1
    touch(s)


def apply_preset(preset: Preset) -> None:
    """Put a loaded preset file's tokens, matrices (2-D) and options into the session, after checking the
    dashboard can show it (raises AttentionError, changing nothing, if not)."""
    matrices = loadable(preset)
    s = get()
    replace_session(
        Session(
            preset_id=parts.FILE_KIND.id,
            seed=preset.seed,
            blank_shape=s.blank_shape,
            tokens=tuple(preset.tokens),
            matrices=matrices,
            options=preset.options,
            loaded=preset,
            source=tuple(preset.source_tokens),
            origin=file_origin(preset),
        )
    )


def open_head(ref: HeadRef, keep_grids: bool = False, cell: tuple[int, int] | None = None) -> bool:
    """Open a model's head on the step pages: its X, W_q, W_k, W_v and options replace the state (the pin, digits and
    tabs are kept, as with any preset; ``keep_grids``: see :func:`replace_session`); ``cell`` (query row, key) the
    cell explained, else the first query of the second half. A head that cannot be opened changes nothing and says
    why; False then."""
    try:
        new = head_session(ref)
    except AttentionError as exc:
        say("page.notice.head", "error", f"That head could not be opened: {esc(exc.message, 300)}. Nothing changed.")
        return False
    replace_session(new, keep_grids)
    new.cell = start_cell(ref, len(new.tokens))
    if cell is not None and 0 <= cell[1] <= cell[0] < len(new.tokens):
        new.cell = cell
    return True


def start_cell(ref: HeadRef, n: int) -> tuple[int, int]:
    """The cell the step pages explain first when a model's head opens (its query row is where the prediction panel
    reads): the model pages' start position (:func:`attention.ui.core.models.start_position`), at the key an induction
    head copies from when the text repeats itself (the token after the earlier copy of the query's token), else at the
    token before it."""
    row = min(models.start_position(ref.model_id, ref.ids), n - 1)
    half = len(ref.ids) // 2
    repeats = half > 0 and ref.ids[:half] == ref.ids[half : 2 * half]
    return row, row - half + 1 if repeats and row >= half else max(row - 1, 0)


def switch_head(where: object) -> None:
    """Open another head of the same model on the same text, with the same ablations: ``where`` is (layer, head),
    0-based. Edits of the head shown are replaced, as any other preset replaces them; a value no client should send
    changes nothing. The heads of a model have matrices of one shape, so the grids stay mounted and only their numbers
    change (the browser redraws less), unless one holds an edit (taken or not): then they are drawn afresh."""
    ref = get().model_head
    if ref is None or not (isinstance(where, tuple) and len(where) == 2 and all(isinstance(v, int) for v in where)):
        return
    if where != (ref.layer, ref.head):
        open_head(replace(ref, layer=where[0], head=where[1]), keep_grids=True)


def set_head_ablation(how: str | None) -> None:
    """Ablate the opened model head in the model ("zero" or "mean"), or restore it (None). The head's own matrices are
    unchanged (X is made by the layers below it), so only what the model predicts moves."""
    s = get()
    ref = s.model_head
    if ref is None or how not in (None, "zero", "mean"):
        return
    others = tuple(a for a in ref.ablations if a[:2] != (ref.layer, ref.head))
    ablations = tuple(sorted((*others, (ref.layer, ref.head, how)))) if how else others
    s.model_head = replace(ref, ablations=ablations)
    touch(s)


def set_blank_shape(shape: tuple[int, int, int]) -> None:
    """A blank preset of another size: new random numbers (centred, from the same seed); the options that do not
    depend on the size are kept, and a message says what was redrawn."""
    s = get()
    old_options, edited = s.options, not is_unedited(s)
    new = new_session(BLANK, s.seed, shape)
    n, d = len(new.tokens), new.dims
    keep = {"softmax", "scale", "temperature", "positions", "projection"}
    options = replace(new.options, **{k: getattr(old_options, k) for k in keep if k != "projection"})
    if old_options.projection != new.options.projection:
        reshapes.project(new, old_options.projection)
    if old_options.mask and not options.mask:
        options = replace(options, mask=old_options.mask, padding=(False,) * n)
        options = replace(options, custom_mask=((True,) * n,) * n if "custom" in old_options.mask else ())
    if old_options.heads > 1 and d.d_k % old_options.heads == 0 and d.d_v % old_options.heads == 0:
        options = replace(options, heads=old_options.heads)
    new.options = options
    replace_session(new)
    say(
        "sidebar.blank",
        "info",
        f"New blank preset of {n} tokens, d_model = {d.d_model}, d_k = {d.d_k}: every number redrawn from seed "
        f"{new.seed}" + (" (your edits to the old numbers were replaced)" if edited else "") + "; the softmax, "
        "scale, temperature, mask kind, positions and heads were kept (padding flags and a custom grid start "
        "afresh).",
    )


def loadable(preset: Preset) -> dict[str, np.ndarray]:
    """A preset file's matrices as the dashboard holds them (2-D), after checking the dashboard can show it: one
    sentence, within the size limits, factors in range, numbers that compute. Raises AttentionError if not."""
    batch = preset.matrices()["X"]
    if batch.ndim == 3 and batch.shape[0] != 1:
        raise AttentionError(
            f"its X holds a batch of {batch.shape[0]}; the dashboard shows one sentence (a batch of one). "
            "Nothing was changed."
        )
    matrices = matrices_2d(preset)
    n, d_model = matrices["X"].shape
    if n > names.MAX_TOKENS or d_model > names.MAX_DIM:
        raise AttentionError(
            f"it has {n} tokens × {d_model} dimensions; the dashboard supports up to "
            f"{names.MAX_TOKENS} × {names.MAX_DIM}. Nothing was changed."
        )
    lo, hi = FACTOR_RANGE
    for what, v in (("temperature", preset.options.temperature), ("scale", preset.options.scale)):
        if v is not None and not lo <= v <= hi:
            raise AttentionError(
                f"it asks for {what} {v:g}; the dashboard accepts {lo:g} to {hi:g}. Nothing was changed."
            )
    preset.compute()  # raises AttentionError when the file's numbers cannot be computed
    return matrices
