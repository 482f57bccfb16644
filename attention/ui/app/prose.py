"""What each step page says in words about the numbers on it (user text escaped), one function per step."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...heads import kv_block
from ...names import token_labels
from ...trace import Trace
from ..core import session
from ..core.shown import key_labels, per_head, reading_lines
from ..core.text import esc


def _first(tokens: Sequence[str]) -> str:
    return f"“{esc(tokens[0])}”" if tokens else "the first token"


def tokens(s: session.Session, t: Trace | None) -> str:
    n, d = s.matrices["X"].shape
    order = (
        "Attention alone never looks at word order or spelling, only at these rows"
        if s.options.positions == "none"
        else f"Attention alone cannot see word order, so the {s.options.positions} positions chosen below put it in"
    )
    return (
        f"The sentence is split into **{n} tokens**, and each token is a row of **X**: a vector of **d_model = {d}** "
        f"numbers (its embedding). Row 1 is {_first(s.tokens)}. {order}; editing a row changes everything downstream "
        "of it. Change the sentence to add or remove tokens; new rows start as random numbers from the seed."
    )


def weights(s: session.Session, t: Trace | None) -> str:
    how = "X · W" if s.options.projection == "x_w" else "X · Wᵀ (the convention of “I am Batman”)"
    return (
        "Three weight matrices turn each embedding into a **query** (what this token is looking for), a **key** "
        f"(what it offers to be found by) and a **value** (what it passes on when attended to), computed as {how}. "
        "In a trained model these are learned; here they are typed in the document or drawn from the seed, and you "
        "can edit any cell."
    )


def qkv(s: session.Session, t: Trace | None) -> str:
    if t is None:
        return "Q, K and V are X projected by the three weight matrices."
    h, g = t.options.heads, t.options.kv
    kw, vw = t.K.shape[-1] // g, t.V.shape[-1] // g  # one key/value block's columns

    def kv(k: int) -> str:  # the key and value columns head k reads (its group's block)
        b = kv_block(k, h, g)
        return f"k{b * kw + 1}–k{(b + 1) * kw}, v{b * vw + 1}–v{(b + 1) * vw}"

    heads = (
        ""
        if h == 1
        else (
            f" With **{h} heads**, head k uses its own block of columns: "
            + "; ".join(
                f"head {k + 1}: q{k * t.Q.shape[-1] // h + 1}–q{(k + 1) * t.Q.shape[-1] // h}, {kv(k)}"
                for k in range(h)
            )
            + "."
        )
    )
    normed = (
        " Here Q and K are not X·W alone: each head's rows are **normalised** (QK-norm) before the rotation, a step "
        "shown below with its gains, which you can edit."
        if t.options.q_norm or t.options.k_norm
        else ""
    )
    return (
        f"Each row is one token's query, key or value: Q and K have **d_k = {t.Q.shape[-1]}** columns, V has "
        f"{t.V.shape[-1]}. Row 1 of Q is what {_first(s.tokens)} is looking for; row 1 of K is what it offers; "
        "row 1 of V is what it contributes when another token attends to it. Highlighted cells differ from the "
        "unedited preset." + heads + normed
    )


def scores(s: session.Session, t: Trace | None) -> str:
    if t is None:
        return "Entry (i, j) of QKᵀ is the dot product of query i with key j."
    first = per_head(t.scores)[0]
    i, j = np.unravel_index(np.argmax(first), first.shape)
    tk, keys = [esc(t) for t in token_labels(s.tokens)], [esc(k) for k in key_labels(s)]
    return (
        f"Entry (i, j) is the dot product of token i's query with token j's key: how well j matches what i looks for. "
        f"Rows are queries (who attends), columns are keys (who is attended to). The largest score here is "
        f"**{tk[i]} → {keys[j]}** ({first[i, j]:.4g})"
        + (" in head 1" if t.options.heads > 1 else "")
        + ". Scores are not yet probabilities: they can be any size or sign."
    )


def scaling(s: session.Session, t: Trace | None) -> str:
    if t is None:
        return "The scores are multiplied by the scale factor, 1/√d_k by default."
    said = {
        "causal": " The causal mask sets every cell above the diagonal (a token looking ahead) to −∞.",
        "padding": " The padding mask sets every column of a padding token to −∞.",
        "custom": " Your custom mask sets every unticked cell of its grid to −∞.",
        "window": f" The sliding window (w = {s.options.window}) sets every key more than {s.options.window - 1} "
        "token(s) back, and every later key, to −∞.",
    }
    parts = list(s.options.mask)
    mask = "".join(said[p] for p in parts) + (" Masked cells are grey, and their weight will be 0." if parts else "")
    if s.options.positions == "alibi":
        mask += " ALiBi has added each head's distance penalty −m·(i − j) to these scores before masking."
    if t.scale == 1.0:
        how = "Scaling is switched off (factor 1), so these equal the raw scores."
    else:
        how = (
            f"Every score is multiplied by **{t.scale:.6g}**"
            + (f" = 1/√{t.d_k}" if s.options.scale is None else " (custom)")
            + ". Dot products of d_k-dimensional vectors grow like √d_k; without this, softmax would saturate to "
            "nearly one-hot weights as d_k grows and its gradients would vanish."
        )
    return how + mask


def softmax(s: session.Session, t: Trace | None) -> str:
    if t is None:
        return "Softmax turns each row of scaled scores into weights that are ≥ 0 and sum to 1."
    temp = (
        ""
        if s.options.temperature == 1
        else (
            f" With temperature T = {s.options.temperature:g} the scores are divided by T first "
            "(T > 1 flattens, T < 1 sharpens)."
        )
    )
    masked = " A fully masked row (every key masked) has all weights 0 instead." if t.fully_masked else ""
    return (
        "Each row becomes a probability distribution over the keys: exp of each entry divided by the row's sum of "
        f"exps, so every weight is ≥ 0 and each row sums to 1.{masked} Row 1{_of_head(t)}: "
        f"{reading_lines(t, s.tokens, [0])[0]}. "
        "Subtracting a constant from a row (its max, by default) changes nothing mathematically but keeps exp from "
        "overflowing." + temp + random_weights(s)
    )


def _of_head(t: Trace) -> str:
    """ " of head 1 (of 2)" when the trace has several heads (the reading lines read head 1), else ""."""
    return f" of head 1 (of {t.options.heads}; each head's heatmap below has its own)" if t.options.heads > 1 else ""


def random_weights(s: session.Session) -> str:
    """On an example whose W_q and W_k are still the seed's random draws: that its pattern means nothing yet."""
    preset, base = s.origin.preset, s.origin.base
    drawn = set(preset.random.names) if preset.random is not None else set()
    if not {"W_q", "W_k"} <= drawn or not all(
        n in base and session.identical(s.matrices[n], base[n]) for n in ("W_q", "W_k")
    ):
        return ""
    return (
        "\n\n**These weights are random.** W_q and W_k were drawn from the seed, not learned, so which key a row "
        "attends to most means nothing yet: it is what attention looks like before any training. Change the seed "
        "and the pattern changes; *Learn the weights* trains W_q and W_k toward a pattern that means something."
    )


def output_formula(s: session.Session) -> str:
    """The Output page's formula, as its tables compute it: O = AV for one head; with several, the heads' outputs side
    by side, head k reading the value head that serves it (grouped-query: :func:`attention.heads.kv_block`); times
    W_o when W_o is in use (output = concat · W_o)."""
    o = s.options
    w_o = r"\, W_o" if "W_o" in s.matrices else ""
    if o.heads == 1:
        return (
            r"O = (A V)\, W_o,\qquad o_i = \Big(\sum_j A_{ij} v_j\Big)\, W_o"
            if w_o
            else r"O = A V,\qquad o_i = \sum_j A_{ij} v_j"
        )
    heads = [f"A_{{{k + 1}}} V_{{{kv_block(k, o.heads, o.kv) + 1}}}" for k in range(o.heads)]
    listed = ", ".join(heads) if o.heads <= 3 else rf"{heads[0]}, \dots, {heads[-1]}"
    return rf"O = \operatorname{{concat}}({listed}){w_o}"


def output(s: session.Session, t: Trace | None) -> str:
    if t is None:
        return "Each output row is a weighted average of the value rows."
    w = per_head(t.weights)[0]
    tk = [esc(k) for k in key_labels(s)]  # V's rows: the keys' tokens (the source's in cross-attention)
    h, d_v = t.options.heads, t.V.shape[-1]
    v = "V" if h == 1 else "V₁"
    parts = " + ".join(f"{w[0, j]:.3f}·{v}[{tk[j]}]" for j in range(min(3, w.shape[1])))
    more = " + …" if w.shape[1] > 3 else ""
    if t.W_o is None:
        mixed = ""
    elif t.W_o.shape[0] != t.W_o.shape[1]:  # a model's head: its rows of the model's W_o
        mixed = (
            f" Here A V is concat ({d_v} wide), and W_o, this head's rows of the model's W_o (edited on the Weights "
            f"page), writes it into the model's width: output = concat · W_o ({t.W_o.shape[1]} wide) is what the head "
            "adds to the residual stream, shown below."
        )
    else:
        mixed = " Then W_o (edited on the Weights page) mixes the heads' outputs: output = concat · W_o, shown below."
    if h == 1:
        row1 = f"{'concat ' if t.W_o is not None else ''}row 1 = {parts}{more}. "
    else:
        rest = "head 2 gives" if h == 2 else f"heads 2–{h} give"
        into = "output" if t.W_o is None else "concat"
        g = t.options.kv
        width = d_v // g  # one key/value head's columns of V, and one head's columns of the output
        own = (
            "its own columns of V"
            if g == h
            else f"the columns of V of the key/value head it reads ({h // g} heads share each)"
        )
        row1 = (
            f"with {h} heads, each head mixes {own} by its own weights. In head 1, row 1 = "
            f"{parts}{more}, where V₁ is head 1's columns v1–v{width} of V: that gives columns 1–{width} of "
            f"{into} row 1, and {rest} the other columns the same way with their own weights. "
        )
    return (
        f"Each output row is the value rows mixed by that token's weights: {row1}"
        "The output has one row per token, like X, but each row now carries information from the tokens it attended to."
        + mixed
    )


def weights_origin(s: session.Session) -> str:
    """Where W_q and W_k came from: "learned" (the Learn page's run put in), "identity" (W_q = W_k = I), "random"
    (the preset draws them from its seed), "preset" (typed in the preset's tutorial) or "edited"."""
    run = s.learned
    if (
        run is not None
        and {"W_q", "W_k"} & set(run.settings.learn)
        and all(session.identical(s.matrices[k], run.result.matrices[k]) for k in run.settings.learn if k in s.matrices)
    ):
        return "learned"
    if all(s.matrices[k].shape[0] == s.matrices[k].shape[1] for k in ("W_q", "W_k")) and all(
        np.array_equal(s.matrices[k], np.eye(s.matrices[k].shape[0])) for k in ("W_q", "W_k")
    ):
        return "identity"
    preset, base = s.origin.preset, s.origin.base
    if not all(k in base and session.identical(s.matrices[k], base[k]) for k in ("W_q", "W_k")):
        return "edited"
    drawn = preset.random.names if preset.random is not None else ()
    return "random" if s.origin.kind.drawn or {"W_q", "W_k"} & set(drawn) else "preset"


_MEANING = {
    "random": "W_q and W_k here are random numbers (drawn from the seed), so such a reading means nothing yet: it "
    "only shows how the mechanism works. Train them on the Learn page to see a reading that means something.",
    "preset": "W_q and W_k are the numbers typed in this preset's tutorial, not learned: the reading shows what "
    "those numbers make each token look for, not what a trained model would.",
    "learned": "W_q and W_k hold the weights learned on the Learn page: the reading shows what training taught each "
    "token to look for, on this sentence.",
    "identity": "W_q = W_k = I, so each score is the dot product of two rows of X: the reading shows which tokens' "
    "embeddings are most alike (with word vectors, words used alike).",
    "edited": "W_q and W_k hold your edits: the reading shows what your numbers make each token look for.",
}


def reading(s: session.Session, t: Trace | None) -> str:
    return (
        "For each token (a row of the weights): the key it gives the most weight to and that weight, the key it "
        "gives the second most to and that weight, and the row's entropy: 0 bits means all attention on one key, "
        "log₂(n) bits means spread evenly over all n. " + _MEANING[weights_origin(s)]
    )


def shape_of(a: np.ndarray) -> str:
    """A shape as the Overview's table writes it: "4 × 16"."""
    return " × ".join(str(v) for v in a.shape)


def weights_row(s: session.Session, t: Trace) -> tuple[str, str]:
    """The Overview's Weights row: W_q, W_k, W_v, then W_o when the state has one, and their shapes."""
    used = [(n, m) for n, m in (("W_q", t.W_q), ("W_k", t.W_k), ("W_v", t.W_v), ("W_o", t.W_o)) if m is not None]
    return ", ".join(n for n, _ in used), ", ".join(shape_of(m) for _, m in used)
