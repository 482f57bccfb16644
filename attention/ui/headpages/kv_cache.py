"""The "KV cache at length" page: sinks across the length, retrieval heads, and what each eviction policy costs.

One background job per (model, text) runs :func:`attention.model.eviction.study` (every policy at the curve's 8
budgets over one prefix pass, the last m tokens scored, and each head's weight on token 1 from positions 64, 512
and 2,048) and the model's retrieval heads on the needle case (:mod:`attention.ui.core.jobs`, kept when done). A
change of policy, or of a budget on the curve, redraws from the finished job; a budget off it is one more job (every
policy at that budget).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from ... import charts
from ...model.eviction import NEEDLE, POLICIES, SINK_AT, EvictionResult, Study
from ..core import jobs, keys, session
from ..core.text import esc
from ..modelpages import choose, runs
from ..state import inside
from ..widgets.common import bind, chart_gap, job_progress, vega_chart
from . import every_head, overview

POLL = 1.0  # s between redraws of a running job's progress
TOP = 5  # retrieval heads named, each with a button that opens it
BLOCKS = 32  # the kept keys' pictures: the prefix's keys in at most this many blocks
POLICY_NAMES = {
    "window": "window (the last keys)",
    "sinks": "sinks + window (StreamingLLM)",
    "heavy": "heavy hitters (H2O)",
    "snapkv": "SnapKV",
    "random": "random (a floor)",
}
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#7f7f7f"]  # the policies' lines, in POLICIES order
PAPERS = (
    "[StreamingLLM](https://arxiv.org/abs/2309.17453) (Xiao et al. 2024, attention sinks), "
    "[H2O](https://arxiv.org/abs/2306.14048) (Zhang et al. 2023, heavy hitters), "
    "[SnapKV](https://arxiv.org/abs/2404.14469) (Li et al. 2024), "
    "[Retrieval heads](https://arxiv.org/abs/2404.15574) (Wu et al. 2024), and NVIDIA's "
    "[kvpress](https://github.com/NVIDIA/kvpress), which benchmarks such presses."
)


def body(s: session.Session) -> None:
    """Choose a model and a text; measure it once (in the background); the sinks, the retrieval heads, eviction."""
    choose.chooser()
    choose_text()
    st.caption("The papers: " + PAPERS)
    model_id, ids = inside.model_id(), inside.kv_ids()
    k = inside.kv_now()
    key = jobs.kv_key(model_id, ids)
    job, extra = jobs.get(k.job), jobs.get(k.extra)
    running = job is not None and job.key == key and job.state == "running"
    done = jobs.finished(key)
    if done is None:
        measure_button(model_id, ids, running)
        st.fragment(progress, run_every=POLL if running else None)(k.job, key, running)
        return
    sinks(done.result.study)
    retrieval(done.result.retrieval)
    extra_running = extra is not None and extra.state == "running"
    st.fragment(eviction, run_every=POLL if extra_running else None)(model_id, ids, done.result.study, extra_running)


def choose_text() -> None:
    """The shipped long text (when the model has a tokenizer) or the text the other model pages read."""
    readable = inside.reads_long(inside.model_id())
    options = list(inside.KV_TEXTS) if readable else ["pages"]
    bind(keys.KV_TEXT, inside.kv_now().text if readable else "pages")
    st.radio("Text", options, format_func=inside.KV_TEXTS.get, key=keys.KV_TEXT, on_change=inside.on_kv_text,
             horizontal=True)
    ids = inside.kv_ids()
    st.caption(f"{len(ids):,} tokens{'' if readable else ' (this model reads a word list, not the long text)'}"
               f"; it starts “{esc(''.join(runs.pieces(ids[:12])), 80)}…”. The other "
               "model pages' text is chosen on Every head.")


def measure_button(model_id: str, ids: tuple[int, ...], running: bool) -> None:
    """What measuring costs, and the button that starts it; a refusal said under it."""
    st.markdown(
        f"**Measure it once.** The page runs the model over the {len(ids):,} tokens layer by layer, keeps every "
        "layer's keys and values, and scores the last tokens against each policy's cache at up to 8 budgets, then "
        "finds the model's retrieval heads. At 2,048 tokens on SmolLM2 that takes minutes on a small server; it runs "
        "in the background, and what it measures is kept for every visitor."
    )
    st.button("Measure this text", key=keys.KV_RUN, on_click=inside.start_kv, args=(model_id, ids),
              disabled=running, type="primary")
    if inside.kv_now().message:
        st.error(esc(inside.kv_now().message, 400))


def progress(job_id: str | None, key: tuple, polling: bool) -> None:
    """The study's progress, a layer a step (:func:`widgets.common.job_progress`)."""
    job_progress(job_id, key, polling, ("layer", "layers"), (keys.KV_CANCEL, inside.cancel_kv))


def sinks(made: Study) -> None:
    """Every layer × head's weight on token 1 from each position measured, one heatmap each."""
    st.subheader("Sinks across the length")
    last = made.positions[-1]
    beyond = "" if last in SINK_AT else f" (the text ends before 2,048: its last token, {last:,}, stands for it)"
    st.markdown(
        "Each query's weights add up to 1, and many heads park what they do not need on token 1: the **attention "
        "sink** StreamingLLM keeps. Below, every layer × head's **weight on token 1** from the query at each position"
        f"{beyond}. A head spreading its weight evenly would put "
        + ", ".join(f"1/{p:,}" for p in made.positions) + " there."
    )
    columns = st.columns(len(made.positions), gap="medium")
    for k, (col, pos) in enumerate(zip(columns, made.positions, strict=True)):
        share = made.shares[..., k]  # (L, H)
        with col:
            chart_gap()  # room for the chart's toolbar above it
            spec = overview.grid_spec(share, f"From position {pos:,}",
                                      f"mean {share.mean():.2f}; {int((share > 0.5).sum())} heads above 0.5")
            vega_chart(spec, width="stretch", key=keys.kv_sinks(k))


def retrieval(found: jobs.Needle | None) -> None:
    """The retrieval scores per layer × head, and the top heads, each opened on the step pages by a button."""
    st.subheader("Retrieval heads")
    if found is None:
        st.info("Retrieval heads are measured on a needle sentence put into the long text: this model reads a word "
                f"list, not text, or its context is under {jobs.NEEDLE_CTX:,} tokens, so it has none to measure. "
                "Choose a model with a tokenizer and a longer context above.")
        return
    scores, copied = found.scores, found.copied
    st.markdown(
        "Wu et al. put a *needle* sentence into a long text and ask the model to repeat it. A head **copies** a token "
        "when the model predicts it and the head's largest weight lands on that token in the needle; its **retrieval "
        f"score** is the share of the needle's tokens it copies. Here the model copied {int(copied.sum())} of "
        f"{copied.size} tokens of “{esc(NEEDLE, 120)}” from {found.back:,} tokens back ({found.n:,} tokens in all)."
    )
    order = [divmod(int(i), scores.shape[1]) for i in np.argsort(-scores, axis=None)[:TOP]]
    left, right = st.columns([3, 2], gap="medium")
    with left:
        chart_gap()
        vega_chart(overview.grid_spec(scores, "Retrieval score", "the needle's tokens each head copies"),
                   width="stretch", key=keys.KV_RETRIEVAL)
    with right:
        st.markdown("**The top heads.** Open one on the step pages (on the text the other model pages read):")
        shut = every_head.shut()
        for layer, head in order:
            st.button(f"Open {runs.name(layer, head)} (score {scores[layer, head]:.2f})",
                      key=keys.kv_open(layer, head), on_click=inside.open_on_steps, args=(layer, head),
                      disabled=shut, help=every_head.qk_norm_note() if shut else None)
        opened = inside.now().opened
        if opened in order:
            every_head.opened(*opened)


def eviction(model_id: str, ids: tuple[int, ...], made: Study, polling: bool) -> None:
    """Choose a policy and a budget: the keys each head keeps, the table of every policy at that budget, the curve."""
    st.subheader("Eviction: which keys each head keeps, and what it costs")
    p = len(ids) - made.m
    st.markdown(
        f"The first {p:,} tokens run with the full cache; then each layer's key/value heads keep only a **budget** "
        f"of their {p:,} keys, as the policy says, and the last {made.m} tokens are scored against what is kept: the "
        "mean next-token loss (nats), and how often the top-1 token is the full cache's."
    )
    budget = controls(p, made.budgets)
    if budget is None:
        return
    results = at_budget(model_id, ids, made, budget, polling)
    if results is None:
        return
    chosen = inside.kv_now().policy
    table(results, chosen)
    kept(next(r for r in results if r.policy == chosen))
    chart_gap()
    st.altair_chart(curve(made, budget), width="stretch", key=keys.KV_CURVE)


def controls(p: int, budgets: tuple[int, ...]) -> int | None:
    """The policy, the budget's unit and the budget; the budget in keys (None when the one typed is refused)."""
    k = inside.kv_now()
    left, mid, right = st.columns([2, 2, 2], gap="medium")
    bind(keys.KV_POLICY, k.policy)
    left.selectbox("Policy", list(POLICIES), format_func=POLICY_NAMES.get, key=keys.KV_POLICY,
                   on_change=inside.on_kv_policy)
    bind(keys.KV_UNIT, k.unit)
    mid.radio("Budget as", list(inside.KV_UNITS), format_func=inside.KV_UNITS.get, key=keys.KV_UNIT,
              on_change=inside.on_kv_unit, horizontal=True)
    budget = inside.kv_budget(p, budgets)
    k = inside.kv_now()  # a budget typed for a longer text is let go, and said
    shown = k.budget or (str(budget) if k.unit == "keys" else f"{budget / p:.3g}")
    bind(keys.KV_BUDGET, shown, once=bool(k.message))
    right.text_input(
        f"Budget (keys per head, 1 to {p:,})" if k.unit == "keys" else "Budget (a share of the cache, 0 to 1)",
        key=keys.KV_BUDGET, on_change=inside.on_kv_budget, args=(p,),
        help="Press Enter. The curve's budgets are measured already: " + ", ".join(f"{b:,}" for b in budgets),
    )
    if k.message:
        right.error(esc(k.message, 300))
    return budget


def at_budget(model_id: str, ids: tuple[int, ...], made: Study, budget: int,
              polling: bool) -> list[EvictionResult] | None:
    """Every policy at ``budget``: from the study when it is on the curve, else from a finished job of its own
    (None while it is not made: its button, or its progress)."""
    if budget in made.budgets:
        return [made.result(policy, budget) for policy in POLICIES]
    key = jobs.kv_key(model_id, ids, budget)
    done = jobs.finished(key)
    if done is not None:
        return [done.result.result(policy, budget) for policy in POLICIES]
    job = jobs.get(inside.kv_now().extra)
    if job is not None and job.key == key and job.state == "running":
        if not polling:
            st.rerun()  # the whole page once, so this part polls the job
        st.progress(min(job.done / job.total, 1.0), text=f"Every policy at {budget:,} keys: layer {job.done} of "
                    f"{job.total}")
        return None
    if polling:
        st.rerun()  # it ended: the whole page again, without the timer
    st.info(f"{budget:,} keys is not one of the curve's budgets: measure every policy at it (one more pass).")
    st.button(f"Measure every policy at {budget:,} keys", key=keys.KV_EXTRA, on_click=inside.start_kv_extra,
              args=(model_id, ids, budget), type="primary")
    return None


def table(results: list[EvictionResult], chosen: str) -> None:
    """The full cache's loss beside every policy's at the budget: mean loss, its difference, top-1 agreement."""
    full = results[0]
    rows = [{"cache": "full (every key)", "mean loss (nats)": round(full.full_mean_loss, 3), "vs full": 0.0,
             "top-1 as the full cache's": 1.0}]
    rows += [{"cache": ("▶ " if r.policy == chosen else "") + POLICY_NAMES[r.policy],
              "mean loss (nats)": round(r.mean_loss, 3), "vs full": round(r.mean_loss - r.full_mean_loss, 3),
              "top-1 as the full cache's": round(r.agreement, 3)} for r in results]
    st.markdown(f"**At {full.budget:,} keys per head** (▶ the policy chosen; the loss over the last "
                f"{full.loss.size + 1} tokens):")
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    mine = next(r for r in results if r.policy == chosen)
    name = POLICY_NAMES[chosen]
    st.markdown(f"{name[0].upper() + name[1:]} costs **{mine.mean_loss - mine.full_mean_loss:+.3f} nats** "
                f"against the full cache and agrees on the top-1 token at **{mine.agreement:.0%}** of the positions.")


def kept(result: EvictionResult) -> None:
    """One picture per layer: which keys each key/value head keeps, as the share kept in each block of tokens."""
    L, G, p = result.kept.shape
    size = -(-p // BLOCKS)  # tokens a block
    starts = np.arange(0, p, size)
    shares = np.add.reduceat(result.kept, starts, axis=-1) / np.diff(np.append(starts, p))  # (L, G, blocks)
    cols = [f"{s + 1}" if size == 1 else f"{s + 1}–{min(p, s + size)}" for s in starts]
    style = charts.Style(kind="weights", row_title="key/value head", col_title="keys (tokens)", digits=2,
                         panels=tuple((f"layer {la + 1}", "") for la in range(L)), columns=3, panel_px=200,
                         row_height=max(18, -(-80 // G)))  # a panel at least 80 px tall: its axis title fits
    st.markdown(f"**The keys each head keeps** under {POLICY_NAMES[result.policy]} at {result.budget:,} keys: one "
                f"picture a layer, a row a key/value head, the share of each block of {size} tokens kept (1: all).")
    spec = charts.heatmap(shares, [f"kv head {g + 1}" for g in range(G)], cols, style)
    chart_gap()
    vega_chart(spec, key=keys.KV_KEPT)


def curve(made: Study, budget: int) -> alt.LayerChart:
    """The mean loss against the budget for every policy, the full cache's as a line, the budget chosen marked."""
    df = pd.DataFrame([{"budget (keys)": r.budget, "mean loss (nats)": r.mean_loss, "policy": POLICY_NAMES[r.policy]}
                       for r in made.results])
    full = made.results[0].full_mean_loss
    x = alt.X("budget (keys):Q", scale=alt.Scale(type="log"), title="budget (keys per head, log scale)")
    y = alt.Y("mean loss (nats):Q", title="mean loss (nats)")
    colour = alt.Color("policy:N", sort=[POLICY_NAMES[p] for p in POLICIES], legend=alt.Legend(orient="bottom",
                       columns=3, labelLimit=240), title=None, scale=alt.Scale(range=COLOURS))
    tip = [alt.Tooltip("policy:N"), alt.Tooltip("budget (keys):Q"), alt.Tooltip("mean loss (nats):Q", format=".4f")]
    lines = alt.Chart(df).mark_line(point=True, strokeWidth=2).encode(x, y, colour, tooltip=tip)
    rule = alt.Chart(pd.DataFrame([{"full": full}])).mark_rule(strokeDash=[4, 4], color="#444").encode(y="full:Q")
    mark = alt.Chart(pd.DataFrame([{"b": budget}])).mark_rule(color="#999").encode(x="b:Q")
    title = alt.Title("Loss against budget, every policy", subtitle=f"dashed: the full cache's {full:.3f} nats; "
                      f"grey: the budget chosen ({budget:,})")
    return alt.layer(lines, rule, mark).properties(title=title, height=320)
