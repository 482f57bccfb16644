"""What a person met on the model pages (issue 33 §6), under AppTest: the strongest induction head named where the
caveat allows one; probabilities in one format, from the digits control; First token's wording from the measured
roles; Every head's intro naming the model open; a tokenizer smaller than the config's vocabulary noted; one edit of
a model head's W_k making a short link that opens the same edited head."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa

from attention.model import ablate, builtin, induction
from tests.helpers.apptest import app, head_button, no_exception, press, texts

ENGINE = builtin("induction")  # a model of its own, not the page's: the oracle runs the engine directly


def _click(at, key: str):
    at = press(at, key)
    no_exception(at)
    return at


def _strongest(at) -> str:
    lines = [t.replace("**", "") for t in texts(at.markdown) if "The strongest head of each kind" in t]
    assert len(lines) == 1, texts(at.markdown)
    return lines[0]


def test_the_strongest_induction_head_is_never_a_first_layer_head() -> None:
    """A first-layer head cannot be an induction head (the caveat under the line says why): with the previous-token
    head (layer 1 · head 2) ablated, layer 1 · head 1 scores highest as induction, yet the line names no first-layer
    head: it names the strongest head of layers 2 and up, and says when none of them reaches a role's score."""
    at = app("every_head")
    ids = at.session_state["attention_session"].inside.ids
    at = _click(at, "inside.toggle.0.1")  # ablate layer 1 · head 2 (zero)
    run = ENGINE.run(list(ids), [ablate(0, 1, "zero")])
    _, ind = induction.head_scores(run.weights[None], len(ids) // 2)  # (layers, heads)
    assert np.argmax(ind) // ind.shape[1] == 0  # the engine's own scores: the highest is a first-layer head's
    line = _strongest(at)
    part = re.search(r"induction:? ([^;]*)", line).group(1)
    assert "layer 1 ·" not in part, line
    layer, head = np.unravel_index(np.argmax(ind[1:]), ind[1:].shape)
    assert f"layer {layer + 2} · head {head + 1} ({ind[1 + layer, head]:.2f})" in part, line
    if ind[1:].max() < 0.25:
        assert "none reaches" in part, line
    # unablated, the induction head of layer 2 is named as before
    at = _click(at, "inside.toggle.0.1")
    assert "induction layer 2 · head 1" in _strongest(at)


def _pattern(values: np.ndarray, digits: int) -> str:
    """The digits control's format, worked out here: ``digits`` significant digits, trailing zeros kept."""
    return f"%#.{digits}g"


def _probs(row: np.ndarray) -> np.ndarray:
    p = np.exp(row - row.max())
    return p / p.sum()


def _shown(at, index: int) -> pd.DataFrame:
    """The texts the browser is sent for a dataframe's cells (a Styler's display values)."""
    d = at.dataframe[index]
    assert d.proto.arrow_data.HasField("styler"), "the table's texts are not written on the server"
    return pa.ipc.open_stream(d.proto.arrow_data.styler.display_values).read_all().to_pandas()


def test_probabilities_follow_the_digits_control_in_one_format() -> None:
    """What moved says the most likely token's probability before → after in one format with the digits control's
    significant digits (never "0.00 → 0.00"), and the top-5 table's columns share one format from the same control;
    6 digits chosen, both follow."""
    at = app("every_head")
    s = at.session_state["attention_session"]
    ids, position = s.inside.ids, s.inside.position
    at = _click(at, "inside.toggle.1.0")  # ablate layer 2 · head 1, the induction head
    before = _probs(ENGINE.run(list(ids)).logits[position])
    after = _probs(ENGINE.run(list(ids), [ablate(1, 0, "zero")]).logits[position])
    for digits in (4, 6):
        if digits != 4:
            at.session_state["attention_session"].digits = digits
            at = at.run()
            no_exception(at)
        pair = np.array([before.max(), after.max()])
        printf = _pattern(pair, digits)
        said = [t for t in texts(at.info) if "the most likely next token" in t]
        assert said, texts(at.info)
        assert (
            f"({printf % pair[0]} → {printf % pair[1]})" in said[0]
            or f"({printf % pair[0]}) to" in said[0] and f"({printf % pair[1]})." in said[0]
        ), (printf, said[0])
        top = at.dataframe[0].value
        shown = top[["probability", "without ablations"]].to_numpy(dtype=float)
        np.testing.assert_allclose(shown[:, 0], np.sort(after)[::-1][:5], rtol=1e-9)
        texts_shown = _shown(at, 0)
        for col, values in zip(("probability", "without ablations"), shown.T, strict=True):
            want = [f"{v:#.{digits}g}".removesuffix(".") for v in values]  # significant digits, trailing zeros kept
            assert [t for t in texts_shown[col]] == want, (col, list(texts_shown[col]), want)


def _random_model(std: float = 0.02):
    """A random model whose heads spread their weight (small weights: near-uniform rows), held for the session."""
    from attention.model import Config, Model, init_params
    from attention.model.vocab import WordVocab
    from attention.ui.core import models

    cfg = Config(vocab_size=12, n_ctx=16, d_model=12, n_layers=2, n_heads=3, d_mlp=24, positions="learned")
    m = Model(cfg, init_params(cfg, 5, std=std), WordVocab([f"w{i}" for i in range(12)]), name="random")
    return m, models.hold(m, "trained")


def test_first_token_words_what_the_heads_do_from_their_measured_roles() -> None:
    """On a random model whose heads have no role (each of its scores below 0.25, worked out here from the engine's
    weights), First token does not say "what the heads do is find tokens": it says no head has a clear role."""
    from attention.model import roles

    m, held = _random_model()
    ids = (1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6)
    run = m.run(list(ids))
    scores = roles.head_scores(run.weights, ids)
    assert max(float(np.nanmax(v)) for v in scores.values()) < 0.25  # the engine's own: no role anywhere
    at = app("first_token")
    s = at.session_state["attention_session"]
    s.inside = type(s.inside)(held, "", ids, 6)
    at = at.run()
    no_exception(at)
    md = " ".join(t.replace("**", "") for t in texts(at.markdown))
    assert "find tokens" not in md, md
    assert "no head has a clear role" in md, md
    # on the shipped model, the heads' roles measured on its text are counted (a plain rule over the engine's scores:
    # the kind with the largest score, when at least 0.25; induction from layer 2 on)
    at = app("first_token")
    ids = at.session_state["attention_session"].inside.ids
    sc = roles.head_scores(ENGINE.run(list(ids)).weights, ids)
    kinds = ("previous-token", "induction", "first-token sink")
    count = {"previous-token": 0, "induction": 0}
    for layer, head in np.ndindex(sc["induction"].shape):
        best = max(kinds, key=lambda k: sc[k][layer, head])
        if sc[best][layer, head] >= 0.25 and best in count and (best != "induction" or layer >= 1):
            count[best] += 1
    md = " ".join(t.replace("**", "") for t in texts(at.markdown))
    want = " and ".join(f"{k} {r} head{'s' if k != 1 else ''}" for r, k in count.items() if k)
    assert f"its heads find tokens instead: {want}" in md, md


def test_every_heads_intro_names_the_model_open() -> None:
    """With the shipped model open, the intro names it; with another model open (one of the learner's), the intro
    names that one and says nothing of the shipped model's heads."""
    at = app("every_head")
    intro = [t for t in texts(at.markdown) if t.startswith("A real")][0]
    assert "the shipped 2-layer model" in intro and "ablate the previous-token head in layer 1" in intro
    _, held = _random_model()
    s = at.session_state["attention_session"]
    s.inside = type(s.inside)(held, "", (1, 2, 3, 4, 1, 2, 3, 4), 4)
    at = at.run()
    no_exception(at)
    intro = [t for t in texts(at.markdown) if t.startswith("A real")][0]
    assert "shipped" not in intro and "layer 1" not in intro, intro
    assert "your own model (2 layers × 3 heads)" in intro, intro


def _mismatched_folder(folder, rows: int = 50257, d: int = 16, n_ctx: int = 32):
    """A GPT-2 checkpoint folder (random weights, written with safetensors) whose config and embedding have ``rows``
    rows under a byte-level BPE tokenizer trained here on a few words (a few hundred tokens)."""
    import json

    from safetensors.numpy import save_file
    from tokenizers import ByteLevelBPETokenizer

    folder.mkdir(parents=True, exist_ok=True)
    tok = ByteLevelBPETokenizer()
    corpus = ["the cat sat on the mat and the dog sat on the log", "a quick brown fox jumps over the lazy dog"] * 50
    tok.train_from_iterator(corpus, vocab_size=400, min_frequency=1, show_progress=False)
    tok.save(str(folder / "tokenizer.json"))
    config = {"model_type": "gpt2", "vocab_size": rows, "n_positions": n_ctx, "n_embd": d, "n_layer": 1, "n_head": 2}
    (folder / "config.json").write_text(json.dumps(config))
    rs = np.random.RandomState(0)

    def w(*shape: int) -> np.ndarray:
        return rs.normal(0, 0.5, shape).astype(np.float32)

    ones, zeros = np.ones(d, np.float32), np.zeros(d, np.float32)
    t = {"wte.weight": w(rows, d), "wpe.weight": w(n_ctx, d), "ln_f.weight": ones, "ln_f.bias": zeros}
    for name, value in {
        "ln_1.weight": ones, "ln_1.bias": zeros, "ln_2.weight": ones, "ln_2.bias": zeros,
        "attn.c_attn.weight": w(d, 3 * d), "attn.c_attn.bias": np.zeros(3 * d, np.float32),
        "attn.c_proj.weight": w(d, d), "attn.c_proj.bias": zeros,
        "mlp.c_fc.weight": w(d, 4 * d), "mlp.c_fc.bias": np.zeros(4 * d, np.float32),
        "mlp.c_proj.weight": w(4 * d, d), "mlp.c_proj.bias": zeros,
    }.items():  # fmt: skip
        t[f"h.0.{name}"] = value
    save_file(t, str(folder / "model.safetensors"))
    return tok.get_vocab_size()


def test_a_tokenizer_far_smaller_than_the_embedding_is_a_visible_warning_and_its_ids_are_named(tmp_path) -> None:
    """A tokenizer of a few hundred tokens under a config of 50,257 rows: the chooser warns (not a quiet caption)
    that it is probably not the model's own tokenizer, and a predicted id the tokenizer has no token for is written
    "⟨#N⟩", never an empty "∅"."""
    import re

    from attention.model.checkpoint import load
    from attention.ui.core import models

    tokens = _mismatched_folder(tmp_path / "mis")
    m = load(tmp_path / "mis")
    assert len(m.vocab) == tokens < 400 and m.config.vocab_size == 50257
    held = models.hold(m, "upload")
    ids = tuple(m.encode("the cat sat on the mat the cat sat on the mat"))
    at = app("every_head")
    s = at.session_state["attention_session"]
    s.inside = type(s.inside)(held, "", ids, len(ids) // 2)
    at = at.run()
    no_exception(at)
    warned = [t for t in texts(at.warning) if f"{tokens:,} tokens" in t and "50,257 rows" in t]
    assert warned and "not this model's own tokenizer" in warned[0], texts(at.warning) + texts(at.caption)
    top = list(at.dataframe[0].value["next token"])
    run = m.run(list(ids))
    best = np.argsort(-run.logits[len(ids) // 2], kind="stable")[:5]
    assert any(b >= tokens for b in best)  # a random embedding of 50,257 rows predicts ids beyond the tokenizer
    for b, piece in zip(best, top, strict=True):
        if b >= tokens:
            assert piece == f"⟨#{b}⟩", (b, piece)
        else:
            assert not re.fullmatch(r"⟨#\d+⟩", piece)
    assert "∅" not in top


def test_one_w_k_cell_edit_on_a_model_head_makes_a_short_link_that_opens_the_same_edited_head() -> None:
    """The link carries only the changed cell, as a difference from the model's own W_k: the whole address is at
    most 300 characters (it was 5,430: every cell of W_k), and it opens the same head with the same edit, the
    model answering with that edit (the engine's loss with the edited block)."""
    from urllib.parse import urlencode

    from attention.model import replace_matrix, roles
    from tests.helpers.apptest import edit_cell, goto, journey

    at = journey("every_head")
    at = head_button(at, "open", 1, 0).click().run()
    at = goto(at, "qkv")
    at = edit_cell(at, "W_k", 0, "k1", 40.0)
    no_exception(at)
    s = at.session_state["attention_session"]
    edited = s.matrices["W_k"].copy()
    query = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}
    address = urlencode(query)
    assert "edits" in query and len(address) <= 300, (len(address), address)
    again = app("qkv", query)  # the link opened elsewhere
    no_exception(again)
    s2 = again.session_state["attention_session"]
    assert s2.model_head == s.model_head
    assert np.array_equal(s2.matrices["W_k"], edited)  # the exact bits: one cell 40, every other the model's own
    assert np.count_nonzero(s2.matrices["W_k"] != ENGINE.layer_weights(1)[1][:, : ENGINE.config.d_head]) == 1
    ids = s.model_head.ids
    run = ENGINE.run(list(ids), [replace_matrix(1, 0, "W_k", edited)])
    second = roles.half_losses(roles.position_losses(run.logits, ids), len(ids) // 2)[1]
    said = [m.value for m in again.metric if m.label.startswith("Loss on the repeated half")]
    assert said == [f"{second:.2f} nats"], said
