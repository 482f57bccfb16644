"""Opening checkpoint folders of every family: config.json as published (older files and transformers 5's), token
ids equal to transformers' AutoTokenizer's (the BOS Llama and Gemma add included), sharded folders, Gemma 3's text
part inside a multimodal checkpoint, the bounds checked before anything is read, the precision rule, the notes,
and every bad file ending in a message naming it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch  # a test oracle (requirements-dev.txt): if missing, these tests fail rather than skip

from attention import AttentionError
from attention.model import checkpoint as ckpt
from attention.model import families, load
from attention.model.weightfiles import WeightFile
from tests.helpers.families import CORPUS, config_json, llama_tokenizer, train_tokenizer
from tests.helpers.families import FAMILIES as EXAMPLES
from tests.helpers.oracle import float64_oracle, refresh_rotary

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is made here: the hub is never asked

TEXTS = ["the cat sat", " leading space", "héllo wörld 🙂 数字", "two\nlines", "<s> and <bos> as text", "a"]


def _message(folder: Path, **kw: object) -> AttentionError:
    with pytest.raises(AttentionError) as info:
        load(folder, **kw)  # type: ignore[arg-type]
    return info.value


def _copy(folder: Path, tmp_path: Path, name: str = "ck") -> Path:
    out = tmp_path / name
    shutil.copytree(folder, out)
    return out


# ---------------------------------------------------------------- tokenizers against AutoTokenizer


def _gemma_tokenizer(folder: Path) -> None:
    """Gemma's tokenizer.json: spaces normalised to ▁, byte fallback, "<bos> $A"."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    train_tokenizer(tok, ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"])
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 2)])
    tok.save(str(folder / "tokenizer.json"))
    config = {"tokenizer_class": "GemmaTokenizer", "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>"}
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "add_bos_token": True}))


def _byte_level_tokenizer(folder: Path, bos: str | None) -> None:
    """Byte-level BPE: GPT-2's and SmolLM2's (no BOS, class GPT2Tokenizer), or Llama 3's (a BOS template, read as
    tokenizer.json says, class PreTrainedTokenizerFast)."""
    from tokenizers import ByteLevelBPETokenizer, processors

    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(CORPUS, vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>", "<|begin|>"])
    if bos:
        tok.post_processor = processors.Sequence(
            [
                processors.ByteLevel(trim_offsets=False),
                processors.TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, 1)]),
            ]
        )
    tok.save(str(folder / "tokenizer.json"))
    cls = "PreTrainedTokenizerFast" if bos else "GPT2Tokenizer"
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": cls, "bos_token": bos or "<|endoftext|>"})
    )


@pytest.mark.parametrize(
    ("make", "bos"),
    [
        (llama_tokenizer, 1),
        (_gemma_tokenizer, 2),
        (lambda f: _byte_level_tokenizer(f, None), None),
        (lambda f: _byte_level_tokenizer(f, "<|begin|>"), 1),
        (lambda f: llama_tokenizer(f, template=False), None),  # add_bos_token true, but no template: no BOS
    ],
    ids=["llama", "gemma", "gpt2-smollm2", "llama3-style", "no-template"],
)
def test_token_ids_equal_transformers_autotokenizer_with_its_bos(llama: Path, tmp_path: Path, make, bos) -> None:
    from transformers import AutoTokenizer

    folder = _copy(llama, tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).unlink()
    make(folder)
    m, auto = load(folder), AutoTokenizer.from_pretrained(str(folder))
    for text in TEXTS:
        ours = m.encode(text)
        assert ours == auto(text)["input_ids"], text
        assert (ours[0] == bos) if bos is not None else (bos not in ours[:1] or text.startswith("<")), text
    assert m.run(m.encode(TEXTS[2])).logits.shape[0] == len(m.encode(TEXTS[2]))


# ---------------------------------------------------------------- config.json as published


SMOLLM2 = {  # HuggingFaceTB/SmolLM2-135M's config.json (transformers 4.40 wrote it)
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "bos_token_id": 0,
    "eos_token_id": 0,
    "hidden_act": "silu",
    "hidden_size": 576,
    "intermediate_size": 1536,
    "max_position_embeddings": 8192,
    "model_type": "llama",
    "num_attention_heads": 9,
    "num_hidden_layers": 30,
    "num_key_value_heads": 3,
    "rms_norm_eps": 1e-05,
    "rope_interleaved": False,
    "rope_scaling": None,
    "rope_theta": 100000,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "vocab_size": 49152,
}
PYTHIA = {  # EleutherAI/pythia-70m's
    "architectures": ["GPTNeoXForCausalLM"],
    "hidden_act": "gelu",
    "hidden_size": 512,
    "intermediate_size": 2048,
    "layer_norm_eps": 1e-05,
    "max_position_embeddings": 2048,
    "model_type": "gpt_neox",
    "num_attention_heads": 8,
    "num_hidden_layers": 6,
    "rotary_emb_base": 10000,
    "rotary_pct": 0.25,
    "tie_word_embeddings": False,
    "use_parallel_residual": True,
    "vocab_size": 50304,
}
GEMMA3_270M = {  # google/gemma-3-270m's (transformers 4.55)
    "architectures": ["Gemma3ForCausalLM"],
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 640,
    "intermediate_size": 2048,
    "layer_types": ["sliding_attention"] * 5
    + ["full_attention"]
    + ["sliding_attention"] * 5
    + ["full_attention"]
    + ["sliding_attention"] * 5
    + ["full_attention"],
    "max_position_embeddings": 32768,
    "model_type": "gemma3_text",
    "num_attention_heads": 4,
    "num_hidden_layers": 18,
    "num_key_value_heads": 1,
    "query_pre_attn_scalar": 256,
    "rms_norm_eps": 1e-06,
    "rope_local_base_freq": 10000.0,
    "rope_scaling": None,
    "rope_theta": 1000000.0,
    "sliding_window": 512,
    "vocab_size": 262144,
}


def test_published_configs_map_onto_config_fields() -> None:
    _, smol = families.read_config(SMOLLM2)
    assert (smol.d_model, smol.n_layers, smol.n_heads, smol.kv_heads, smol.d_head) == (576, 30, 9, 3, 64)
    assert (smol.norm, smol.mlp, smol.activation, smol.tied, smol.bias, smol.has_qkv_bias) == (
        "rmsnorm",
        "gated",
        "silu",
        True,
        False,
        False,
    )
    assert (smol.positions, smol.rotary_layout, smol.rope_theta, smol.rope_scaling, smol.ln_eps) == (
        "rotary",
        "halves",
        100000.0,
        "none",
        1e-5,
    )
    _, pythia = families.read_config(PYTHIA)
    assert (pythia.rotary_dims, pythia.parallel_residual, pythia.tied, pythia.bias, pythia.norm) == (
        16,
        True,
        False,
        True,
        "layernorm",
    )
    _, gemma = families.read_config(GEMMA3_270M)
    assert (gemma.d_head, gemma.kv_heads, gemma.norm_offset, gemma.post_norms, gemma.qk_norm) == (
        256,
        1,
        1.0,
        True,
        True,
    )
    assert gemma.layer_types.count("full") == 3 and gemma.layer_type(5) == "full" and gemma.sliding_window == 512
    assert (gemma.rope_theta, gemma.rope_local_theta, gemma.scale(0), gemma.embed_scale) == (1e6, 1e4, 1 / 16, 640**0.5)


@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt_neox", "gemma3_text"])
def test_rope_theta_is_read_from_rope_parameters_and_from_the_top_alike(family: str) -> None:
    """transformers 5 writes rope_parameters; older files rope_theta, rope_scaling, rotary_pct, rope_local_base_freq."""
    from transformers import AutoConfig

    old = {
        "llama": dict(
            rope_theta=5e5,
            rope_scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
        ),
        "qwen2": dict(rope_theta=1e6, rope_scaling={"type": "linear", "factor": 4.0}),
        "gpt_neox": dict(rotary_emb_base=1234, rotary_pct=0.5),
        "gemma3_text": dict(
            rope_theta=2e5, rope_local_base_freq=300.0, rope_scaling={"rope_type": "linear", "factor": 8.0}
        ),
    }[family]
    sizes = dict(
        vocab_size=100,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    if family == "gpt_neox":
        sizes.pop("num_key_value_heads")
    legacy = {"model_type": family, **sizes, **old}
    new = AutoConfig.for_model(family, **sizes, **old).to_dict()  # transformers 5's own reading, written back
    assert "rope_parameters" in new and "rope_theta" not in new
    a, b = families.read_config(legacy)[1], families.read_config(new)[1]
    assert a == b
    assert a.rope_theta == {"llama": 5e5, "qwen2": 1e6, "gpt_neox": 1234, "gemma3_text": 2e5}[family]


@pytest.mark.parametrize(
    ("changes", "words", "field"),
    [
        ({"model_type": "bert"}, ["'bert'", "the families that open are gpt2, llama", "gpt_neox"], "model_type"),
        (
            {"rope_scaling": {"rope_type": "yarn", "factor": 4.0}},
            ["rope_type", "'yarn'", "linear, llama3"],
            "rope_type",
        ),
        ({"rope_parameters": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 1e4}}, ["'dynamic'"], "rope_type"),
        ({"attention_bias": True}, ["attention_bias", "MLP's bias is false"], "attention_bias"),
        (
            {"num_key_value_heads": 4, "num_attention_heads": 6},
            ["num_key_value_heads = 4", "divide"],
            "num_key_value_heads",
        ),
        ({"hidden_act": "gelu_fast"}, ["hidden_act", "'gelu_fast'"], "hidden_act"),
        (
            {"architectures": ["LlamaForSequenceClassification"]},
            ["architectures", "causal language model"],
            "architectures",
        ),
        ({"hidden_size": "576"}, ["hidden_size must be a whole number"], "hidden_size"),
    ],
    ids=["model-type", "yarn", "dynamic", "biases", "kv-heads", "activation", "classifier", "type"],
)
def test_a_config_that_does_not_open_is_refused_by_name(changes: dict, words: list[str], field: str) -> None:
    with pytest.raises(AttentionError) as info:
        families.read_config({**SMOLLM2, **changes})
    for w in words:
        assert w in info.value.message, (w, info.value.message)
    assert info.value.field == field


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_each_familys_example_reads_as_transformers_writes_it_back(example: str) -> None:
    """Every example of every family (attention.model.families.FAMILIES): its config.json as written, read by us, is
    the Config we read from transformers' own reading of it written back (every default filled in, rope_parameters
    as transformers 5 writes them), so our defaults are transformers' for every family that opens."""
    from transformers import AutoConfig

    raw = config_json(example)
    kind = raw.pop("model_type")
    written = AutoConfig.for_model(kind, **raw).to_dict()
    assert families.read_config({"model_type": kind, **raw}) == families.read_config(written)


def test_olmo2_reads_as_post_norms_only_with_qk_norm_across_all_heads() -> None:
    """OLMo-2 (Olmo2Config's defaults): no norm before the attention or the MLP, one after each, QK-norm over every
    head's columns; attention_bias true is refused by name (its MLP has no bias, and ours go together)."""
    sizes = dict(model_type="olmo2", vocab_size=100, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2)  # fmt: skip
    kind, c = families.read_config(sizes)
    assert kind == "olmo2" and (c.pre_norms, c.post_norms, c.qk_norm, c.qk_norm_scope) == (False, True, True, "all")
    assert (c.norm, c.mlp, c.activation, c.bias, c.tied, c.ln_eps, c.n_ctx) == (
        "rmsnorm", "gated", "silu", False, False, 1e-5, 2048
    )  # fmt: skip
    with pytest.raises(AttentionError, match="attention_bias") as info:
        families.read_config({**sizes, "attention_bias": True})
    assert info.value.field == "attention_bias"


def test_gemma3_softcapping_and_bidirectional_attention_are_refused_by_name() -> None:
    for key, value in (
        ("final_logit_softcapping", 30.0),
        ("attn_logit_softcapping", 50.0),
        ("use_bidirectional_attention", True),
    ):
        with pytest.raises(AttentionError, match=key):
            families.read_config({**GEMMA3_270M, key: value})


def test_a_multimodal_gemma3_checkpoint_opens_its_text_part(tmp_path: Path) -> None:
    """model_type gemma3: text_config read as gemma3_text, the language model's tensors under their prefix, the
    vision tower's skipped; the logits equal the full model's on text alone (float64)."""
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3TextConfig, SiglipVisionConfig

    text = Gemma3TextConfig(
        vocab_size=512,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=40,
        sliding_window=4,
        layer_types=["sliding_attention", "full_attention"],
        initializer_range=0.2,
    )
    vision = SiglipVisionConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=28, patch_size=14
    )
    config = Gemma3Config(
        text_config=text.to_dict(),
        vision_config=vision.to_dict(),
        mm_tokens_per_image=4,
        image_token_index=509,
        boi_token_index=507,
        eoi_token_index=508,
    )
    torch.manual_seed(1)
    folder = tmp_path / "gemma3-mm"
    Gemma3ForConditionalGeneration(config).save_pretrained(str(folder), safe_serialization=True)
    _gemma_tokenizer(folder)
    theirs = Gemma3ForConditionalGeneration.from_pretrained(
        str(folder), attn_implementation="eager", dtype=torch.float64
    ).eval()
    m = load(folder, dtype=np.float64)
    ids = m.encode("the cat sat on the mat and the dog sat on the log")
    assert ids[0] == 2 and m.config.post_norms and m.config.layer_types == ("sliding", "full")
    refresh_rotary(theirs)
    with torch.no_grad(), float64_oracle():
        logits = theirs(torch.tensor([ids])).logits[0].numpy()
    np.testing.assert_allclose(m.run(ids).logits, logits, rtol=1e-6, atol=1e-6 * np.abs(logits).max())


# ---------------------------------------------------------------- weights: shards, dtypes, pickles, bad files


def test_a_sharded_folder_opens_as_the_same_model(llama: Path, tmp_path: Path) -> None:
    from transformers import LlamaForCausalLM

    sharded = tmp_path / "sharded"
    LlamaForCausalLM.from_pretrained(str(llama)).save_pretrained(
        str(sharded), safe_serialization=True, max_shard_size="20KB"
    )
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(llama / name, sharded / name)
    shards = sorted(p.name for p in sharded.glob("model-*.safetensors"))
    assert len(shards) > 2 and (sharded / "model.safetensors.index.json").is_file()
    assert not (sharded / "model.safetensors").exists()
    a, b = load(llama), load(sharded)
    assert a.params.keys() == b.params.keys()
    for name in a.params:
        np.testing.assert_array_equal(a.params[name], b.params[name], err_msg=name)
    ids = a.encode("the cat sat")
    np.testing.assert_array_equal(a.run(ids).logits, b.run(ids).logits)
    index = json.loads((sharded / "model.safetensors.index.json").read_text())
    for shard, words in (
        ("model-99999-of-99999.safetensors", ["lists", "not in the folder"]),
        ("../elsewhere.safetensors", ["shard", "same folder"]),
    ):
        broken = {**index, "weight_map": {**index["weight_map"], "model.norm.weight": shard}}
        (sharded / "model.safetensors.index.json").write_text(json.dumps(broken))
        err = _message(sharded)
        assert all(w in err.message for w in words), err.message


def test_pickled_weights_are_refused_for_every_family(llama: Path, tmp_path: Path) -> None:
    folder = _copy(llama, tmp_path)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    err = _message(folder)
    assert "pytorch_model.bin" in err.message and "unpickling" in err.message


def test_a_tensor_stored_as_integers_or_a_header_outside_the_file_is_named(llama: Path, tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    folder = _copy(llama, tmp_path)
    tensors = load_file(str(folder / "model.safetensors"))
    tensors["model.norm.weight"] = tensors["model.norm.weight"].astype(np.int32)
    save_file(tensors, str(folder / "model.safetensors"))
    err = _message(folder)
    assert "norm.weight is stored as I32" in err.message and "BF16" in err.message
    data = (llama / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])  # cut in half: ranges now point outside
    err = _message(folder)
    assert "model.safetensors could not be read as a safetensors file" in err.message and "outside" in err.message


def test_a_missing_or_misshapen_tensor_is_named_with_the_config_fields(llama: Path, tmp_path: Path) -> None:
    folder = _copy(llama, tmp_path)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "num_key_value_heads": 4}))
    err = _message(folder)
    assert "k_proj.weight has shape [16, 32]" in err.message and "num_key_value_heads = 4" in err.message
    (folder / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 3}))
    assert "no tensor 'layers.2.input_layernorm.weight'" in _message(folder).message
    (folder / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 1}))
    err = _message(folder)
    assert "layers.1." in err.message and "num_hidden_layers = 1" in err.message


# ---------------------------------------------------------------- bounds, precision, notes


def test_a_folder_over_the_bound_is_refused_before_any_file_is_read(llama: Path, tmp_path: Path, monkeypatch) -> None:
    folder = _copy(llama, tmp_path, "too-big")
    monkeypatch.setattr(ckpt, "MAX_FOLDER_BYTES", 4096)
    monkeypatch.setattr(ckpt, "open_weights", lambda *a: pytest.fail("a weight file was opened"))
    monkeypatch.setattr(ckpt, "_read_json", lambda *a: pytest.fail("config.json was read"))
    err = _message(folder)
    assert "'too-big' holds more than 4,096 bytes" in err.message and err.field == "path"
    assert ckpt.MAX_FOLDER_BYTES == 4096 and ckpt.__doc__ and "3 GiB" in ckpt.__doc__


def test_weights_over_the_bound_as_computed_are_refused_before_any_tensor_is_read(llama: Path, monkeypatch) -> None:
    count = sum(a.size for a in load(llama).params.values())
    monkeypatch.setattr(WeightFile, "read", lambda *a: pytest.fail("a tensor was read"))
    monkeypatch.setattr(ckpt, "MAX_WEIGHT_BYTES", 6 * count)  # float32 fits, float64 does not
    err = _message(llama, dtype=np.float64)
    assert f"{count:,} parameters" in err.message and "dtype=np.float32 halves it" in err.message
    assert err.field == "dtype"


def test_the_precision_rule_and_its_note(llama: Path, monkeypatch) -> None:
    small = load(llama)
    assert small.dtype == np.float64 and small.run([1, 5, 9]).logits.dtype == np.float64
    assert any("Computing in float64" in n for n in small.notes)
    monkeypatch.setattr(ckpt, "FLOAT64_UP_TO", 1024)  # this model is now "large"
    large = load(llama)
    assert large.dtype == np.float32 and large.params["W_E"].dtype == np.float32
    assert any("Computing in float32" in n and "float64" in n for n in large.notes)
    chosen = load(llama, dtype=np.float64)
    assert chosen.dtype == np.float64 and not any("Computing" in n for n in chosen.notes)
    for bad in (np.float16, "int8", 3):
        with pytest.raises(AttentionError, match="dtype must be np.float64, np.float32 or None"):
            load(llama, dtype=bad)


def test_a_tokenizer_smaller_or_larger_than_the_embedding_is_noted(llama: Path, tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    m = load(llama)
    n = len(m.vocab)  # the tokenizer's tokens, under an embedding of 512 rows
    assert n < 512 and any(f"{n} tokens" in s and "512 rows" in s and "never come from text" in s for s in m.notes)
    folder = _copy(llama, tmp_path)
    cfg = json.loads((folder / "config.json").read_text())
    tensors = load_file(str(folder / "model.safetensors"))
    for rows, said in ((n, None), (n - 20, f"{n} tokens but the model's embedding only {n - 20} rows")):
        (folder / "config.json").write_text(json.dumps({**cfg, "vocab_size": rows}))
        cut = {k: v[:rows] if k in ("model.embed_tokens.weight", "lm_head.weight") else v for k, v in tensors.items()}
        save_file(cut, str(folder / "model.safetensors"))
        notes = [s for s in load(folder).notes if "tokenizer" in s]
        assert (notes == []) if said is None else (said in notes[0]), notes
    with pytest.raises(AttentionError, match="outside the vocabulary"):
        load(folder).run([1, n - 5])


def test_a_gpt_neox_config_naming_its_base_rope_theta_keeps_it() -> None:
    """Old GPT-NeoX files say rotary_emb_base; some say rope_theta instead (or both): either is the base."""
    sizes = dict(model_type="gpt_neox", vocab_size=100, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                 num_attention_heads=4, max_position_embeddings=64, rotary_pct=0.5)
    for keys in (dict(rope_theta=1234.0), dict(rotary_emb_base=1234.0), dict(rope_theta=1234.0, rotary_emb_base=99.0)):
        assert families.read_config({**sizes, **keys})[1].rope_theta == 1234.0, keys


def test_phi3_reads_as_transformers_writes_it_and_refuses_longrope_by_name() -> None:
    """Phi-3 as Phi3Config writes its config.json (transformers 5: partial_rotary_factor inside rope_parameters):
    llama's parts, untied, RoPE on the factor's share of each head; sliding_window (Phi-3-mini-4k's 2047) slides every
    layer; the 128k models' longrope is refused naming rope_type, a rotation under 2 columns by its field."""
    from transformers import Phi3Config

    sizes = dict(vocab_size=100, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, bos_token_id=1, eos_token_id=2, pad_token_id=0)  # fmt: skip
    written = Phi3Config(**sizes, partial_rotary_factor=0.75, sliding_window=7).to_dict()
    kind, c = families.read_config(written)
    assert kind == "phi3" and (c.norm, c.mlp, c.activation, c.bias, c.tied, c.n_ctx) == (
        "rmsnorm", "gated", "silu", False, False, 4096
    )  # fmt: skip
    assert (c.rotary_dims, c.rotary_layout, c.layer_types, c.sliding_window) == (12, "halves", ("sliding",) * 2, 7)
    _, full = families.read_config(Phi3Config(**sizes).to_dict())
    assert full.rotary_dims == full.d_head == 16 and full.layer_types == ()
    longrope = {"rope_type": "longrope", "short_factor": [1.0] * 8, "long_factor": [2.0] * 8}
    with pytest.raises(AttentionError, match="longrope") as info:
        families.read_config({"model_type": "phi3", **sizes, "rope_scaling": longrope})
    assert info.value.field == "rope_type"
    with pytest.raises(AttentionError, match="partial_rotary_factor"):
        families.read_config({"model_type": "phi3", **sizes, "partial_rotary_factor": 0.1})  # 1.6 columns
