"""What goes into a link: one record per query parameter, in the order a link writes and a rebuild reads them.

Each :class:`Param` says how to read its value from the state (``value``: None when the link leaves it out, as the
preset's own), how to write it (``text``), how to parse it back (``parse``: None or :class:`Refused` when bad), how
the parsed value goes into a state being rebuilt (``put``), its length limit, and its notice when bad (``bad``,
Markdown, the value quoted). :mod:`.url` writes the table (:func:`attention.ui.address.url.link`) and
:mod:`.rebuild` reads it; a rebuild runs the records in the order the controls would make that state. ``then`` runs
after a record whether or not the link has it: what the controls do once a group of values is in (build the session
from the preset, resize once for the sentence and sizes, fill the padding flags and custom mask).

:data:`BAR` holds the address bar's own records, which the shared link leaves out: the model pages' ``model``,
``ids`` and ``ablate`` (written from the Session's ``inside`` record, read back together into it), and the Patching
page's ``clean`` and ``corrupt`` (from its ``patching`` record, likewise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ... import masks, names, positions
from ...io import presets as presets_mod
from ...labs import challenges as ch
from ...trace import MASK_KINDS
from ..core import parts, session
from ..core.text import quoted
from ..state import reshapes
from . import inside
from .options import number, scale_value, whole
from .rebuild import (
    GAINS_LIMIT,
    MAX_TOKENS_TEXT,
    Reading,
    Writing,
    cmask_parse,
    cmask_then,
    cmask_value,
    dim,
    edits_in,
    gains_parse,
    gains_put,
    gains_value,
    heads_put,
    kv_parse,
    option,
    pad_parse,
    pad_then,
    pad_value,
    pending,
    playing_parse,
    positions_then,
    put_edits,
    read_edits,
    read_size,
    read_tokens,
    roll_put,
    scale_text,
    set_option,
    source_parse,
    source_put,
    start,
    tokens_value,
    use_sizes,
    wo_value,
)

SHORT_LIMIT = 100  # characters of a name or a number
SOFTMAXES = names.SOFTMAX_VARIANTS  # the values a link may give
FACTORS = f"{session.FACTOR_RANGE[0]:g} to {session.FACTOR_RANGE[1]:g}"
DIGITS = {("full" if d is None else str(d)): d for d in session.DIGIT_CHOICES}


@dataclass(frozen=True)
class Param:
    """One query parameter: how it is written from a state and read back into one."""

    name: str
    value: Callable[[session.Session, Writing], Any]  # the value a link carries, or None: left out
    parse: Callable[[str, Reading], Any]  # the value a text gives, or None / Refused(why) when it gives none
    put: Callable[[Reading, Any], None]  # put a parsed value into the state being rebuilt
    bad: Callable[[str, Reading, str], str]  # the notice for a text that gives no value (text, reading, why)
    text: Callable[[Any], str] = str  # the value as the link writes it
    limit: int = SHORT_LIMIT  # the most characters the value can need, measured before anything reads it
    then: Callable[[Reading], None] | None = None  # after this record, present or not
    empty: bool = True  # whether an empty value is read (else it counts as absent)


# the table: every parameter a link carries, in the order written and read
PARAMS: tuple[Param, ...] = (
    Param(
        "preset",
        lambda s, w: s.preset_id if w.travels else session.DEFAULT_PRESET,
        lambda text, r: text if text in (*presets_mod.list_presets(), session.BLANK, session.MODEL) else None,
        pending("preset"),
        lambda text, r, why: (
            f"The link asked for preset {quoted(text)}, which does not exist; showing "
            f"{quoted(session.preset_label(session.DEFAULT_PRESET))} instead."
        ),
    ),
    Param(
        "seed",
        lambda s, w: s.seed if w.travels and s.seed is not None else None,
        lambda text, r: whole(text, 0, names.MAX_SEED),
        pending("seed"),
        lambda text, r, why: (
            f"The link's seed {quoted(text)} is not a whole number from 0 to {names.MAX_SEED}; "
            "using the preset's own seed."
        ),
    ),
    Param(
        "size",
        lambda s, w: s.blank_shape if s.origin.kind is parts.BLANK_KIND else None,
        read_size,
        pending("size"),
        lambda text, r, why: (
            f"The link's size {quoted(text)} is not n x d_model x d_k with n ≤ {names.MAX_TOKENS} "
            f"and d ≤ {names.MAX_DIM}; using {'×'.join(map(str, session.DEFAULT_BLANK))}."
        ),
        text=lambda shape: "x".join(str(v) for v in shape),
    ),
    Param(
        inside.HEAD,
        lambda s, w: s.model_head if s.origin.kind is parts.MODEL_KIND and w.travels else None,
        lambda text, r: text,  # read by start, with the preset: a head's state is built at once
        lambda r, text: None,
        lambda text, r, why: "",
        text=inside.head_param,
        limit=inside.LIMITS[inside.HEAD],
        then=start,
    ),
    Param(
        "proj",
        option("projection"),
        lambda text, r: text if text in names.PROJECTIONS else None,
        lambda r, value: reshapes.project(r.s, value) if value != r.s.options.projection else None,
        lambda text, r, why: f"The link's projection {quoted(text)} is not x_w or x_wt; keeping the preset's.",
    ),
    # the sentence and sizes: one resize, as the controls make it (see reading.use_sizes)
    Param(
        "tokens",
        tokens_value,
        read_tokens,
        pending("tokens"),
        lambda text, r, why: f"The link's sentence {quoted(text)} is empty or too long; keeping the preset's.",
        limit=MAX_TOKENS_TEXT,
    ),
    Param(
        "roll",
        lambda s, w: s.rolled or None,
        lambda text, r: whole(text, 0, len(r.s.tokens) - 1),
        roll_put,
        lambda text, r, why: (
            f"The link's shuffle {quoted(text)} is not a whole number from 0 to "
            f"{len(r.s.tokens) - 1}; the tokens' rows stay in the preset's order."
        ),
    ),
    *(
        Param(
            key,
            dim(which),
            lambda text, r: whole(text, 1, names.MAX_DIM),
            pending(key),
            lambda text, r, why, key=key: (
                f"The link's {key} {quoted(text)} is not a whole number from 1 to {names.MAX_DIM}; ignored."
            ),
            then=use_sizes if key == "dv" else None,
        )
        for key, which in (("dm", "d_model"), ("dk", "d_k"), ("dv", "d_v"))
    ),
    # the options
    Param(
        "softmax",
        option("softmax"),
        lambda text, r: text if text in SOFTMAXES else None,
        set_option("softmax"),
        lambda text, r, why: (
            f"The link's softmax {quoted(text)} is not one of {', '.join(SOFTMAXES)}; keeping the preset's."
        ),
    ),
    Param(
        "scale",
        lambda s, w: scale_text(s.options.scale) if s.options.scale != w.options.scale else None,
        scale_value,
        lambda r, value: set_option("scale")(r, value[0]),
        lambda text, r, why: (
            f"The link's scale {quoted(text)} is not default, none or a number from {FACTORS}; keeping the preset's."
        ),
    ),
    Param(
        "temp",
        lambda s, w: repr(float(s.options.temperature)) if s.options.temperature != w.options.temperature else None,
        lambda text, r: number(text),
        set_option("temperature"),
        lambda text, r, why: (
            f"The link's temperature {quoted(text)} is not a number from {FACTORS}; keeping the preset's."
        ),
    ),
    Param(
        "mask",
        option("mask"),
        lambda text, r: masks.parts(text) if text in MASK_KINDS else None,
        set_option("mask"),
        lambda text, r, why: f"The link's mask {quoted(text)} is not one of {', '.join(MASK_KINDS)}; no mask.",
        text=masks.join,
    ),
    # padding tokens, 1-based ("1,2,...,2048"): each bad one is named in parse, the others kept
    Param("pad", pad_value, pad_parse, pending("pad"), lambda t, r, w: "", limit=names.MAX_TOKENS * 5, then=pad_then),
    Param(
        "cmask",
        cmask_value,
        cmask_parse,
        set_option("custom_mask"),
        lambda text, r, why: (
            f"The link's custom mask {quoted(text)} is not {len(r.s.tokens)} rows of "
            f"{len(r.s.tokens)} 0/1 flags; ignored."
        ),
        limit=64 * 65,  # 64 rows of 64 flags and dots
        then=cmask_then,
    ),
    Param(
        "pos",
        option("positions"),
        lambda text, r: text if text in positions.KINDS else None,
        set_option("positions"),
        lambda text, r, why: f"The link's positions {quoted(text)} are not one of {', '.join(positions.KINDS)}; none.",
    ),
    Param(
        "heads",
        option("heads"),
        lambda text, r: h if (h := whole(text, 1, names.MAX_DIM)) in session.valid_heads(r.s) else None,
        heads_put,
        lambda text, r, why: f"The link's heads {quoted(text)} do not divide d_k and d_v; one head.",
    ),
    Param(
        "kv",
        lambda s, w: s.options.kv if s.options.kv_heads != w.options.kv_heads else None,
        kv_parse,
        lambda r, g: reshapes.use_kv_heads(r.s, g),
        lambda text, r, why: (
            f"The link's key/value heads {quoted(text)} do not divide the {r.s.options.heads} heads; one per head."
        ),
    ),
    Param(
        "win",
        option("window"),
        lambda text, r: whole(text, 1, names.MAX_TOKENS),
        set_option("window"),
        lambda text, r, why: (
            f"The link's window {quoted(text)} is not a whole number from 1 to {names.MAX_TOKENS}; "
            f"keeping {r.s.options.window}."
        ),
    ),
    Param(
        "src",
        lambda s, w: " ".join(s.source) if s.source else None,
        source_parse,
        source_put,
        lambda text, r, why: f"The link's source sentence was not restored: {why}.",
        limit=MAX_TOKENS_TEXT,  # the source sentence, as the sentence
        then=positions_then,
    ),
    Param(
        "wo",
        wo_value,
        lambda text, r: text if text in ("0", "1") else None,
        lambda r, on: reshapes.use_w_o(r.s, on == "1"),
        lambda text, r, why: f"The link's W_o switch {quoted(text)} is not 0 or 1; no W_o.",
    ),
    Param(
        "qkn",
        gains_value,
        gains_parse,
        gains_put,
        lambda text, r, why: f"The link's QK-norm gains (qkn) were not restored: {why}; keeping the head's own.",
        limit=GAINS_LIMIT,
    ),
    Param(
        "digits",
        lambda s, w: ("full" if s.digits is None else str(s.digits)) if s.digits != session.Session.digits else None,
        lambda text, r: text if text in DIGITS else None,
        lambda r, text: setattr(r.s, "digits", DIGITS[text]),
        lambda text, r, why: (
            f"The link's digits {quoted(text)} are not one of {', '.join(DIGITS)}; showing "
            f"{session.Session.digits} significant digits."
        ),
    ),
    Param(
        "playing",
        lambda s, w: s.challenge,
        playing_parse,
        lambda r, c: setattr(r.s, "challenge", c),
        lambda text, r, why: f"The link's running challenge could not be read ({why}); showing its numbers.",
        text=ch.encode_link,
        limit=names.MAX_LINK_CHARS,
        empty=False,
    ),
    Param(
        "edits",
        edits_in,
        read_edits,
        put_edits,
        lambda text, r, why: f"The link's edits could not be restored: {why}; showing the unedited preset.",
        limit=names.MAX_LINK_CHARS,
        empty=False,
    ),
)


def _model_pages(r: Reading) -> None:
    """Once the model pages' three records are read: put their model, text and ablations into the state (as one,
    :func:`attention.ui.address.inside.restore`), or say what could not be."""
    r.notices.extend(inside.restore(r.qp, r.s))


def _patching_pair(r: Reading) -> None:
    """Once the Patching page's two records are read (after the model pages' model): put its pair into the state,
    or say why not (:func:`attention.ui.address.inside.restore_pair`)."""
    r.notices.extend(inside.restore_pair(r.qp, r.s))


# the address bar's own records: the model pages' model, text and ablations, then the Patching page's pair (a reload
# keeps them; the shared link leaves them out). Each group is read together, by its last one's ``then``
BAR: tuple[Param, ...] = tuple(
    Param(
        name,
        lambda s, w, value=value: value(s),
        lambda text, r: text,  # read by _model_pages, all three together
        lambda r, text: None,
        lambda text, r, why: "",
        text=text,
        limit=inside.LIMITS[name],
        then=_model_pages if name == inside.ABLATE else None,
    )
    for name, value, text in (
        (inside.MODEL, inside.model_value, str),
        (inside.IDS, inside.ids_value, inside.ids_text),
        (inside.ABLATE, inside.ablate_value, inside.ablations_text),
        (inside.AT, inside.at_value, str),
        (inside.TOKEN, inside.token_value, str),
        (inside.THRESHOLD, inside.threshold_value, inside.threshold_text),
    )
) + tuple(
    Param(
        name,
        lambda s, w, value=value: value(s),
        lambda text, r: text,  # read by _patching_pair, both together
        lambda r, text: None,
        lambda text, r, why: "",
        text=inside.ids_text,
        limit=inside.LIMITS[name],
        then=_patching_pair if name == inside.CORRUPT else None,
    )
    for name, value in ((inside.CLEAN, inside.clean_value), (inside.CORRUPT, inside.corrupt_value))
)
BAR += (  # a challenge shared as a link: the Challenges page offers it (read there, so a bad one is said there)
    Param(
        "challenge",
        lambda s, w: s.offered,
        lambda text, r: text,
        lambda r, text: setattr(r.s, "offered", text),
        lambda text, r, why: "",
        limit=names.MAX_LINK_CHARS,
    ),
)
BAR += (  # a Learn the weights run kept in this server's memory: a reload or a failover loses it, and says so
    Param(
        "learned",
        lambda s, w: "1" if s.learned is not None else None,
        lambda text, r: text,
        lambda r, text: None,
        lambda text, r, why: "",
        then=lambda r: _learned_lost(r),
    ),
)


def _learned_lost(r: Reading) -> None:
    """Say that the Learn page's last run, kept only in the memory of the server that made it, did not come back."""
    if r.qp.get("learned") and r.s.learned is None:
        r.notices.append(
            "Your last *Learn the weights* run was kept in the memory of the server that made it, and this page no "
            "longer has it (a reload, or another server took over): it was lost. Train again on *Learn the weights*; "
            "numbers you had already put in with *Use these weights* are kept."
        )
