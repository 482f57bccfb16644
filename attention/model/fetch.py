"""Fetch a checkpoint from the Hugging Face Hub into the models folder, where the app's model chooser lists it.

    python -m attention.model.fetch HuggingFaceTB/SmolLM2-135M      # -> models/HuggingFaceTB--SmolLM2-135M

Only what :func:`attention.model.load` reads is downloaded: ``config.json``; ``model.safetensors``, or
``model.safetensors.index.json`` and the shards it names; ``tokenizer.json`` (else ``vocab.json`` and
``merges.txt``); and ``tokenizer_config.json``, ``special_tokens_map.json`` and ``generation_config.json`` when the
repository has them. Before any weight is downloaded the command refuses, naming why, a repository with only pickled
weights, a ``config.json`` that the loader does not open (a model_type outside the families that open), and files
whose listed sizes pass the loader's folder bound (``checkpoint.MAX_FOLDER_BYTES``).

Files go into a hidden sibling of the model's folder (``models/.OWNER--NAME.partial``), which is renamed to
``models/OWNER--NAME`` only when every file is complete: an interrupted download is never listed, and running the
command again continues it (files already complete are kept). The downloading is huggingface_hub's: the hub's
address layout and redirects to its file store, authentication for gated models (``hf auth login`` or HF_TOKEN),
retries that resume a dropped connection, and a size check of every file. The app never imports this module.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import AttentionError
from . import models_folder
from .checkpoint import (
    MAX_CONFIG_BYTES,
    MAX_FILES,
    MAX_FOLDER_BYTES,
    MAX_TOKENIZER_BYTES,
    PICKLED,
    WHY_NOT_PICKLE,
    read_config,
)

CONFIG, WEIGHTS, INDEX = "config.json", "model.safetensors", "model.safetensors.index.json"
TOKENIZERS = (("tokenizer.json",), ("vocab.json", "merges.txt"))  # either is enough, the first preferred
OPTIONAL = ("tokenizer_config.json", "special_tokens_map.json", "generation_config.json")
LIMITS = {CONFIG: MAX_CONFIG_BYTES, INDEX: MAX_CONFIG_BYTES, "generation_config.json": MAX_CONFIG_BYTES}  # bytes
HUB = "https://huggingface.co/"  # a pasted address of a model's page is read as its repository id
MAX_PART = 96  # the hub's longest owner or repository name
Say = Callable[[str], None]


def repo_id_of(text: str) -> str:
    """The repository id ("owner/name") in ``text``, or an AttentionError saying what one looks like, or, for a
    model already on this computer (a folder, a ``.gguf`` file), how to open it."""
    text = text.strip()[: 2 * len(HUB) + 2 * MAX_PART]  # bounded before anything reads it
    text = text.removeprefix(HUB).strip("/") if not text.startswith("/") else text
    parts = text.split("/")
    ok = len(parts) == 2 and all(
        0 < len(p) <= MAX_PART and p[0].isalnum() and "--" not in p and ".." not in p and models_folder.plain(p)
        for p in parts
    )
    local = _on_disk(text, ok)
    if local is not None:
        raise AttentionError(
            f"{text[:200]!r} is {local} on this computer, not a repository on the hub: there is nothing to download. "
            "Open it "
            f"from Python with attention.model.load({text[:200]!r}), or put it in the models folder "
            f"(${models_folder.FOLDER_ENV}, else ./{models_folder.DEFAULT_FOLDER}) for the app to list it",
            field="repo",
        )
    if not ok:
        raise AttentionError(
            f"{text[:100]!r} is not a repository id: give OWNER/NAME, e.g. HuggingFaceTB/SmolLM2-135M", field="repo"
        )
    return text


def _on_disk(text: str, looks_like_id: bool) -> str | None:
    """What ``text`` names on this computer ("a GGUF file", "a model folder" ...) when it is a model already here
    rather than a repository: a ``.gguf`` path, or an existing file or folder (a folder spelled like an id only when
    it holds a config.json); else None."""
    if not text.strip("./"):  # "", ".", "..": nothing anyone would mean as a model
        return None
    path = Path(text).expanduser()
    try:
        is_dir, is_file = path.is_dir(), path.is_file()
    except OSError:  # a name too long for the file system: not a path here
        return None
    if text.lower().endswith(".gguf"):
        return "a GGUF file" if is_file else "a GGUF file's path (no such file is here)"
    if is_file:
        return "a file"
    if is_dir and (not looks_like_id or (path / CONFIG).is_file()):
        return "a model folder" if (path / CONFIG).is_file() else "a folder"
    return None


def folder_name(repo_id: str) -> str:
    """The models folder's name for a repository: "owner--name" (the hub's own cache spells it so)."""
    return repo_id.replace("/", "--")


def choose_files(repo_id: str, sizes: dict[str, int | None]) -> list[str]:
    """The files to download from a repository's listing, weights last; an AttentionError when it cannot be opened.
    With an index, the shards it names are added once it is read (:func:`shards`)."""
    top = {f for f in sizes if "/" not in f}  # files in subfolders (onnx/, original/...) are never read
    if WEIGHTS in top:
        weights = [WEIGHTS]
    elif INDEX in top:
        weights = [INDEX]
    else:
        pickled = sorted(f for f in top if f.lower().endswith(PICKLED))
        if pickled:
            raise AttentionError(f"{repo_id} has only pickled weights ({pickled[0]}): {WHY_NOT_PICKLE}", field="file")
        raise AttentionError(f"{repo_id} has no {WEIGHTS} (nor {INDEX}); nothing here could be opened", field=WEIGHTS)
    if CONFIG not in top:
        raise AttentionError(f"{repo_id} has no {CONFIG}; nothing here could be opened", field=CONFIG)
    tokenizer = next((list(t) for t in TOKENIZERS if all(f in top for f in t)), None)
    if tokenizer is None:
        raise AttentionError(
            f"{repo_id} has no tokenizer: neither tokenizer.json nor vocab.json with merges.txt", field="tokenizer.json"
        )
    return [CONFIG, *tokenizer, *(f for f in OPTIONAL if f in top), *weights]


def check_sizes(repo_id: str, files: list[str], sizes: dict[str, int | None]) -> int:
    """The total size of ``files`` as the hub lists them; an AttentionError if one is unlisted or over its bound,
    or if together they pass the loader's folder bound."""
    for f in files:
        size = sizes.get(f)
        if size is None:
            raise AttentionError(f"the hub does not list the size of {f} in {repo_id}; nothing was fetched", field=f)
        limit = LIMITS.get(f, MAX_TOKENIZER_BYTES)  # the tokenizer's files; the weights have only the folder's bound
        if not f.endswith(".safetensors") and size > limit:
            raise AttentionError(f"{f} in {repo_id} is {size:,} bytes; at most {limit:,} are read", field=f)
    total = sum(sizes[f] or 0 for f in files)
    if total > MAX_FOLDER_BYTES:
        raise AttentionError(
            f"{repo_id} is {total / 1e9:.2f} GB ({', '.join(files)}); at most {MAX_FOLDER_BYTES / 1024**3:g} GiB "
            f"({MAX_FOLDER_BYTES:,} bytes) can be opened, so nothing was fetched",
            field="size",
        )
    return total


def shards(index: Path, repo_id: str, sizes: dict[str, int | None]) -> list[str]:
    """The shard files a downloaded model.safetensors.index.json names, each one the listing has."""
    try:  # its size is bounded: the hub listed at most MAX_CONFIG_BYTES, and what arrived has the listed size
        weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map")
    except (ValueError, AttributeError):
        weight_map = None
    if not isinstance(weight_map, dict) or not weight_map:
        raise AttentionError(f"{INDEX} in {repo_id} has no weight_map of tensors to files", field=INDEX)
    names = sorted({str(v) for v in weight_map.values()})
    for name in names:
        if not (name.endswith(".safetensors") and "/" not in name and name in sizes):
            raise AttentionError(
                f"{INDEX} in {repo_id} names a shard {name[:100]!r} that the repository does not hold", field=INDEX
            )
    if len(names) > MAX_FILES // 2:
        raise AttentionError(f"{INDEX} in {repo_id} names {len(names)} shards; at most {MAX_FILES // 2}", field=INDEX)
    return names


def fetch(repo: str, *, revision: str = "main", name: str | None = None, say: Say = print) -> Path:
    """Download the checkpoint ``repo`` ("owner/name") into the models folder; its folder there. AttentionError
    naming what is wrong; an interrupted or failed download leaves only the hidden partial folder."""
    repo_id = repo_id_of(repo)
    name = name or folder_name(repo_id)
    if not models_folder.plain(name):
        raise AttentionError(
            f"{name[:100]!r} cannot name a model folder (1 to {models_folder.MAX_NAME} letters, digits, '-', '_' "
            "or '.'): choose one with --name",
            field="name",
        )
    root = models_folder.folder()
    final, temp = root / name, models_folder.partial(root, name)
    if final.exists():
        say(f"{final} is already there (delete it to fetch {repo_id} again)")
        return final
    commit, sizes = _listing(repo_id, revision)
    files = choose_files(repo_id, sizes)
    total = check_sizes(repo_id, files, sizes)
    say(f"{repo_id} at {commit[:12]}: {', '.join(files)} ({_size(total)}) -> {final}")
    temp.mkdir(parents=True, exist_ok=True)
    small = [CONFIG, INDEX] if files[-1] == INDEX else [CONFIG]
    _get(repo_id, commit, small, temp, sizes)
    try:
        read_config(temp / CONFIG)  # refused here, before any weight, by the loader's own rules
        if files[-1] == INDEX:
            files = [*files, *shards(temp / INDEX, repo_id, sizes)]
            total = check_sizes(repo_id, files, sizes)
    except AttentionError as exc:
        shutil.rmtree(temp, ignore_errors=True)
        raise AttentionError(f"{repo_id} cannot be opened here: {exc.message}", field=exc.field) from None
    _get(repo_id, commit, [f for f in files if f not in small], temp, sizes)
    shutil.rmtree(temp / ".cache", ignore_errors=True)  # huggingface_hub's notes on each file, for resuming
    try:
        os.rename(temp, final)  # atomic: the folder appears complete or not at all
    except OSError as exc:
        raise AttentionError(f"{temp} could not be renamed to {final}: {exc.strerror}", field="folder") from None
    say(f"Done: {final} ({_size(total)}). The app's model chooser offers it as {name!r}.")
    return final


def _listing(repo_id: str, revision: str) -> tuple[str, dict[str, int | None]]:
    """(the commit ``revision`` names, {file: size}) from the hub's listing of the repository."""
    from huggingface_hub import HfApi

    try:
        info = HfApi().model_info(repo_id, revision=revision, files_metadata=True)
    except Exception as exc:  # the hub's errors and the network's, each told apart in _hub_error
        raise _hub_error(exc, repo_id, "its file listing") from None
    if not info.sha or info.siblings is None:
        raise AttentionError(f"the hub's listing of {repo_id} names no commit or no files", field="repo")
    return info.sha, {s.rfilename: s.size for s in info.siblings}


def _get(repo_id: str, commit: str, files: list[str], temp: Path, sizes: dict[str, int | None]) -> None:
    """Download ``files`` of ``commit`` into ``temp``, a bar for each (huggingface_hub keeps a file already complete
    there from an earlier run without asking the hub again)."""
    from huggingface_hub import hf_hub_download

    for f in files:
        try:
            hf_hub_download(repo_id, f, revision=commit, local_dir=temp, tqdm_class=_bar(f))
        except Exception as exc:  # as in _listing
            raise _hub_error(exc, repo_id, f, partial=temp) from None
        if not _complete(temp / f, sizes[f]):
            size = (temp / f).stat().st_size if (temp / f).is_file() else 0
            (temp / f).unlink(missing_ok=True)
            raise AttentionError(f"{f} arrived with {size:,} bytes; the hub lists {sizes[f]:,}", field=f)


def _bar(label: str) -> type:
    """A progress bar class for one file: tqdm itself, not the hub's subclass, so it shows in a log as on a terminal,
    labelled with the file's name where the hub would label it with the end of its address."""
    from tqdm import tqdm

    class Bar(tqdm):
        def __init__(self, *args: object, **kwargs: object) -> None:
            desc = str(kwargs.get("desc") or "")
            if not desc or desc.startswith("(…)") or "/" in desc:  # an address, not a name
                kwargs["desc"] = label
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    return Bar


def _size(n: int) -> str:
    """A size as a person reads it: 826 bytes, 7.6 kB, 269.1 MB, 1.03 GB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n} bytes"


def _complete(path: Path, size: int | None) -> bool:
    return path.is_file() and path.stat().st_size == size


def _hub_error(exc: Exception, repo_id: str, what: str, partial: Path | None = None) -> AttentionError:
    """A message for what the hub or the network answered, naming the repository and the file."""
    from huggingface_hub import errors

    kept = (
        f" The files complete so far are kept in {partial} (never listed): run the same command again to continue, "
        "or delete that folder."
        if partial is not None
        else ""
    )
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, errors.GatedRepoError):
        text = (
            f"{repo_id} is gated: accept its licence on its page on the hub while logged in, then log in here "
            "(hf auth login) or set HF_TOKEN"
        )
    elif isinstance(exc, errors.RepositoryNotFoundError):
        text = f"the hub has no model {repo_id} (or it is private: log in with hf auth login or set HF_TOKEN)"
    elif isinstance(exc, errors.RevisionNotFoundError):
        text = f"{repo_id} has no such revision"
    elif isinstance(exc, errors.EntryNotFoundError):
        text = f"the hub lists {what} in {repo_id} but did not serve it ({status or 'not found'})"
    elif isinstance(exc, errors.OfflineModeIsEnabled):
        text = "HF_HUB_OFFLINE is set, and fetching a model needs the network"
    else:
        text = f"fetching {what} of {repo_id} failed ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
    return AttentionError(text + "." + kept, field=what)


def main(argv: list[str] | None = None) -> int:
    """The command: exit code 0 when the model is in the models folder, 1 when refused or failed, 130 if stopped."""
    parser = argparse.ArgumentParser(
        prog="python -m attention.model.fetch",
        description="Download a checkpoint from the Hugging Face Hub into the models folder the app lists "
        f"(${models_folder.FOLDER_ENV}, else ./{models_folder.DEFAULT_FOLDER}). This needs the network (and, for a "
        "gated model, a login: hf auth login or HF_TOKEN); nothing else in the project does.",
        epilog="What it downloads: config.json; model.safetensors, or model.safetensors.index.json and the shards it "
        "names; tokenizer.json (else vocab.json and merges.txt); and tokenizer_config.json, special_tokens_map.json "
        "and generation_config.json when the repository has them. Nothing else: no pickled weights, no other "
        "formats. It refuses, before any weight is downloaded, a repository the loader cannot open or one over the "
        "size bound. A model already on this computer (a folder, or a .gguf file) needs no fetch: open it with "
        "attention.model.load(path), or put it in the models folder.",
    )
    parser.add_argument("repo", help="the repository, OWNER/NAME (e.g. HuggingFaceTB/SmolLM2-135M)")
    parser.add_argument("--revision", default="main", help="a branch, tag or commit (default: main)")
    parser.add_argument("--name", help="the model's folder and name in the app (default: OWNER--NAME)")
    args = parser.parse_args(argv)
    try:
        fetch(args.repo, revision=args.revision, name=args.name)
    except AttentionError as exc:
        print(f"Not fetched: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("Stopped: nothing was listed; run the same command again to continue.", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
