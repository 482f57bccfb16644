"""The "Why √d_k?" page: score spread, largest weight, entropy and gradient as d_k grows, scaled or not."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from ...labs import sqrt_dk
from ...trace import Trace
from ..core import compute, keys, session
from ..core.cache import kept
from ..core.text import esc
from ..views.steps import show_error
from ..widgets.chart_files import chart_files
from ..widgets.common import chart_gap, open_expander

SEEDS = (1, 4, 16, 64)  # draws averaged per d_k
TOKENS = (4, 8, 16, 32, 64)  # n: rows (and keys) per draw
BUDGET = 64 * 32 * 32  # seeds × n² scores per d_k at most: ~2 s for the whole grid of d_k on one core
QUOTED_DK = 64  # the d_k the prose quotes (as the paper's d_k = 64)
CHARTS = (  # measure, chart title, y-axis title, log y
    ("variance", "Variance of the scores", "variance", True),
    ("max_weight", "Largest weight in a row (mean)", "largest weight", False),
    ("entropy", "Row entropy (mean, bits)", "entropy (bits)", False),
    ("jacobian", "Gradient through softmax ‖J‖ (mean)", "‖diag(a) − a aᵀ‖", True),
)


@kept(32)
def curves(dims: tuple[int, ...], n: int, seeds: int, seed: int = 0) -> sqrt_dk.SqrtDkCurves:
    """The engine's curves, cached on plain arguments."""
    with st.spinner("Drawing random Q and K…"):  # only while they are drawn
        return sqrt_dk.sqrt_dk_curves(dims, n, seeds, seed)


@kept(32)
def saturation(n: int) -> dict[str, np.ndarray]:
    return sqrt_dk.saturation_curve(n)


@kept(16, key=lambda content, _trace: content)
def own_rows(content: str, _trace: Trace) -> tuple[sqrt_dk.TracePoint, np.ndarray, np.ndarray]:
    """The trace's point and, per row, its largest weight and ‖J‖, cached on its content key."""
    w = _trace.weights.reshape(-1, _trace.weights.shape[-1])  # (rows, n): heads and batch one after another
    top, _, jac = sqrt_dk.row_stats(w)
    return sqrt_dk.trace_point(_trace), top, jac


def body(s: session.Session) -> None:
    trace = compute.current_trace(s)
    if not isinstance(trace, Trace):
        show_error(trace)
        return
    point, top, jac = own_rows(compute.content_key(s.tokens, s.matrices, s.options), trace)
    p = point
    left, right = st.columns(2)
    sizes = sorted({*TOKENS, p.n} if 2 <= p.n <= TOKENS[-1] else set(TOKENS))  # your n among them, to compare
    n = left.select_slider("Tokens per draw (n)", sizes, value=p.n if p.n in sizes else 16, key=keys.sqrt_tokens(p.n))
    counts = [k for k in SEEDS if k * n * n <= BUDGET]
    seeds = right.select_slider("Draws averaged per d_k", counts, value=min(16, counts[-1]), key=keys.sqrt_seeds(n))
    dims = tuple(sorted({*sqrt_dk.DIMS, point.d_k} if point.d_k <= sqrt_dk.MAX_DIM else set(sqrt_dk.DIMS)))
    c = curves(dims, n, seeds)
    _in_words(c, point)
    data = pd.DataFrame(c.long())
    for row in (CHARTS[:2], CHARTS[2:3]):
        chart_gap()
        for col, (measure, title, y_title, log_y) in zip(st.columns(2), row, strict=False):
            chart = _chart(data, measure, title, y_title, log_y, _marks(point, measure))
            col.altair_chart(chart, width="stretch")
            chart_files(chart, f"sqrt_dk_{measure}", f"sqrt.{measure}", where=col)
    with st.expander("The numbers behind the charts"):
        st.dataframe(_table(c), hide_index=True, width="stretch")
    box = open_expander("sqrt.jacobian", "The gradient through softmax: ‖J‖, with J = diag(a) − a aᵀ", s)
    if box is not None:  # drawn only while open
        with box:
            _gradient(c, point, data)
            _saturation(s, trace, point, top, jac)


def _value_at(c: sqrt_dk.SqrtDkCurves, name: str, d_k: int) -> float:
    return float(getattr(c, name)[list(c.d_k).index(d_k)])


def _in_words(c: sqrt_dk.SqrtDkCurves, p: sqrt_dk.TracePoint) -> None:
    d = QUOTED_DK

    def at(name: str, dk: int = d) -> float:
        return _value_at(c, name, dk)

    st.markdown(
        f"**At d_k = {d}**, unscaled scores have variance ≈ {at('var_raw'):.1f} (the model says {d}; "
        + _noise(at("var_raw"), d, c)
        + "); the largest "
        f"weight in a row averages {at('max_weight_raw'):.2f} and a row's entropy {at('entropy_raw'):.2f} bits "
        f"(of at most log₂ {c.n} = {c.max_entropy:.2f}): softmax has all but picked one key. **Divided by √{d} = "
        f"{np.sqrt(d):g}**, the variance is ≈ {at('var_scaled'):.2f}, the largest weight {at('max_weight_scaled'):.2f} "
        f"and the entropy {at('entropy_scaled'):.2f} bits, about what they are at d_k = 1 "
        f"({at('var_raw', 1):.2f}, {at('max_weight_raw', 1):.2f}, {at('entropy_raw', 1):.2f}). "
        f"Means over {c.seeds} draws of {c.n} × d_k matrices."
    )
    model = p.d_k * p.q_variance * p.k_variance
    scaled = "divided by √d_k" if p.is_default_scale else f"multiplied by {p.scale:.4g} (not 1/√d_k)"
    st.markdown(
        f"**Your sentence** (the diamonds): d_k = {p.d_k}, {p.n} tokens. Its Q and K entries have variance "
        f"{p.q_variance:.3g} and {p.k_variance:.3g}; were they independent with mean 0, its scores would have "
        f"variance d_k · var(q) · var(k) ≈ {model:.3g}. They have {p.score_variance:.4g}, and {p.scaled_variance:.4g} "
        f"once {scaled}. Its rows' largest weight averages {p.mean_max_weight:.3f}, their entropy "
        f"{p.mean_entropy:.3f} bits. " + why_not_the_model(p)
    )


def _noise(measured: float, d: int, c: sqrt_dk.SqrtDkCurves) -> str:
    """Why the measured variance is not exactly d: sampling noise, with the spread the number of draws gives."""
    sd = sqrt_dk.variance_spread(d, c.n, c.seeds)
    draws = f"{c.seeds} draw" + ("s" if c.seeds != 1 else "") + f" of {c.n} × {c.n} scores"
    within = abs(measured - d) <= 2 * sd
    high = "high" if measured > d else "low"
    return (
        f"the difference is sampling noise from the number of draws: {draws} give a variance that strays from {d} "
        f"by about ± {sd:.2g} (one standard deviation; most sets of draws land within ± {2 * sd:.2g})"
        + (", and this one does" if within else f"; this set is an unusually {high} one, still chance")
        + ". More draws or tokens narrow it"
    )


def why_not_the_model(p: sqrt_dk.TracePoint) -> str:
    """In plain words, from the trace's own numbers, why its scores spread more (or less) than d_k·var(q)·var(k)."""
    model = p.d_k * p.q_variance * p.k_variance
    if not np.isfinite(p.score_variance) or abs(np.log(max(p.score_variance, 1e-300) / max(model, 1e-300))) < 0.7:
        return "That is about what the model says: its entries behave much like independent numbers of mean 0."
    lo, hi = min(p.q_positive, p.k_positive), max(p.q_positive, p.k_positive)
    if (lo >= 0.75 or hi <= 0.25) and p.score_variance > model:
        sign = "positive" if lo >= 0.75 else "negative"
        share = "all" if lo == 1 or hi == 0 else "mostly"
        return (
            f"Why so far from the model: the model is for entries of **mean 0**, and yours are {share} {sign} "
            f"({p.q_positive:.0%} of Q's entries and {p.k_positive:.0%} of K's are above 0; their means are "
            f"{p.q_mean:.3g} and {p.k_mean:.3g}). So the {p.d_k} products q_c·k_c in a score do not cancel out, they "
            f"add up: your scores average {p.score_mean:.3g} (d_k · mean(q) · mean(k) = {p.d_k} × {p.q_mean:.3g} × "
            f"{p.k_mean:.3g} = {p.d_k * p.q_mean * p.k_mean:.3g}), and a token with larger entries gets much larger "
            f"scores than one with smaller entries, so the scores spread far more than the model's {model:.3g}."
        )
    return (
        f"Why not the model: your entries average about 0 ({p.q_mean:.3g} and {p.k_mean:.3g}), but they are not "
        "independent: each row of Q and K is made from the same row of X by fixed weights, so a query and a key can "
        "line up (with W_q = W_k, a token's own score q·k is its squared length, always large). Such related entries "
        f"give scores of variance {p.score_variance:.4g} where independent ones would give {model:.3g}."
    )


def _gradient(c: sqrt_dk.SqrtDkCurves, p: sqrt_dk.TracePoint, data: pd.DataFrame) -> None:
    """The gradient through softmax as d_k grows, scaled or not, with the trace's own rows."""
    at = {
        k: _value_at(c, f"jacobian_{k}", QUOTED_DK) if QUOTED_DK in c.d_k else float("nan") for k in ("scaled", "raw")
    }
    st.markdown(
        f"At d_k = {QUOTED_DK}, the gradient through softmax falls from {at['scaled']:.3f} (scaled) to "
        f"{at['raw']:.3f} (unscaled): {at['scaled'] / max(at['raw'], 1e-300):.1f} times smaller. Your sentence's "
        f"rows have ‖J‖ {p.mean_jacobian:.3f} on average."
    )
    measure, title, y_title, log_y = CHARTS[3]
    chart = _chart(data, measure, title, y_title, log_y, _marks(p, measure))
    st.altair_chart(chart, width="stretch")
    chart_files(chart, f"sqrt_dk_{measure}", f"sqrt.{measure}")


def _marks(p: sqrt_dk.TracePoint, measure: str) -> pd.DataFrame:
    """The current trace's own points on one chart (as it is scaled; for the variance, before and after)."""
    label = "scaled as your options say"  # the legend's title says whose: "◆ your sentence, at its d_k"
    if measure == "variance":
        rows = [("your scores, not scaled", p.score_variance), ("your scores, scaled", p.scaled_variance)]
    else:
        value = {"max_weight": p.mean_max_weight, "entropy": p.mean_entropy, "jacobian": p.mean_jacobian}[measure]
        rows = [(label, value)]
    return pd.DataFrame(
        [(p.d_k, who, v) for who, v in rows if np.isfinite(v) and v > 0], columns=["d_k", "who", "value"]
    )


def _chart(data: pd.DataFrame, measure: str, title: str, y_title: str, log_y: bool, marks: pd.DataFrame) -> alt.Chart:
    y_scale = alt.Scale(type="log") if log_y else alt.Scale(zero=False)
    x = alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (log scale)")
    lines = (
        alt.Chart(data[data.measure == measure])
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("value:Q", scale=y_scale, title=y_title),
            color=alt.Color("scaling:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=["d_k", "scaling", alt.Tooltip("value:Q", format=".4g")],
        )
    )
    who = sorted(set(marks["who"]))  # the diamonds' legend: what each one is (your sentence, scaled or not)
    legend = alt.Legend(orient="bottom", title="◆ your sentence, at its d_k:", symbolFillColor="black", labelLimit=260)
    points = (
        alt.Chart(marks)
        .mark_point(size=160, filled=True, color="black")
        .encode(
            x=x,
            y=alt.Y("value:Q", scale=y_scale),
            shape=alt.Shape("who:N", scale=alt.Scale(domain=who, range=["diamond"] * len(who)), legend=legend),
            tooltip=["who", "d_k", alt.Tooltip("value:Q", format=".4g")],
        )
    )
    return alt.layer(lines, points).properties(title=title, height=380)


def _table(c: sqrt_dk.SqrtDkCurves) -> pd.DataFrame:
    cols = {"d_k": c.d_k}
    for name, label in (("var", "variance"), ("max_weight", "largest weight"), ("entropy", "entropy (bits)")):
        cols[f"{label}, not scaled"] = getattr(c, f"{name}_raw")
        cols[f"{label}, scaled"] = getattr(c, f"{name}_scaled")
    return pd.DataFrame(cols)


def _saturation(s: session.Session, trace: Trace, p: sqrt_dk.TracePoint, top: np.ndarray, jac: np.ndarray) -> None:
    """The gradient against the largest weight, one score pulling ahead of the n − 1 others; the current rows on it."""
    st.header("Why a saturated row learns nothing")
    n = min(max(p.n, 2), sqrt_dk.MAX_N)
    curve = pd.DataFrame(saturation(n))
    live = trace.weights.reshape(-1, trace.weights.shape[-1]).sum(axis=-1) > 0  # (rows,): fully masked rows left out
    labels = (s.labels * (len(top) // max(len(s.labels), 1)))[: len(top)]
    rows = pd.DataFrame({"row": labels, "largest weight": top, "‖J‖": jac})[live]
    uniform = np.sqrt(n - 1) / n
    at99 = curve.jacobian_norm[np.searchsorted(curve.max_weight, 0.99)] if curve.max_weight.max() >= 0.99 else None
    st.markdown(
        f"Softmax passes a gradient back through J = diag(a) − a aᵀ. For a row of {n} weights, ‖J‖ is "
        f"√(n−1)/n = {uniform:.3f} when every weight is 1/{n}, and it falls to 0 as one weight takes everything"
        + (f" (‖J‖ = {at99:.3f} once the largest weight passes 0.99)" if at99 is not None else "")
        + ": a saturated row barely changes whatever the scores do, so the weights that made them stop learning. "
        "The line moves one score ahead of the others; the diamonds are the rows of your sentence."
        + (f" (The line is drawn for n = {n}; your rows have {p.n} weights.)" if n != p.n else "")
    )
    x = alt.X("max_weight:Q", title="largest weight in the row", scale=alt.Scale(domain=[0, 1]))
    line = (
        alt.Chart(curve)
        .mark_line()
        .encode(x=x, y=alt.Y("jacobian_norm:Q", title="‖J‖ (size of the gradient)"), tooltip=["gap", "max_weight"])
    )
    dots = (
        alt.Chart(rows.rename(columns={"largest weight": "max_weight", "‖J‖": "jacobian_norm"}))
        .mark_point(shape="diamond", size=140, filled=True, color="black")
        .encode(x=x, y="jacobian_norm:Q", tooltip=["row", alt.Tooltip("max_weight:Q", format=".4f")])
    )
    chart_gap()
    left, right = st.columns([3, 2])
    chart = alt.layer(line, dots).properties(height=300, title=f"‖J‖ against the largest weight (n = {n})")
    left.altair_chart(chart, width="stretch")
    chart_files(chart, "sqrt_dk_jacobian_rows", "sqrt.jacobian_rows", where=left)
    with right:
        st.dataframe(rows.head(64), hide_index=True, width="stretch")
        if len(rows) > 64:
            st.caption(f"The first 64 of {len(rows)} rows.")
        st.caption(esc("Rows that attend nothing (fully masked) are left out."))
