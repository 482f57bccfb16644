"""What the Learn page shows of a run: the loss curve, learned weights beside the target through the snapshots."""

from __future__ import annotations

import itertools
import math

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from ... import charts, learn
from ...errors import AttentionError
from ...names import squeeze_batch, token_labels
from ..core import compute, keys, session
from ..core.cache import kept
from ..core.learned import TARGETS, Learned, held
from ..core.shown import per_head
from ..core.text import esc
from ..state import learning as state_learning
from ..widgets import number_tables
from ..widgets.chart_files import chart_files
from ..widgets.common import chart_gap, show_messages, vega_chart

OPTIMISER_NAMES = {"sgd": "SGD", "momentum": "momentum", "adam": "Adam"}
ORDER_TARGETS = ("previous", "next", "first", "token")  # targets about where a token stands, not what it is
REORDERINGS = 20  # other orders of the same words the run is measured on


LOSS_HEIGHT = 300  # px, given to Streamlit too: inside st.empty() a chart otherwise got ~60 px of plot


def loss_chart(losses: np.ndarray, steps: int, mark: int | None = None) -> alt.Chart:
    """The loss after each step (a line over 0…steps, log scale: a loss of 0 is drawn at 1e-12), with a rule at step
    ``mark`` if given."""
    df = pd.DataFrame({"step": np.arange(len(losses)), "loss": losses, "shown": np.maximum(losses, 1e-12)})
    x = alt.X("step:Q", scale=alt.Scale(domain=[0, steps]), title="step")
    y = alt.Y("shown:Q", scale=alt.Scale(type="log"), title="loss (log scale)")
    line = alt.Chart(df).mark_line().encode(x, y, tooltip=["step", "loss"])
    if mark is None:
        return line.properties(height=LOSS_HEIGHT, title="Loss (cross-entropy)")
    rule = alt.Chart(pd.DataFrame({"step": [mark]})).mark_rule(color="#b2182b", strokeDash=[4, 3]).encode(x)
    return (line + rule).properties(height=LOSS_HEIGHT, title="Loss (cross-entropy)")


def heatmap(
    values: np.ndarray,
    labels: list[str],
    title: str,
    allowed: np.ndarray | None,
    digits: int | None,
    subtitle: str = "",
) -> None:
    """A weights heatmap (n, n): cell by cell up to charts.RECT_MAX tokens, in blocks beyond."""
    allowed = None if allowed is None else per_head(np.asarray(allowed))[0]
    style = charts.Style(kind="weights", title=title, subtitle=subtitle, digits=digits)
    spec = charts.heatmap(values, labels, labels, style, allowed)
    vega_chart(spec, width="stretch")
    chart_files(spec, f"learned_{title}", f"learn.{title}")


def is_current(s: session.Session, run: Learned) -> bool:
    """The run started from exactly this state (its weights can go in), or its weights are already in."""
    if run.tokens != s.tokens:
        return False
    if run.start == compute.content_key(s.tokens, s.matrices, s.options):
        return True
    return all(
        (now := held(k, s.matrices, s.options)) is not None and session.identical(now, run.result.matrices[k])
        for k in run.settings.learn
    )


def result(s: session.Session) -> None:
    """The last run: summary, loss curve, the learned weights beside the target at a chosen snapshot, the final
    weights as a table, and "Use these weights"."""
    run = s.learned
    if run is None:
        st.caption("Press **Train** to learn; the result stays here while you visit the other pages.")
        return
    r, cfg = run.result, run.settings
    current = is_current(s, run)
    acc = "" if r.accuracy is None else f"; accuracy {r.accuracy:.0%} (rows whose largest weight is on a target key)"
    st.markdown(
        f"**Last run**: {r.steps_done:,} steps of {OPTIMISER_NAMES[cfg.optimiser]} (learning rate {cfg.lr:g}, seed "
        f"{cfg.seed}) learning {', '.join(cfg.learn)}: loss {r.losses[0]:.4g} → {r.loss:.4g}{acc}."
    )
    if not current:
        st.warning(
            "The tokens, matrices or options changed since this run, so its weights belong to the state it started "
            "from. Train again to learn for this state (or “Reset to preset” if it started from the preset).",
            icon=":material/warning:",
        )
    snapshots(s, run)
    _carries_over(run)
    labels = token_labels(run.tokens)
    learned = per_head(r.weights)  # (h, n, n): every head, each its own table
    for h, final in enumerate(learned):
        heads = "" if len(learned) == 1 else f", head {h + 1} of {len(learned)}"
        st.markdown(f"**Learned weights** (after all {r.steps_done:,} steps{heads}; each row sums to 1)")
        fmt = charts.decimals_for(final, s.digits)
        st.dataframe(
            pd.DataFrame(final, index=labels, columns=labels).style.format(fmt.format),
            width="stretch",
            height=number_tables.fit_height(len(labels)),
        )
    st.button(
        "Use these weights",
        key=keys.LEARN_USE,
        on_click=state_learning.use_learned,
        disabled=not current,
        icon=":material/input:",
        help="Put the learned " + ", ".join(cfg.learn) + " into the state: every step page then shows them, and "
        "every download and export carries them. “Reset to preset” in the sidebar undoes it.",
    )
    show_messages("learn.use")


def snapshots(s: session.Session, run: Learned) -> None:
    """The loss curve with a slider through the run's snapshots, and the learned weights at the chosen one beside the
    target; the rows the loss leaves out, named."""
    r, cfg = run.result, run.settings
    snaps = r.snapshots
    steps = [sn.step for sn in snaps]
    chart_gap()
    chart = st.empty()  # drawn after the slider below it is read, with a rule at the chosen step
    at = st.select_slider(
        "Snapshot: move through training to watch the weights form",
        options=steps,
        value=steps[-1],
        key=keys.learn_snapshot(abs(hash((run.start, cfg)))),
    )
    snap = snaps[steps.index(at)]
    chart.altair_chart(loss_chart(r.losses, r.steps_done, mark=at), width="stretch", height=LOSS_HEIGHT)
    labels = token_labels(run.tokens)
    chart_gap()
    left, right = st.columns(2, gap="medium")
    learned = per_head(snap.weights)  # (h, n, n): a heatmap for every head, the target beside them
    with left:
        for h, weights in enumerate(learned):
            heads = "" if len(learned) == 1 else f" (head {h + 1} of {len(learned)})"
            allowed = None if r.trace is None else r.trace.allowed
            title = f"Learned weights after step {at:,}{heads}"
            heatmap(weights, labels, title, allowed, s.digits, subtitle=f"loss {snap.loss:.3g}")
    with right:
        target = f"Target: {TARGETS[cfg.target]}"
        heatmap(r.target.pattern, labels, target, None, s.digits, subtitle="what the loss pulls the weights towards")
    skipped = [labels[i] for i in np.flatnonzero(~r.target.rows)]
    if skipped:
        st.caption(
            f"Not counted in the loss: {', '.join(esc(x) for x in skipped[:8])}"
            + (" …" if len(skipped) > 8 else "")
            + " (nothing to attend under this target or the mask)."
        )


@kept(16, key=lambda key, _run: key)
def reordered(key: str, _run: Learned) -> tuple[float, int] | None:
    """The run's accuracy on the same words in other orders (all of them for n ≤ 4, else REORDERINGS drawn from the
    run's seed): :func:`attention.learn.evaluate` with each word's row of X as its vector, as the generalisation
    benchmark measures held-out sentences. None when the target is not about order or cannot be measured so."""
    r, cfg = _run.result, _run.settings
    labels = token_labels(_run.tokens)
    n = len(labels)
    if cfg.target not in ORDER_TARGETS or r.trace is None or not 3 <= n <= 256 or "X" not in r.matrices:
        return None
    table = dict(zip(labels, squeeze_batch(r.matrices["X"]), strict=True))  # word → its row (a bag of vectors)
    if math.factorial(n) - 1 <= REORDERINGS:
        orders = [p for p in itertools.permutations(range(n)) if p != tuple(range(n))]
    else:
        rs, found = np.random.RandomState(cfg.seed), set()
        while len(found) < REORDERINGS:
            p = tuple(int(i) for i in rs.permutation(n))
            if p != tuple(range(n)):
                found.add(p)
        orders = sorted(found)
    sentences = [tuple(labels[i] for i in p) for p in orders]
    try:
        ev = learn.evaluate(sentences, table, r.matrices, r.trace.options, cfg.target, j=min(cfg.j, n - 1))
    except AttentionError:  # a padding or custom mask: not measured on other sentences
        return None
    return ev.accuracy, len(sentences)


def _carries_over(run: Learned) -> None:
    """Does what the run learned hold for the same words in another order? Measured, and said in words."""
    r, cfg = run.result, run.settings
    got = reordered(f"{run.start}|{cfg}|{r.steps_done}|{r.loss!r}", run)
    if got is None or r.accuracy is None:
        return
    acc, count = got
    n, positions = len(run.tokens), r.trace.options.positions  # type: ignore[union-attr]
    what = TARGETS[cfg.target]
    said = (
        f"**Does it carry over?** On this sentence the learned weights find the {what} in {r.accuracy:.0%} of rows; "
        f"on {count} other orders of the same words (sentences it never saw) in **{acc:.0%}** (a guess over the "
        f"{n} keys: about {1 / n:.0%})."
    )
    if positions == "none" and acc < r.accuracy - 0.2:
        said += (
            " Without positions attention sees only which words are present, a bag of words, so it cannot have "
            f"learned “the {what}”: it memorised each word's vector (this word looks at that word, wherever they "
            "stand), and a new sentence breaks it. Choose positions on the Tokens page and train again to learn a "
            "rule about order."
        )
    elif acc < r.accuracy - 0.2:
        said += f" With {positions} positions it still leans on the words themselves, not only on where they stand."
    st.markdown(said)  # ours: numbers and our wording
