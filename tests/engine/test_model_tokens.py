"""Tokens given as strings wherever the engine takes ids: a text that encodes to exactly one token (without the BOS
the tokenizer adds), or the token's own spelling; several tokens are refused with a message naming them."""

from __future__ import annotations

import numpy as np
import pytest

from attention.errors import AttentionError
from attention.model import Config, Model, attribute, builtin, init_params, patch, sweep
from attention.model.vocab import BPEVocab


def _bpe_model() -> Model:
    """A tiny model under a byte-level BPE (GPT-2's kind, with a BOS added to every text) whose vocabulary has
    " Paris" as one token and "Paris" only as four."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    letters = ["<s>", "Ġ", "P", "a", "r", "i", "s", "T", "h", "e"]
    merged = ["ĠP", "ĠPa", "ri", "ĠPari", "ĠParis", "Th", "The"]
    merges = [("Ġ", "P"), ("ĠP", "a"), ("r", "i"), ("ĠPa", "ri"), ("ĠPari", "s"), ("T", "h"), ("Th", "e")]
    tok = Tokenizer(models.BPE({w: i for i, w in enumerate(letters + merged)}, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    cfg = Config(vocab_size=20, n_ctx=8, d_model=8, n_layers=1, n_heads=2, d_mlp=8).validate()
    return Model(cfg, init_params(cfg, seed=0), BPEVocab(tok))


def test_a_string_that_is_one_token_is_its_id() -> None:
    m = _bpe_model()
    paris = m.vocab.tokenizer.token_to_id("ĠParis")
    assert m.encode(" Paris") == [0, paris]  # the BOS, then one token
    assert m.token_id(" Paris") == paris == m.token_id("ĠParis") == m.token_id(paris)
    assert m.token_id("The") == m.vocab.tokenizer.token_to_id("The")
    run = m.run(m.encode("The Paris"))
    assert attribute(run, -1, " Paris").token == paris
    assert attribute(run, -1, " Paris").total == attribute(run, -1, paris).total
    assert m.check_ids(["The", " Paris"]) == [m.token_id("The"), paris]  # a list of tokens as strings


def test_a_string_of_several_tokens_is_refused_naming_them() -> None:
    m = _bpe_model()
    run = m.run(m.encode("The Paris"))
    with pytest.raises(AttentionError) as info:
        attribute(run, -1, "Paris")
    said = str(info.value)
    assert info.value.field == "token"
    assert "'Paris' is 4 tokens here ('P', 'a', 'ri', 's'), not one" in said
    with pytest.raises(AttentionError) as info:
        m.token_id("", "answer")
    assert info.value.field == "answer" and "'' is no token" in str(info.value)


def test_a_bad_id_is_named_once() -> None:
    m = builtin("induction")
    run = m.run(list(range(6)))
    V = m.config.vocab_size
    with pytest.raises(AttentionError) as info:
        attribute(run, -1, V)
    assert str(info.value) == f"there is no token {V}: the vocabulary has {V} tokens, ids 0 to {V - 1}"
    with pytest.raises(AttentionError, match="there is no answer token -1"):
        m.token_id(-1, "answer")


def test_words_of_the_shipped_model_are_tokens_in_every_call() -> None:
    m = builtin("induction")
    words = m.vocab.words
    clean = list(words[:6]) * 2
    corrupt = list(clean)
    corrupt[3] = words[10]
    ids = [m.token_id(w) for w in clean]
    assert ids == m.check_ids(clean) == [words.index(w) for w in clean]
    assert np.array_equal(m.run(clean).logits, m.run(ids).logits)
    by_word = sweep(m, clean, corrupt, answer=words[3], wrong=words[10])
    by_id = sweep(m, ids, m.check_ids(corrupt), answer=3, wrong=10)
    assert by_word.answer == 3 and by_word.wrong == 10
    np.testing.assert_array_equal(by_word.heads, by_id.heads)
    np.testing.assert_array_equal(patch(m, clean, corrupt, [(0, 1)]).logits, patch(m, ids, corrupt, [(0, 1)]).logits)
    with pytest.raises(AttentionError, match="'two words' is no token"):
        m.token_id("two words")
