"""A QK-norm model on Every head (AppTest): its heads open on the step pages (the norm is a step of their pass, its
gains options), and the page shows a chosen head's q and k after each step the model takes, with the engine's own
numbers, and the weights they make within 1e-9 of the model's; a model without QK-norm shows no such section."""

from __future__ import annotations

import re

import numpy as np

from attention.model import Config, Model, init_params
from attention.model.qk_steps import NORMED, PROJECTED, ROTATED, qk_steps
from attention.model.vocab import WordVocab
from attention.ui.core import keys, models
from tests.helpers.apptest import app, head_button, no_exception, put_inside, select, session, texts

CFG = Config(
    vocab_size=20, n_ctx=16, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, d_mlp=24, positions="rotary",
    norm="rmsnorm", qk_norm=True, head_dim=6, rotary_layout="halves", layer_types=("sliding", "full"), sliding_window=3,
)  # fmt: skip


def _model(config: Config) -> Model:
    params = init_params(config, 5, std=0.5)
    rs = np.random.RandomState(1)
    for name, value in params.items():
        if name.endswith(".g"):
            params[name] = value + rs.normal(0.0, 0.3, value.shape)  # the norms' gains away from 1
    return Model(config, params, WordVocab([f"w{i}" for i in range(config.vocab_size)]), name="qk-normed")


def _tables(at, n: int) -> list[np.ndarray]:
    return [d.value.to_numpy(dtype=float) for d in at.dataframe if getattr(d.value, "shape", None) == (n, 6)]  # d_head


def test_a_qk_norm_heads_steps_are_the_models_own_and_it_opens_on_the_step_pages() -> None:
    m = _model(CFG)
    at = app("every_head")
    ids = tuple(range(1, 11))
    put_inside(at, model=models.hold(m, "trained"), ids=ids, sequence="", position=5)
    at = at.run()
    no_exception(at)
    assert not head_button(at, "open", 0, 1).disabled
    at = select(at, keys.INSIDE_QK_HEAD, (1, 3))  # layer 2 · head 4, reading key/value head 2
    no_exception(at)
    assert session(at).inside.qk_head == (1, 3)
    want = qk_steps(m.run(list(ids)), 1, 3)
    assert want.names == (PROJECTED, NORMED, ROTATED) and want.kv_head == 1
    got = _tables(at, len(ids))[-6:]  # q and k after each of the three steps
    for k, name in enumerate(want.names):
        np.testing.assert_allclose(got[2 * k], want.q[name], rtol=0, atol=1e-12)
        np.testing.assert_allclose(got[2 * k + 1], want.k[name], rtol=0, atol=1e-12)
    said = " ".join(texts(at.caption))
    gap = float(re.search(r"differ from the model's own by at most ([0-9.]+e[+-][0-9]+)", said).group(1))
    assert gap < 1e-9
    assert "k (key/value head 2) after QK-norm" in said


def test_a_model_without_qk_norm_shows_no_steps_section() -> None:
    cfg = Config(vocab_size=20, n_ctx=16, d_model=16, n_layers=2, n_heads=2, d_mlp=24, positions="rotary")
    at = app("every_head")
    put_inside(at, model=models.hold(_model(cfg), "trained"), ids=tuple(range(1, 9)), sequence="", position=3)
    at = at.run()
    no_exception(at)
    assert not [h for h in texts(at.subheader) if "step by step" in h]
    assert not head_button(at, "open", 0, 1).disabled


def test_learn_the_weights_trains_a_qk_norm_heads_gains_and_they_flow_into_the_model() -> None:
    """A QK-norm head opened on the step pages: Learn the weights offers q_norm and k_norm beside the matrices, trains
    the gains alone (the matrices held), and Use these weights puts them into the options: the Q·K·V page's trace uses
    them and the model panel says they replace the layer's gains."""
    from attention.learn import train
    from attention.ui.core import compute
    from attention.ui.modelpages import on_steps
    from tests.helpers.apptest import goto, journey

    m = _model(CFG)
    at = journey("every_head")
    put_inside(at, model=models.hold(m, "trained"), ids=tuple(range(1, 11)), sequence="", position=5)
    at = at.run()
    at = head_button(at, "open", 1, 3).click().run()
    at = goto(at, "learn")
    no_exception(at)
    s = session(at)
    offered = [c.key for c in at.checkbox if c.key.startswith("learn.learns.")]
    assert [k.split(".")[2] for k in offered] == ["X", "W_q", "W_k", "W_v", "W_o", "q_norm", "k_norm"]
    assert any("QK-norm's gains" in t for t in texts(at.caption))
    at = at.checkbox(key=keys.learn_setting("learns.q_norm", s.grids)).check().run()
    at = at.checkbox(key=keys.learn_setting("learns.k_norm", s.grids)).check().run()
    at = at.checkbox(key=keys.learn_setting("learns.W_q", s.grids)).uncheck().run()
    at = at.checkbox(key=keys.learn_setting("learns.W_k", s.grids)).uncheck().run()
    assert session(at).learn.learn == ("q_norm", "k_norm")
    at = at.button(key="learn.train").click().run()
    no_exception(at)
    s = session(at)
    r = s.learned.result
    cfg = s.learn
    want = train(s.tokens, s.matrices, s.options, "previous", learn=("q_norm", "k_norm"), optimiser=cfg.optimiser,
                 lr=cfg.lr, steps=cfg.steps, seed=cfg.seed)  # fmt: skip
    np.testing.assert_allclose(r.matrices["q_norm"], want.matrices["q_norm"], rtol=1e-9)  # the engine's run again
    assert r.loss < r.losses[0] and not np.allclose(r.matrices["q_norm"], s.options.q_norm)
    at = at.button(key="learn.use").click().run()
    no_exception(at)
    s = session(at)
    assert s.options.q_norm == tuple(float(g) for g in r.matrices["q_norm"])
    assert s.options.k_norm == tuple(float(g) for g in r.matrices["k_norm"])
    assert all(np.array_equal(s.matrices[k], s.origin.base[k]) for k in s.origin.base)  # the matrices held
    np.testing.assert_allclose(compute.current_trace(s).weights, r.weights, rtol=0, atol=1e-12)  # float64 rounding
    at = goto(at, "qkv")
    no_exception(at)
    flows, stays = on_steps.edits(s)
    assert set(flows) == {"q_norm", "k_norm"} and not stays
    said = " ".join(texts(at.markdown))
    assert "replace layer 2's QK-norm gains, for every head of that layer" in said


def test_other_heads_fit_the_gains_and_say_so() -> None:
    """A QK-norm head split into 2 heads in the sidebar: the gains keep their first 3 (each head is 3 columns wide now)
    and the page says so, the pass computes; back to 1 head, the 3 new columns' gains are the head's own again (not 1s:
    that would edit every head of the model's layer)."""
    from attention.ui.core import compute
    from tests.helpers.apptest import conventions, errors, goto, journey

    at = journey("every_head")
    put_inside(at, model=models.hold(_model(CFG), "trained"), ids=tuple(range(1, 11)), sequence="", position=5)
    at = head_button(at.run(), "open", 1, 0).click().run()
    at = conventions(goto(at, "qkv"))
    own = session(at).options.q_norm
    at = select(at, keys.SB_HEADS, 2)
    no_exception(at)
    s = session(at)
    assert s.options.heads == 2 and s.options.q_norm == own[:3] and not errors(at)
    assert any("each head now has 3: the first 3 gains are kept" in t for t in texts(at.info))
    assert compute.current_trace(s).weights.shape == (2, 10, 10)
    at = select(at, keys.SB_HEADS, 1)
    no_exception(at)
    assert session(at).options.q_norm == own and not errors(at)
    assert any("the new ones are the head's own." in t for t in texts(at.info))


def test_a_resize_fits_the_gains_too() -> None:
    """d_k resized on a QK-norm head (as the Weights page's control does): the gains follow the head's new width."""
    from attention.ui.core import session as session_mod
    from attention.ui.state import reshapes

    s = session_mod.head_session(models.HeadRef(models.hold(_model(CFG), "trained"), tuple(range(1, 9)), 0, 1))
    own = s.options.q_norm
    note = reshapes.resize(s, d_k=4)
    assert s.options.q_norm == own[:4] and len(s.options.k_norm) == 4 and "each head now has 4" in note
    note = reshapes.resize(s, d_k=8)  # the head's own gains reach 6 columns: then 1s
    assert len(own) == 6 and s.options.q_norm == (*own, 1.0, 1.0), (own, s.options.q_norm)
    assert "the new ones are the head's own where it has them, else 1" in note
