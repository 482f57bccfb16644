"""GGUF files in the app, under AppTest: a .gguf file in the models folder is listed beside the folders and opens,
its caption saying how it was stored; a bad one (truncated, wrong magic, an unknown type, an unknown architecture)
is refused with a message naming the problem, and the session stays exactly as it was."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest

from tests.helpers import gguf_files
from tests.helpers.apptest import app, errors, head_plots, no_exception, session, texts

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
STATE = ("model", "ids", "position", "ablations", "held")  # of the model pages' record (Session.inside)


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A models folder holding a good tiny llama GGUF file and four bad ones."""
    monkeypatch.setenv("ATTENTION_MODELS_DIR", str(tmp_path))
    monkeypatch.delenv("ATTENTION_MODELS", raising=False)
    good = gguf_files.write(tmp_path / "tiny.gguf", "llama", "Q4_1")
    whole = good.read_bytes()
    (tmp_path / "cut.gguf").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "magic.gguf").write_bytes(b"GGML" + whole[4:])
    _copy(good, tmp_path / "q2k.gguf", "llama", q2k="blk.1.ffn_up.weight")
    _copy(good, tmp_path / "phi.gguf", "phi2")
    from attention.ui.core import models as served

    monkeypatch.setattr(served, "CHECK_WAIT", 60.0)  # the chooser waits for each file's check (a busy machine)
    return tmp_path


def _copy(path: Path, out: Path, arch: str, q2k: str = "") -> None:
    """The file with another architecture name, or one tensor stored as Q2_K (a type not read here)."""
    src = gguf.GGUFReader(path)
    w = gguf.GGUFWriter(out, arch)
    for f in src.fields.values():
        if not f.name.startswith("GGUF.") and f.name != "general.architecture":
            sub = f.types[-1] if len(f.types) > 1 else None
            w.add_key_value(f.name.replace("llama.", f"{arch}.", 1), f.contents(), f.types[0], sub)
    for t in src.tensors:
        if t.name == q2k:
            w.add_tensor(t.name, np.zeros((t.data.shape[0], 84), np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q2_K)
        else:
            w.add_tensor(t.name, np.array(t.data), raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _state(at) -> dict:
    return {k: getattr(session(at).inside, k) for k in STATE}


def test_a_gguf_file_is_listed_beside_the_folders_and_opens(models: Path) -> None:
    at = app("every_head")
    options = at.selectbox(key="inside.w.model").options
    assert "tiny.gguf (on this server)" in options, options
    cut = next(o for o in options if o.startswith("cut.gguf (on this server)"))
    assert cut.startswith("cut.gguf (on this server) · cannot be opened: cut.gguf is truncated: tensor '"), cut
    bad = ("cut", "magic", "q2k", "phi")
    assert all("cannot be opened" not in o for o in options if not o.startswith(bad)), options
    assert all("cannot be opened" in o for o in options if o.startswith(("magic", "q2k", "phi"))), options
    at = at.selectbox(key="inside.w.model").set_value("server:tiny.gguf").run()
    no_exception(at)
    assert session(at).inside.model == "server:tiny.gguf" and not errors(at)
    caption = " ".join(texts(at.caption))
    assert "GGUF file, quantized Q4_1, dequantized to float32." in caption, caption
    assert len(head_plots(at)) == 8  # 2 layers × 4 heads drawn


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("cut.gguf", "cut.gguf is truncated: tensor '"),
        ("magic.gguf", "magic.gguf is not a GGUF file: it starts with b'GGML', not the magic b'GGUF'"),
        ("q2k.gguf", "tensor 'blk.1.ffn_up.weight' is stored as Q2_K; the types read are F32"),
        (
            "phi.gguf",
            "general.architecture is 'phi2'; the GGUF architectures that open are llama, qwen2, qwen3, gemma3",
        ),
    ],
)
def test_a_bad_gguf_file_is_refused_by_name_and_changes_nothing(models: Path, name: str, said: str) -> None:
    at = app("every_head")
    before = _state(at)
    at = at.selectbox(key="inside.w.model").set_value(f"server:{name}").run()
    no_exception(at)
    shown = errors(at)
    assert any(said in e and "Nothing changed" in e for e in shown), shown
    assert _state(at) == before
    assert at.selectbox(key="inside.w.model").value == "induction"
