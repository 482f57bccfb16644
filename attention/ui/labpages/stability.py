"""The "Numerical stability" page: where each softmax variant, each mask fill and each float width breaks."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from ... import names
from ...errors import AttentionError
from ...labs import stability as lab
from ...trace import Trace
from ..core import compute, session
from ..core.cache import kept
from ..core.text import esc
from ..views.steps import show_error
from ..widgets.chart_files import chart_files
from ..widgets.common import chart_gap

ABOUT = {  # what each variant subtracts before exp
    **{v: names.SOFTMAX_WORDS[v].subtracts for v in names.SOFTMAX_VARIANTS},
    "row_max": "each row's own max (what the engine does)",
}


@kept(1)
def sweep() -> lab.VariantSweep:
    with st.spinner("Running the three softmaxes…"):  # only while it is made: once per process
        return lab.variant_sweep()


@kept(1)
def masks() -> list[lab.MaskCase]:
    return lab.mask_cases()


@kept(1)
def widths() -> list[lab.DtypeLimits]:
    return lab.dtype_limits()


@kept(16, key=lambda content, _trace: content)
def headroom(content: str, _trace: Trace) -> lab.Headroom | AttentionError:
    """The trace's headroom, cached on its content key (the trace itself is not hashed)."""
    try:
        return lab.trace_headroom(_trace)
    except AttentionError as exc:
        return exc


def _num(v: float | None, fmt: str = ".4g") -> str:
    return "never" if v is None else format(v, fmt)


def body(s: session.Session) -> None:
    trace = compute.current_trace(s)
    room = None
    if isinstance(trace, Trace):
        room = headroom(compute.content_key(s.tokens, s.matrices, s.options), trace)
    if isinstance(room, AttentionError) or not isinstance(trace, Trace):
        show_error(room if isinstance(room, AttentionError) else trace)
        room = None
    _variants(room)
    _masking()
    _dtypes(room)


def _variants(room: lab.Headroom | None) -> None:
    """The three softmax variants on growing scores: where each first breaks, predicted and measured, and why."""
    sw = sweep()
    st.header("Three ways to compute softmax, as the scores grow")
    st.markdown(
        f"In float64, `exp(x)` is ∞ for x above log(finfo.max) = **{sw.overflow_limit:.2f}** and rounds to 0 below "
        f"**{sw.underflow_limit:.2f}**. Each softmax below is run on two rows of scores, "
        f"{_row(sw.base[0])} and {_row(sw.base[1])}, multiplied by a magnitude from 1 to 10,000, and compared with "
        f"the exact weights (50-digit arithmetic); it passes within {sw.tolerance:.1e}."
    )
    rows, says = [], []
    for v, r in sw.results.items():
        k = int(np.flatnonzero(~r.ok)[0]) if (~r.ok).any() else None
        rows.append(
            {
                "variant": v,
                "subtracts": ABOUT[v],
                "first break on the grid": _num(r.first_failure),
                "predicted by the limits": _num(r.predicted),
                "numpy gives there": "nothing wrong" if k is None else _what(r.raw[k]),
            }
        )
        if k is not None:
            says.append(f"**{v}** at magnitude {r.first_failure:.4g}: " + esc(r.message[k] or "wrong weights", 400))
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    if says:
        st.markdown("The engine refuses rather than return NaN:\n\n" + "\n\n".join(f"- {m}" for m in says))
    _variants_chart(sw, room)


def _variants_chart(sw: lab.VariantSweep, room: lab.Headroom | None) -> None:
    """Where each variant is correct and where it breaks along the magnitudes, with your largest score marked."""
    data = pd.DataFrame(
        [
            {"variant": v, "magnitude": m, "result": "correct" if ok else "broken", "error": e}
            for v, r in sw.results.items()
            for m, ok, e in zip(sw.magnitudes, r.ok, r.error, strict=True)
        ]
    )
    x = alt.X("magnitude:Q", scale=alt.Scale(type="log"), title="magnitude of the scores (log scale)")
    strip = (
        alt.Chart(data)
        .mark_tick(thickness=4, size=28)
        .encode(
            x=x,
            y=alt.Y("variant:N", sort=list(lab.VARIANTS), title=None),
            color=alt.Color(
                "result:N", scale=alt.Scale(domain=["correct", "broken"], range=["#2166ac", "#e66100"]), title=None
            ),
            tooltip=[
                "variant",
                alt.Tooltip("magnitude:Q", format=".4g"),
                "result",
                alt.Tooltip("error:Q", format=".3g"),
            ],
        )
    )
    layers = [strip]
    if room is not None and room.max_abs_score > 0:
        layers.append(_rule(room.max_abs_score, "your largest |score|"))
        st.markdown(
            f"**Your scores** (as softmax gets them, after scaling and temperature): the largest is "
            f"{room.max_score:.4g} and the largest in size {room.max_abs_score:.4g} (the black line), "
            f"{lab.overflow_limit() - room.max_score:.4g} below the float64 overflow limit; the furthest any row's "
            f"max lies below the matrix's max is {room.largest_gap:.4g}, what whole-matrix max would push that row "
            f"down by (it underflows past {-lab.underflow_limit():.2f})."
        )
    chart_gap()
    chart = alt.layer(*layers).properties(height=170)
    st.altair_chart(chart, width="stretch")
    chart_files(chart, "stability_softmax_variants", "stability.variants")
    st.caption(
        "none: the largest score overflows to ∞ and ∞/∞ is NaN. global_max: the top row is fine, but the second "
        "row lies 2 × magnitude below the matrix's max, so all its exps underflow to 0 and 0/0 is NaN. row_max: "
        "the largest term is exp(0) = 1 in every row, so the sum is between 1 and n and nothing breaks."
    )


def _row(r: np.ndarray) -> str:
    return "(" + ", ".join(f"{v:g}" for v in r) + ")"


def _what(w: np.ndarray) -> str:
    if np.isnan(w).any():
        return f"NaN in {int(np.isnan(w).any(axis=-1).sum())} row(s)"
    return "numbers, but off from the exact weights"


def _rule(x: float, label: str) -> alt.Chart:
    frame = pd.DataFrame({"magnitude": [x], "what": [label]})
    return (
        alt.Chart(frame)
        .mark_rule(color="black", strokeWidth=2)
        .encode(x="magnitude:Q", tooltip=["what", alt.Tooltip("magnitude:Q", format=".4g")])
    )


def _masking() -> None:
    cases = masks()
    st.header("Masking: −∞, −1e9 or finfo.min")
    st.markdown(
        f"A masked key gets a fill before softmax: the row of scores {_row(lab.MASK_ROW)} with its last two keys "
        "masked, and a row with every key masked (padding, or a query that may see nothing). **replace** sets "
        "the cell to the fill; **add** adds the fill to the score (PyTorch's float mask). naive subtracts nothing, "
        "stable subtracts the row's max, the engine is stable and gives a fully masked row 0 everywhere."
    )
    table: dict[tuple[str, str, str], dict[str, str]] = {}
    for c in cases:
        row = table.setdefault((c.dtype, c.fill, c.method), {"dtype": c.dtype, "fill": c.fill, "method": c.method})
        row["stored as"] = f"{c.fill_stored:.4g}"
        says = (c.naive_says, c.stable_says, c.engine_says)
        part = "two keys masked" if c.row == "normal" else "every key masked"
        row[f"{part}: naive / stable / engine"] = f"all three: {says[0]}" if len(set(says)) == 1 else " / ".join(says)
    narrow = {c: st.column_config.TextColumn(c, width="small") for c in ("dtype", "fill", "method", "stored as")}
    st.dataframe(
        pd.DataFrame(table.values()),
        hide_index=True,
        width="stretch",
        height=35 * (len(table) + 1) + 3,
        column_config=narrow,
    )
    st.caption(
        "With every key masked there are no right weights: −∞ makes every exp 0 and 0/0 = NaN; a finite fill "
        "cancels out and gives uniform 1/n, quietly attending to padding. In float16, −1e9 is stored as −∞."
    )


def _dtypes(room: lab.Headroom | None) -> None:
    limits = widths()
    st.header("Float widths: where exp overflows and underflows")
    table = pd.DataFrame(
        [
            {
                "dtype": d.dtype,
                "max": f"{d.max:.4g}",
                "eps": f"{d.eps:.3g}",
                "exp = ∞ above": round(d.overflow_limit, 4),
                "measured": round(d.measured_overflow, 4),
                "exp = 0 below": round(d.underflow_limit, 4),
                "measured ": round(d.measured_underflow, 4),
                "naive breaks at": _num(d.naive_breaks_at),
                "stable breaks at": _num(d.stable_breaks_at),
            }
            for d in limits
        ]
    )
    f64 = next(d for d in limits if d.dtype == "float64")
    st.markdown(
        "Derived from `np.finfo` and measured by bisection on the float's own values (the smallest x whose exp "
        f"is ∞). In float64 exp overflows above **{f64.overflow_limit:.2f}**; float32 and float16 break much "
        f"sooner. The break points are magnitudes of the row {_row(lab.BASE[0])} computed in that width; the "
        "stable softmax breaks only when a score itself no longer fits."
    )
    st.dataframe(table, hide_index=True, width="stretch")
    if room is None:
        return
    here = pd.DataFrame(
        [
            {
                "dtype": d.dtype,
                "overflow limit": round(d.overflow_limit, 4),
                "headroom": round(d.headroom, 4),
                "may grow ×": "any" if np.isinf(d.factor) else f"{d.factor:.4g}",
                "scores fit": d.fits,
                "none works": d.none_ok,
                "global_max works": d.global_max_ok,
                "row_max works": d.row_max_ok,
            }
            for d in room.dtypes
        ]
    )
    st.markdown("**Your scores in each width** (each variant run in that dtype on the current softmax input):")
    st.dataframe(here, hide_index=True, width="stretch")
    broken = [f"{d.dtype} without subtracting" for d in room.dtypes if not d.none_ok]
    if broken:
        st.warning(esc("Your scores already break softmax in: " + ", ".join(broken) + "."))
