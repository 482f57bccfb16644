"""The model chooser every "Inside a model" page draws at its top: the shipped model, the server's, a learner's own.

:func:`chooser` lists :func:`attention.ui.core.models.offered` and the models held for this session (uploaded or
trained), describes the chosen one, and takes an upload of a small checkpoint; a change goes through
:func:`attention.ui.state.inside.choose_model` (a model that fails to open changes nothing, with a message).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from ...model import checkpoint, upload
from ...model.vocab import WordVocab
from ..address import inside as inside_address
from ..core import keys, models
from ..core.text import esc
from ..state import inside
from ..widgets.common import bind


def whole_page_if_banner_went() -> None:
    """Call first in a fragment drawn below the text box: when its rerun took the text's refusal away, the banner
    above it stays standing unless the whole page is drawn again, so it is."""
    if inside.banner_went():
        st.rerun(scope="app")


def chooser() -> models.Model:
    """Choose the model (and upload one); the chosen model, described. Call at the top of an inside page's body."""
    inside.ensure()
    inside.recover()
    options = {**models.offered(), **dict(inside.now().held)}
    current = inside.model_id()
    options.setdefault(current, current)
    ids = list(options)
    left, right = st.columns([2, 3], gap="medium")
    with left:
        bind(keys.INSIDE_MODEL, current)  # the record's model, always: a page switch drops the widget's own state
        st.selectbox(
            "Model",
            ids,
            format_func=lambda i: options.get(i, i),
            key=keys.INSIDE_MODEL,
            on_change=inside.on_model,
            help="The server's owner lists its checkpoint folders in a setting; your own upload is listed for this "
            "session.",
        )
    with right, st.expander("Upload a small checkpoint"):
        st.file_uploader(
            f"config.json, model.safetensors and tokenizer.json (or vocab.json and merges.txt), or one .zip of "
            f"them; at most {upload.MAX_BYTES // 1024**2} MB. A GPT-2 saved with save_pretrained(..., "
            "safe_serialization=True); pickled weights (.bin, .pt) are never opened.",
            accept_multiple_files=True,
            key=(key := keys.inside_upload(inside.now().uploads)),
            on_change=inside.on_upload,
            args=(key,),
        )
    if inside.now().model_message:
        st.error(esc(inside.now().model_message, 600))
    m = inside.model()
    st.caption(describe(m, inside.model_id()))  # ours: sizes; the name is the server's or ours
    st.caption(precision(m))  # ours: the dtype, and the loader's notes escaped
    for note in vocabulary(m):  # a tokenizer that does not match the embedding: where the eye is
        st.warning(esc(note, 400), icon=":material/warning:")
    if address_note():
        st.caption(address_note())  # ours: numbers
    return m


def address_note() -> str:
    """What the address leaves out of a text too long for it ("" when the text fits, or the model cannot travel)."""
    ids = inside.now().ids
    if not models.travels(inside.model_id()) or inside_address.fits(ids):
        return ""
    return (
        f"This text's {len(ids):,} tokens are more than an address holds ({inside_address.LIMITS[inside_address.IDS]:,}"
        " characters of token ids): the address keeps the model but not the text, its position or its token, so a "
        "reload or a shared link opens the model's first text. Keep the text to paste it again."
    )


def vocabulary(m: models.Model) -> list[str]:
    """What the loader noted of a tokenizer whose tokens and the embedding's rows differ (shown as a warning)."""
    said = checkpoint.vocabulary_notes(len(m.vocab), m.config.vocab_size)
    return [note for note in m.notes if note in said]


def precision(m: models.Model) -> str:
    """The precision the model computes in, and what else its loader noted (the rule that chose the precision)."""
    line = f"It computes in **{m.dtype}** ({m.dtype.itemsize} bytes a number)." + (
        " A head opened on the step pages is recomputed there in float64 from its float32 inputs: its numbers match "
        "the model's to about 7 significant digits."
        if m.dtype == np.float32
        else ""
    )
    said = vocabulary(m)
    return " ".join([line, *(esc(note, 400) for note in m.notes if note not in said)])


def describe(m: models.Model, model_id: str) -> str:
    """One line on the model: its kind, sizes, how many tokens a page reads, and whether a link can name it."""
    c = m.config
    if model_id == models.BUILTIN:
        kind = "The shipped model, attention only, trained to continue a repeated sequence"
    elif model_id.startswith(models.SERVER):
        kind = f"{esc(model_id.removeprefix(models.SERVER))}, a checkpoint on this server"
    else:
        kind = "Your own model, held by this server for a while"
    words = "words" if isinstance(m.vocab, WordVocab) else "BPE tokens"
    shared = f", {c.n_heads // c.kv_heads} query heads sharing each key/value head" if c.kv_heads != c.n_heads else ""
    line = (
        f"{kind}: {c.n_layers} layer{'s' if c.n_layers != 1 else ''} × {c.n_heads} heads "
        f"({c.n_layers * c.n_heads} in all{shared}), width "
        f"{c.d_model}, "
        f"a vocabulary of {c.vocab_size:,} {words}, up to {c.n_ctx:,} tokens"
        + (f" (this page reads up to {models.longest(m)})" if models.longest(m) < c.n_ctx else "")
        + "."
    )
    if not models.travels(model_id):
        line += " An uploaded or trained model cannot travel in a link: a link opens the shipped model instead."
    return line
