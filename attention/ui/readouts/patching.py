"""The Patching page: a clean and a corrupted text, every head and every stream row patched from one run into the other.

For a clean text and a corrupted one of the same length, D = logit[answer] − logit[wrong] at the last position (the
answer by default the clean run's prediction there, the wrong token the corrupted run's). Each patch runs the
corrupted text with one head's output (before W_o), or the stream entering one layer at one position, taken from the
clean run, and the page shows the share of the difference it restores, (D_patched − D_corrupted) / (D_clean −
D_corrupted): 0 changes nothing, 1 is the clean run's difference. The sweep runs in the background
(:func:`attention.ui.core.jobs.patch`), polled here, with a progress bar and Cancel; a finished one is kept.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...errors import AttentionError
from ...model import Estimate, Sweep
from ...model.layers import probabilities
from ...model.vocab import WordVocab
from ..core import jobs, keys, models, session
from ..core.text import esc
from ..modelpages import answers, choose, runs
from ..state import inside
from ..widgets import common as widgets

POLL = 0.5  # s between redraws of a running sweep's progress
CANDIDATES = 8  # each run's most likely next tokens offered as the answer and the wrong token
NAMED = 3  # heads named in the summary
FEW_ROWS = 60  # px a row of a heatmap of at most 4 layers (its title, labels and legend leave the rows little room)


def body(s: session.Session) -> None:
    """Choose a model and a pair of texts, the answer and wrong tokens; the estimate at once; patch exactly; both."""
    m = choose.chooser()
    p = inside.pair()
    texts(m, p)
    p = inside.pair()
    answer, wrong = tokens(p, runs.last_logits(p.clean), runs.last_logits(p.corrupt))
    try:
        est = jobs.estimate(p.model, p.clean, p.corrupt, answer, wrong)
    except AttentionError as e:
        st.error(esc(str(e), 400) + ". Choose other tokens, or change the texts.")
        return
    key = jobs.patch_key(jobs.PatchRequest.of(p, answer, wrong))
    job = jobs.get(p.job)
    running = job is not None and job.state == "running" and job.key == key
    scope(m, p, running)
    st.button(
        f"Patch exactly: {_scope_text(p, m.config.n_layers)}",
        key=keys.PATCH_RUN,
        on_click=inside.start_patching,
        args=(answer, wrong),
        disabled=running or bool(too_many(m, p)),
        type="primary",
    )
    if too_many(m, p):
        st.caption(too_many(m, p))  # ours: numbers
    st.fragment(progress, run_every=POLL if running else None)(p.job, key, running)
    done = jobs.finished(key)
    result(est, done.result if done is not None else None, p)


LONG_PAIR = 256  # tokens: past this, an exact patching of more than PATCHES_MAX patches does not start
PATCHES_MAX = 2_500  # SmolLM2 at 2,048 tokens: every head (270), or one layer's heads and stream rows (2,057)


def too_many(m: models.Model, p: session.Patching) -> str:
    """Why the exact patching does not start yet ("" when it can): on a long pair, more than PATCHES_MAX patches
    (each one the corrupted run again from its layer on), so fewer layers or only the heads are chosen first."""
    n, c = len(p.clean), m.config
    count = jobs.plan_count(c.n_layers, c.n_heads, n, p.scope, p.layers)
    if n <= LONG_PAIR or count <= PATCHES_MAX:
        return ""
    return (
        f"At {n:,} tokens this is {count:,} exact patches, each a run of the corrupted text from its layer on: at "
        f"most {PATCHES_MAX:,} are made at this length. Choose the heads only, or fewer layers, above (the estimate "
        "below covers every patch and ranks them). The time left is shown as it runs."
    )


def _scope_text(p: session.Patching, L: int) -> str:
    """What the exact patching covers, in words: "the heads of layers 1, 3", "every head and every stream row"."""
    what = jobs.SCOPES[p.scope]
    if not p.layers:
        return what
    which = ", ".join(str(la + 1) for la in p.layers)
    return f"{what} of layer{'s' if len(p.layers) > 1 else ''} {which}"


def scope(m: models.Model, p: session.Patching, running: bool) -> None:
    """What the exact patching covers: the heads, the stream or both; every layer or the chosen ones."""
    L = m.config.n_layers
    left, right = st.columns([2, 3], gap="medium")
    widgets.bind(keys.PATCH_SCOPE, p.scope)
    left.radio(
        "Patch exactly",
        list(jobs.SCOPES),
        key=keys.PATCH_SCOPE,
        format_func=lambda k: jobs.SCOPES[k].capitalize(),
        on_change=inside.on_scope,
        disabled=running,
        horizontal=False,
    )
    widgets.bind(keys.PATCH_LAYERS, [la + 1 for la in p.layers])
    right.multiselect(
        "Only these layers (none chosen: every layer)",
        list(range(1, L + 1)),
        key=keys.PATCH_LAYERS,
        on_change=inside.on_layers,
        disabled=running,
        placeholder="Every layer",
    )
    c = m.config
    count = jobs.plan_count(c.n_layers, c.n_heads, len(p.clean), p.scope, p.layers)
    right.caption(
        f"{count:,} exact patches, each the corrupted run again from the patched layer on. The estimate below "
        "costs a few forward and backward passes; the exact patches start with the heads it ranks highest."
    )


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
    changed = {k for k in range(len(p.clean)) if p.clean[k] != p.corrupt[k]}
    listed = range(len(p.clean)) if len(p.clean) <= LONG_PAIR else sorted(changed)  # a long pair: its changes only
    cells = [f"{k + 1} {esc(shown[0][k])}" + (f" → **{esc(shown[1][k])}**" if k in changed else "") for k in listed]
    said = "clean → corrupted" if len(p.clean) <= LONG_PAIR else "the positions that differ, clean → corrupted"
    st.markdown(f"**{len(p.clean):,} tokens, {said}:** " + " · ".join(cells))  # ours: tokens escaped


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
    answer, wrong = jobs.default_tokens(clean, corrupt, p.answer, p.wrong)
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
    """The sweep's progress (:func:`widgets.common.job_progress`), redrawn every :data:`POLL` s, with the top heads
    as soon as they are patched."""
    widgets.job_progress(
        job_id, key, polling, ("patch", "patches"), (keys.PATCH_CANCEL, inside.cancel_patching),
        after_cancel="and the page is as it was. Press the button to patch again.", while_running=top_so_far,
    )  # fmt: skip


def top_so_far(job: jobs.Job) -> None:
    """A running sweep's top heads, as soon as they are patched (its partial result)."""
    if isinstance(job.partial, jobs.Refined):
        side_by_side(job.partial, ready=False)


def restored_scale(*arrays: np.ndarray) -> charts.Colour:
    """One diverging scale for every heatmap, centred at 0: −m to m, m the largest |share| and at least 1."""
    values = np.concatenate([a.ravel() for a in arrays])
    m = max(1.0, float(np.nanmax(np.abs(values)))) if np.isfinite(values).any() else 1.0
    return charts.Colour((-m, 0.0, m), charts.DIVERGING, "share restored")


def result(est: Estimate, refined: jobs.Refined | None, p: session.Patching) -> None:
    """What the patches restore: the sentence, the top heads' estimate beside their exact share, what single patches
    do not add up to, and the heatmaps (the estimate's, and the exact ones once patched)."""
    exact = refined.exact if refined is not None else None
    answer, wrong = (esc(runs.pieces([t])[0], 40) for t in (est.answer, est.wrong))
    shares = exact.heads if exact is not None and np.isfinite(exact.heads).any() else None
    top = jobs.named(est.heads if shares is None else shares, NAMED)
    named = ", ".join(f"**{runs.name(la, h)}** ({v:.2f})" for la, h, v in top)
    how = "The heads that restore the most" + ("" if shares is not None else ", by the estimate")
    st.subheader("What each patch restores")
    n, last = len(p.clean), esc(runs.pieces([p.clean[-1]])[0], 40)
    st.markdown(
        f"At **position {n} of {n}** (“{last}”), the pair's last (its prediction is the one the corruption changes; "
        "the Logit lens, Attribution and Routes read the position chosen on Every head, in their own text), "
        f"D = logit “{answer}” − logit “{wrong}” is **{est.clean:.3f}** after the clean text "
        f"and **{est.corrupt:.3f}** after the corrupted one. Each cell is the share of that difference a patch "
        "restores: (D patched − D corrupted) / (D clean − D corrupted); **1** (red) gives the clean run's difference, "
        "**0** (white) changes nothing, below 0 (blue) moves it the other way. "
        + (f"{how}: {named}." if named else "No head's patch restores any of it.")
    )
    if refined is not None:
        side_by_side(refined, ready=True)
    else:
        st.markdown(
            f"The values below are **the estimate**: {what_estimate(est)} Press the button to patch exactly."
        )
    heatmaps(est, exact, p)


def side_by_side(refined: jobs.Refined, ready: bool) -> None:
    """The top heads: the estimate beside the exact share; then what single patches do not add up to."""
    est, exact = refined.estimate, refined.exact
    H = est.heads.shape[1]
    order = [divmod(int(k), H) for k in np.argsort(-np.abs(est.heads), axis=None)[: jobs.TOP]]
    rows = [
        {
            "head": runs.name(la, h),
            "estimate": float(est.heads[la, h]),
            "exact": None if np.isnan(exact.heads[la, h]) else float(exact.heads[la, h]),
        }
        for la, h in order
    ]
    st.markdown(
        "**The heads the estimate ranks highest, estimated and patched exactly.** " + what_estimate(est) + " "
        + how_far(est, exact)
    )
    st.dataframe(
        pd.DataFrame(rows),
        key=keys.PATCH_SIDE if ready else None,
        hide_index=True,
        column_config={
            "estimate": st.column_config.NumberColumn("estimate (from gradients)", format="%.3f"),
            "exact": st.column_config.NumberColumn("exact patch", format="%.3f"),
        },
    )
    gap(refined)
    together(refined)


def what_estimate(est: Estimate) -> str:
    """What the estimate is and how it can err, in words (the engine's :func:`attention.model.estimate`)."""
    if est.steps == 0:
        how = "the gradient of D at the corrupted run" + (
            f" (at {len(inside.pair().clean):,} tokens the runs on the path would keep every head's weights, "
            f"{jobs.path_bytes(runs.model(), len(inside.pair().clean)) / 2**30:.1f} GB, so the path is left out)"
            if jobs.path_steps(runs.model(), len(inside.pair().clean)) == 0
            else ""
        )
    else:
        how = (
            f"the gradient of D averaged over {est.steps} runs whose embeddings lie between the corrupted text's and "
            "the clean one's (integrated gradients: a forward and a backward pass each)"
        )
    return (
        f"Each patch's share is estimated as {how}, times the activation's clean − corrupted change. It is exact "
        "where D reads a part directly (a last layer's head). Elsewhere it is a guess from a few slopes: a head "
        "that acts through a later head's attention pattern, whose softmax saturates, is where the gradient at the "
        "corrupted run alone saw nothing (attribution patching's known failure), and a few points on the path can "
        "still miss a sharp turn."
    )


def how_far(est: Estimate, exact: Sweep) -> str:
    """How far the estimate was from the exact shares of the heads patched so far, on this pair."""
    made = np.isfinite(exact.heads)
    if not made.any():
        return ""
    err = np.abs(est.heads - exact.heads)[made]  # (patched,)
    big = made & (exact.heads >= 0.2)
    said = (
        f"**On this pair**, over the {int(made.sum()):,} heads patched, the estimate was off by {err.mean():.3f} "
        f"on average and {err.max():.3f} at most"
    )
    if big.any():
        low = float((est.heads[big] / exact.heads[big]).min())
        said += f"; of the heads restoring 0.2 or more, the lowest got {low:.0%} of its exact share"
    return said + "."


GAP = 0.2  # a head's |exact − estimate| worth a sentence


def gap(refined: jobs.Refined) -> None:
    """The head where the estimate and the exact patch differ most, when they differ by more than :data:`GAP`."""
    est, exact = refined.estimate.heads, refined.exact.heads
    diff = np.nan_to_num(np.abs(exact - est), nan=0.0)
    if diff.max() <= GAP:
        return
    la, h = divmod(int(np.argmax(diff)), est.shape[1])
    st.markdown(
        f"The estimate and the exact patch differ most at **{runs.name(la, h)}**: estimated **{est[la, h]:.2f}**, "
        f"patched **{exact[la, h]:.2f}**. The gradients are read at a few points between the two runs only: a head "
        "whose effect runs through another head's attention (a previous-token head moving what an induction head "
        "looks at, say) can move a softmax sharply between those points, and heads that act only together share what "
        "one of them restores alone."
    )


def together(refined: jobs.Refined) -> None:
    """Why single patches' shares do not add up, with the top heads patched together beside their sum."""
    text = (
        "**Single patches do not add up.** Each share is one head patched alone, the rest of the model as the "
        "corrupted run has it. Heads act together (the induction head needs the previous-token head's write to find "
        "its key), and a head downstream reads what the patched one wrote, so patching two heads is not the sum of "
        "patching each: their shares can add up to well over 1, or to less than either."
    )
    if refined.together is not None:
        pairs, share = refined.together
        singles = float(sum(refined.exact.heads[la, h] for la, h in pairs))
        names = ", ".join(runs.name(la, h) for la, h in pairs)
        text += (
            f" Patching the top {len(pairs)} heads ({names}) together restores **{share:.2f}**; the sum of their "
            f"single shares is **{singles:.2f}**."
        )
    st.markdown(text)  # ours: head names ("layer 1 · head 2") and numbers


def heatmaps(est: Estimate, exact: Sweep | None, p: session.Patching) -> None:
    """The heads' and the stream rows' shares: the estimate's, beside the exact ones where patched."""
    L, H = est.heads.shape
    arrays = [est.heads, est.streams] + ([exact.heads, exact.streams] if exact is not None else [])
    style = charts.Style(kind="scores", colour=restored_scale(*arrays), digits=2, row_title="layer", col_title="head")
    short = FEW_ROWS if L <= 4 else None
    rows, heads = [f"layer {k + 1}" for k in range(L)], [f"head {k + 1}" for k in range(H)]
    widgets.chart_gap()
    has_heads = exact is not None and np.isfinite(exact.heads).any()
    where = st.columns(2) if has_heads else [st.columns([2, 3])[0] if H <= 4 else st]
    spec = charts.heatmap(
        est.heads,
        rows,
        heads,
        style.but(title="Each head's output: the estimate", subtitle="from gradients on the path", row_height=short),
    )
    widgets.vega_chart(spec, where[0], width="stretch", key=keys.PATCH_EST_HEADS)
    if has_heads:
        title, sub = "Each head's output patched", "share of the difference restored (grey: not patched)"
        spec = charts.heatmap(exact.heads, rows, heads, style.but(title=title, subtitle=sub, row_height=short))
        widgets.vega_chart(spec, where[1], width="stretch", key=keys.PATCH_HEADS)
    cols = [f"{k + 1} {t}" for k, t in enumerate(runs.pieces(p.clean))]
    into = [f"into layer {k + 1}" for k in range(L)]
    stream_style = style.but(row_height=short, col_title="position and clean token")
    spec = charts.heatmap(
        est.streams,
        into,
        cols,
        stream_style.but(title="The stream entering each layer: the estimate", subtitle="from gradients on the path"),
    )
    widgets.vega_chart(spec, width="stretch", key=keys.PATCH_EST_STREAMS)
    if exact is not None and np.isfinite(exact.streams).any():
        spec = charts.heatmap(
            exact.streams,
            into,
            cols,
            stream_style.but(
                title="The stream entering each layer, patched at one position",
                subtitle="share of the difference restored; columns: the clean text's tokens (grey: not patched)",
            ),
        )
        widgets.vega_chart(spec, width="stretch", key=keys.PATCH_STREAMS)
    st.caption(
        "The stream entering layer 1 is the tokens' embeddings (and positions): patching it at a changed position "
        "puts the clean token back there. A stream row before the first changed position holds the same numbers in "
        "both runs, so patching it restores nothing."
    )
