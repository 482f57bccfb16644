"""The "Every head" page: a text for the shipped model, every layer × head's attention with its role, ablations."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import streamlit as st

from ... import charts
from ...io import heads_files
from ...model import Config, roles
from ...model.attend import visible
from ...model.qk_steps import WHAT
from ...model.vocab import WordVocab
from ...names import token_labels
from ..address import url
from ..core import keys, models, session
from ..core.cache import kept
from ..core.text import esc
from ..modelpages import answers, choose, readout, runs
from ..state import inside
from ..views import rotation
from ..widgets import common as widgets
from ..widgets import downloads
from ..widgets.chart_files import chart_files
from . import overview

QK_NORM = (
    "This model normalises {what} (QK-norm) before RoPE: one head's q is not its own X·W_q normed, so its heads do "
    "not open on the step pages. Every head shows their attention, and any head's q and k step by step."
)
QK_NORM_OPENS = (
    "This model normalises {what} (QK-norm) before RoPE. A head opened on the step pages shows that step on the "
    "Q·K·V page, between X·W and the rotation, with its layer's gains editable."
)


def shut() -> bool:
    """Whether the chosen model's heads stay shut on the step pages: a QK-norm across every head at once (OLMo-2),
    which no one head's pass holds (a per-head QK-norm is the pass's own step: those heads open)."""
    c = runs.model().config
    return c.qk_norm and c.qk_norm_scope != "head"


def qk_norm_note() -> str:
    """What this model's QK-norm means for the step pages, said for its scope: why its heads do not open there (across
    every head), or where the norm shows once one does (per head). The one wording for every page that says it."""
    c = runs.model().config
    return (QK_NORM if shut() else QK_NORM_OPENS).format(what=WHAT[c.qk_norm_scope])


ROW_PX = 9  # each heatmap row, so a 24-token text's heatmap fits half a column on a 720 px screen


def body(s: session.Session) -> None:
    """Choose a model and a text, see every head on it (role and scores), ablate heads, and see what it predicts."""
    choose.chooser()
    choose_text()
    answering()


@st.fragment(key=keys.INSIDE_ANSWERING)
def answering() -> None:
    """The tokens, the heads, the ablations and the predictions: a press here reruns only this part of the page (not
    the sidebar, not the text boxes above)."""
    choose.whole_page_if_banner_went()
    url.write(session.get())  # an ablation or a head opened here reruns this part only: the address follows it
    ids, _, ablations = inside.current()
    now = runs.measure(ids, ablations)
    base = runs.measure(ids) if ablations else now
    show_tokens(ids)
    answers.ablation_bar(now, base)
    heads_box = st.container()  # the heads above the predictions, written after them: the new numbers come first
    answers.predicting()
    with heads_box:
        heads(now)
    L, H, n = now.shape
    downloads.every_head(files_of(runs.model_id(), ids, ablations), (L, H, n, n), runs.model_id())
    whole = (slice(None), slice(None))  # a head's every row and column
    labels = token_labels(runs.pieces(ids))
    rotation.qk_norm_steps(now.ids, now.ablations, lambda la, h: now.window(la, h, *whole), labels)


def files_of(model_id: str, ids: tuple[int, ...], ablations: tuple) -> Callable[[], heads_files.Measured]:
    """What every head's weights file records, made when asked (from the run cache, by content)."""
    pieces, name = tuple(runs.pieces(ids)), runs.model().name

    def measure() -> heads_files.Measured:
        weights = runs.measure(ids, ablations, model_id).weights  # (L, H, n, n)
        return heads_files.Measured(name, model_id, pieces, ids, ablations, weights)

    return measure


def choose_text() -> None:
    """A ready-made repeated sequence, or words typed from the vocabulary (a word outside it is named; nothing
    changes); for a model with a tokenizer, any text, tokenized by it."""
    inside.banner_went()  # the whole page is drawn now: no fragment below needs to draw it again
    m = runs.model()
    words = isinstance(m.vocab, WordVocab)
    options = [*runs.ready_made(), inside.TYPED_LABEL]
    chosen = inside.now().sequence or inside.TYPED_LABEL
    left, right = st.columns([2, 3], gap="medium") if len(options) > 1 else (None, st.container())
    if left is not None:
        with left:
            widgets.bind(keys.INSIDE_SEQUENCE, chosen)  # the record's, always: a page switch drops the widget's
            st.selectbox(
                "Ready-made sequence",
                options,
                key=keys.INSIDE_SEQUENCE,
                on_change=inside.on_sequence,
            )
    with right:
        most = models.longest(m)
        # the record's text, unless a refusal is shown beside what was typed (kept as typed, to be corrected)
        widgets.bind(keys.INSIDE_TYPED, m.decode(inside.now().ids), once=bool(inside.now().message))
        st.text_input(
            f"Or type words of its vocabulary (2 to {most}, separated by spaces), then press Enter"
            if words
            else f"Type a text (2 to {most} tokens of the model's tokenizer), then press Enter",
            key=keys.INSIDE_TYPED,
            on_change=inside.on_typed,  # no max_chars: the browser would drop a longer paste without a word
            help=f"At most {inside.MAX_CHARS:,} characters.",
        )
        if words:
            st.caption("The vocabulary: " + " ".join(esc(w) for w in m.vocab.words))
        else:
            st.button(
                "Repeat these tokens",
                key=keys.INSIDE_REPEAT,
                on_click=inside.on_repeat,
                help="The text's tokens twice, exactly: the second half then copies the first, and an induction "
                "head can predict it.",
            )
        if inside.now().message:
            st.error(esc(inside.now().message, 600))


def show_tokens(ids: tuple[int, ...]) -> None:
    """The tokens as the model reads them, numbered, and whether the second half repeats the first."""
    tokens = runs.pieces(ids)
    half, repeats = roles.half_split(ids)
    numbered = " · ".join(f"{k + 1} {esc(t)}" for k, t in enumerate(tokens))
    st.markdown(f"**{len(tokens)} tokens:** {numbered}")  # ours: tokens escaped
    st.caption(
        f"The second half (from token {half + 1}) repeats the first: an induction head can predict it."
        if repeats
        else "The text does not repeat itself, so an induction head has no earlier copy to read from here."
    )


def heads(now: runs.Measured) -> None:
    """Every layer × head's attention, a layer as one chart (a picture a head, each titled with its role, one colour
    scale); then the chosen head's role, scores and buttons to ablate or restore it and to open it on the steps."""
    L, H = now.shape[:2]
    st.subheader("Every head")
    heads_intro(now)
    labels = token_labels(runs.pieces(now.ids))
    if overview.draws_all(L, H):
        for layer in range(L):
            layer_chart(now, layer, labels, min(H, overview.PER_ROW), keys.inside_layer("chart", layer))
    else:
        st.markdown(
            f"**All {L * H} heads at once**: each score of every head (point at a cell for its number, or open the "
            "table below). Then choose a layer to see its heads' weights, and a head to read or ablate."
        )
        overview.scores(now.scores, now.roles, keys.INSIDE_OVERVIEW)
        one_layer(now, labels)
    chosen_head(now, L)


@st.fragment(key=keys.INSIDE_ONE_LAYER)
def one_layer(now: runs.Measured, labels: list[str]) -> None:
    """A wide model's layer chooser and the layer's chart: choosing a layer reruns only this (not the predictions,
    the grids or the chosen head's controls, which hold every head of the model). The chart keeps one key whatever
    the layer: its spec is the same for every layer (what a layer changes is its data), so the browser keeps its
    chart and takes the new layer's data, instead of building a chart of nine plots again."""
    layer_chart(now, overview.layer_chooser(now.shape[0]), labels, overview.per_row(len(labels)), keys.INSIDE_LAYER)


def layer_chart(now: runs.Measured, layer: int, labels: list[str], per_row: int, key: str) -> None:
    """One layer's heads as one chart (widget ``key``): each head's weights (causal, on the 0–1 scale) titled with its
    role and score, ``per_row`` side by side; pointing at a cell names it and its head. A long text's heads are
    pictures reduced by blocks, each block's largest weight (``now.pictures``), and the page says so."""
    H, n, f = now.shape[1], len(labels), now.block
    shared = groups(runs.model().config)
    if shared:
        st.caption(f"Layer {layer + 1}: {shared}")  # ours: numbers
    if f > 1:
        st.caption(
            f"Each head's {n:,} × {n:,} weights are drawn reduced to {-(-n // f)} × {-(-n // f)}: "
            f"{charts.reduced_note(f)} (queries × keys), so a sharp stripe or a sink stays visible. "
            "Zoom below to read the cells themselves."
        )  # ours: numbers
    widgets.chart_gap()
    panel_px = (overview.MAIN_PX + overview.GAP_PX) // per_row - overview.GAP_PX - overview.LABELS_PX
    w = runs.window(layer)
    panels = tuple((runs.name(layer, h), subtitle(now, layer, h) + (f" · window {w}" if w and w < n else ""))
                   for h in range(H))  # fmt: skip
    style = charts.HEAD.but(
        panels=panels, columns=per_row, panel_px=panel_px, row_height=row_height(n, panel_px), image=True
    )
    values = now.pictures[layer]  # (H, b, b): NaN where masked
    ticks = labels if f == 1 else charts.block_labels(n, f)
    spec = heatmap(values, ticks, ticks, style.but(block=f), np.isfinite(values))  # one chart
    widgets.vega_chart(spec, width="content", key=key)
    prefix = "induction" if runs.model_id() == "induction" else "model"
    chart_files(spec, f"{prefix}_layer{layer + 1}", keys.inside_layer("files", layer))


def subtitle(now: runs.Measured, layer: int, head: int) -> str:
    """A head's role and its score, as its picture's subtitle."""
    role = str(now.roles[layer, head])
    return f"{role} {_fmt(now.scores[role][layer, head])}" if role != "none" else "no clear role"


def chosen_head(now: runs.Measured, layers: int) -> None:
    """The head chosen, of any layer (on a wide model, typed to find), and its controls."""
    H = now.shape[1]
    options = [(layer, head) for layer in range(layers) for head in range(H)]
    was = inside.now().head_shown
    layer, head = was if was in options else options[0]
    widgets.bind(keys.INSIDE_HEAD_SHOWN, (layer, head))  # the record's, always: a page switch drops the widget's
    st.selectbox(
        "Head to read, ablate or open",
        options,
        format_func=lambda lh: runs.name(*lh),
        key=keys.INSIDE_HEAD_SHOWN,
        on_change=widgets.on_value(inside.on_head_shown, keys.INSIDE_HEAD_SHOWN),
    )
    head_controls(now, layer, head)
    if len(now.ids) > charts.RECT_MAX:  # up to it, every cell is drawn above
        zoom(now, layer, head)


@st.fragment(key=keys.INSIDE_ZOOM_PART)
def zoom(now: runs.Measured, layer: int, head: int) -> None:
    """The chosen head's weights in a window of query rows and key columns (at most ZOOM_MOST a side), cell by cell,
    each named by its position and token; the window typed as positions (a bad one is named, nothing changes)."""
    n, pieces = len(now.ids), runs.pieces(now.ids)
    a, b, c, d = inside.zoom(n)
    st.markdown(
        f"**Zoom into {runs.name(layer, head)}**: its weights cell by cell, at most {inside.ZOOM_MOST} × "
        f"{inside.ZOOM_MOST}, each row and column named by its position and token."
    )  # ours: names, numbers
    left, right = st.columns(2, gap="medium")
    kept = bool(inside.now().zoom_message)  # a refused window stays as typed, to be corrected
    for where, key, span, which in ((left, keys.INSIDE_ZOOM_ROWS, (a, b), "Query"), (right, keys.INSIDE_ZOOM_KEYS,
                                                                                 (c, d), "Key")):  # fmt: skip
        widgets.bind(key, f"{span[0] + 1}-{span[1]}", once=kept)
        where.text_input(f"{which} positions (from-to, 1 to {n:,}), then press Enter", key=key,
                         on_change=inside.on_zoom, args=(n,))  # fmt: skip
    if inside.now().zoom_message:
        st.error(esc(inside.now().zoom_message, 300))
    values = now.window(layer, head, slice(a, b), slice(c, d))  # (b − a, d − c)
    seen = visible(a, b - a, d, runs.window(layer))[:, c:]  # (b − a, d − c): True = may attend
    rows = [f"{k + 1} {pieces[k]}" for k in range(a, b)]
    cols = [f"{k + 1} {pieces[k]}" for k in range(c, d)]
    title = f"{runs.name(layer, head)}: queries {a + 1}–{b} × keys {c + 1}–{d}"
    spec = charts.heatmap(values, rows, cols, charts.HEAD.but(title=title), seen, offset=(a, c))
    widgets.vega_chart(spec, width="stretch", key=keys.INSIDE_ZOOM_CHART)
    st.caption(
        f"Rows {a + 1}–{b}: {esc(pieces[a], 40)} … {esc(pieces[b - 1], 40)}; columns {c + 1}–{d}: "
        f"{esc(pieces[c], 40)} … {esc(pieces[d - 1], 40)}. Grey cells are keys the query cannot see."
    )  # tokens escaped


def head_controls(now: runs.Measured, layer: int, head: int) -> None:
    """The chosen head: its role and scores, its share, a button to ablate or restore it and one to open it on the
    step pages; what the last press moved, just above the button pressed."""
    role = str(now.roles[layer, head])
    scores = " · ".join(
        f"{'**' if r == role else ''}{r} {_fmt(now.scores[r][layer, head])}{'**' if r == role else ''}"
        for r in roles.ROLES
    )
    python = f"`run.head({layer}, {head})` in Python, which counts from 0"
    st.markdown(f"**{runs.name(layer, head)}** · role: **{role}** · {scores} · {python}")  # ours: names, numbers
    st.caption(readout.share_line(layer, head))  # ours: numbers, the token escaped
    readout.head_block(layer, head)
    how = next((a[2] for a in now.ablations if a[:2] == (layer, head)), None)
    if inside.now().where == (layer, head):  # what it moved, just above the button pressed: where the eye is
        st.info(answers.last_change())  # ours: built by answers.moved(), tokens escaped
    st.button(
        f"Restore {runs.name(layer, head)} ({how}-ablated)" if how else f"Ablate {runs.name(layer, head)}",
        key=keys.inside_head("toggle", layer, head),
        on_click=inside.toggle,
        args=(layer, head),
        type="primary" if how else "secondary",
    )
    closed = shut()
    if st.button(
        f"Open {runs.name(layer, head)} on the step pages",
        key=keys.inside_head("open", layer, head),
        disabled=closed,
        help=qk_norm_note()
        if closed
        else "The step pages become this head: X is what its layer reads, W_q, W_k and W_v its blocks. "
        "An edit there runs the model with your numbers, and its predictions answer back.",
    ):
        inside.open_on_steps(layer, head)
        st.rerun()  # the whole page, not only this fragment: the sidebar's preset and options are the head's now
    if inside.now().opened == (layer, head):
        opened(layer, head)


def groups(c: Config) -> str:
    """Which query heads share a key/value head ("" when each has its own): "heads 1–3 read key/value head 1, …"."""
    g, H = c.kv_heads, c.n_heads
    if g == H:
        return ""
    size = H // g

    spans = [f"heads {k * size + 1}–{(k + 1) * size} read key/value head {k + 1}" for k in range(g)]
    return (
        "; ".join(spans) + f" (grouped-query attention: {H} query heads share {g} keys and values; an edit of a "
        "shared W_k or W_v changes every head of its group)."
    )


def heads_intro(now: runs.Measured) -> None:
    """What the charts show and what each role means, with the scores of a head spreading its weight evenly; the
    strongest head of each kind on this text."""
    L, H = now.roles.shape  # (layers, heads): no head's weights are made for this
    chance = roles.uniform_scores(now.ids)
    st.markdown(
        "Each head's weights on this text (rows: the query token, columns: the key it attends to; all on the same "
        "0–1 scale). A head's **role** is the kind of head whose score is largest, when it is at least "
        f"{roles.ROLE_MIN}: **previous-token** (the weight on the token before), **induction** (the weight on the "
        "token that followed an earlier occurrence of the current one: what it copies), **first-token sink** (the "
        f"weight on the first token). A head spreading its weight evenly would score {_fmt(chance['previous-token'])}, "
        f"{_fmt(chance['induction'])} and {_fmt(chance['first-token sink'])}."
    )
    strongest = [strongest_of(now.scores[r], r) for r in roles.ROLES if np.isfinite(now.scores[r]).any()]
    st.markdown("The strongest head of each kind on this text: " + "; ".join(strongest) + ".")  # ours: names
    if runs.model().config.qk_norm:
        st.caption(qk_norm_note())
    for head in range(H) if runs.model_id() == "induction" else ():  # the note speaks of the shipped model's texts
        if now.roles[0, head] == "induction":
            st.caption(first_layer_note(now, head))  # ours: head names and numbers


def opened(layer: int, head: int) -> None:
    """Where to go once a head is opened: the step pages, each now showing it."""
    st.success(f"The step pages now show {runs.name(layer, head)}. Edit its numbers there:")
    for page, label in (
        ("pages/2_weights.py", "W_q, W_k, W_v"),
        ("pages/4_scores.py", "Scores"),
        ("pages/6_softmax.py", "Attention weights"),
    ):
        st.page_link(page, label=f"→ {label} of {runs.name(layer, head)}")


def row_height(n: int, panel_px: int | None = None) -> float:
    """Each drawn row of a head's n × n heatmap, in px: ROW_PX, smaller for long texts (64 tokens stay 256 px tall;
    a longer text is drawn in blocks, :func:`charts.drawn_rows`); with the plot's width ``panel_px``, rows as tall as
    its columns are wide, within 4 and 12 px (beyond RECT_MAX drawn rows, a square picture)."""
    if panel_px is not None:
        drawn = -(-n // charts.panel_block(n))  # the picture's rows
        return max(4, min(overview.ROW_PX, panel_px // drawn)) if drawn <= charts.RECT_MAX else panel_px / drawn
    return max(4, min(ROW_PX, 216 // charts.drawn_rows(n)))


def heatmap(
    values: np.ndarray, rows: Sequence[str], cols: Sequence[str], style: charts.Style, allowed: np.ndarray | None
) -> dict:
    """:func:`charts.heatmap`, built once per content: the values' and the mask's bytes, the labels and the style are
    the key, so an ablation rebuilds only the layers whose weights, roles or scores it changed, and two different
    contents never share a spec. The spec is shared: read it, never change it."""
    return _heatmap(_hashable(values), tuple(rows), tuple(cols), style, _hashable(allowed))


@dataclass(frozen=True)
class _Bytes:
    """An array as a cache key: its dtype, shape and bytes (equal keys hold equal arrays)."""

    dtype: str
    shape: tuple[int, ...]
    data: bytes

    def array(self) -> np.ndarray:
        return np.frombuffer(self.data, dtype=np.dtype(self.dtype)).reshape(self.shape)  # read-only


def _hashable(value: object) -> object:
    if isinstance(value, np.ndarray):
        return _Bytes(value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
    return value


def _array(value: object) -> object:
    return value.array() if isinstance(value, _Bytes) else value


@kept(16)  # a layer's spec: 9 heads at 32 tokens hold ~1.5 MB; 16 layers at most
def _heatmap(
    values: _Bytes, rows: tuple[str, ...], cols: tuple[str, ...], style: charts.Style, allowed: object
) -> dict:
    return charts.heatmap(_array(values), rows, cols, style, _array(allowed))  # type: ignore[arg-type]


def strongest_of(scores: np.ndarray, role: str) -> str:
    """The head with the largest ``role`` score (layers, heads), in words. An induction head needs a layer before it
    (a first-layer key holds only its own token and position), so induction is looked for from layer 2 on; when no
    head there reaches a role's score (a previous-token head ablated, a random model), the line says so."""
    first = 1 if role == "induction" else 0  # the first layer that can hold a head of this kind
    if scores.shape[0] <= first:
        return f"{role}: none (a one-layer model cannot have one)"
    rest = scores[first:]  # (layers from `first`, heads)
    layer, head = np.unravel_index(np.nanargmax(np.nan_to_num(rest, nan=-np.inf)), rest.shape)
    named = f"**{runs.name(first + layer, head)}** ({_fmt(rest[layer, head])})"
    if rest[layer, head] >= roles.ROLE_MIN:
        return f"{role} {named}"
    where = " in layers 2 and up" if first else ""
    return f"{role}: none reaches {roles.ROLE_MIN}{where} (the strongest there: {named})"


def first_layer_note(now: runs.Measured, head: int) -> str:
    """Why a first-layer head that scores as induction is no induction head: where it looks, measured."""
    n = len(now.ids)
    half, repeats = roles.half_split(now.ids)
    rows = now.window(0, head, slice(half, n), slice(None))  # (n - half, n): this head's rows only
    back = np.arange(half, n) - np.argmax(rows, axis=-1)  # (n - half,): how far back it looks
    values, counts = np.unique(back, return_counts=True)
    k, c = int(values[np.argmax(counts)]), int(counts.max())
    return (
        f"{runs.name(0, head).capitalize()} scores as induction, but a key in the first layer holds only its own "
        "token and position, not the token before it, so no first-layer head can find the token that followed an "
        "earlier copy "
        f"of the current one. In the second half its strongest weight is most often {k} tokens back ({c} of "
        f"{n - half} positions)"
        + (
            f": where this repeat happens to put the token to copy ({half - 1} back)."
            if repeats and k == half - 1
            else "."
        )
        + " Choose the 10-word repeat and compare its score with the second layer's induction heads."
    )


def _fmt(value: float) -> str:
    return "n/a" if not np.isfinite(value) else f"{value:.2f}"
