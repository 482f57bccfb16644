"""The overview's "Start here": a short guided path, one thing to notice and one to try on each page."""

from __future__ import annotations

import streamlit as st

from ...labs.stability import overflow_limit
from ..core import keys, session
from ..state import challenges
from . import nav

# page file -> (what to notice, what to try); pages not listed here are left out of the path
STOPS = {
    "pages/1_tokens.py": (
        "each token is one row of X, its embedding.",
        "press Shuffle tokens: without positions the outputs move with their tokens, unchanged.",
    ),
    "pages/2_weights.py": (
        "W_q, W_k and W_v are the only learned numbers here.",
        "double a cell of W_q, then watch the weights change on the Softmax page.",
    ),
    "pages/3_qkv.py": (
        "row i of Q is token i's query: X's row i times W_q.",
        "edit one cell of X beside it: only that token's row of Q, K and V moves.",
    ),
    "pages/4_scores.py": (
        "score (i, j) is query i dotted with key j.",
        "click a cell of the heatmap to see its sum written out.",
    ),
    "pages/5_scaling.py": (
        "every score is divided by √d_k.",
        "switch the mask to causal (sidebar, *Heads, mask and conventions*): the upper triangle becomes −∞.",
    ),
    "pages/6_softmax.py": (
        "each row of weights is positive and sums to 1.",
        "set the temperature to 0.1, then to 10, and compare the rows.",
    ),
    "pages/7_output.py": (
        "each output row is a weighted average of the value rows.",
        "edit W_v: the output changes, the weights do not.",
    ),
    "pages/8_reading.py": (
        "the top key and the entropy say how focused each row is.",
        "find the most focused row, then make it less focused.",
    ),
    "pages/9_why_sqrt_dk.py": (
        "without √d_k the scores' variance grows with d_k and the rows saturate.",
        "find your sentence's diamond on each chart.",
    ),
    "pages/10_stability.py": (
        f"exp overflows above {overflow_limit('float64'):.2f} in float64; subtracting the row max avoids it.",
        "set the temperature to 0.01 and read your headroom.",
    ),
    "pages/11_challenges.py": (
        "a challenge locks some matrices and checks a goal live.",
        "start the first challenge and meet it.",
    ),
    "pages/12_learn.py": (
        "the weights can be learned: gradient descent moves W_q and W_k until the pattern matches a target.",
        "train 'previous token', press Use these weights, then read the Softmax page.",
    ),
    "pages/13_flash.py": (
        "the tiles give exactly the full softmax's output, without ever holding the n × n matrix.",
        "step to a tile where m grows and read its rescale factor.",
    ),
    "pages/14_every_head.py": (
        "a trained model's heads each have a role: one looks at the previous token, one copies what came next.",
        "ablate the induction head and watch the repeated half's loss rise; then restore it.",
    ),
    "pages/16_watch_it_learn.py": (
        "the induction head forms late in training, and the repeated half's loss drops where it does.",
        "move the slider across the marked phase change and watch layer 2 · head 1's pattern appear.",
    ),
    "pages/17_generate.py": (
        "a model writing a token adds one row per layer to its key/value cache and attends every row kept.",
        "press Next token a few times and watch the cache grow and the repeat come out right.",
    ),
    "pages/18_first_token.py": (
        "a head with nothing to find still has to put its weights somewhere; many park them on token 1.",
        "find the head that puts the most weight on token 1, and see where in the text it does so.",
    ),
    "pages/19_logit_lens.py": (
        "read as the output, the stream after layer 1 does not predict the repeat yet; after layer 2 it does.",
        "choose a position in the first half, where there is nothing to copy, and compare.",
    ),
    "pages/20_attribution.py": (
        "the logit splits into each head's share, and the induction head's is the largest at a repeated token.",
        "click the largest head to open it on the step pages, then ablate it on Every head and come back.",
    ),
    "pages/22_routes.py": (
        "at a repeated token, a route runs from the earlier copy through the previous-token head into the induction "
        "head.",
        "lower the threshold until the route from the earlier copy appears, then click the induction head's edge.",
    ),
    "pages/21_patching.py": (
        "the previous-token head and the induction head each bring back most of the clean prediction on their own.",
        "type a pair of your own texts with one token changed, and see which heads carry that difference.",
    ),
}


def show(s: session.Session) -> None:
    """The guided path, or (once dismissed) a button to bring it back."""
    if s.tour_dismissed:
        st.button(
            "Show the guided path again",
            key=keys.TOUR_SHOW,
            on_click=challenges.set_tour,
            args=(False,),
            type="tertiary",
        )
        return
    with st.container(border=True, key=keys.TOUR):
        st.markdown("## Start here")
        st.markdown(
            "New to attention? Walk the pages in order. On each, look for one thing, then try one thing; "
            "everything you change carries over to the next page."
        )
        pages = {p: page for p, page in zip([path for path, _ in nav.NAV], nav.pages(), strict=True)}
        stops = [(pages[p], *STOPS[p]) for p in pages if p in STOPS]
        half = (len(stops) + 1) // 2
        columns = st.columns(2, gap="large")
        for i, (page, notice, attempt) in enumerate(stops):  # down the left column, then the right
            with columns[i // half]:
                st.page_link(page, label=f"**{i + 1}. {page.title}**", icon=":material/arrow_forward:")
                st.markdown(f"**Notice** {notice}  \n**Try** {attempt}")
        st.button(
            "Got it, hide this", key=keys.TOUR_HIDE, on_click=challenges.set_tour, args=(True,), icon=":material/close:"
        )
