"""The controls that change how a step computes: the custom mask grid (Scaling) and the positions (Tokens)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from ... import charts, positions
from ...errors import AttentionError
from ...io import tables
from ...options import Options
from ..core import compute, keys, session
from ..core.text import esc
from ..inputs import editors
from ..state import core as state_core
from ..state import edits, options, pins
from ..widgets import number_tables
from ..widgets.common import bind, formula, on_value, show_messages
from ..widgets.tick_grid import tick_grid, ticked

# ------------------------------------------------------------------------------------------ custom mask

MASK_GRID_MAX = 64  # tokens: a grid of checkboxes beyond this is not usable; load a preset file instead


def _on_mask_grid(key: str) -> None:
    s = session.get()
    grid, sent = ticked(key, s.labels, s.options.custom_mask)
    if grid is None:
        state_core.say("control.mask", "error", f"The mask grid sent {sent}; nothing was changed.")
        pins.renew_grids()
        return
    options.set_custom_mask(grid)


def custom_mask(s: session.Session) -> None:
    """A query × key grid of checkboxes for the custom mask (ticked = may attend), when the mask includes it."""
    if "custom" not in s.options.mask:
        return
    n, labels = len(s.tokens), s.labels
    if n > MASK_GRID_MAX:
        st.info(f"The custom mask is edited as a grid up to {MASK_GRID_MAX} tokens; with {n}, set it in a preset file.")
        return
    st.markdown("**Custom mask** · tick where a query (row) may attend a key (column); untick to forbid it")
    tick_grid(s.options.custom_mask, labels, f"mask.grid.{s.version}.{s.grids}.{n}", _on_mask_grid)
    rows = [labels[i] for i, row in enumerate(s.options.custom_mask) if not any(row)]
    if rows:
        st.caption(
            f"{', '.join(esc(r) for r in rows[:8])} may attend no key: such a row gets weight 0 everywhere and "
            "output 0 (no NaN), as PyTorch's safe softmax does."
        )
    show_messages("control.mask")


# ------------------------------------------------------------------------------------------ positions

POSITION_NAMES = {
    "none": "none: attention cannot see word order",
    "sinusoidal": "sinusoidal (added to X)",
    "learned": "learned (an editable P added to X)",
    "rotary": "rotary (RoPE, turns Q and K)",
    "alibi": "ALiBi (a distance penalty per head on the scores)",
}


def position_control(s: session.Session) -> None:
    """Choose the positions; show the position step and what a shuffle of the tokens does, live."""
    bind(keys.TOK_POSITIONS, s.options.positions)
    c1, c2 = st.columns([3, 1])
    c1.selectbox(
        "Positions",
        list(POSITION_NAMES),
        format_func=POSITION_NAMES.get,
        key=keys.TOK_POSITIONS,
        on_change=on_value(options.set_positions, keys.TOK_POSITIONS),
        help="How word order gets in: none, a sinusoidal code added to each row of X, a learned matrix P added "
        "to X (edit it here), or rotary positions that turn each query and key by an angle that grows with its "
        "position.",
    )
    show_messages("control.positions")
    c2.button(
        "Shuffle tokens",
        key=keys.TOK_SHUFFLE,
        on_click=edits.shuffle_tokens,
        width="stretch",
        help="Reorder the tokens (each keeps its row of X). Without positions every output row just moves "
        "with its token; with positions the numbers change.",
    )
    n, d = s.dims.n, s.dims.d_model
    if s.options.positions == "sinusoidal":
        formula(
            r"X' = X + PE,\quad PE_{pos,2i} = \sin\frac{pos}{10000^{2i/d_{model}}},\quad "
            r"PE_{pos,2i+1} = \cos\frac{pos}{10000^{2i/d_{model}}}"
        )
        pe = positions.sinusoidal(n, d)
        st.caption("PE (rows: positions 1…n): what is added to X before the projections.")
        number_tables.number_table(
            pd.DataFrame(pe[:16, :16], index=s.labels[:16], columns=[f"d{c + 1}" for c in range(min(d, 16))]),
            charts.decimals_for(pe, s.digits),
        )
    elif s.options.positions == "learned":
        formula(r"X' = X + P,\quad P \in \mathbb{R}^{n \times d_{model}}")
        st.caption(
            "P has one row per position (not per token: a shuffle moves the tokens, P stays). It starts as the "
            "sinusoidal code; edit any cell, or let the Learn page learn it."
        )
        editors.matrix_editor("P", s)
    elif s.options.positions == "rotary":
        _rotary_step(s, n)
    _order_check(s)


def _rotary_step(s: session.Session, n: int) -> None:
    """The rotation's formula and each position's angles, with the base, pairs and rotated columns in force."""
    o = s.options
    halves = o.rotary_layout == "halves"
    a, b = ("i", "i+r/2") if halves else ("2i", "2i+1")
    formula(
        rf"\begin{{pmatrix}} q'_{{{a}}} \\ q'_{{{b}}} \end{{pmatrix}} = \begin{{pmatrix}} \cos\theta & -\sin\theta \\ "
        rf"\sin\theta & \cos\theta \end{{pmatrix}} \begin{{pmatrix}} q_{{{a}}} \\ q_{{{b}}} \end{{pmatrix}},\quad "
        rf"\theta = pos \cdot {float(o.rope_theta):.10g}^{{-2i/{'r' if o.rotary_dims else 'd'}}}"
    )
    st.caption(
        "Each head's queries and keys are turned by these angles (rows: positions, columns: pairs of "
        "columns of one head); a length never changes, and q·k then depends only on how far apart two "
        "tokens are." + ("" if o.plain_rotation else f" This head turns as its model does: {tables.rotation_words(o)}.")
    )
    width = s.dims.d_k // o.heads
    theta = np.arange(n)[:, None] * o.frequencies(width)[None, :]  # (n, pairs)
    st.dataframe(
        pd.DataFrame(
            theta[:16, :8], index=s.labels[:16], columns=[f"pair {i + 1}" for i in range(min(theta.shape[1], 8))]
        ),
        width="stretch",
    )


def _order_check(s: session.Session) -> None:
    """Run the reversed sentence and say, with the numbers, whether word order changed anything."""
    if len(s.tokens) < 2:
        return
    try:
        now = compute.compute(s.tokens, s.matrices, s.options)
        back = {**s.matrices, "X": s.matrices["X"][::-1]}
        rev = compute.compute(
            s.tokens[::-1],
            back,
            replace(
                s.options,
                padding=s.options.padding[::-1],
                custom_mask=()
                if not s.options.custom_mask
                else tuple(tuple(r[::-1]) for r in s.options.custom_mask[::-1]),
            ),
        )
    except AttentionError:
        return
    gap = float(np.max(np.abs(rev.output[..., ::-1, :] - now.output)))
    if gap <= 1e-12 * max(1.0, float(np.max(np.abs(now.output)))):
        st.caption(
            "Word order check: with the sentence reversed, every output row is the same numbers, just moved "
            f"with its token (largest difference {gap:.1e}). Without positions, attention sees a bag of words."
        )
    else:
        st.caption(
            f"Word order check: with the sentence reversed, the output rows change (largest difference "
            f"{gap:.4g}): {order_causes(s.options)} order matter."
        )


MASK_ORDER = {  # the mask parts that see order (custom and padding flags move with their tokens when reversed)
    "causal": "the causal mask (each token sees only itself and the tokens before it)",
    "window": "the window mask (each token sees only the few tokens just before it)",
}


def order_causes(o: Options) -> str:
    """What makes the output depend on word order, as the start of "… make(s) order matter": the positions (unless
    "none") and the mask parts that look at order; the mask alone when positions are none."""
    causes = [f"the {o.positions} positions"] if o.positions != "none" else []
    causes += [MASK_ORDER[part] for part in o.mask if part in MASK_ORDER]
    if not causes:
        return "the options make"
    verb = "makes" if len(causes) == 1 and o.positions == "none" else "make"  # "the … positions make"
    if o.positions == "none":
        return f"positions are none, so {' and '.join(causes)} alone {verb}"
    return f"{' and '.join(causes)} {verb}"
