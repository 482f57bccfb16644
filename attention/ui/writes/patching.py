"""The Patching page: a clean and a corrupted text, every head and every stream row patched from one run into the other.

For a clean text and a corrupted one of the same length, D = logit[answer] − logit[wrong] at the last position (the
answer by default the clean run's prediction there, the wrong token the corrupted run's). Each patch runs the
corrupted text with one head's output (before W_o), or the stream entering one layer at one position, taken from the
clean run, and the page shows the share of the difference it restores, (D_patched − D_corrupted) / (D_clean −
D_corrupted): 0 changes nothing, 1 is the clean run's difference. The sweep runs in the background
(:func:`attention.ui.core.jobs.patch`), polled here, with a progress bar and Cancel; a finished one is kept.
"""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from ... import charts
from ...model import Sweep
from ...model.vocab import WordVocab
from ..core import jobs, keys, models, session
from ..core.text import esc
from ..modelpages import answers, choose, runs
from ..modelpages.walks import probabilities
from ..state import inside
from ..widgets import common as widgets

POLL = 0.5  # s between redraws of a running sweep's progress
CANDIDATES = 8  # each run's most likely next tokens offered as the answer and the wrong token
NAMED = 3  # heads named in the summary
FEW_ROWS = 60  # px a row of a heatmap of at most 4 layers (its title, labels and legend leave the rows little room)


def body(s: session.Session) -> None:
    """Choose a model and a pair of texts, the answer and wrong tokens; patch; the two heatmaps."""
    m = choose.chooser()
    p = inside.pair()
    texts(m, p)
    p = inside.pair()
    clean, corrupt = runs.measure(p.clean), runs.measure(p.corrupt)
    answer, wrong = tokens(p, clean.logits[-1], corrupt.logits[-1])
    key = jobs.patch_key(p.model, p.clean, p.corrupt, answer, wrong)
    job = jobs.get(p.job)
    running = job is not None and job.state == "running" and job.key == key
    st.button(
        "Patch every head and every stream row",
        key=keys.PATCH_RUN,
        on_click=inside.start_patching,
        args=(answer, wrong),
        disabled=running,
        type="primary",
    )
    st.fragment(progress, run_every=POLL if running else None)(p.job, key, running)
    done = jobs.finished(key)
    if done is not None:
        result(done.result, p)


def texts(m: models.Model, p: session.Patching) -> None:
    """A ready-made pair, or two texts typed and sent together (they must have the same number of tokens)."""
    pairs = models.pairs(inside.model_id())
    options = [*pairs, inside.TYPED_PAIR]
    widgets.bind(keys.PATCH_PAIR, p.pair or inside.TYPED_PAIR, once=True)
    st.selectbox("Ready-made pair", options, key=keys.PATCH_PAIR, on_change=inside.on_pair)
    words = isinstance(m.vocab, WordVocab)
    most = models.longest(m)
    widgets.bind(keys.PATCH_CLEAN, m.decode(p.clean), once=True)
    widgets.bind(keys.PATCH_CORRUPT, m.decode(p.corrupt), once=True)
    with st.form(keys.PATCH_FORM, border=False):
        left, right = st.columns(2, gap="medium")
        unit = "words of its vocabulary, separated by spaces" if words else "tokens of the model's tokenizer"
        left.text_area(f"Clean text (2 to {most} {unit})", key=keys.PATCH_CLEAN)  # checked on Use
        same = "Corrupted text (the same number of tokens)"
        right.text_area(same, key=keys.PATCH_CORRUPT)  # no max_chars: a longer paste is named, not dropped
        st.form_submit_button("Use these two texts", key=keys.PATCH_USE, on_click=inside.on_texts)
    if p.message:
        st.error(esc(p.message, 600))
    if words:
        st.caption("The vocabulary: " + " ".join(esc(w) for w in m.vocab.words))
    shown = runs.pieces(p.clean), runs.pieces(p.corrupt)
    changed = [k for k in range(len(p.clean)) if p.clean[k] != p.corrupt[k]]
    cells = [
        f"{k + 1} {esc(a)}" + (f" → **{esc(b)}**" if k in changed else "")
        for k, (a, b) in enumerate(zip(*shown, strict=True))
    ]
    st.markdown(f"**{len(p.clean)} tokens, clean → corrupted:** " + " · ".join(cells))  # ours: tokens escaped


def _labels(options: list[int], clean: np.ndarray, corrupt: np.ndarray) -> dict[int, str]:
    """The tokens as the choosers show them: each one's text and its probability after each text, in one format
    from the digits control."""
    p_clean, p_corrupt = probabilities(clean)[options], probabilities(corrupt)[options]  # (n,) each
    fmt = answers.prob_pattern(np.r_[p_clean, p_corrupt]).format
    return {
        t: f"“{piece}” (clean {fmt(a)}, corrupted {fmt(b)})"
        for t, piece, a, b in zip(options, runs.pieces(options), p_clean, p_corrupt, strict=True)
    }


def tokens(p: session.Patching, clean: np.ndarray, corrupt: np.ndarray) -> tuple[int, int]:
    """The answer and the wrong token: by default the clean and the corrupted prediction at the last position (the
    corrupted run's next best when both predict the same token); either can be chosen among both runs' likeliest."""
    order_clean, order_corrupt = np.argsort(-clean), np.argsort(-corrupt)
    answer = int(order_clean[0]) if p.answer is None else p.answer
    wrong = p.wrong if p.wrong is not None else next(int(t) for t in order_corrupt if int(t) != answer)
    likeliest = [int(t) for order in (order_clean, order_corrupt) for t in order[:CANDIDATES]]
    options = list(dict.fromkeys([answer, wrong, *likeliest]))
    labels = _labels(options, clean, corrupt)
    left, right = st.columns(2, gap="medium")
    for col, which, key, value, other in (
        (left, "answer", keys.PATCH_ANSWER, answer, wrong),
        (right, "wrong", keys.PATCH_WRONG, wrong, answer),
    ):
        widgets.bind(key, value)
        col.selectbox(
            "Answer token (the clean text's prediction)" if which == "answer" else "Wrong token (the corrupted one's)",
            options,
            key=key,
            format_func=lambda t: labels.get(t, str(t)),
            on_change=inside.on_pair_token,
            args=(which, key, other),
        )
    return answer, wrong


def progress(job_id: str | None, key: tuple, polling: bool) -> None:
    """A running sweep's progress bar and Cancel, redrawn every :data:`POLL` s; what a cancelled or failed one left."""
    job = jobs.get(job_id)
    if job is None or job.key != key:
        return
    if polling and job.state != "running":
        st.rerun()  # it ended: the whole page again, without the timer, with what it made
    seconds = job.seconds if job.state != "running" else time.perf_counter() - job.started
    if job.state == "running":
        st.progress(min(job.done / job.total, 1.0), text=f"Patch {job.done:,} of {job.total:,} · {seconds:.1f} s")
        st.button("Cancel", key=keys.PATCH_CANCEL, on_click=inside.cancel_patching)
    elif job.state == "cancelled":
        st.info(
            f"Cancelled after {job.done:,} of {job.total:,} patches ({seconds:.1f} s); nothing of it was kept and the "
            "page is as it was. Press the button to patch again."
        )
    elif job.state == "failed":
        st.error(esc(job.message, 400) + ". Nothing was kept.")


def restored_scale(sweep: Sweep) -> charts.Colour:
    """One diverging scale for both heatmaps, centred at 0: −m to m, m the largest |share| and at least 1."""
    values = np.concatenate([sweep.heads.ravel(), sweep.streams.ravel()])
    m = max(1.0, float(np.nanmax(np.abs(values))))
    return charts.Colour((-m, 0.0, m), charts.DIVERGING, "share restored")


def result(sweep: Sweep, p: session.Patching) -> None:
    """What the patches restored: the sentence, every head's share, every stream row's."""
    L, H = sweep.heads.shape
    answer, wrong = (esc(runs.pieces([t])[0], 40) for t in (sweep.answer, sweep.wrong))
    order = np.argsort(-sweep.heads, axis=None)[:NAMED]
    named = ", ".join(
        f"**{runs.name(*divmod(int(k), H))}** ({sweep.heads.flat[k]:.2f})" for k in order if sweep.heads.flat[k] > 0
    )
    st.subheader("What each patch restores")
    st.markdown(
        f"At the last position, D = logit “{answer}” − logit “{wrong}” is **{sweep.clean:.3f}** after the clean text "
        f"and **{sweep.corrupt:.3f}** after the corrupted one. Each cell is the share of that difference a patch "
        "restores: (D patched − D corrupted) / (D clean − D corrupted); **1** (red) gives the clean run's difference, "
        "**0** (white) changes nothing, below 0 (blue) moves it the other way. "
        + (f"The heads that restore the most: {named}." if named else "No head's patch restores any of it.")
    )
    scale = restored_scale(sweep)
    style = charts.Style(kind="scores", colour=scale, digits=2, row_title="layer", col_title="head")
    rows = [f"layer {k + 1}" for k in range(L)]
    spec = charts.heatmap(
        sweep.heads,
        rows,
        [f"head {k + 1}" for k in range(H)],
        style.but(
            title="Each head's output patched",
            subtitle="share of the difference restored",
            row_height=FEW_ROWS if L <= 4 else None,
        ),
    )
    widgets.chart_gap()
    where = st.columns([2, 3])[0] if H <= 4 else st  # a few heads: not a whole row of huge cells
    widgets.vega_chart(spec, where, width="stretch", key=keys.PATCH_HEADS)
    cols = [f"{k + 1} {t}" for k, t in enumerate(runs.pieces(p.clean))]
    spec = charts.heatmap(
        sweep.streams,
        [f"into layer {k + 1}" for k in range(L)],
        cols,
        style.but(
            row_height=FEW_ROWS if L <= 4 else None,
            title="The stream entering each layer, patched at one position",
            subtitle="share of the difference restored; columns: the clean text's tokens",
            col_title="position and clean token",
        ),
    )
    widgets.vega_chart(spec, width="stretch", key=keys.PATCH_STREAMS)
    st.caption(
        "The stream entering layer 1 is the tokens' embeddings (and positions): patching it at a changed position "
        "puts the clean token back there. A stream row before the first changed position holds the same numbers in "
        "both runs, so patching it restores nothing."
    )
