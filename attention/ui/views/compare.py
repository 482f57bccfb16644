"""Compare with a pinned state A: "now − A" heatmaps on a diverging scale and the largest changes named by token."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ... import charts
from ...errors import AttentionError
from ...trace import Trace
from ..core import compute, keys, session
from ..core.shown import as_2d, shown
from ..core.text import esc
from ..state import pins
from ..widgets.common import chart_gap, vega_chart

TOP = 5  # largest changes listed


def pin_controls(s: session.Session) -> None:
    """Pin / swap / clear, in the sidebar."""
    sb = st.sidebar
    sb.markdown("**Compare**")
    if s.pin is None:
        sb.button(
            "Pin as A",
            key=keys.CMP_PIN,
            on_click=pins.pin,
            width="stretch",
            help="Snapshot everything now (tokens, matrices, options) as A; every result page then shows now beside A.",
        )
        return
    sb.caption(f"A = {esc(s.pin.label)}.")
    c1, c2, c3 = sb.columns(3)
    c1.button("Re-pin", key=keys.CMP_REPIN, on_click=pins.pin, help="Make the current state A.")
    c2.button(
        "Swap", key=keys.CMP_SWAP, on_click=pins.swap_pin, help="Make A the current state, and the current state A."
    )
    c3.button("Clear", key=keys.CMP_CLEAR, on_click=pins.clear_pin, help="Forget A.")


def largest_changes(
    now: np.ndarray, was: np.ndarray, rows: list[str], cols: list[str], square: bool, k: int = TOP
) -> list[tuple[str, float, float]]:
    """The ``k`` cells that moved most (finite on both sides), as ("sat → cat", A's value, now's value)."""
    with np.errstate(invalid="ignore"):
        d = np.abs(now - was)
    d = np.where(np.isfinite(d), d, -1.0)
    flat = np.argsort(-d, axis=None, kind="stable")[:k]
    out = []
    for idx in flat:
        r, c = np.unravel_index(idx, d.shape)
        if d[r, c] <= 0:
            break
        where = f"{rows[r]} → {cols[c]}" if square else f"{rows[r]}, {cols[c]}"
        out.append((where, float(was[r, c]), float(now[r, c])))
    return out


def masked_change(now: np.ndarray, was: np.ndarray) -> int:
    """Cells masked on one side only (−inf or 0-weight fully masked) are not a numeric change: count them apart."""
    return int(np.sum(np.isfinite(now) != np.isfinite(was)))


def show(name: str, s: session.Session, trace: Trace, page_key: str) -> None:
    """A beside now for one array of the trace: A's heatmap, the difference, and the largest changes."""
    pin = s.pin
    if pin is None:
        return
    if s.source:  # A is a self-attention snapshot (a pin keeps no source sentence)
        st.caption("A is self-attention and this page shows cross-attention: clear the source sentence to compare.")
        return
    try:
        a_trace = compute.compute(pin.tokens, pin.matrices, pin.options)
    except AttentionError as exc:
        st.caption(f"A cannot be computed ({esc(exc.message, 300)}), so there is nothing to compare.")
        return
    now, rows, cols = shown(s, trace, name)
    was = shown(s, a_trace, name)[0] if a_trace.options.heads == trace.options.heads else as_2d(getattr(a_trace, name))
    st.markdown(f"**Compare {name} with A** ({esc(pin.label)})")
    if now.shape != was.shape:
        st.caption(
            f"A's {name} is {was.shape[0]} × {was.shape[1]} and now it is {now.shape[0]} × {now.shape[1]}: "
            "different shapes cannot be compared cell by cell."
        )
        return
    square = name in ("scores", "scaled", "weights") and trace.options.heads == 1
    with np.errstate(invalid="ignore"):
        diff = now - was
    both = np.isfinite(now) & np.isfinite(was)
    if not np.any(both & (diff != 0)):
        st.caption(
            f"{name} is exactly the same as in A."
            + (f" ({masked_change(now, was)} cells are masked on one side only.)" if masked_change(now, was) else "")
        )
        return
    beside(name, now, was, rows, cols, square, page_key)


def beside(
    name: str, now: np.ndarray, was: np.ndarray, rows: list[str], cols: list[str], square: bool, page_key: str
) -> None:
    """A's heatmap and the difference now − A side by side (cells finite on one side only left out), then the
    largest changes in words. ``square``: a single head's scores or weights, whose non-finite cells are masked."""
    with np.errstate(invalid="ignore"):
        diff = now - was
    both = np.isfinite(now) & np.isfinite(was)
    kind = "weights" if name == "weights" else "scores"
    plain = charts.Style(row_title="row", col_title="column")  # any array: its rows and columns, not queries and keys
    chart_gap()
    left, right = st.columns(2)
    vega_chart(
        charts.heatmap(was, rows, cols, plain.but(kind=kind, title=f"A: {name}"), np.isfinite(was) if square else None),
        left,
        width="stretch",
        key=keys.compare(page_key, name, "a"),
    )
    vega_chart(
        charts.heatmap(
            np.where(both, diff, np.nan),
            rows,
            cols,
            plain.but(kind="diff", title=f"now − A: {name}", subtitle="red: larger now; blue: smaller"),
            both if not both.all() else None,
        ),
        right,
        width="stretch",
        key=keys.compare(page_key, name, "diff"),
    )
    lines = [f"{esc(where)}: {a:.4g} → {b:.4g}" for where, a, b in largest_changes(now, was, rows, cols, square)]
    extra = masked_change(now, was)
    st.markdown(
        "Largest changes: "
        + "; ".join(lines)
        + "."
        + (f" {extra} cells are masked on one side only (not counted as a change in value)." if extra else "")
    )
