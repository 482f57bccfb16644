"""What the model pages say about a model is true of it, and they read a text where it makes sense.

- Every family the engine opens (its own table, ``families.OPENS``: a new family is checked here without editing this
  file), and the shipped model: the sentences on how the model reads its logits (the Logit lens and Attribution say
  the same ones), what Attribution holds, and Every head's grouped-query line, each against the config.json the
  family's own library writes (transformers' ``AutoConfig``), not against our parsed Config alone.
- On the shipped model, the Logit lens and Attribution pages say the same of it: no final norm.
- On any text but a ready-made repeated one, the pages start at the last position (the Logit lens, Attribution,
  Every head's predictions and a head opened on the step pages), and the halves' losses show only for a repeated
  text.
"""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import builtin, families
from attention.model.config import Config
from attention.ui.core import keys
from attention.ui.headpages import every_head
from attention.ui.modelpages import readout
from attention.ui.readouts import attribution
from tests.helpers.apptest import goto, head_button, journey, no_exception, session, texts

SHIPPED = builtin("induction")


def _raw(family: str) -> dict:
    """The config.json transformers writes for ``family`` (its defaults; no weights are made)."""
    transformers = pytest.importorskip("transformers")
    raw = transformers.AutoConfig.for_model(family).to_dict()
    return {**raw, **(raw.get("text_config") or {}), "tie_word_embeddings": raw.get("tie_word_embeddings")}


def _sentences(c: Config, scale: float = 1.5) -> dict[str, str]:
    return {
        "lens": " ".join([readout.through(c), readout.read_off(c), readout.lens_rule(c)]),
        "attribution": readout.read_off(c) + " " + readout.attribution_rule(c, scale),
        "groups": every_head.groups(c),
    }


@pytest.mark.parametrize("family", families.OPENS)
def test_each_familys_read_out_and_groups_are_said_as_its_config_json_has_them(family: str) -> None:
    raw = _raw(family)
    _, c = families.read_config(raw)
    said = _sentences(c)
    layernorm = any(k in raw for k in ("layer_norm_epsilon", "layer_norm_eps"))
    assert layernorm != ("rms_norm_eps" in raw), sorted(raw)  # the file names one kind of norm
    for page in ("lens", "attribution"):
        assert ("LayerNorm" in said[page]) == layernorm and ("RMSNorm" in said[page]) == (not layernorm), said[page]
        assert "no final norm" not in said[page]
        assert ("tied" in said[page]) == bool(raw["tie_word_embeddings"] if raw["tie_word_embeddings"] is not None
                                              else True)  # fmt: skip
    assert readout.read_off(c) in said["lens"] and readout.read_off(c) in said["attribution"]  # the same words
    assert "through the final norm and the unembedding" in said["lens"] and "nothing is held" in said["lens"]
    assert "**The final norm's scale is held** at its value at this position" in said["attribution"]
    assert "here 1.5" in said["attribution"]
    assert ("post-attention norm" in said["attribution"]) == c.post_norms
    # Attribution's sum names a "biases" part only when the model has one: W_o's or the MLP's biases, or the shift
    # of a LayerNorm (the final norm's β); an MLPs part, since every family here has MLPs
    biased = layernorm or bool(raw.get("attention_bias")) or bool(raw.get("mlp_bias"))
    assert readout.has_biases(c) == biased and not c.attention_only
    heads = raw.get("num_attention_heads", raw.get("n_head"))
    kv = raw.get("num_key_value_heads") or heads
    assert (c.n_heads, c.kv_heads) == (heads, kv)
    if kv == heads:
        assert said["groups"] == ""
    else:
        assert f"{heads} query heads share {kv} keys and values" in said["groups"]
        assert f"heads 1–{heads // kv} read key/value head 1" in said["groups"]


def test_the_shipped_model_is_said_to_have_no_final_norm_on_both_pages() -> None:
    c = SHIPPED.config
    assert c.attention_only and "ln_f.g" not in SHIPPED.params  # the weights have no final norm
    said = _sentences(c)
    for page in ("lens", "attribution"):
        assert "This model has no final norm" in said[page], said[page]
        assert "final norm's scale is held" not in said[page] and "LayerNorm" not in said[page]
    assert "through the unembedding" in said["lens"] and "final norm and the unembedding" not in said["lens"]
    biases = [k for k in SHIPPED.params if k.split(".")[-1].startswith("b")]
    assert not readout.has_biases(c) and not biases, biases  # the weights hold no bias: none is said
    assert attribution.mlps_note(c).endswith("(it has no biases).")


def _md(at) -> str:
    return " ".join(t.replace("**", "") for t in [*texts(at.markdown), *texts(at.caption)])


def test_the_lens_and_attribution_pages_say_the_same_of_the_shipped_model() -> None:
    at = journey("logit_lens")
    no_exception(at)
    lens_page = _md(at)
    at = goto(at, "attribution")
    no_exception(at)
    attribution_page = _md(at)
    for page in (lens_page, attribution_page):
        assert "This model has no final norm" in page
        assert "final norm and the unembedding" not in page and "final norm's scale is held" not in page


def _typed(words: list[str], page: str = "every_head"):
    """The shipped model's pages after ``words`` are typed into Every head's text box, then ``page``."""
    at = journey("every_head")
    at = at.text_input(key=keys.INSIDE_TYPED).set_value(" ".join(words)).run()
    no_exception(at)
    assert [w for w in SHIPPED.decode(list(session(at).inside.ids)).split()] == words
    return at if page == "every_head" else goto(at, page)


def _labels(at) -> list[str]:
    return [m.label for m in at.metric]


def test_a_ready_made_text_starts_at_its_second_half_with_the_halves_losses() -> None:
    at = journey("every_head")
    no_exception(at)
    ids = session(at).inside.ids
    assert ids[: len(ids) // 2] == ids[len(ids) // 2 :]
    assert session(at).inside.position == len(ids) // 2
    labels = _labels(at)
    assert any(x.startswith("Loss on the first half") for x in labels)
    assert any(x.startswith("Loss on the repeated half") for x in labels)


def test_a_typed_text_starts_at_its_last_position_without_the_halves() -> None:
    words = SHIPPED.vocab.words[3:8]  # five words, no repeat
    at = _typed(list(words))
    n = len(words)
    assert session(at).inside.position == n - 1
    assert at.selectbox(key=keys.INSIDE_POSITION).value == n - 1
    labels = _labels(at)
    assert "Loss on the whole text" in labels
    assert not any("half" in x for x in labels), labels  # no "Loss on the first half (tokens 2–2)"
    assert "This is the text's last token" in _md(at)
    at = goto(at, "logit_lens")
    no_exception(at)
    assert f"At position {n} (" in _md(at)
    at = goto(at, "attribution")
    no_exception(at)
    assert f"At position {n} (" in _md(at)


def test_a_typed_repeat_starts_at_its_last_position_and_shows_the_halves() -> None:
    words = list(SHIPPED.vocab.words[3:7]) * 2
    at = _typed(words)
    assert session(at).inside.position == len(words) - 1
    labels = _labels(at)
    assert any(x.startswith("Loss on the repeated half (tokens 6–8)") for x in labels), labels
    assert any(x.startswith("Loss on the first half (tokens 2–4)") for x in labels), labels


def test_an_ablation_on_a_typed_text_says_the_whole_texts_loss() -> None:
    at = _typed(list(SHIPPED.vocab.words[3:9]))
    at = head_button(at, "toggle", 1, 0).click().run()
    no_exception(at)
    said = " ".join(texts(at.info))
    assert "the loss on the whole text" in said and "half" not in said, said


def test_a_head_opened_from_a_typed_text_predicts_from_its_last_token() -> None:
    words = list(SHIPPED.vocab.words[3:8])
    at = _typed(words)
    at = head_button(at, "open", 1, 0).click().run()
    no_exception(at)
    s = session(at)
    n = len(words)
    assert s.cell == (n - 1, n - 2)  # the last query, at the token before it
    at = goto(at, "scores")
    no_exception(at)
    md = _md(at)
    assert f"After token {n} (" in md, md[:400]
    assert not any("half" in x for x in _labels(at)), _labels(at)


def test_a_ready_made_text_opens_a_head_at_the_induction_cell() -> None:
    at = journey("every_head")
    at = head_button(at, "open", 1, 0).click().run()
    no_exception(at)
    ids = session(at).inside.ids
    assert session(at).cell == (len(ids) // 2, 1)
    assert np.array_equal(ids[: len(ids) // 2], ids[len(ids) // 2 :])
