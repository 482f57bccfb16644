"""What each page says and shows, as data: label, title, formula, explanation, controls, editors, views.

Each spec names its navigation label, title, formula, explanation, controls, editors, matrices, heatmap and
extra views. The frame (:mod:`attention.ui.frame`) draws any of them with no per-page
branches; the navigation and the overview's list of steps come from the same specs. A new step is one more
``Step`` here and a three-line file in ``pages/``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..names import squeeze_batch, token_labels
from ..trace import Trace
from . import session
from .text import esc

OVERVIEW = "pages/0_overview.py"


@dataclass(frozen=True)
class Step:
    """One page. ``controls`` and ``views`` name entries of the frame's registries (drawn before the editors
    and after the matrices); ``editors`` are the input matrices edited here; ``show`` the arrays shown as
    tables; ``heatmap`` the array drawn as a heatmap; ``overview`` what the overview's table says it computes."""

    key: str
    file: str
    nav: str
    title: str
    latex: str
    explain: Callable[[session.Session, Trace | None], str]
    editors: tuple[str, ...] = ()
    show: tuple[str, ...] = ()
    heatmap: str | None = None
    controls: tuple[str, ...] = ()
    views: tuple[str, ...] = ()
    overview: Callable[[session.Session, Trace], str] | None = None
    inputs: bool = False  # the input editors (X, W_q, W_k, W_v) beside the result, so an edit redraws it on one screen
    compare: tuple[str, ...] = ()  # the arrays shown beside a pinned state A


def as_2d(a: np.ndarray) -> np.ndarray:
    """The matrix a page shows: the single item of a batch of one; h heads' (h, n, n) stacked as (h·n, n)."""
    a = a[0] if a.ndim == 4 else squeeze_batch(a)  # (1, h, n, n) -> (h, n, n); (1, n, d) -> (n, d)
    return a.reshape(-1, a.shape[-1]) if a.ndim == 3 else a


def per_head(a: np.ndarray) -> np.ndarray:
    """A square array as (h, n, n): one matrix per head (h = 1 without heads), a batch of one dropped."""
    a = a[0] if a.ndim == 4 else squeeze_batch(a)
    return a if a.ndim == 3 else a[None]


def shown(s: session.Session, trace: Trace, name: str) -> tuple[np.ndarray, list[str], list[str]]:
    """A trace array as the 2-D table a page shows, with its row and column labels (rows "head 2 · cat" with heads)."""
    m = as_2d(getattr(trace, name))
    rows, cols = s.axis_labels(name, m.shape)
    if m.shape[0] != len(rows):  # heads stacked
        rows = [f"head {k + 1} · {t}" for k in range(m.shape[0] // len(rows)) for t in rows]
    return m, rows, cols


def reading_lines(t: Trace, tokens: Sequence[str], rows: Sequence[int], head: int = 0) -> list[str]:
    """“**The** attends most to **on** (89.7%)” for each of ``rows`` (or that the row is fully masked), in ``head``;
    the top keys are found once per trace (``Trace.reading``)."""
    r = t.reading
    pick = (lambda a: a[head]) if r.top.ndim == 2 else (lambda a: a)
    top, weight, masked = pick(r.top), pick(r.top_weight), pick(r.fully_masked)
    tk = [esc(t) for t in token_labels(tokens)]
    return [f"**{tk[i]}** attends to nothing (every key is masked; its weights and output are 0)" if masked[i]
            else f"**{tk[i]}** attends most to **{tk[top[i]]}** ({weight[i]:.1%})" for i in rows]


def _first(tokens: Sequence[str]) -> str:
    return f"“{esc(tokens[0])}”" if tokens else "the first token"


def _explain_tokens(s: session.Session, t: Trace | None) -> str:
    n, d = s.matrices["X"].shape
    return (f"The sentence is split into **{n} tokens**, and each token is a row of **X**: a vector of **d_model = {d}** numbers "
            f"(its embedding). Row 1 is {_first(s.tokens)}. Attention never looks at word order or spelling, only at these rows, so "
            "editing a row changes everything downstream of it. Change the sentence to add or remove tokens; new rows start as random "
            "numbers from the seed.")


def _explain_weights(s: session.Session, t: Trace | None) -> str:
    how = "X · W" if s.options.projection == "x_w" else "X · Wᵀ (document 001's convention)"
    return ("Three weight matrices turn each embedding into a **query** (what this token is looking for), a **key** (what it offers "
            f"to be found by) and a **value** (what it passes on when attended to), computed as {how}. In a trained model these are "
            "learned; here they are typed in the document or drawn from the seed, and you can edit any cell.")


def _explain_qkv(s: session.Session, t: Trace | None) -> str:
    if t is None:
        return "Q, K and V are X projected by the three weight matrices."
    h = t.options.heads
    heads = "" if h == 1 else (f" With **{h} heads**, head k uses its own block of columns: " + "; ".join(
        f"head {k + 1}: q{k * t.Q.shape[-1] // h + 1}–q{(k + 1) * t.Q.shape[-1] // h}, k{k * t.K.shape[-1] // h + 1}–"
        f"k{(k + 1) * t.K.shape[-1] // h}, v{k * t.V.shape[-1] // h + 1}–v{(k + 1) * t.V.shape[-1] // h}" for k in range(h)) + ".")
    return (f"Each row is one token's query, key or value: Q and K have **d_k = {t.Q.shape[-1]}** columns, V has {t.V.shape[-1]}. "
            f"Row 1 of Q is what {_first(s.tokens)} is looking for; row 1 of K is what it offers; row 1 of V is what it contributes "
            "when another token attends to it. Highlighted cells differ from the unedited preset." + heads)


def _explain_scores(s: session.Session, t: Trace | None) -> str:
    if t is None:
        return "Entry (i, j) of QKᵀ is the dot product of query i with key j."
    first = per_head(t.scores)[0]
    i, j = np.unravel_index(np.argmax(first), first.shape)
    tk = [esc(t) for t in token_labels(s.tokens)]
    return (f"Entry (i, j) is the dot product of token i's query with token j's key: how well j matches what i looks for. "
            f"Rows are queries (who attends), columns are keys (who is attended to). The largest score here is "
            f"**{tk[i]} → {tk[j]}** ({first[i, j]:.4g})" + (" in head 1" if t.options.heads > 1 else "")
            + ". Scores are not yet probabilities: they can be any size or sign.")


def _explain_scaling(s: session.Session, t: Trace | None) -> str:
    if t is None:
        return "The scores are multiplied by the scale factor, 1/√d_k by default."
    mask = {"none": "", "causal": " The causal mask sets every cell above the diagonal (a token looking ahead) to −∞, shown grey.",
            "padding": " The padding mask sets every column of a padding token to −∞, shown grey."}[s.options.mask]
    if t.scale == 1.0:
        how = "Scaling is switched off (factor 1), so these equal the raw scores."
    else:
        how = (f"Every score is multiplied by **{t.scale:.6g}**" + (f" = 1/√{t.d_k}" if s.options.scale is None else " (custom)")
               + ". Dot products of d_k-dimensional vectors grow like √d_k; without this, softmax would saturate to nearly one-hot "
               "weights as d_k grows and its gradients would vanish.")
    return how + mask


def _explain_softmax(s: session.Session, t: Trace | None) -> str:
    if t is None:
        return "Softmax turns each row of scaled scores into weights that are ≥ 0 and sum to 1."
    temp = "" if s.options.temperature == 1 else (f" With temperature T = {s.options.temperature:g} the scores are divided by T first "
                                                   "(T > 1 flattens, T < 1 sharpens).")
    masked = " A fully masked row (every key masked) has all weights 0 instead." if t.fully_masked else ""
    return (f"Each row becomes a probability distribution over the keys: exp of each entry divided by the row's sum of exps, so every "
            f"weight is ≥ 0 and each row sums to 1.{masked} Row 1: {reading_lines(t, s.tokens, [0])[0]}. Subtracting a constant from a row "
            "(its max, by default) changes nothing mathematically but keeps exp from overflowing." + temp)


def _explain_output(s: session.Session, t: Trace | None) -> str:
    if t is None:
        return "Each output row is a weighted average of the value rows."
    w = per_head(t.weights)[0]
    tk = [esc(t) for t in token_labels(s.tokens)]
    parts = " + ".join(f"{w[0, j]:.3f}·V[{tk[j]}]" for j in range(min(3, w.shape[1])))
    more = " + …" if w.shape[1] > 3 else ""
    return (f"Each output row is the value rows mixed by that token's weights: row 1 = {parts}{more}. The output has one row per token, "
            "like X, but each row now carries information from the tokens it attended to.")


def _explain_reading(s: session.Session, t: Trace | None) -> str:
    return ("For each token (a row of the weights): the key it gives the most weight to and that weight, the key it gives the "
            "second most to and that weight, and the row's entropy: 0 bits means all attention on one key, log₂(n) bits means "
            "spread evenly over all n. With random weights such a reading means nothing yet: it only shows how the mechanism "
            "works.")


def _shape(a: np.ndarray) -> str:
    return " × ".join(str(v) for v in a.shape)


STEPS: dict[str, Step] = {s.key: s for s in (
    Step("tokens", "pages/1_tokens.py", "Tokens & embeddings (X)", "Tokens and embeddings",
         r"X \in \mathbb{R}^{n \times d_{model}}", _explain_tokens, editors=("X",), controls=("sentence", "batch_note"),
         overview=lambda s, t: ("X", _shape(t.X))),
    Step("weights", "pages/2_weights.py", "Weights (W_q, W_k, W_v)", "Weight matrices",
         r"W_q,\ W_k \in \mathbb{R}^{d_{model} \times d_k},\quad W_v \in \mathbb{R}^{d_{model} \times d_v}", _explain_weights,
         editors=("W_q", "W_k", "W_v"), controls=("d_k",),
         overview=lambda s, t: ("W_q, W_k, W_v", f"{_shape(t.W_q)}, {_shape(t.W_k)}, {_shape(t.W_v)}")),
    Step("qkv", "pages/3_qkv.py", "Q·K·V", "Queries, keys and values", r"Q = X W_q,\quad K = X W_k,\quad V = X W_v",
         _explain_qkv, show=("Q", "K", "V"), inputs=True, compare=("Q", "K", "V"),
         overview=lambda s, t: ("Q = XW_q, K = XW_k, V = XW_v", f"{_shape(t.Q)}, {_shape(t.K)}, {_shape(t.V)}")),
    Step("scores", "pages/4_scores.py", "Scores (QKᵀ)", "Raw scores", r"S = Q K^\top,\qquad S_{ij} = q_i \cdot k_j",
         _explain_scores, show=("scores",), heatmap="scores", inputs=True, compare=("scores",),
         views=("takes_q_k", "explain_cell"),
         overview=lambda s, t: ("S = QKᵀ", _shape(t.scores))),
    Step("scaling", "pages/5_scaling.py", "Scaling (÷√d_k)", "Scaling (and masking)",
         r"S' = \frac{S}{\sqrt{d_k}},\qquad S'_{ij} = -\infty \text{ where masked}", _explain_scaling, show=("scaled",),
         heatmap="scaled", inputs=True, compare=("scaled",), views=("takes_scores", "explain_cell"),
         overview=lambda s, t: (f"S' = S × {t.scale:.4g}" + (f", mask: {s.options.mask}" if s.options.mask != "none" else ""),
                                _shape(t.scaled))),
    Step("softmax", "pages/6_softmax.py", "Softmax (attention weights)", "Softmax: attention weights",
         r"A_{ij} = \frac{\exp(S'_{ij}/T)}{\sum_k \exp(S'_{ik}/T)}", _explain_softmax, show=("weights",), heatmap="weights",
         views=("reading_lines", "takes_scaled", "softmax_steps", "explain_cell"), inputs=True, compare=("weights",),
         overview=lambda s, t: ("A = softmax(S'" + (f"/{s.options.temperature:g}" if s.options.temperature != 1 else "") + ")",
                                _shape(t.weights))),
    Step("output", "pages/7_output.py", "Output (weights·V)", "Output: weighted sum of values",
         r"O = A V,\qquad o_i = \sum_j A_{ij} v_j", _explain_output, show=("output",), heatmap="weights", views=("reading_lines", "takes_v_weights"),
         inputs=True, compare=("output",),
         overview=lambda s, t: ("O = AV", _shape(t.output))),
    Step("reading", "pages/8_reading.py", "Reading the weights", "Reading the weights",
         r"\text{top}(i) = \arg\max_j A_{ij},\qquad H_i = -\sum_j A_{ij} \log_2 A_{ij}", _explain_reading,
         views=("reading_table",), inputs=True, compare=("weights",)),
)}
NAV = [(OVERVIEW, "Overview")] + [(step.file, step.nav) for step in STEPS.values()]
