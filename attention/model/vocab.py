"""Text to token ids and back: a word list (the shipped model) or a BPE tokenizer from a checkpoint folder.

Both give ``encode(text) -> list[int]``, ``decode(ids) -> str`` and ``pieces(ids) -> list[str]`` (each token's
own text, for labels). Work is bounded by the text's length before any tokenizer runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import AttentionError

MAX_TEXT_CHARS = 100_000


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise AttentionError(f"the text to encode must be a string; got {type(text).__name__}", field="text")
    if len(text) > MAX_TEXT_CHARS:
        raise AttentionError(
            f"the text has {len(text):,} characters; at most {MAX_TEXT_CHARS:,} can be encoded", field="text"
        )
    return text


class WordVocab:
    """A fixed list of words; text is split at whitespace and each word must be in the list."""

    def __init__(self, words: Sequence[str]):
        self.words = tuple(str(w) for w in words)
        self.index = {w: i for i, w in enumerate(self.words)}
        if len(self.index) != len(self.words) or not self.words or any(not w or w.split() != [w] for w in self.words):
            raise AttentionError("a word vocabulary needs distinct words without spaces", field="vocabulary")

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, text: str) -> list[int]:
        ids = []
        for k, word in enumerate(_check_text(text).split()):
            if word not in self.index:
                shown = ", ".join(self.words[:12]) + (" …" if len(self.words) > 12 else "")
                raise AttentionError(f"word {k + 1}, {word[:40]!r}, is not in the vocabulary ({shown})", field="text")
            ids.append(self.index[word])
        return ids

    def pieces(self, ids: Sequence[int]) -> list[str]:
        return [self.words[i] if 0 <= i < len(self.words) else unnamed(i) for i in ids]

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(self.pieces(ids))


def unnamed(i: int) -> str:
    """How an id the vocabulary has no token for is written: an embedding row beyond the tokenizer's tokens."""
    return f"⟨#{int(i)}⟩"  # no space: a page shows a token's spaces as ␣


class BPEVocab:
    """A ``tokenizers.Tokenizer`` (byte-level BPE for GPT-2; SentencePiece-style BPE for Llama and Gemma). ``encode``
    adds what its post-processor adds (Llama's and Gemma's BOS token), as transformers' AutoTokenizer does."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer

    def __len__(self) -> int:
        return int(self.tokenizer.get_vocab_size(with_added_tokens=True))

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(_check_text(text), add_special_tokens=True).ids)

    def pieces(self, ids: Sequence[int]) -> list[str]:
        decode = self.tokenizer.decode
        return [decode([int(i)], skip_special_tokens=False) if self.named(i) else unnamed(i) for i in ids]

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``; an id the tokenizer has no token for (an embedding row beyond it) as ⟨#N⟩."""
        out, run = [], []  # the text, and the run of named ids not yet decoded
        for i in [int(i) for i in ids] + [None]:
            if i is not None and self.named(i):
                run.append(i)
                continue
            out.append(str(self.tokenizer.decode(run, skip_special_tokens=False)) if run else "")
            run = []
            if i is not None:
                out.append(unnamed(i))
        return "".join(out)

    def named(self, i: int) -> bool:
        """Whether the tokenizer has a token for id ``i``."""
        return self.tokenizer.id_to_token(int(i)) is not None
