"""Locks hold for every way a matrix can change (issue 20 §2): while a challenge runs, a new d_k or d_model, the
other projection, new embeddings, shuffled tokens or "Use these weights" that would change a locked matrix are
refused in the one writer with a message naming the matrix, and the session stays exactly as it was."""

from __future__ import annotations

import numpy as np

from attention.labs import challenges as ch
from tests.helpers.apptest import conventions, goto, journey, no_exception, select, session, texts


def _start(cid: str, page: str = "challenges"):
    at = journey("challenges")
    at = select(at, "ch.choice", cid)
    at = at.button(key="ch.start.builtin").click().run()
    return goto(at, page) if page != "challenges" else at


def _same(at, before) -> None:
    s = session(at)
    assert s.challenge is not None
    assert s.options == before.options and s.tokens == before.tokens
    for k in before.matrices:
        assert np.array_equal(s.matrices[k], before.matrices[k]), k
    assert not ch.evaluate(s.challenge, _trace(at)).blocked


def _trace(at):
    """The engine on the session's numbers (an independent computation)."""
    import attention

    s = session(at)
    m = s.matrices
    return attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=s.tokens, options=s.options)


def _snapshot(at):
    s = session(at)
    return type(
        "Snap", (), {"options": s.options, "tokens": s.tokens, "matrices": {k: v.copy() for k, v in s.matrices.items()}}
    )


def _refused(at, word: str) -> None:
    said = texts(at.error)
    assert any("Refused" in t and word in t for t in said), said


def test_a_new_d_k_that_would_resize_a_locked_matrix_is_refused() -> None:
    at = _start("sharpen_cat", "weights")  # W_q editable; W_k locked: d_k resizes both
    before = _snapshot(at)
    box = next(n for n in at.number_input if n.label.startswith("d_k"))
    at = box.set_value(box.value + 2).run()
    no_exception(at)
    _refused(at, "W_k")
    _same(at, before)
    assert next(n for n in at.number_input if n.label.startswith("d_k")).value == before.matrices["W_q"].shape[1]


def test_the_other_projection_and_new_embeddings_are_refused() -> None:
    at = _start("sharpen_cat", "tokens")
    before = _snapshot(at)
    other = "x_wt" if session(at).options.projection == "x_w" else "x_w"
    at = conventions(at)
    at = at.radio(key="sb.projection").set_value(other).run()
    no_exception(at)
    _refused(at, "W_k")
    _same(at, before)
    box = next(b for b in at.selectbox if b.label.startswith("Embeddings"))
    at = box.set_value("random").run()  # sharpen_cat locks X
    no_exception(at)
    _refused(at, "X")
    _same(at, before)
    assert next(b for b in at.selectbox if b.label.startswith("Embeddings")).value == "preset"  # shows what is


def test_use_these_weights_cannot_change_a_locked_w_q() -> None:
    at = _start("sat_looks_back", "learn")  # W_k editable; W_q locked; the Learn page learns W_q and W_k
    before = _snapshot(at)
    at = at.button(key="learn.train").click().run()
    no_exception(at)
    at = at.button(key="learn.use").click().run()
    no_exception(at)
    _refused(at, "W_q")
    _same(at, before)
