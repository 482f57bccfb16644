"""A checkpoint sent as files (several, or one .zip): bounded and checked before anything is parsed, then loaded.

:func:`open_files` takes ``{file name: bytes}``, as an upload gives them: config.json, model.safetensors and
tokenizer.json (or vocab.json + merges.txt), or one .zip holding them (at the top or in one folder). Every bound is
checked before a byte is parsed:

- at most :data:`MAX_BYTES` sent (the upload limit) and, in a zip, at most :data:`MAX_MEMBERS` members whose
  declared sizes add up to at most :data:`MAX_UNZIPPED`; each member is read only up to its declared size + 1 byte,
  so a member that inflates beyond what it declares (a zip bomb) is refused, not unpacked;
- a member's name has no absolute path, no '..', no backslash or drive letter, and at most one folder above it;
- only the accepted names are written (the files save_pretrained adds beside them, such as generation_config.json,
  are skipped unread); a pickle (.bin, .pt, .pkl ...) is refused by name, never opened; any other file is refused.

The files are written to a new temporary folder and read by :func:`attention.model.load`, which checks the config,
every tensor's shape and value, and the tokenizer; every problem is an AttentionError naming the file and field.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from ..errors import AttentionError
from ..names import MAX_UPLOAD_BYTES
from .checkpoint import PICKLED, WHY_NOT_PICKLE, load, read_config
from .model import Model

ACCEPTED = ("config.json", "model.safetensors", "tokenizer.json", "vocab.json", "merges.txt")
SKIPPED = (  # what save_pretrained and model hubs put beside them: allowed, never read
    "generation_config.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "README.md",
    ".gitattributes",
)
MAX_BYTES = MAX_UPLOAD_BYTES  # 16 MiB: everything sent at once
MAX_UNZIPPED = 2 * MAX_UPLOAD_BYTES  # the members of a zip, by their declared sizes
MAX_MEMBERS = 16
MAX_NAME = 200
MAX_HEADS = 384  # layers × heads of an uploaded model: GPT-2 medium's 24 × 16 (the upload limit is no bound on this)
NEEDED = "config.json, model.safetensors and tokenizer.json (or vocab.json and merges.txt)"


def open_files(files: Mapping[str, bytes]) -> Model:
    """The model in the files sent (``{name: bytes}``; one .zip is unpacked first); see the module's docstring."""
    total = sum(len(b) for b in files.values())
    if total > MAX_BYTES:
        raise AttentionError(
            f"the files hold {total:,} bytes; at most {MAX_BYTES:,} ({MAX_BYTES // 1024**2} MB) are read",
            field="upload",
        )
    zips = [name for name in files if name.lower().endswith(".zip")]
    if zips:
        if len(files) > 1:
            raise AttentionError(f"{_short(zips[0])}: send one .zip alone, or the files without a zip", field="upload")
        files = unzip(files[zips[0]], zips[0])
    for name in files:
        _check_name(name, "the upload")
    files = {name: data for name, data in files.items() if name in ACCEPTED}
    if "config.json" not in files or "model.safetensors" not in files:
        missing = "config.json" if "config.json" not in files else "model.safetensors"
        raise AttentionError(f"the upload has no {missing}; send {NEEDED}", field=missing)
    with tempfile.TemporaryDirectory(prefix="attention-upload-") as tmp:
        folder = Path(tmp) / "upload"  # the name load()'s messages use
        folder.mkdir()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        config = read_config(folder / "config.json")
        heads = config.n_layers * config.n_heads
        if heads > MAX_HEADS:  # tiny weights can still make thousands of heads, each an n × n array per run
            raise AttentionError(
                f"config.json asks for {config.n_layers} layers × {config.n_heads} heads = {heads:,} heads; an "
                f"uploaded model may have at most {MAX_HEADS} (GPT-2 medium's 24 × 16)",
                field="n_head",
            )
        model = load(folder)
    model.name = "uploaded"
    return model


def unzip(data: bytes, zip_name: str = "the zip") -> dict[str, bytes]:
    """The accepted files of a zip, by name, each checked (count, names, declared and actual sizes) before reading."""
    where = _short(zip_name)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise AttentionError(f"{where} could not be read as a zip file: {exc}", field="upload") from None
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir() and not i.filename.startswith("__MACOSX/")]
        if len(infos) > MAX_MEMBERS:
            raise AttentionError(
                f"{where} holds {len(infos)} files; a checkpoint needs at most 4 ({NEEDED})", field="upload"
            )
        declared = sum(i.file_size for i in infos)
        if declared > MAX_UNZIPPED:
            raise AttentionError(
                f"{where} unpacks to {declared:,} bytes; at most {MAX_UNZIPPED:,} are unpacked", field="upload"
            )
        out: dict[str, bytes] = {}
        for info in infos:
            name = _member_name(info.filename, where)
            if name in out:
                raise AttentionError(f"{where} holds {name} twice", field=name)
            if info.flag_bits & 0x1:
                raise AttentionError(f"{where}: {name} is encrypted; send it without a password", field=name)
            try:
                with archive.open(info) as f:
                    content = f.read(info.file_size + 1)  # never more than it declares, plus one byte to notice
            except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError, ValueError) as exc:
                raise AttentionError(
                    f"{where}: {name} could not be unpacked (its bytes do not match what the zip declares): {exc}",
                    field=name,
                ) from None
            if len(content) != info.file_size:
                raise AttentionError(
                    f"{where}: {name} unpacks to more than the {info.file_size:,} bytes it declares; refused",
                    field=name,
                )
            out[name] = content
    return out


def _member_name(raw: str, where: str) -> str:
    """A zip member's file name, refused if it could escape the folder or is nested deeper than one folder."""
    shown = _short(raw)
    if "\\" in raw or ":" in raw or raw.startswith("/") or len(raw) > MAX_NAME:
        raise AttentionError(f"{where}: the member {shown!r} has an unsafe path; refused", field="upload")
    parts = PurePosixPath(raw).parts
    if any(p in ("..", ".") for p in parts) or len(parts) > 2:
        raise AttentionError(
            f"{where}: the member {shown!r} has an unsafe path (only files at the top or in one folder); refused",
            field="upload",
        )
    name = parts[-1]
    _check_name(name, where)
    return name


def _check_name(name: str, where: str) -> None:
    if name in ACCEPTED or name in SKIPPED:
        return
    if name.lower().endswith(PICKLED):
        raise AttentionError(f"{_short(name)}: {WHY_NOT_PICKLE}", field=_short(name))
    raise AttentionError(
        f"{where} has a file {_short(name)!r} that is not part of a checkpoint; send only {NEEDED}", field="upload"
    )


def _short(name: str, limit: int = 60) -> str:
    text = " ".join(str(name).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
