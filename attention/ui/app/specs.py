"""What each page says and shows, as data: label, title, formula, explanation, controls, editors, views.

Each spec names its navigation label, title, formula, explanation, controls, editors, matrices, heatmap and
extra views. The frame (:mod:`attention.ui.app.frame`) draws any of them with no per-page
branches; the navigation and the overview's list of steps come from the same specs. A new step is one more
``Step`` here and a two-line file in ``pages/``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ... import masks
from ...errors import AttentionError
from ...trace import Trace
from ..core import jobs, models, session
from ..core.text import esc
from ..headpages import every_head, first_token, generate, kv_cache, watch_it_learn
from ..labpages import board, challenges, flash, learn, stability, why_sqrt_dk
from ..readouts import attribution, lens, patching, routes
from . import prose

OVERVIEW = "pages/0_overview.py"


@dataclass(frozen=True)
class Step:
    """One page. ``controls`` and ``views`` name entries of the frame's registries (drawn before the editors
    and after the matrices; ``controls_after`` after the editors); ``editors`` are the input matrices edited here;
    ``show`` the arrays shown as tables; ``heatmap`` the array drawn as a heatmap; ``overview`` what the overview's
    table says it computes; ``answers`` the panels that answer back from beyond the page, drawn below the results
    when they apply (entries of :data:`attention.ui.modelpages.ANSWERS`: "model", what the model a head came from
    predicts with the edits made here)."""

    key: str
    file: str
    nav: str
    title: str
    latex: str | Callable[[session.Session], str]  # the formula, or the state's (the Output page's names W_o in use)
    explain: Callable[[session.Session, Trace | None], str]
    editors: tuple[str, ...] = ()
    show: tuple[str, ...] = ()
    heatmap: str | None = None
    controls: tuple[str, ...] = ()
    controls_after: tuple[str, ...] = ()
    views: tuple[str, ...] = ()
    overview: Callable[[session.Session, Trace], str] | None = None
    inputs: bool = False  # the input editors (X, W_q, W_k, W_v) beside the result, so an edit redraws it on one screen
    compare: tuple[str, ...] = ()  # the arrays shown beside a pinned state A
    answers: tuple[str, ...] = ()


STEPS: dict[str, Step] = {
    s.key: s
    for s in (
        Step(
            "tokens",
            "pages/1_tokens.py",
            "Tokens & embeddings (X)",
            "Tokens and embeddings",
            r"X \in \mathbb{R}^{n \times d_{model}}",
            prose.tokens,
            editors=("X",),
            controls=("sentence", "embeddings", "positions", "batch_note", "source"),
            overview=lambda s, t: ("X", prose.shape_of(t.X)),
            answers=("model",),
        ),
        Step(
            "weights",
            "pages/2_weights.py",
            "Weights (W_q, W_k, W_v)",
            "Weight matrices",
            r"W_q,\ W_k \in \mathbb{R}^{d_{model} \times d_k},\quad W_v \in \mathbb{R}^{d_{model} \times d_v}",
            prose.weights,
            editors=("W_q", "W_k", "W_v"),
            controls=("d_k",),
            controls_after=("w_o",),
            overview=prose.weights_row,
            answers=("model",),
        ),
        Step(
            "qkv",
            "pages/3_qkv.py",
            "Q·K·V",
            "Queries, keys and values",
            r"Q = X W_q,\quad K = X W_k,\quad V = X W_v",
            prose.qkv,
            show=("Q", "K", "V"),
            views=("qk_norm", "rotation", "kv_groups", "kv_cache"),
            inputs=True,
            compare=("Q", "K", "V"),
            overview=lambda s, t: ("Q = XW_q, K = XW_k, V = XW_v", ", ".join(map(prose.shape_of, (t.Q, t.K, t.V)))),
            answers=("model",),
        ),
        Step(
            "scores",
            "pages/4_scores.py",
            "Scores (QKᵀ)",
            "Raw scores",
            r"S = Q K^\top,\qquad S_{ij} = q_i \cdot k_j",
            prose.scores,
            show=("scores",),
            heatmap="scores",
            inputs=True,
            compare=("scores",),
            views=("takes_q_k", "explain_cell"),
            overview=lambda s, t: ("S = QKᵀ", prose.shape_of(t.scores)),
            answers=("model",),
        ),
        Step(
            "scaling",
            "pages/5_scaling.py",
            "Scaling (÷√d_k)",
            "Scaling (and masking)",
            r"S' = \frac{S}{\sqrt{d_k}},\qquad S'_{ij} = -\infty \text{ where masked}",
            prose.scaling,
            show=("scaled",),
            heatmap="scaled",
            controls=("custom_mask",),
            inputs=True,
            compare=("scaled",),
            views=("takes_scores", "explain_cell"),
            overview=lambda s, t: (
                f"S' = S × {t.scale:.4g}" + (f", mask: {masks.join(s.options.mask)}" if s.options.mask else ""),
                prose.shape_of(t.scaled),
            ),
            answers=("model",),
        ),
        Step(
            "softmax",
            "pages/6_softmax.py",
            "Softmax (attention weights)",
            "Softmax: attention weights",
            r"A_{ij} = \frac{\exp(S'_{ij}/T)}{\sum_k \exp(S'_{ik}/T)}",
            prose.softmax,
            show=("weights",),
            heatmap="weights",
            views=("reading_lines", "takes_scaled", "softmax_steps", "explain_cell"),
            inputs=True,
            compare=("weights",),
            overview=lambda s, t: (
                "A = softmax(S'" + (f"/{s.options.temperature:g}" if s.options.temperature != 1 else "") + ")",
                prose.shape_of(t.weights),
            ),
            answers=("model",),
        ),
        Step(
            "output",
            "pages/7_output.py",
            "Output (weights·V)",
            "Output: weighted sum of values",
            prose.output_formula,
            prose.output,
            show=("output",),
            heatmap="weights",
            views=("concat", "reading_lines", "takes_v_weights", "explain_cell"),
            inputs=True,
            compare=("output",),
            overview=lambda s, t: ("O = AV" if t.W_o is None else "O = AV · W_o", prose.shape_of(t.output)),
            answers=("model",),
        ),
        Step(
            "reading",
            "pages/8_reading.py",
            "Reading the weights",
            "Reading the weights",
            r"\text{top}(i) = \arg\max_j A_{ij},\qquad H_i = -\sum_j A_{ij} \log_2 A_{ij}",
            prose.reading,
            views=("reading_table",),
            inputs=True,
            compare=("weights",),
            answers=("model",),
        ),
    )
}


EVERY_HEAD_BODY = (
    "Below, every head's attention on the text you choose, what each head does (measured on that text), and what the "
    "model predicts. **Ablate** a head to take it out and watch the predictions and the loss answer back. "
)


PATCHING_BODY = (
    "Run the model on a **clean** text and on a **corrupted** copy with a token changed: the prediction at the end "
    "changes. Now run the corrupted text again, but take one head's output (or the residual stream at one layer and "
    "position) from the clean run: how much of the clean prediction comes back? Doing that for every head and every "
    "stream row finds the heads that carry the difference, and where it travels (activation patching). Gradients "
    "read at a few points between the two runs estimate every patch at once (integrated gradients); the exact "
    "patches then check the top heads. "
)

READY_STORY = (  # the shipped model's ready-made pairs, whose heads the journey names
    "This ready-made pair changes the earlier copy of the text's last word, so the induction head finds nothing to "
    "copy: watch the previous-token head and the induction head restore it."
)
READY_OTHER = (  # another model's ready-made pair: the same change, no claim about its heads
    "This ready-made pair changes the earlier copy of the text's last token, so a head that copies what followed it "
    "before has nothing to copy; which heads restore it is this model's own answer, below."
)


def patching_intro(s: session.Session) -> str:
    """Patching's intro for the pair in use: the ready-made pair's story on the shipped model only; on a learner's
    own pair, the heads that came out on top (exactly, once patched; else by the estimate)."""
    p = s.patching
    if p is None:  # not made yet: the page opens on the model's first ready-made pair
        shipped = s.inside is None or s.inside.model == models.BUILTIN
        return PATCHING_BODY + (READY_STORY if shipped else READY_OTHER)
    if p.pair and p.model == models.BUILTIN:
        return PATCHING_BODY + READY_STORY
    if p.pair:
        return PATCHING_BODY + READY_OTHER
    changed = [k + 1 for k in range(len(p.clean)) if p.clean[k] != p.corrupt[k]]
    where = f"position{'s' if len(changed) > 1 else ''} {', '.join(map(str, changed[:6]))}"
    own = f"Your own pair: {len(p.clean)} tokens, changed at {where}. "
    try:
        top = jobs.top_heads(p)
    except AttentionError:  # the model is gone since: the chooser below says so
        top = None
    if top is None:
        return PATCHING_BODY + own + "Nothing in it differs at the last position to restore."
    heads, how = top
    if not heads:
        return PATCHING_BODY + own + f"No head's patch restores any of the difference ({how})."
    return PATCHING_BODY + own + f"The heads that came out on top ({how}): {heads}."


def every_head_intro(s: session.Session) -> str:
    """Every head's intro for the model open: the shipped model's own heads to try, or the other model named."""
    model_id = s.inside.model if s.inside is not None else models.BUILTIN
    if model_id == models.BUILTIN:
        return (
            "A real trained model this time: the shipped 2-layer model, which learned to continue a repeated "
            "sequence (or choose another below). " + EVERY_HEAD_BODY + "Try it: find the induction head, ablate it, "
            "and see the loss on the repeated half rise; restore it; then ablate the previous-token head in layer 1 "
            "and watch the induction head's pattern fall apart too."
        )
    try:
        c = models.get(model_id).config
    except AttentionError:  # gone since: the chooser below says so and opens the shipped model
        return "A real model this time, chosen below. " + EVERY_HEAD_BODY
    name = esc(model_id.removeprefix(models.SERVER), 80) if model_id.startswith(models.SERVER) else ""
    kind = f"{name}, a checkpoint on this server" if name else "your own model"
    return (
        f"A real model this time: {kind} ({c.n_layers} layers × {c.n_heads} heads), chosen below. "
        + EVERY_HEAD_BODY
        + "Try it: find a head with a clear role, ablate it, and see what moved."
    )


@dataclass(frozen=True)
class Lab:
    """A page beyond the steps (an experiment, the challenges, learning, a page inside a model), whole in one entry:
    its file, label, title, intro and body; the frame draws the set-up, title and intro, then ``body``."""

    key: str
    file: str
    nav: str
    title: str
    intro: str | Callable[[session.Session], str]  # a function of the Session: an intro that depends on the state
    body: Callable[[session.Session], None]  # what the page draws below its intro (its module's ``body``)


LABS: dict[str, Lab] = {
    lab.key: lab
    for lab in (
        # a page is one entry here, its body in a module of attention.ui.labpages, and its file in pages/
        Lab(
            "why_sqrt_dk",
            "pages/9_why_sqrt_dk.py",
            "Why √d_k?",
            "Why divide by √d_k?",
            "A score is a dot product of d_k numbers: with random queries and keys whose entries have variance 1, "
            "its variance is d_k. Below, Q and K are drawn at random for d_k from 1 to 512 and averaged over several "
            "draws: the spread of the scores, the largest softmax weight in each row, the row's entropy and the "
            "gradient through softmax, **without** and **with** the division by √d_k. The diamond marks the numbers "
            "of the sentence in the sidebar.",
            body=why_sqrt_dk.body,
        ),
        Lab(
            "stability",
            "pages/10_stability.py",
            "Numerical stability",
            "Numerical stability of softmax",
            "softmax(x) is the same for x and for x − m, whatever m is, but the computer's numbers are not: "
            "`exp` overflows to ∞ or underflows to 0 at limits set by the float width. Everything on this page is "
            "computed live, by the engine, from the limits of numpy's float types; nothing is typed in.",
            body=stability.body,
        ),
        Lab(
            "challenges",
            "pages/11_challenges.py",
            "Challenges",
            "Challenges",
            "A challenge sets a goal on one of the arrays (a weight, the top key of a row, a row's entropy) and "
            "says which matrices you may edit; the others are locked. Choose one, press **Start**, then edit the "
            "numbers here or on any page: the progress below is checked live.",
            body=challenges.body,
        ),
        Lab(
            "learn",
            "pages/12_learn.py",
            "Learn the weights",
            "Learn the weights",
            "So far every number was typed in. Here the weights **learn**: choose the pattern attention should "
            "make (each token attends to the previous one, say), and gradient descent changes W_q and W_k (or any "
            "matrix you tick) step by step until the weights match it. The loss measures how far the weights are "
            "from the target (cross-entropy: 0 when every row puts all its weight where the target does). "
            "“Use these weights” puts the learned numbers into every step page, so you can follow exactly how "
            "they make that pattern.",
            body=learn.body,
        ),
        Lab(
            "flash",
            "pages/13_flash.py",
            "FlashAttention",
            "FlashAttention: the same numbers, tile by tile",
            "The steps pages compute the whole n × n matrix of scores, then softmax, then the weighted sum. "
            "FlashAttention gets **the same output** without ever holding that matrix: it cuts your current scores "
            "into tiles and walks them with an *online* softmax. Choose a tile size, then step through the tiles.",
            body=flash.body,
        ),
        Lab(
            "class_board",
            "pages/15_class_board.py",
            "Class board",
            "Class board",
            "For the teacher: open a class, set its challenges, give its code to the students (they join on the "
            "Challenges page), and follow every student's progress, live. Only the challenges set here are handed "
            "in; every solve is checked by this server from the student's own numbers before it is recorded, with "
            "a link that opens it.",
            body=board.body,
        ),
    )
}
# inside a trained model (issue 23): each body in attention.ui.headpages (the heads' patterns) or ui.readouts (what
# the heads write)
INSIDE: dict[str, Lab] = {
    lab.key: lab
    for lab in (
        Lab(
            "every_head",
            "pages/14_every_head.py",
            "Every head",
            "Inside a model: every head",
            every_head_intro,
            body=every_head.body,
        ),
        Lab(
            "watch_it_learn",
            "pages/16_watch_it_learn.py",
            "Watch it learn",
            "Inside a model: watch it learn",
            "The shipped model was not born knowing how to continue a repeated sequence. For its first few hundred "
            "steps its loss sat on a plateau; then, within a short stretch of training, a previous-token head and an "
            "**induction head** formed and the loss on the repeated half dropped: a *phase change*. Move the slider "
            "through the snapshots taken while it trained to see the loss curves and every head's pattern at that "
            "moment. Then train one yourself, live.",
            body=watch_it_learn.body,
        ),
        Lab(
            "generate",
            "pages/17_generate.py",
            "Generate",
            "Inside a model: generation and the KV cache",
            "A model writes one token at a time. The prompt runs through it once; its keys and values are kept, in "
            "every layer, in the **KV cache**. Each new token then runs alone: only its query is computed, it "
            "attends every cached key, its own key and value join the cache (one row longer per layer), and the "
            "most likely next token is added. Press **Next token** and watch each step; on the shipped model, the "
            "prompt is the first half of a repeated text and a few tokens of its repeat, and the model completes it.",
            body=generate.body,
        ),
        Lab(
            "first_token",
            "pages/18_first_token.py",
            "First token",
            "Why does everything attend to the first token?",
            "Open the weights of a trained model and many heads put much of every row on token 1, whatever the text. "
            "Below, for the model and text you choose, how much weight each head puts on the first token, and why a "
            "head would: the attention sink, explained with this model's own numbers.",
            body=first_token.body,
        ),
        Lab(
            "logit_lens",
            "pages/19_logit_lens.py",
            "Logit lens",
            "Inside a model: the logit lens",
            "The model reads its prediction off the last layer's stream, through its unembedding (after a final "
            "norm, when it has one). Read **every** layer's stream the same way, as if no layer came after it, and "
            "you see the prediction form: which tokens each layer favours, and at which layer the final answer first "
            "comes out on top. Choose a position (the same one Every head predicts from) and a token to follow.",
            body=lens.body,
        ),
        Lab(
            "attribution",
            "pages/20_attribution.py",
            "Attribution",
            "Inside a model: each head's share",
            "Every head and every MLP adds its output to the stream, and the logit of a token is read off the sum. "
            "Hold the final norm's scale fixed (when the model has one) and the logit splits exactly into what each "
            "part wrote: each head (its output through W_o), each MLP, the embeddings and the biases. Which heads "
            "make this prediction? Click one in the heatmap to open it on the step pages and edit it.",
            body=attribution.body,
        ),
        Lab(
            "patching",
            "pages/21_patching.py",
            "Patching",
            "Inside a model: which heads carry the difference?",
            patching_intro,
            body=patching.body,
        ),
        Lab(
            "routes",
            "pages/22_routes.py",
            "Routes",
            "Inside a model: the routes of a prediction",
            "The lens shows *when* a prediction forms; the routes show *how it got there*. Every update of the "
            "stream is a sum of parts: each head's write from each earlier position, A[t, s] · (x_s W_v) W_o, each "
            "MLP's write, and the stream carried through. Each part gets a share of its sum by how close it is to "
            "the sum (Ferrando & Voita, 2024). Keep the parts above a threshold that connect to the position you "
            "choose, and you see the routes by which earlier tokens reach its prediction: which positions, through "
            "which heads, at which layers. Click a head's edge to open it on the step pages.",
            body=routes.body,
        ),
        Lab(
            "kv_cache",
            "pages/23_kv_cache.py",
            "The KV cache at length",
            "Inside a model: the KV cache at length",
            "Generating a long text keeps every layer's keys and values for every token so far: the **KV cache**, "
            "which grows with the text until it no longer fits. Practitioners keep only some of it, and each way of "
            "choosing is a claim about attention weights. On a real model and a text of up to 2,048 tokens, this page "
            "measures three of them: the **attention sink** (token 1 takes weight at every length), the **retrieval "
            "heads** (the few heads that copy from far back), and what each **eviction policy** keeps, head by head, "
            "and what dropping the rest costs the next tokens.",
            body=kv_cache.body,
        ),
    )
}
NAV = (
    [(OVERVIEW, "Overview")]
    + [(step.file, step.nav) for step in STEPS.values()]
    + [(lab.file, lab.nav) for lab in LABS.values()]
    + [(lab.file, lab.nav) for lab in INSIDE.values()]
)
