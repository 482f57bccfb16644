"""The Tokens page's embeddings: X from the preset, random, GloVe word vectors or one-hot, and the nearest words."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ... import names
from ...errors import AttentionError
from ...io import vectors
from ..core import keys, session
from ..core.text import quoted
from ..state import learning, pins
from ..widgets.common import checked_number, show_messages

KINDS = {
    "preset": "the preset's own",
    "random": "random (from a seed)",
    "glove": "GloVe 50-d (real word vectors)",
    "onehot": "one-hot (X = I, one column per token)",
}
NEAREST = 8


def control(s: session.Session) -> None:
    """Choose how X is made; GloVe names the words it does not know; a note when attention is word similarity."""
    kind, seed = s.embedding
    c1, c2 = st.columns([3, 1])
    key = keys.tok_embedding(s.version, s.grids)
    c1.selectbox(
        "Embeddings (the rows of X)",
        list(KINDS),
        index=list(KINDS).index(kind),
        format_func=KINDS.get,
        key=key,
        on_change=lambda: learning.set_embeddings(st.session_state[key], seed),
        help="The preset's own numbers; random numbers (standard normal / √d_model) from the seed; the 50-number "
        "GloVe vector of each word (looked up lower-cased; X becomes n × 50); or one-hot (X = I, n × n: each token "
        "its own column, so nothing is shared between words). The weights are resized, keeping what fits.",
    )
    if kind in ("random", "glove"):
        seed_key = keys.tok_embedding_seed(s.version, s.grids)
        c2.number_input(
            "Embedding seed",
            value=int(seed),
            step=1,
            key=seed_key,
            on_change=_on_seed,
            args=(seed_key,),
            help=f"0 to {names.MAX_SEED}: draws the random X"
            + (", and the stand-in rows of words GloVe does not know." if kind == "glove" else "."),
        )
    show_messages("control.embeddings")
    if kind == "glove":
        _missing(s, seed)
    _similarity_note(s)
    if is_glove(s):  # the nearest words are GloVe's: for other vectors they would describe rows X does not hold
        nearest_words(s)


def is_glove(s: session.Session) -> bool:
    """X holds GloVe vectors: chosen here, or the GloVe preset's own X."""
    return s.embedding[0] == "glove" or (s.preset_id.startswith("glove") and s.embedding[0] == "preset")


def _on_seed(key: str) -> None:
    kind, seed = session.get().embedding
    stays, span = f"it stays {seed}", f"0 to {names.MAX_SEED}"
    value = checked_number(key, "The embedding seed", 0, names.MAX_SEED, "control.embeddings", stays, span=span)
    if value is None:
        pins.renew_grids()
        return
    learning.set_embeddings(kind, int(value))


def _missing(s: session.Session, seed: int) -> None:
    """Name the words GloVe does not know (their rows are seeded stand-ins) and mark every row's origin."""
    found = vectors.lookup(list(s.tokens), seed)[1]  # (n,)
    if found.all():
        st.caption(f"Every word is in the GloVe table: each row of X is that word's real vector (n × {vectors.DIM}).")
        return
    missing = [i for i in np.flatnonzero(~found)]
    listed = ", ".join(f"{quoted(s.tokens[i])} (row {i + 1})" for i in missing[:12])
    st.warning(
        f"Not in the GloVe table, so given a random stand-in row (seed {seed}): {listed}"
        + (f" and {len(missing) - 12} more" if len(missing) > 12 else "")
        + ". Their rows mean nothing: attention to or from them is noise.",
        icon=":material/warning:",
    )
    st.dataframe(
        pd.DataFrame(
            {"token": list(s.labels), "row of X": ["GloVe vector" if f else "random stand-in" for f in found]}
        ),
        hide_index=True,
    )


def _similarity_note(s: session.Session) -> None:
    """When X holds GloVe vectors and W_q = W_k = I: attention is plain similarity of real word vectors."""
    if not is_glove(s):
        return
    eye = np.eye(s.dims.d_model)
    same = _same_vector(s)
    if all(s.matrices[k].shape == eye.shape and np.array_equal(s.matrices[k], eye) for k in ("W_q", "W_k")):
        st.info(
            "Attention here is plain **similarity of real word vectors**: W_q = W_k = I, so Q = K = X and each "
            "score q_i · k_j = x_i · x_j is the dot product of two GloVe vectors. Nothing was learned for the task: "
            "a word attends most to itself and to words used like it.",
            icon=":material/info:",
        )
    else:
        st.info(
            "X holds GloVe vectors, but W_q and W_k are still the preset's (random or typed, not learned for these "
            "vectors): each score compares the two words only after that projection, so it says little about the "
            "words. To see plain word similarity, make W_q = W_k = I (each score is then x_i · x_j), or load the "
            "preset “GloVe: the cat sat on the mat”, which starts that way." + same,
            icon=":material/info:",
        )
        st.button(
            "Use W_q = W_k = I (plain similarity)",
            key=keys.tok_identity(s.version),
            on_click=learning.use_identity,
            help="Sets W_q and W_k to the identity (d_k becomes d_model); W_v is kept. “Reset to preset” undoes it.",
        )
    if same and np.array_equal(s.matrices["W_q"], eye) and np.array_equal(s.matrices["W_k"], eye):
        st.caption(same.strip())


def _same_vector(s: session.Session) -> str:
    """A sentence naming the tokens that are one word to GloVe (looked up lower-cased, so they share one vector and
    every query weighs them equally), or ""."""
    groups: dict[str, list[str]] = {}
    for label, token in zip(s.labels, s.tokens, strict=True):
        groups.setdefault(token.lower(), []).append(label)
    shared = [g for g in groups.values() if len(g) > 1]
    if not shared or s.options.positions != "none":  # positions make their rows differ
        return ""
    named = "; ".join(" and ".join(quoted(x) for x in g) for g in shared[:4])
    return (
        f" GloVe looks words up lower-cased, so {named} get the same vector: their keys are equal, and every query "
        "gives them exactly the same weight (an even split between them), whatever W is."
    )


def nearest_words(s: session.Session) -> None:
    """Pick a token: its nearest GloVe words by cosine similarity, with the numbers."""
    words = list(dict.fromkeys(t.lower() for t in s.tokens))
    st.markdown(f"**Nearest words** · the {NEAREST} GloVe words with the largest cosine similarity to a token")
    c1, c2 = st.columns([1, 2])
    word = c1.selectbox("Token", words, key=keys.TOK_NEAREST, help="Looked up lower-cased among 50,000 GloVe words.")
    if word is None:
        return
    try:
        near = vectors.nearest(word, NEAREST)
    except AttentionError:
        c2.info(
            f"{quoted(word)} is not among the {vectors.vocabulary_size():,} GloVe words, so it has no vector to "
            "compare."
        )
        return
    c2.dataframe(
        pd.DataFrame(near, columns=["word", "cosine similarity"]).style.format({"cosine similarity": "{:.4f}"}),
        hide_index=True,
        width="stretch",
    )
