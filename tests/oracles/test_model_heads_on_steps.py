"""A model's head on the step pages is the head the model computed (issue 32, "the step pages then open any head
exactly as they open a GPT-2 head"): for every family, every layer and every head, the generic engine run on the
head's X, W_q, W_k, W_v and options gives the model's own weights and output. The models are tiny and random, built
from attention.model.Config (no transformers needed); the families' own configs are checked against transformers in
tests/test_model_families.py.

The bound: every number here is a sum of at most d_model + 1 = 65 products of float64 values of order 1, then a
softmax and a mix of at most 8 rows, so the model's pass and the engine's differ by a few units in the last place
(about 1e-15 relative) when they do the same thing in another order; 1e-12 leaves room for that and no more. A change
of the rotation (base, pairs, rotated columns, scaling) moves the weights by more than 1e-6: the test below shows it.
A QK-norm head (Qwen3, Gemma 3: each head's q and k normed with the layer's gains) opens with its gains as options,
under the same bound; a QK-norm across every head (OLMo-2) does not open, and says why.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import attention
from attention.errors import AttentionError
from attention.model import Config, Model, init_params
from attention.model.vocab import WordVocab
from attention.options import Options
from attention.ui.core import models
from tests.helpers.apptest import head_button
from tests.helpers.families import FAMILIES as MADE_FAMILIES
from tests.helpers.families import tiny_config

TOL = 1e-12
N = 8  # tokens: longer than every window below, so each sliding layer's window bites
SIZES = dict(vocab_size=30, n_ctx=16, d_model=16, n_layers=2, n_heads=4, d_mlp=24)
LLAMA = dict(
    SIZES,
    n_kv_heads=2,
    norm="rmsnorm",
    mlp="gated",
    activation="silu",
    bias=False,
    tied=False,
    positions="rotary",
    rotary_layout="halves",
    rope_theta=1e5,
)
EXAMPLES = {name: tiny_config(name) for name in MADE_FAMILIES}  # every example of every family that opens
FAMILIES: dict[str, Config] = {  # GPT-2 (the Config defaults), every family without QK-norm, and rotations
    "gpt2": Config(**SIZES),
    **{name: c for name, c in EXAMPLES.items() if not c.qk_norm},
    "llama, linear scaling": Config(**LLAMA, rope_scaling="linear", rope_factor=2.0),
    "llama, llama3 scaling": Config(  # d_head 4: wavelengths 6.3 and 1987, one kept, one mixed
        **LLAMA,
        rope_scaling="llama3",
        rope_factor=8.0,
        rope_low_freq_factor=1.0,
        rope_high_freq_factor=4.0,
        rope_original_context=4000,
    ),
    "interleaved, odd head width": Config(**{**SIZES, "d_model": 20}, positions="rotary", rope_theta=500.0),
}
QK_NORM: dict[str, Config] = {name: c for name, c in EXAMPLES.items() if c.qk_norm}
PER_HEAD = [name for name, c in QK_NORM.items() if c.qk_norm_scope == "head"]  # these heads open on the step pages
ACROSS = [name for name, c in QK_NORM.items() if c.qk_norm_scope != "head"]  # these stay shut
PARTIAL = [name for name, c in EXAMPLES.items() if c.rotary_dims is not None]  # rotating part of each head
SLIDING = [name for name, c in EXAMPLES.items() if "sliding" in c.layer_types]


def _model(config: Config, seed: int = 1) -> Model:
    params = init_params(config, seed, std=0.5)  # wide enough that the weights are far from uniform
    rs = np.random.RandomState(seed + 100)
    for name, value in params.items():
        if name.rsplit(".", 1)[-1].startswith("b_") or name.endswith(".g"):  # biases and gains not 0 and 1
            params[name] = value + rs.normal(0.0, 0.3, value.shape)
    return Model(config, params, WordVocab([f"w{i}" for i in range(config.vocab_size)]), name="tiny")


def _ids() -> list[int]:
    return [int(i) for i in np.random.RandomState(7).randint(0, SIZES["vocab_size"], N)]


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def _recomputed(t: attention.Trace, options: Options | None = None) -> attention.Trace:
    return attention.self_attention(t.X, t.W_q, t.W_k, t.W_v, options=options or t.options)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_head_recomputed_from_its_x_w_and_options_is_the_models(family: str) -> None:
    m = _model(FAMILIES[family])
    run = m.run(_ids())
    for layer in range(m.config.n_layers):
        for head in range(m.config.n_heads):
            t = run.head(layer, head)
            again = _recomputed(t)
            assert _relative(again.weights, t.weights) < TOL, (family, layer, head)
            assert _relative(again.output, t.output) < TOL, (family, layer, head)
            if t.Q_raw is not None:  # the rotation itself, from the same q before it
                assert _relative(again.Q, t.Q) < TOL and _relative(again.K, t.K) < TOL


@pytest.mark.parametrize("family", list(FAMILIES))
def test_head_preset_opens_the_models_numbers(family: str) -> None:
    m = _model(FAMILIES[family])
    ids = _ids()
    model_id = models.hold(m, "upload")
    run = m.run(ids)
    W_o = m.layer_weights(1)[3]
    d = m.config.d_head
    for head in range(m.config.n_heads):
        preset = models.head_preset(models.HeadRef(model_id, tuple(ids), 1, head))
        t, shown = run.head(1, head), preset.compute()
        assert preset.options == t.options
        assert _relative(shown.weights, t.weights) < TOL
        assert _relative(shown.output, t.output @ W_o[head * d : (head + 1) * d]) < TOL


@pytest.mark.parametrize("family", PER_HEAD)
def test_every_qk_norm_head_opens_on_the_step_pages_with_the_models_numbers(family: str) -> None:
    """Every head of every layer of a per-head QK-norm family (Qwen3, Gemma 3): the preset the step pages open carries
    the layer's gains as applied (Gemma's 1 + w) and ε, and the generic engine recomputes from it the model's own
    scores, weights, q and k after the norm and after the rotation, and the head's write, to 1e-12. One gain 1% off
    moves the weights far beyond the bound."""
    c = QK_NORM[family]
    m = _model(c)
    ids = _ids()
    model_id = models.hold(m, "upload")
    run = m.run(ids)
    for layer in range(c.n_layers):
        W_o = m.layer_weights(layer)[3]
        gains = tuple(float(g) for g in c.norm_offset + m.params[f"{layer}.q_norm.g"])
        for head in range(c.n_heads):
            preset = models.head_preset(models.HeadRef(model_id, tuple(ids), layer, head))
            t, shown = run.head(layer, head), preset.compute()
            o = preset.options
            assert o == t.options and o.q_norm == gains and o.k_norm and o.qk_norm_eps == c.ln_eps
            for name in ("scores", "weights", "Q_raw", "K_raw", "Q", "K"):
                assert _relative(getattr(shown, name), getattr(t, name)) < TOL, (family, layer, head, name)
            assert _relative(shown.output, t.output @ W_o[head * c.d_head : (head + 1) * c.d_head]) < TOL
            assert "the gains are edited on the Q·K·V page" in preset.description
            mats = preset.matrices()
            off = attention.self_attention(mats["X"], mats["W_q"], mats["W_k"], mats["W_v"],
                                           options=o.replace(q_norm=tuple(1.01 * g for g in o.q_norm)))  # fmt: skip
            assert _relative(off.weights, t.weights) > 1e-6
    assert PER_HEAD == ["qwen3", "gemma3_text"]


def test_the_rotation_options_are_the_models_own() -> None:
    o = _model(FAMILIES["llama, llama3 scaling"]).run(_ids()).head(0, 0).options
    assert (o.rope_theta, o.rotary_layout, o.rotary_dims) == (1e5, "halves", None)
    assert (o.rope_scaling, o.rope_factor, o.rope_original_context) == ("llama3", 8.0, 4000)
    for name in PARTIAL:  # a family that turns part of each head (GPT-NeoX's rotary_pct)
        c = EXAMPLES[name]
        part = _model(c).run(_ids()).head(1, 3).options
        assert (part.rope_theta, part.rotary_dims, part.positions) == (c.rope_theta, c.rotary_dims, "rotary")
        assert part.rotary_dims < c.d_head
    assert PARTIAL
    gpt2 = _model(FAMILIES["gpt2"]).run(_ids()).head(0, 0).options
    assert gpt2.plain_rotation and gpt2.positions == "none"


@pytest.mark.parametrize("family", list(QK_NORM))
def test_a_qk_norm_heads_layers_turn_as_their_options_say(family: str) -> None:
    """QK-norm heads are not recomputed from X and W, but their rotation is still the options': q and k after the
    norm (Q_raw, K_raw) turned by the options are the model's; a local layer (Gemma 3) has its own base, no scaling
    and its window, a global one the config's base and scaling."""
    c = QK_NORM[family]
    run = _model(c).run(_ids())
    for layer in range(c.n_layers):
        t = run.head(layer, 1)
        assert _relative(t.options.rotate(t.Q_raw), t.Q) < TOL and _relative(t.options.rotate(t.K_raw), t.K) < TOL
        o = t.options
        if c.layer_type(layer) == "sliding" and c.rope_local_theta is not None:
            assert (o.rope_theta, o.rope_scaling) == (c.rope_local_theta, "none")
            assert o.mask == ("causal", "window") and o.window == c.sliding_window
        else:
            assert (o.rope_theta, o.rope_scaling, o.rope_factor) == (c.rope_theta, c.rope_scaling, c.rope_factor)


@pytest.mark.parametrize("family", SLIDING)
def test_a_sliding_layer_shows_its_window_in_the_mask(family: str) -> None:
    c = EXAMPLES[family]
    run = _model(c).run(_ids())
    i, j = np.indices((N, N))
    for layer in range(c.n_layers):
        t, w = run.head(layer, 0), c.sliding_window
        if c.layer_type(layer) == "full":
            assert t.options.mask == ("causal",)
            continue
        assert w < N and t.options.mask == ("causal", "window") and t.options.window == w
        np.testing.assert_array_equal(t.allowed, (j <= i) & (i - j < w))
        np.testing.assert_array_equal(_recomputed(t).allowed, t.allowed)
        assert np.all(t.weights[i - j >= w] == 0)


@pytest.mark.parametrize(
    "change",
    [
        dict(rope_theta=10000.0),
        dict(rotary_layout="interleaved"),
        dict(rotary_dims=2),
        dict(rope_scaling="none"),
        dict(rope_factor=2.0),
        dict(rope_original_context=256),  # the second pair stretched instead of mixed
    ],
)
def test_a_change_of_the_rotation_changes_the_numbers(change: dict) -> None:
    """The exactness above means something: each rotation option, changed, moves the weights far beyond the bound."""
    t = _model(FAMILIES["llama, llama3 scaling"]).run(_ids()).head(0, 1)
    moved = _recomputed(t, t.options.replace(**change))
    assert _relative(moved.weights, t.weights) > 1e-6


def test_the_defaults_turn_as_before() -> None:
    """The paper's rotation, written out: pairs (2i, 2i+1) turned by pos · 10000^(−2i/d), by a naive loop."""
    rs = np.random.RandomState(0)
    x = rs.normal(size=(5, 6))
    want = x.copy()
    for pos in range(5):
        for i in range(3):
            theta = pos * 10000.0 ** (-2 * i / 6)
            a, b = x[pos, 2 * i], x[pos, 2 * i + 1]
            want[pos, 2 * i], want[pos, 2 * i + 1] = (
                a * np.cos(theta) - b * np.sin(theta),
                a * np.sin(theta) + b * np.cos(theta),
            )
    np.testing.assert_allclose(Options(positions="rotary").rotate(x), want, rtol=0, atol=1e-14)


def test_halves_partial_and_scaled_rotation_by_a_naive_loop() -> None:
    """rotate_half on the first r columns with linearly scaled frequencies, as Hugging Face writes it, by a loop."""
    rs = np.random.RandomState(1)
    x, r, base, factor = rs.normal(size=(4, 8)), 4, 500.0, 2.0
    want = x.copy()
    for pos in range(4):
        for i in range(r // 2):
            theta = pos * base ** (-2 * i / r) / factor
            a, b = x[pos, i], x[pos, i + r // 2]
            want[pos, i], want[pos, i + r // 2] = (
                a * np.cos(theta) - b * np.sin(theta),
                a * np.sin(theta) + b * np.cos(theta),
            )
    o = Options(rope_theta=base, rotary_layout="halves", rotary_dims=r, rope_scaling="linear", rope_factor=factor)
    np.testing.assert_allclose(o.rotate(x), want, rtol=0, atol=1e-14)


@pytest.mark.parametrize(
    "values, field",
    [
        (dict(rope_theta=0), "rope_theta"),
        (dict(rope_theta=float("nan")), "rope_theta"),
        (dict(rotary_layout="pairs"), "rotary_layout"),
        (dict(rotary_dims=3), "rotary_dims"),
        (dict(rotary_dims=0), "rotary_dims"),
        (dict(rope_scaling="yarn"), "rope_scaling"),
        (dict(rope_factor=-1.0), "rope_factor"),
        (dict(rope_original_context=0), "rope_original_context"),
        (dict(rope_scaling="llama3", rope_low_freq_factor=4.0, rope_high_freq_factor=1.0), "rope_high_freq_factor"),
    ],
)
def test_each_rotation_option_is_checked_by_name(values: dict, field: str) -> None:
    with pytest.raises(AttentionError) as caught:
        Options(**values).validate()
    assert caught.value.field == field and field in caught.value.message


def test_rotary_dims_wider_than_a_head_is_named() -> None:
    p = attention.blank(3, 4, 4, seed=0)
    m = p.matrices()
    with pytest.raises(AttentionError, match="rotary_dims = 6 is wider than a head") as caught:
        attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], positions="rotary", rotary_dims=6)
    assert caught.value.field == "rotary_dims"


def test_the_rotation_travels_in_a_preset_file_and_is_left_out_when_plain() -> None:
    p = attention.blank(4, 4, 4, seed=2)
    o = Options(
        positions="rotary",
        rope_theta=1e5,
        rotary_layout="halves",
        rotary_dims=2,
        rope_scaling="llama3",
        rope_factor=8.0,
        rope_original_context=16,
    )
    saved = attention.from_state(p.tokens, p.matrices(), o)
    again = attention.parse_preset(saved.to_json(), "again.json")
    assert again.options == o
    np.testing.assert_array_equal(again.compute().weights, saved.compute().weights)
    plain = attention.from_state(p.tokens, p.matrices(), Options(positions="rotary")).to_json()
    assert not any(name in plain for name in ("rope_", "rotary_"))
    assert Options.from_dict(o.to_dict()) == o


@pytest.mark.parametrize("family", ACROSS)
def test_a_head_of_a_qk_norm_across_every_head_is_refused_on_the_step_pages_by_name(family: str) -> None:
    m = _model(QK_NORM[family])
    model_id = models.hold(m, "upload")
    with pytest.raises(AttentionError) as caught:
        models.head_preset(models.HeadRef(model_id, tuple(_ids()), 1, 0))
    message = caught.value.message
    assert message.startswith("Layer 2 · head 1 of tiny normalises its queries and keys across every head at once")
    assert "the step pages cannot open it" in message and "Every head shows its attention" in message


def test_the_backward_pass_turns_back_as_the_options_turn() -> None:
    """∂Q_raw = Rᵀ ∂Q for any rotation: against finite differences of Σ G ⊙ R(Q_raw)."""
    from attention.backward import rotary_backward

    o = Options(
        positions="rotary",
        rope_theta=300.0,
        rotary_layout="halves",
        rotary_dims=4,
        rope_scaling="linear",
        rope_factor=3.0,
    )
    rs = np.random.RandomState(3)
    q, g = rs.normal(size=(5, 6)), rs.normal(size=(5, 6))
    grad = rotary_backward(g, o)
    eps, numeric = 1e-6, np.zeros_like(q)
    for idx in np.ndindex(q.shape):
        up, down = q.copy(), q.copy()
        up[idx] += eps
        down[idx] -= eps
        numeric[idx] = (np.sum(g * o.rotate(up)) - np.sum(g * o.rotate(down))) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=0, atol=1e-8)


def test_options_dataclass_fields_are_all_known_to_the_rules() -> None:
    from attention.options import RULES

    assert sorted(f.name for f in dataclasses.fields(Options)) == sorted(RULES)


# ---------------------------------------------------------------- the pages, on a Llama folder listed by the server


@pytest.fixture
def llama_server(llama, monkeypatch: pytest.MonkeyPatch):  # noqa: F811 - the tiny Llama folder of the checkpoint tests
    """The tiny Llama (4 query heads sharing 2 key/value heads, halves layout) listed as the server's model."""
    monkeypatch.setenv("ATTENTION_MODELS", f"tiny-llama={llama}")
    return attention.model.load(llama)


def _llama_page():
    from tests.helpers.apptest import journey, no_exception

    at = journey("every_head")
    at = at.selectbox(key="inside.w.model").set_value("server:tiny-llama").run()
    no_exception(at)
    return at


def test_the_chooser_says_the_precision_the_notes_and_the_groups(llama_server) -> None:
    from tests.helpers.apptest import texts

    at = _llama_page()
    caption = " ".join(texts(at.caption))
    assert "4 heads (8 in all, 2 query heads sharing each key/value head)" in caption, caption
    assert "It computes in **float64** (8 bytes a number)." in caption
    said = caption + " " + " ".join(texts(at.warning))  # a tokenizer that is probably not the model's is a warning
    for note in llama_server.notes:  # the loader's own sentences (the rule that chose float64)
        assert note in said, (note, said)
    assert "Layer 1: heads 1–2 read key/value head 1; heads 3–4 read key/value head 2" in caption
    assert "Layer 2: heads 1–2 read key/value head 1" in caption


def test_a_llama_head_opens_on_the_step_pages_with_the_models_numbers_and_travels(llama_server) -> None:
    from attention.ui.core import compute
    from tests.helpers.apptest import app, goto, no_exception, session, texts

    at = _llama_page()
    at = head_button(at, "open", 1, 2).click().run()  # layer 2 · head 3: key/value head 2
    no_exception(at)
    at = goto(at, "weights")
    no_exception(at)
    s = session(at)
    t = llama_server.run(list(s.model_head.ids)).head(1, 2)
    assert s.options == t.options and s.options.rotary_layout == "halves" and not s.options.plain_rotation
    shown = compute.current_trace(s)
    assert _relative(shown.weights, t.weights) < TOL
    caption = " ".join(texts(at.caption))
    assert "This W_k block is shared: query heads 3, 4 of layer 2 all read it" in caption, caption
    assert "This W_v block is shared" in caption and "This W_q block" not in caption
    query = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}
    again = app("weights", query)
    no_exception(again)
    s2 = session(again)
    assert s2.model_head == s.model_head and s2.options == s.options
    np.testing.assert_array_equal(compute.current_trace(s2).weights, shown.weights)


def test_a_grouped_models_cache_size_counts_its_key_value_heads() -> None:
    from attention.ui.modelpages import walks

    m = _model(FAMILIES["llama"])  # 4 query heads, 2 key/value heads
    gen = m.generate_cached(_ids()[:4], 3)
    held = gen.cache[0][0].shape[-2]  # the tokens each layer's cache holds
    assert walks.cache_bytes(m, held, m.dtype.itemsize) == sum(K.nbytes + V.nbytes for K, V in gen.cache)


@pytest.mark.parametrize("family", [f for f in MADE_FAMILIES if f not in ACROSS])
def test_the_step_pages_recompute_equals_transformers_head_by_head(made, family: str) -> None:  # noqa: F811
    """The independent oracle: each head recomputed by the generic engine from head_preset's X, W and options (QK-norm's
    gains included) equals transformers' attention weights (float64 throughout) to 1e-6 relative, the bound the family
    tests use."""
    folder = made(family).folders["float32"]
    m = attention.model.load(folder, dtype=np.float64)
    ids = [int(i) for i in np.random.RandomState(2).randint(3, m.config.vocab_size, 12)]
    _, weights = made(family).oracle(ids)
    model_id = models.hold(m, "upload")
    for layer in range(m.config.n_layers):
        for head in range(m.config.n_heads):
            shown = models.head_preset(models.HeadRef(model_id, tuple(ids), layer, head)).compute()
            assert _relative(shown.weights, weights[layer][head]) < 1e-6, (family, layer, head)


@pytest.mark.parametrize("family", ACROSS)
def test_a_qk_norm_models_heads_do_not_open_and_every_head_says_why(made, monkeypatch, family: str) -> None:  # noqa: F811
    """A family whose QK-norm spans every head (OLMo-2): its heads stay shut on the step pages, Every head says why in
    the scope's words, and shows any head's q and k step by step within float rounding of the model's."""
    from attention.model.qk_steps import WHAT
    from tests.helpers.apptest import journey, no_exception, texts

    monkeypatch.setenv("ATTENTION_MODELS", f"tiny-{family}={made(family).folders['float32']}")
    at = journey("every_head")
    at = at.selectbox(key="inside.w.model").set_value(f"server:tiny-{family}").run()
    no_exception(at)
    what = WHAT[QK_NORM[family].qk_norm_scope]
    assert any(f"normalises {what} (QK-norm) before RoPE" in t for t in texts(at.caption)), what
    button = head_button(at, "open", 1, 0)
    assert button.disabled and "QK-norm" in button.help
    # instead, any head's q and k step by step, read-only, the weights they give within float rounding of the model's
    assert any("step by step (read-only)" in t for t in texts(at.subheader))
    said = " ".join(texts(at.caption))
    assert "q after QK-norm" in said and "k (key/value head 1) after the rotation" in said, said
    gap = float(said.split("differ from the model's own by at most ")[1].split(" ")[0].rstrip("."))
    assert gap < 1e-9, gap


def _qkv_page_of(family: str, made, monkeypatch):  # noqa: ANN001, ANN202 - the fixtures, an AppTest
    """Every head on the family's transformers-made model (listed by the server) on 12 random words (the tiny
    tokenizer reads the default text as padding), layer 2 · head 3 opened, then the Q·K·V page."""
    from tests.helpers.apptest import goto, journey, no_exception, put_inside, texts

    monkeypatch.setenv("ATTENTION_MODELS", f"tiny-{family}={made(family).folders['float32']}")
    at = journey("every_head")
    at = at.selectbox(key="inside.w.model").set_value(f"server:tiny-{family}").run()
    ids = tuple(int(i) for i in np.random.RandomState(2).randint(3, QK_NORM[family].vocab_size, 12))
    put_inside(at, ids=ids, sequence="", position=11)
    at = at.run()
    no_exception(at)
    assert any("A head opened on the step pages shows that step on the Q·K·V page" in t for t in texts(at.caption))
    button = head_button(at, "open", 1, 2)
    assert not button.disabled
    at = goto(button.click().run(), "qkv")
    no_exception(at)
    return at


def _transformers_logits(made, family: str, ids: list[int], q_norm: np.ndarray) -> np.ndarray:  # noqa: ANN001
    """transformers' logits (float64), layer 2's q_norm gains as applied written into its weight (γ = g − offset)."""
    import torch

    from tests.helpers.oracle import float64_oracle

    theirs, offset = made(family).torch, QK_NORM[family].norm_offset
    norm = theirs.model.layers[1].self_attn.q_norm
    kept = norm.weight.detach().clone()
    try:
        with torch.no_grad(), float64_oracle():
            norm.weight.copy_(torch.tensor(q_norm - offset))
            return theirs(torch.tensor([ids])).logits[0].numpy()
    finally:
        with torch.no_grad():
            norm.weight.copy_(kept)


@pytest.mark.parametrize("family", PER_HEAD)
def test_a_qk_norm_gain_edited_on_qkv_moves_the_model_as_transformers_does(made, monkeypatch, family: str) -> None:  # noqa: F811
    """Qwen3 and Gemma 3 made by transformers: a head opens from Every head; the Q·K·V page shows the norm step (q
    after it as the model's, to 1e-12) and the gains' grid. A bad gain is named and changes nothing; a good one
    changes the options, travels in the address, and flows into the model, whose logits then equal transformers' with
    the same gain written into its q_norm (float64, 1e-6 relative, the family tests' bound) and differ from the
    unedited model's far beyond it."""
    from attention.ui.core import compute
    from attention.ui.modelpages import on_steps
    from attention.ui.views import qk_norm as view
    from tests.helpers.apptest import app, errors, grid_edit, no_exception, session, texts

    at = _qkv_page_of(family, made, monkeypatch)
    s = session(at)
    m, ids = models.get(s.model_head.model_id), list(s.model_head.ids)
    t = m.run(ids).head(1, 2)
    shown = compute.current_trace(s)
    assert _relative(shown.Q_raw, t.Q_raw) < TOL and _relative(shown.weights, t.weights) < TOL
    assert any(x.startswith("**The norm (QK-norm).**") for x in texts(at.markdown))
    assert "layer 2's, shared by all its heads" in " ".join(texts(at.markdown))

    def edit(value: str):  # noqa: ANN202 - gain 3 of g_q, as the browser's grid sends it
        return grid_edit(at, view.grid_key(session(at)), {"edited_rows": {"2": {"g_q": value}}, "added_rows": [],
                                                          "deleted_rows": []})  # fmt: skip

    at = edit("1e999")
    no_exception(at)
    assert any("g_q c3 is '1e999', which is infinite" in e and "Nothing was changed" in e for e in errors(at))
    assert session(at).options == s.options
    at = edit("1.75")
    no_exception(at)
    s = session(at)
    assert s.options.q_norm[2] == 1.75 and s.options.q_norm[:2] == t.options.q_norm[:2]
    flows, stays = on_steps.edits(s)
    assert set(flows) == {"q_norm"} and not stays
    assert any("q_norm (1 gain) replace layer 2's QK-norm gains" in x for x in texts(at.markdown))
    ours = on_steps.run_with(s.model_head, flows).logits  # what the panel shows the model predicting
    theirs = _transformers_logits(made, family, ids, np.array(s.options.q_norm))
    scale = float(np.abs(theirs).max())
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6 * scale)
    assert np.abs(ours - m.run(ids).logits).max() > 1e-4 * scale  # the edit moved the model
    query = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}
    assert query["qkn"].startswith("q:") and "1.75" in query["qkn"]
    again = app("qkv", query)
    no_exception(again)
    assert session(again).options == s.options
    np.testing.assert_allclose(
        compute.current_trace(session(again)).weights, compute.current_trace(s).weights, rtol=0, atol=1e-12
    )
