"""A GGUF file's tokenizer, built from its ``tokenizer.ggml.*`` metadata with the ``tokenizers`` library.

A GGUF file has no tokenizer.json: it stores the vocabulary (``tokens``), the merges, each token's type, the
pre-tokenizer's name (``pre``), the special ids and whether a BOS (or EOS) token is added. The tokenizer is built
as transformers' GGUF loader builds it (``AutoTokenizer.from_pretrained(folder, gguf_file=...)``), so a text gives
the same ids, BOS included:

- ``model`` "gpt2": byte-level BPE (SmolLM2, Qwen2, Qwen3, Llama 3). Tokens are spelled in GPT-2's byte alphabet
  (a token written otherwise is respelled byte by byte); the text is split by the regex its ``pre`` names (Llama 3's,
  Qwen2's ...), else by GPT-2's own;
- ``model`` "llama": SentencePiece-style BPE with byte fallback (Llama 2, Mistral): "▁" for a space, one before the
  first word; the merges are the file's, or ranked by the tokens' scores when it has none;
- ``model`` "llama" in a gemma3 file: Gemma's variant (spaces replaced by "▁", no "▁" prepended, merges ranked by
  the tokens' order in the file, tokens of spaces respelled as "▁"s).

Control tokens (type 3) are matched whole as special tokens, user-defined ones (type 4) as plain added tokens.
Any other tokenizer model (a unigram T5, say) is refused by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import AttentionError
from .vocab import BPEVocab

CONTROL, USER_DEFINED = 3, 4  # llama.cpp's token types
MODELS = ("gpt2", "llama")  # tokenizer.ggml.model values built here

_LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_TEKKEN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPLITS = {  # tokenizer.ggml.pre -> the regex its merges were learned on (as transformers' GGUF loader has them)
    **dict.fromkeys(("llama3", "llama-v3", "llama-bpe", "falcon3", "smaug-bpe", "dbrx", "pixtral"), _LLAMA3),
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "megrez"), _QWEN2),
    "tekken": _TEKKEN,
}


def byte_alphabet() -> dict[int, str]:
    """GPT-2's printable spelling of each byte (its bytes_to_unicode): printable Latin-1 bytes stand for
    themselves, the others are moved to 256, 257, ..."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    moved = [b for b in range(256) if b not in kept]
    return {**{b: chr(b) for b in kept}, **{b: chr(256 + k) for k, b in enumerate(moved)}}


def build(meta: dict[str, Any], architecture: str) -> BPEVocab:
    """The tokenizer the metadata describes (see the module's docstring); an AttentionError naming the key."""
    import tokenizers

    kind = meta.get("tokenizer.ggml.model")
    tokens = meta.get("tokenizer.ggml.tokens")
    if kind not in MODELS:
        raise AttentionError(
            f"tokenizer.ggml.model is {kind!r}; the tokenizers built here are {', '.join(MODELS)} (byte-level BPE, "
            "SentencePiece BPE)",
            field="tokenizer.ggml.model",
        )
    if not (isinstance(tokens, list) and tokens and all(isinstance(t, str) for t in tokens)):
        raise AttentionError("the file has no tokenizer.ggml.tokens list", field="tokenizer.ggml.tokens")
    try:
        if kind == "gpt2":
            tok = _byte_level(tokenizers, meta, tokens)
        elif architecture.startswith("gemma"):
            tok = _gemma(tokenizers, tokens)
        else:
            tok = _sentencepiece(tokenizers, meta, tokens)
        _add_special(tokenizers, tok, meta, tokens, byte_level=kind == "gpt2")
        _post_processor(tokenizers, tok, meta, tokens, default_bos=kind == "llama")
    except AttentionError:
        raise
    except Exception as exc:  # the library raises its own kinds for merges or tokens it cannot use
        raise AttentionError(
            f"the file's tokenizer could not be built: {str(exc)[:200]}", field="tokenizer.ggml.merges"
        ) from None
    return BPEVocab(tok)


def _merges(meta: dict[str, Any]) -> list[tuple[str, str]] | None:
    merges = meta.get("tokenizer.ggml.merges")
    if merges is None:
        return None
    if not (isinstance(merges, list) and all(isinstance(m, str) and " " in m for m in merges)):
        raise AttentionError("tokenizer.ggml.merges must list pairs 'a b'", field="tokenizer.ggml.merges")
    return [tuple(m.split(" ", 1)) for m in merges]  # type: ignore[misc]


def _byte_level(tk: Any, meta: dict[str, Any], tokens: list[str]) -> Any:
    """Byte-level BPE: GPT-2's byte alphabet, the file's merges, the regex of its pre-tokenizer."""
    spelling = byte_alphabet()
    alphabet = set(spelling.values())
    vocab = {
        t if set(t) <= alphabet else "".join(spelling[b] for b in t.encode("utf-8")): i for i, t in enumerate(tokens)
    }
    merges = _merges(meta)
    if merges is None:
        raise AttentionError("a byte-level BPE tokenizer needs tokenizer.ggml.merges", field="tokenizer.ggml.merges")
    model = tk.models.BPE(vocab, merges, dropout=None, continuing_subword_prefix="", end_of_word_suffix="",
                          fuse_unk=False)  # fmt: skip
    tok = tk.Tokenizer(model)
    split = SPLITS.get(meta.get("tokenizer.ggml.pre"))  # type: ignore[arg-type]
    if split is None:
        tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = tk.pre_tokenizers.Sequence(
            [
                tk.pre_tokenizers.Split(tk.Regex(split), behavior="isolated"),
                tk.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    tok.decoder = tk.decoders.ByteLevel()
    return tok


def _ranked_merges(vocab: dict[str, int], scores: dict[str, float]) -> list[tuple[str, str]]:
    """Merges implied by a vocabulary: every split of a token into two tokens, best score first."""
    merges = []
    for token, score in scores.items():
        local = [
            (token[:k], token[k:], score) for k in range(1, len(token)) if token[:k] in vocab and token[k:] in vocab
        ]
        merges.extend(sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]])))
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [(a, b) for a, b, _ in merges]


def _sentencepiece(tk: Any, meta: dict[str, Any], tokens: list[str]) -> Any:
    """SentencePiece-style BPE with byte fallback: "▁" before the first word, the file's merges or its scores'."""
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = _merges(meta)
    if merges is None:
        scores = meta.get("tokenizer.ggml.scores")
        if not (isinstance(scores, list) and len(scores) == len(tokens)):
            raise AttentionError(
                "a SentencePiece tokenizer needs tokenizer.ggml.merges or one score per token",
                field="tokenizer.ggml.scores",
            )
        merges = _ranked_merges(vocab, dict(zip(tokens, scores, strict=True)))
    tok = tk.Tokenizer(tk.models.BPE(vocab, merges, fuse_unk=True, byte_fallback=True, dropout=None))
    tok.pre_tokenizer = tk.pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    d = tk.decoders
    tok.decoder = d.Sequence([d.Replace("▁", " "), d.ByteFallback(), d.Fuse(), d.Strip(content=" ", left=1)])
    return tok


def _gemma(tk: Any, tokens: list[str]) -> Any:
    """Gemma's SentencePiece BPE: tokens of spaces respelled as "▁"s, merges ranked by the tokens' order."""
    tokens = ["▁" * len(t) if " " in t and not t.strip() else t for t in tokens]
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = _ranked_merges(vocab, {t: -i for i, t in enumerate(tokens)})
    unk = "<unk>" if "<unk>" in vocab else None
    tok = tk.Tokenizer(tk.models.BPE(vocab, merges, fuse_unk=True, unk_token=unk, dropout=None, byte_fallback=True))
    tok.pre_tokenizer = tk.pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
    tok.normalizer = tk.normalizers.Replace(" ", "▁")
    d = tk.decoders
    tok.decoder = d.Sequence([d.Replace("▁", " "), d.ByteFallback(), d.Fuse()])
    return tok


def _special_id(meta: dict[str, Any], key: str, tokens: Sequence[str]) -> int | None:
    value = meta.get(f"tokenizer.ggml.{key}")
    if value is None:
        return None
    if not (isinstance(value, int) and 0 <= value < len(tokens)):
        raise AttentionError(
            f"tokenizer.ggml.{key} is {value!r}, not an id of the {len(tokens):,} tokens", field=f"tokenizer.ggml.{key}"
        )
    return value


def _add_special(tk: Any, tok: Any, meta: dict[str, Any], tokens: list[str], byte_level: bool) -> None:
    """Control tokens (and the named special ones) matched whole as special tokens; user-defined ones as added."""
    types = meta.get("tokenizer.ggml.token_type") or [1] * len(tokens)  # none given: every token a normal one
    if len(types) != len(tokens):
        raise AttentionError(
            f"tokenizer.ggml.token_type has {len(types):,} entries for {len(tokens):,} tokens",
            field="tokenizer.ggml.token_type",
        )
    spelled = set(byte_alphabet().values()) if byte_level else None
    named = {_special_id(meta, k, tokens) for k in ("bos_token_id", "eos_token_id", "unknown_token_id",
                                                     "padding_token_id")} - {None}  # fmt: skip
    control = [
        t for t, kind in zip(tokens, types, strict=True) if kind == CONTROL and (spelled is None or set(t) <= spelled)
    ]
    control += [tokens[i] for i in sorted(named) if tokens[i] not in control]  # type: ignore[index]
    if control:
        tok.add_special_tokens([tk.AddedToken(t, normalized=False, special=True) for t in control])
    vocab = tok.get_vocab()
    user = [t for t, kind in zip(tokens, types, strict=True) if kind == USER_DEFINED and t in vocab]
    if user:
        tok.add_tokens([tk.AddedToken(t, normalized=False, special=False) for t in user])


def _post_processor(tk: Any, tok: Any, meta: dict[str, Any], tokens: list[str], default_bos: bool) -> None:
    """BOS (and EOS) added as the file says (tokenizer.ggml.add_bos_token; SentencePiece files without it add BOS)."""
    add = {
        "bos": meta.get("tokenizer.ggml.add_bos_token", default_bos),
        "eos": meta.get("tokenizer.ggml.add_eos_token"),
    }
    ids = {"bos": _special_id(meta, "bos_token_id", tokens), "eos": _special_id(meta, "eos_token_id", tokens)}
    used = [k for k in ("bos", "eos") if add[k] is True and ids[k] is not None]
    if not used:
        return
    bos = f"{tokens[ids['bos']]}:0 " if "bos" in used else ""  # type: ignore[index]
    eos = f" {tokens[ids['eos']]}:0" if "eos" in used else ""  # type: ignore[index]
    pair = f"{bos}$A:0{eos} {bos.replace(':0', ':1')}$B:1{eos.replace(':0', ':1')}"
    tok.post_processor = tk.processors.TemplateProcessing(
        single=f"{bos}$A:0{eos}",
        pair=pair,
        special_tokens=[(tokens[ids[k]], ids[k]) for k in used],  # type: ignore
    )
