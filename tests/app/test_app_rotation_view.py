"""The Q·K·V page's rotation step (AppTest): with rotary positions the page says Q and K are shown after the rotation,
which columns it turns, and shows q and k before it (X·W) against loops over the page's own X and W; a model head with
a partial rotation (GPT-NeoX's share) shows its own q before the rotation and says which columns turn; without rotary
positions, nothing is said."""

from __future__ import annotations

import numpy as np

from attention.model import Config, Model, init_params
from attention.model.qk_steps import PROJECTED, qk_steps
from attention.model.vocab import WordVocab
from attention.ui.core import keys, models
from tests.helpers.apptest import app, goto, head_button, journey, no_exception, put_inside, session, texts


def _loop(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """X·W by loops: (n, d) · (d, k)."""
    n, d = X.shape
    out = np.zeros((n, W.shape[1]))
    for i in range(n):
        for j in range(W.shape[1]):
            out[i, j] = sum(float(X[i, t]) * float(W[t, j]) for t in range(d))
    return out


def _said(at) -> str:
    return " ".join(t.replace("**", "") for t in texts(at.markdown) if "The rotation (RoPE)" in t)


def _before(at, n: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """The last two tables of shape (n, cols): q and k before the rotation."""
    found = [d.value for d in at.dataframe if getattr(d.value, "shape", None) == (n, cols)]
    numbers = [f.to_numpy(dtype=float) for f in found if all(f[c].dtype.kind == "f" for c in f.columns)]
    return numbers[-2], numbers[-1]


def test_a_rotary_state_shows_q_and_k_before_the_rotation() -> None:
    at = app("qkv", {"preset": "the_cat_sat", "pos": "rotary"})
    no_exception(at)
    s = session(at)
    assert "after the rotation" in _said(at) and "on every column" in _said(at)
    X, n = s.matrices["X"], len(s.tokens)
    q, k = _before(at, n, 4)
    np.testing.assert_allclose(q, _loop(X, s.matrices["W_q"])[:, :4], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k, _loop(X, s.matrices["W_k"])[:, :4], rtol=1e-12, atol=1e-12)
    assert not _said(app("qkv", {"preset": "the_cat_sat"}))  # no rotary positions: no rotation step


def test_a_model_head_with_a_partial_rotation_shows_its_own_q_before_it() -> None:
    cfg = Config(
        vocab_size=20, n_ctx=16, d_model=16, n_layers=2, n_heads=4, d_mlp=24, positions="rotary",
        rotary_layout="halves", rotary_dims=2, rope_theta=1000.0,
    )  # fmt: skip
    m = Model(cfg, init_params(cfg, 3, std=0.5), WordVocab([f"w{i}" for i in range(20)]), name="neox-like")
    held = models.hold(m, "trained")
    at = journey("every_head")
    put_inside(at, held=((held, "Made here"),))
    at = at.run()
    at = at.selectbox(key=keys.INSIDE_MODEL).set_value(held).run()
    at = goto(head_button(at, "open", 1, 2).click().run(), "qkv")
    no_exception(at)
    ids = list(session(at).model_head.ids)
    assert "columns 1–2 of each head's 4 (the others pass unchanged)" in _said(at)
    steps = qk_steps(m.run(ids), 1, 2)
    q, k = _before(at, len(ids), 4)
    np.testing.assert_allclose(q, steps.q[PROJECTED], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k, steps.k[PROJECTED], rtol=1e-12, atol=1e-12)
