"""Ids a vocabulary has no token for (an embedding larger than its tokenizer): written ⟨#N⟩ by pieces and decode,
never an empty string; the loader's note says how far the two differ."""

from __future__ import annotations

from attention.model.checkpoint import vocabulary_notes
from attention.model.vocab import BPEVocab, WordVocab


def _bpe() -> BPEVocab:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"the": 0, "cat": 1, "sat": 2, "[UNK]": 3}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return BPEVocab(tok)


def test_ids_beyond_the_tokenizer_are_named_by_number() -> None:
    v = _bpe()
    assert len(v) == 4
    assert v.pieces([0, 1, 4, 30000]) == ["the", "cat", "⟨#4⟩", "⟨#30000⟩"]
    assert "⟨#7⟩" in v.decode([0, 7, 2]) and v.decode([0, 7, 2]).startswith("the")
    assert v.decode([0, 1]) == v.tokenizer.decode([0, 1])  # named ids alone: the tokenizer's own text
    words = WordVocab(["a", "b"])
    assert words.pieces([1, 2]) == ["b", "⟨#2⟩"] and words.decode([0, 5]) == "a ⟨#5⟩"


def test_the_note_tells_padding_from_another_models_tokenizer() -> None:
    (few,) = vocabulary_notes(50257, 50304)  # GPT-2's tokenizer under an embedding padded to a multiple of 64
    assert "never come from text" in few and "probably not" not in few
    (many,) = vocabulary_notes(400, 50257)
    assert "400 tokens" in many and "50,257 rows" in many and "probably not this model's own tokenizer" in many
    assert "⟨#N⟩" in many
    assert vocabulary_notes(100, 100) == []
    (over,) = vocabulary_notes(120, 100)
    assert "cannot be run" in over
