"""Open a checkpoint folder as model hubs publish it: config.json, model.safetensors (or shards), a tokenizer.

A ``.gguf`` file (llama.cpp's format) opens too, read by :mod:`.gguf_file` with the bounds and precision rule below.

What is read, and how:

- ``config.json``: read by model_type (gpt2, llama, mistral, qwen2, qwen3, gemma3_text, gemma3's text part,
  gpt_neox, olmo2, phi3; see :mod:`.families`); any other type is refused, naming it and the families that open;
- ``model.safetensors``, or ``model.safetensors.index.json`` and the shards it lists (see :mod:`.weightfiles`):
  F32, F16, BF16 or F64. Each tensor's shape is checked against the config before its bytes are read, and every
  value must be finite. Pickled weights (``.bin``, ``.pt``, ``.pth``, ``.ckpt``, ``.pkl``) are never opened:
  unpickling runs code from the file;
- ``tokenizer.json``, or ``vocab.json`` + ``merges.txt`` (byte-level BPE), read with the ``tokenizers`` library.
  Its post-processor adds what transformers' AutoTokenizer adds (the BOS token of Llama and Gemma), as
  transformers 5 does when a tokenizer.json is present (tokenizer_config.json's add_bos_token is then not read).

Bounds: the folder may hold at most :data:`MAX_FOLDER_BYTES` (3 GiB: Qwen2.5-0.5B saved as float32, 2.0 GB, fits;
GPT-2 large, 3.2 GB, does not), checked by listing it before any file is read; and the weights as computed
(parameters × 4 bytes in float32, × 8 in float64) at most :data:`MAX_WEIGHT_BYTES` (3 GiB), checked from the
safetensors headers before any tensor is read.

Precision: ``load(path, dtype=None)`` computes in float64 when the weights take at most :data:`FLOAT64_UP_TO`
(256 MiB, 67,108,864 parameters) as float32: tiny and uploaded models, the step pages' exact numbers; and in float32
above it (GPT-2 small, Pythia-70m, SmolLM2-135M, Qwen2.5-0.5B ...): half the memory and about half the time.
``dtype=np.float64`` or ``np.float32`` chooses. Every problem is an AttentionError naming the file and the field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import AttentionError
from . import tensornames
from .config import Config
from .families import read_config as read_family_config
from .model import DTYPES, Model, Params, param_shapes
from .vocab import BPEVocab
from .weightfiles import STORED, WeightFile, open_weights

MAX_FOLDER_BYTES = 3 * 1024**3
MAX_WEIGHT_BYTES = 3 * 1024**3
FLOAT64_UP_TO = 256 * 1024**2  # bytes of float32 weights up to which dtype=None computes in float64
MAX_CONFIG_BYTES = 1024**2
MAX_FILES = 1000
MAX_TOKENIZER_BYTES = 64 * 1024**2
GGUF = ".gguf"  # llama.cpp's single-file format, opened by :mod:`.gguf_file`
PICKLED = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
WHY_NOT_PICKLE = (
    "pickled weights are never opened here, because unpickling a file can run any code it contains; "
    "save the model with save_pretrained(..., safe_serialization=True) to get model.safetensors"
)


def load(path: str | Path, dtype: type | np.dtype | None = None) -> Model:
    """The model in a checkpoint folder (see the module's docstring for what it must hold) or a ``.gguf`` file (see
    :mod:`.gguf_file`), computing in ``dtype`` (np.float64 or np.float32; None: float64 up to :data:`FLOAT64_UP_TO`
    of float32 weights, else float32)."""
    if Path(path).is_file() and Path(path).suffix.lower() == GGUF:
        return load_gguf(Path(path), dtype)
    folder = _folder(Path(path))
    family, config = read_family_config(_read_json(folder / "config.json", MAX_CONFIG_BYTES))
    files = open_weights(folder)
    count = sum(math.prod(shape) for shape in param_shapes(config).values())
    chosen, notes = precision(dtype, count)
    params = read_weights(files, family, config, chosen)
    vocab, said = read_tokenizer(folder, config)
    return Model(config, params, vocab, name=folder.name, dtype=chosen, notes=said + notes)


def check(path: str | Path) -> None:
    """Whether :func:`load` can open ``path``, from its headers alone (no weight is read): an AttentionError saying
    why not (a missing or truncated file, a tensor past a GGUF's end, an unknown architecture, too large), else None.
    What only the weights themselves show (a weight that is not finite) is found when the model is opened."""
    if Path(path).is_file() and Path(path).suffix.lower() == GGUF:
        from .gguf_file import GGUFFile

        opened = GGUFFile(Path(path), MAX_FOLDER_BYTES)
        precision(None, sum(math.prod(shape) for shape in param_shapes(opened.config).values()))
        return
    folder = _folder(Path(path))
    _, config = read_family_config(_read_json(folder / "config.json", MAX_CONFIG_BYTES))
    open_weights(folder)
    precision(None, sum(math.prod(shape) for shape in param_shapes(config).values()))


def load_gguf(path: Path, dtype: object = None) -> Model:
    """A GGUF file (:mod:`.gguf_file`) with the same bounds and precision rule as a folder: the file's size and the
    weights' size as computed are checked from its header, before the tokenizer is built and any tensor is read."""
    from .gguf_file import GGUFFile  # the gguf package is imported only when a GGUF file is opened

    opened = GGUFFile(path, MAX_FOLDER_BYTES)
    count = sum(math.prod(shape) for shape in param_shapes(opened.config).values())
    chosen, notes = precision(dtype, count)
    vocab = opened.tokenizer()
    params = opened.params(chosen)
    said = vocabulary_notes(len(vocab), opened.config.vocab_size)
    return Model(
        opened.config, params, vocab, name=path.stem, dtype=chosen, notes=[opened.quantization(), *said, *notes]
    )


def precision(dtype: object, count: int) -> tuple[np.dtype, list[str]]:
    """The compute dtype for a model of ``count`` parameters (see :func:`load`), and a note when it was chosen by
    the rule; refused when the weights as computed would pass :data:`MAX_WEIGHT_BYTES`."""
    notes = []
    if dtype is None:
        chosen = np.dtype(np.float64 if 4 * count <= FLOAT64_UP_TO else np.float32)
        notes.append(
            f"Computing in {chosen}: the weights take {4 * count / 1e6:,.1f} MB as float32, and models up to "
            f"{FLOAT64_UP_TO / 1024**2:.0f} MiB compute in float64, larger ones in float32."
        )
    else:
        try:
            chosen = np.dtype(dtype)  # type: ignore[call-overload]
        except TypeError:
            chosen = None
        if chosen not in DTYPES:
            raise AttentionError(f"dtype must be np.float64, np.float32 or None; got {dtype!r}", field="dtype")
    if count * chosen.itemsize > MAX_WEIGHT_BYTES:
        raise AttentionError(
            f"the model has {count:,} parameters: as {chosen} they take {count * chosen.itemsize / 1e9:.1f} GB, more "
            f"than the {MAX_WEIGHT_BYTES / 1024**3:g} GiB that can be opened"
            + (" (dtype=np.float32 halves it)" if chosen == np.float64 else ""),
            field="dtype",
        )
    return chosen, notes


def _folder(path: Path) -> Path:
    if path.is_file():
        if path.suffix.lower() in PICKLED:
            raise AttentionError(f"{path.name}: {WHY_NOT_PICKLE}", field="file")
        raise AttentionError(
            f"{path.name} is a file; give a .gguf file or the checkpoint's folder (config.json, model.safetensors and "
            "a tokenizer)",
            field="path",
        )
    if not path.is_dir():
        raise AttentionError(f"there is no folder {path.name!r}", field="path")
    files = _listed(path)
    if not (path / "model.safetensors").is_file() and not (path / "model.safetensors.index.json").is_file():
        pickled = sorted(f.name for f in files if f.suffix.lower() in PICKLED)
        if pickled:
            raise AttentionError(f"{pickled[0]}: {WHY_NOT_PICKLE}", field="model.safetensors")
        raise AttentionError(f"the folder {path.name!r} has no model.safetensors", field="model.safetensors")
    if not (path / "config.json").is_file():
        raise AttentionError(f"the folder {path.name!r} has no config.json", field="config.json")
    return path


def _listed(path: Path) -> list[Path]:
    """The folder's files, stopping as soon as a bound is passed: a wrong folder is not walked to its end."""
    files, total = [], 0
    for f in path.rglob("*"):
        if not f.is_file():
            continue
        files.append(f)
        total += f.stat().st_size
        if len(files) > MAX_FILES:
            raise AttentionError(
                f"the folder {path.name!r} holds more than {MAX_FILES} files; a checkpoint folder holds a few",
                field="path",
            )
        if total > MAX_FOLDER_BYTES:
            raise AttentionError(
                f"the folder {path.name!r} holds more than {MAX_FOLDER_BYTES:,} bytes ({MAX_FOLDER_BYTES / 1024**3:g} "
                "GiB), the most that can be opened (Qwen2.5-0.5B as float32, 2.0 GB, fits)",
                field="path",
            )
    return files


def _read_json(path: Path, limit: int) -> Any:
    size = path.stat().st_size
    if size > limit:
        raise AttentionError(f"{path.name} is {size:,} bytes; at most {limit:,} are read", field=path.name)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise AttentionError(f"{path.name} is not UTF-8 text", field=path.name) from None
    except json.JSONDecodeError as exc:
        raise AttentionError(
            f"{path.name} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}", field=path.name
        ) from None


def read_config(path: Path) -> Config:
    """The Config of a config.json of any family that opens; errors name the field."""
    return read_family_config(_read_json(path, MAX_CONFIG_BYTES))[1]


def read_weights(files: dict[str, WeightFile], family: str, config: Config, dtype: np.dtype) -> Params:
    """The parameters, as ``dtype``, from the weight files' tensors (see :mod:`.tensornames`), each checked against
    the config (present, its shape, a dtype read here) before its bytes are read, and finite after."""
    if not files:
        raise AttentionError("model.safetensors holds no tensors", field="model.safetensors")
    names = {tensornames.canonical(family, k): k for k in files}
    want = tensornames.sources(family, config)
    where = next(iter(files.values())).name if len({id(f) for f in files.values()}) == 1 else "the shards"
    used = {s.name for s in want.values()}
    extra = sorted(k for k in names if k not in used and not tensornames.ignorable(family, k, config))
    if extra:
        title = tensornames.TITLES.get(family, family.capitalize())
        layers = tensornames.LAYERS_KEY.get(family, "num_hidden_layers")
        raise AttentionError(
            f"{where} has a tensor {extra[0]!r} that a {title} of config.json's size does not have "
            f"({layers} = {config.n_layers})",
            field=extra[0],
        )
    for source in want.values():
        _check_tensor(files, names, source, family, config, where)
    read: dict[str, np.ndarray] = {}
    params: Params = {}
    for ours, source in want.items():
        if source.name not in read:
            read[source.name] = _finite(files[names[source.name]], names[source.name], source.name, dtype)
        params[ours] = source.take(read[source.name])
    return params


def _check_tensor(
    files: dict[str, WeightFile],
    names: dict[str, str],
    source: tensornames.Source,
    family: str,
    config: Config,
    where: str,
) -> None:
    """The tensor is in the files, with the shape the config gives and a dtype read here."""
    name = source.name
    if name not in names:
        raise AttentionError(
            f"{where} has no tensor {name!r}, which config.json's model needs"
            + (" (tie_word_embeddings is false)" if name in ("lm_head.weight", "embed_out.weight") else ""),
            field=name,
        )
    entry = files[names[name]].tensors[names[name]]
    if entry["shape"] != source.shape:
        raise AttentionError(
            f"{files[names[name]].name}: {name} has shape {list(entry['shape'])} but config.json "
            f"({tensornames.why_shape(family, name, config)}) needs {list(source.shape)}",
            field=name,
        )
    if entry["dtype"] not in STORED:
        raise AttentionError(
            f"{files[names[name]].name}: {name} is stored as {entry['dtype']}; only F16, BF16, F32 and F64 are read",
            field=name,
        )


def _finite(file: WeightFile, stored_name: str, name: str, dtype: np.dtype) -> np.ndarray:
    """One tensor read as ``dtype``, read-only, every value finite (else the first bad one is named)."""
    arr = file.read(stored_name, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        quick = np.isfinite(arr.sum())  # one pass: a finite sum means every value is finite
    bad = np.zeros(1, bool) if quick else ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AttentionError(
            f"{file.name}: {name} at {list(idx)} is {arr[idx]}; every weight must be finite", field=name
        )
    arr.flags.writeable = False  # the model keeps it as it is, without another copy
    return arr


def read_tokenizer(folder: Path, config: Config) -> tuple[BPEVocab, list[str]]:
    """tokenizer.json, or vocab.json + merges.txt (byte-level BPE as GPT-2's), read with ``tokenizers``; and a
    note when its vocabulary and the model's embedding differ in size."""
    try:
        import tokenizers
    except ImportError:  # pragma: no cover - a requirement
        raise AttentionError(
            "reading the tokenizer needs the tokenizers package (pip install tokenizers)", field="tokenizer.json"
        ) from None
    tj, vj, mt = folder / "tokenizer.json", folder / "vocab.json", folder / "merges.txt"
    if tj.is_file():
        _bounded(tj)
        try:
            tok = tokenizers.Tokenizer.from_file(str(tj))
        except Exception as exc:  # the library raises its own exception kinds for a malformed file
            raise AttentionError(
                f"tokenizer.json could not be read as a tokenizer: {str(exc)[:200]}", field="tokenizer.json"
            ) from None
    elif vj.is_file() or mt.is_file():
        missing = mt if vj.is_file() else vj
        if not missing.is_file():
            raise AttentionError(
                f"the folder has {(vj if missing is mt else mt).name} but no {missing.name}; a "
                "byte-level BPE tokenizer needs both",
                field=missing.name,
            )
        _bounded(vj)
        _bounded(mt)
        try:
            tok = tokenizers.ByteLevelBPETokenizer(str(vj), str(mt))
        except Exception as exc:  # as above
            raise AttentionError(
                f"vocab.json and merges.txt could not be read as a tokenizer: {str(exc)[:200]}", field="vocab.json"
            ) from None
    else:
        raise AttentionError(
            "the folder has no tokenizer: give tokenizer.json, or vocab.json and merges.txt", field="tokenizer.json"
        )
    vocab = BPEVocab(tok)
    return vocab, vocabulary_notes(len(vocab), config.vocab_size)


MOST_PADDING = 0.1  # rows beyond the tokenizer's tokens up to this share of the embedding: padding, not a mismatch


def vocabulary_notes(tokens: int, rows: int) -> list[str]:
    """A sentence when the tokenizer's vocabulary and the embedding's rows differ; none when they agree. Ids the
    tokenizer has no token for are still run (their rows exist) and are written ⟨#N⟩ wherever a token is shown."""
    if tokens < rows:
        unnamed = f"ids {tokens:,} to {rows - 1:,} never come from text, and a prediction of one is shown as ⟨#N⟩"
        if rows - tokens > MOST_PADDING * rows:
            return [
                f"The tokenizer has {tokens:,} tokens but the model's embedding {rows:,} rows: it is probably not "
                f"this model's own tokenizer (a few padding rows are common, not {rows - tokens:,}). Texts are read "
                f"with it; {unnamed}."
            ]
        return [
            f"The tokenizer has {tokens:,} tokens and the model's embedding {rows:,} rows: {unnamed} (a few padding "
            "rows are common)."
        ]
    if tokens > rows:
        return [
            f"The tokenizer has {tokens:,} tokens but the model's embedding only {rows:,} rows: a text that makes an "
            f"id of {rows:,} or more cannot be run."
        ]
    return []


def _bounded(path: Path) -> None:
    size = path.stat().st_size
    if size > MAX_TOKENIZER_BYTES:
        raise AttentionError(
            f"{path.name} is {size:,} bytes; at most {MAX_TOKENIZER_BYTES:,} are read", field=path.name
        )
