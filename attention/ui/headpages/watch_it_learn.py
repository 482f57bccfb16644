"""The "Watch it learn" page: the shipped model's training snapshots on a slider, and a model trained here, live."""

from __future__ import annotations

import time
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...errors import AttentionError
from ...model import induction
from ...names import token_labels
from ..core import jobs, keys, models, session
from ..core.cache import kept
from ..core.text import esc
from ..modelpages import runs
from ..state import inside
from ..widgets import common as widgets
from . import every_head

LIVE_STEPS = 1000  # the live run: 1,000 steps (the shipped run took 3,600), past the change near step 400
LIVE_HOLD = 700  # the learning rate held until this step, then falling (the shipped run: to 1,800 of 3,600)
EVERY_HEAD = str(Path(__file__).resolve().parents[3] / "pages" / "14_every_head.py")  # absolute: under AppTest too
POLL = 0.5  # s between redraws of a live run's progress
LOSS_HEIGHT = 340  # px
LABEL_LINE = 16  # px between the rules' labels
FALL_SHARES = (0.1, 0.5, 0.9)  # how far the repeated half's loss has fallen: its fall's start, middle and end
FELL = 0.5  # nats: the repeated half's loss the prose follows the drop down to
STARTED = 20  # steps: the loss chart's scale fits the losses from here on (the random start's are far above)
SERIES = {  # the loss chart's lines: label, colour (readable with any colour vision)
    "training loss (each step's batch)": "#9e9e9e",
    "first half (snapshots)": "#3e4989",
    "repeated half (snapshots)": "#e66101",
}


@kept(1)
def record() -> dict[str, np.ndarray]:
    """The shipped model's training record (:func:`attention.model.induction.history`), read once per process."""
    return induction.history(models.BUILTIN)


def body(s: session.Session) -> None:
    """The snapshots on a slider with the loss curves and every head's pattern, then a model trained live."""
    inside.ensure_learn()
    h = record()
    snapshots(h, induction.phase_change(h))
    train_yourself()


def snapshots(h: dict[str, np.ndarray], phase: int | None) -> None:
    """The loss curves with the phase change marked, the slider, and every head's pattern at the chosen snapshot."""
    steps, count = h["step"], len(h["step"])
    phase_prose(h, phase)
    k = inside.now().snapshot
    st.slider(
        f"Snapshot (1 to {count})",
        1,
        count,
        value=k,
        key=keys.WATCH_SNAPSHOT,
        on_change=inside.on_snapshot,
        args=(count,),
    )
    if session.get().training.learn_message:
        st.error(esc(session.get().training.learn_message, 300))
    i = k - 1
    st.markdown(
        f"**Snapshot {k} of {count}: after {steps[i]} training steps.** Loss on the first half "
        f"{h['loss_first'][i]:.2f} nats, on the repeated half {h['loss_repeated'][i]:.2f} nats."
    )
    widgets.chart_gap()
    st.altair_chart(loss_curves(h, phase, i), width="stretch", height=LOSS_HEIGHT)
    marked = ""
    if phase is not None:
        marked = (
            f"The dashed line marks step {steps[phase]}: the first snapshot at which a head's induction score "
            f"reached {induction.PHASE_SCORE}. "
        )
    st.caption(
        f"{marked}At step 0, the random start, the losses were {h['losses'][0]:.2f} (training batch), "
        f"{h['loss_first'][0]:.2f} (first half) and {h['loss_repeated'][0]:.2f} (repeated half): the lines leave the "
        "chart's top there. The grey training loss is on the training sequences, which differ from the example: "
        f"in each, {induction.SHORTEST_TRAINED} to {induction.HALF} words repeat over and over to the end, from the "
        f"first word in {induction.FROM_START:.0%} of them and from a random place in the others."
    )
    heads(h, i)


def phase_prose(h: dict[str, np.ndarray], phase: int | None) -> None:
    """Where the phase change is in the record, and how the two halves' losses moved around it."""
    steps, count = h["step"], len(h["step"])
    best = h["induction"].reshape(count, -1).max(axis=1)  # (snapshots,): the strongest induction score
    r = float(np.corrcoef(best, h["loss_repeated"])[0, 1])
    vocab = models.get(models.BUILTIN).config.vocab_size
    if phase is None:
        st.markdown(f"No head's induction score reached {induction.PHASE_SCORE} in this record.")
    else:
        layer, head = np.unravel_index(np.argmax(h["induction"][phase]), h["induction"].shape[1:])
        before = max(phase - 1, 0)
        low = next((j for j in range(phase, count) if h["loss_repeated"][j] < FELL), count - 1)
        st.markdown(
            f"{fall_prose(h)} **The dashed line marks step {steps[phase]}**: the first snapshot at which a head "
            f"puts at least half of its weight on the token to copy (an induction score of at least "
            f"{induction.PHASE_SCORE}; {runs.name(layer, head)}'s reached {h['induction'][phase, layer, head]:.2f})."
            f" **The induction head appears where the repeated half's loss drops:** from step {steps[before]} to "
            f"step {steps[phase]} that loss fell from "
            f"{h['loss_repeated'][before]:.2f} to {h['loss_repeated'][phase]:.2f} nats, by step {steps[low]} it was "
            f"{h['loss_repeated'][low]:.2f}, and over the whole run it "
            f"went from {h['loss_repeated'][1]:.2f} (step {steps[1]}) to {h['loss_repeated'][-1]:.2f} as the "
            f"strongest induction score rose from {best[1]:.2f} to {best[-1]:.2f} (across the {count} snapshots the "
            f"two move together: correlation {r:.2f}). The first half's loss never falls below ln {vocab} ≈ "
            f"{np.log(vocab):.2f} ({h['loss_first'][phase]:.2f} at the marked step, {h['loss_first'][-1]:.2f} at "
            "the end): its words are new, so nothing there can be predicted."
        )


def fall_prose(h: dict[str, np.ndarray]) -> str:
    """Where the repeated half's loss falls, read from the recorded curve: a tenth, half and nine tenths of the way
    from its plateau to its last value (the phase change is this stretch of steps, not one step)."""
    steps, loss = h["step"], h["loss_repeated"]
    at = [induction.loss_fall(h, share) for share in FALL_SHARES]
    if None in at:
        return ""
    a, half, b = (steps[j] for j in at)
    return (
        f"**The phase change, read from the curve:** the repeated half's loss (orange) falls steeply between steps "
        f"{a} and {b}: from its plateau of {loss[1]:.2f} nats at step {steps[1]} it had fallen a tenth of the way "
        f"to its last {loss[-1]:.2f} by step {a}, half of the way by step {half} and nine tenths by step {b}."
    )


def loss_curves(h: dict[str, np.ndarray], phase: int | None, i: int) -> alt.LayerChart:
    """Every step's training loss, each half's loss at the snapshots, a dashed rule at the phase change and a solid
    one at snapshot ``i``."""
    losses = h["losses"]
    names = list(SERIES)
    df = pd.concat(
        [
            pd.DataFrame({"step": np.arange(len(losses)), "loss": losses, "series": names[0]}),
            pd.DataFrame({"step": h["step"], "loss": h["loss_first"], "series": names[1]}),
            pd.DataFrame({"step": h["step"], "loss": h["loss_repeated"], "series": names[2]}),
        ]
    )
    x = alt.X("step:Q", title="training step", scale=alt.Scale(domain=[0, int(h["step"][-1])]))
    colour = alt.Color("series:N", title=None, scale=alt.Scale(domain=names, range=list(SERIES.values())))
    colour = colour.legend(orient="top", labelLimit=260)
    top = float(np.ceil(max(losses[STARTED:].max(), h["loss_first"][1:].max(), h["loss_repeated"][1:].max()))) + 1
    y = alt.Y("loss:Q", title="loss (nats)", scale=alt.Scale(domain=[0, top]))
    tip = [alt.Tooltip("series:N"), alt.Tooltip("step:Q"), alt.Tooltip("loss:Q", format=".3f")]
    lines = alt.Chart(df).mark_line(strokeWidth=1.5, clip=True).encode(x, y, colour, tooltip=tip)
    shown = df[(df.series != names[0]) & (df.loss <= top)]
    points = alt.Chart(shown).mark_point(filled=True, size=30).encode(x, y, colour, tooltip=tip)
    marks = [{"step": int(h["step"][i]), "what": f"snapshot shown (step {int(h['step'][i])})", "dash": "shown"}]
    if phase is not None:
        what = f"a head's induction score ≥ {induction.PHASE_SCORE} (step {int(h['step'][phase])})"
        marks.append({"step": int(h["step"][phase]), "what": what, "dash": "phase"})
    rules = (
        alt.Chart(pd.DataFrame(marks))
        .mark_rule(color="#000000", strokeWidth=1.5)
        .encode(
            x,
            strokeDash=alt.StrokeDash(
                "dash:N", scale=alt.Scale(domain=["shown", "phase"], range=[[1, 0], [6, 4]]), legend=None
            ),
            tooltip=[alt.Tooltip("what:N")],
        )
    )
    chart = lines + points + rules
    for line, mark in enumerate(marks):  # one label a line, so two close rules' labels never overlap
        right = mark["step"] > h["step"][-1] / 2  # past the middle: the label goes left of its rule, inside the plot
        chart += (
            alt.Chart(pd.DataFrame([{"step": mark["step"], "what": mark["what"]}]))
            .mark_text(
                align="right" if right else "left",
                dx=-4 if right else 4,
                dy=6 + LABEL_LINE * line,
                baseline="top",
                fontSize=12,
            )
            .encode(x, y=alt.value(0), text="what:N")
        )
    return chart.properties(title="Loss as the model learns")


def heads(h: dict[str, np.ndarray], i: int) -> None:
    """Every layer × head's weights on the example sequence at snapshot ``i`` (one chart per head, in columns, on one
    0–1 scale), each with its previous-token and induction scores there."""
    weights = h["weights"][i]  # (layers, heads, n, n)
    L, H, n = weights.shape[0], weights.shape[1], weights.shape[-1]
    labels = token_labels(models.get(models.BUILTIN).pieces([int(t) for t in h["example"]]))
    allowed = np.tril(np.ones((n, n), bool))  # (n, n): causal, True = may attend
    st.subheader("Every head at this snapshot")
    st.markdown(
        "Each head's weights on the example sequence (12 words, then the same 12 again; rows: the query token, "
        "columns: the key it attends to; all on the same 0–1 scale). Below each, its scores at this snapshot, "
        "averaged over the 64 sequences the snapshots were measured on: **previous-token** (the weight on the token "
        "before) and **induction** (the weight on the token that followed an earlier occurrence of the current one)."
    )
    for layer in range(L):
        widgets.chart_gap()
        for head, col in enumerate(st.columns(H, gap="medium")):
            prev, ind = h["previous"][i, layer, head], h["induction"][i, layer, head]
            with col:
                subtitle = f"previous-token {prev:.2f} · induction {ind:.2f}"
                style = charts.HEAD.but(
                    title=runs.name(layer, head),
                    subtitle=subtitle,
                    row_height=every_head.row_height(len(labels)),
                )
                spec = charts.heatmap(weights[layer, head].astype(np.float64), labels, labels, style, allowed)
                widgets.vega_chart(spec, width="stretch", key=keys.watch_chart(layer, head))
                st.markdown(f"{runs.name(layer, head)}: previous-token **{prev:.2f}** · induction **{ind:.2f}**")


def train_yourself() -> None:
    """Train the same kind of model from scratch, live, with a progress bar, the loss as it goes, and Cancel."""
    st.subheader("Train it yourself")
    st.markdown(
        f"The same recipe as the shipped model (the same seed, shape, batches of 16 sequences and Adam), trained "
        f"from scratch on this server for {LIVE_STEPS:,} steps: the learning rate rises to {induction.LR} over the "
        f"first {induction.WARMUP} steps, is held there until step {LIVE_HOLD}, then falls. That is shorter than "
        f"the shipped run's {induction.STEPS:,} steps, and still past the phase change: watch the loss sit near "
        "ln 32 ≈ 3.47 on the plateau, then drop."
    )
    job = jobs.get(session.get().training.job)
    running = job is not None and job.state == "running"
    st.button(
        "Train a model from scratch" if job is None else "Train again",
        key=keys.WATCH_TRAIN,
        on_click=inside.start_training,
        args=(LIVE_STEPS, LIVE_HOLD),
        disabled=running,
        type="primary",
    )
    if session.get().training.train_message:
        st.error(esc(session.get().training.train_message, 300))
    st.fragment(progress, run_every=POLL if running else None)(session.get().training.job, running)
    job = jobs.get(session.get().training.job)
    if job is not None and job.state == "done" and job.result is not None:
        trained(job)


def progress(job_id: str | None, polling: bool) -> None:
    """A live run's progress bar, its loss so far, and Cancel; redrawn every :data:`POLL` s while it runs."""
    job = jobs.get(job_id)
    if job is None:
        if job_id:
            st.info("That run is no longer remembered by this server. Press the button to train again.")
        return
    if polling and job.state != "running":
        st.rerun()  # the run ended: the whole page again, without the timer, with what it made
    losses = np.array(job.losses)
    done = max(len(losses) - 1, 0)
    seconds = job.seconds if job.state != "running" else time.perf_counter() - job.started
    st.progress(min(done / job.total, 1.0), text=f"Step {done:,} of {job.total:,} · {seconds:.1f} s")
    if job.state == "running":
        st.button("Cancel", key=keys.WATCH_CANCEL, on_click=inside.cancel_training)
    elif job.state == "cancelled":
        st.info(f"Cancelled at step {done:,} of {job.total:,} after {seconds:.1f} s; nothing was kept.")
    elif job.state == "failed":
        st.error(esc(job.message, 300))
    if len(losses):
        df = pd.DataFrame({"step": np.arange(len(losses)), "loss": losses})
        chart = (
            alt.Chart(df)
            .mark_line(color=SERIES["training loss (each step's batch)"], strokeWidth=1.5)
            .encode(
                alt.X("step:Q", title="training step", scale=alt.Scale(domain=[0, job.total])),
                alt.Y("loss:Q", title="loss (nats)", scale=alt.Scale(domainMin=0)),
                tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("loss:Q", format=".3f")],
            )
        )
        widgets.chart_gap()
        st.altair_chart(chart.properties(title="Your model's training loss"), width="stretch", height=LOSS_HEIGHT)


def trained(job: jobs.Job) -> None:
    """What the finished run reached on the example sequence, and the button that opens it on Every head."""
    ids = tuple(int(t) for t in record()["example"])
    try:
        now = runs.measure(ids, (), model_id=job.result)
    except AttentionError as e:  # let go by this server since (it keeps a few learners' models only)
        st.info(f"{esc(e, 300)}.")
        return
    ind = now.scores["induction"]  # (layers, heads); an induction head needs a layer before it: looked for from 2 on
    layer, head = np.unravel_index(np.nanargmax(ind[1:]), ind[1:].shape)
    layer += 1
    st.success(
        f"Trained {job.total:,} steps in {job.seconds:.1f} s. On the example sequence: loss on the first half "
        f"{now.first:.2f} nats, on the repeated half {now.second:.2f} nats; the strongest induction head is "
        f"{runs.name(layer, head)} ({ind[layer, head]:.2f})."
    )
    if st.button("Open it on Every head", key=keys.WATCH_OPEN, type="primary"):
        if inside.open_model(job.result):
            st.switch_page(EVERY_HEAD)
        st.rerun()  # the message says why it did not open
