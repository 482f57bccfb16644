"""Open a GPT-2-family checkpoint folder as model hubs publish it: config.json, model.safetensors, a tokenizer.

What is read, and how:

- ``config.json``: the sizes (n_embd, n_layer, n_head, n_positions, vocab_size, n_inner) and conventions
  (activation_function, layer_norm_epsilon, tie_word_embeddings, scale_attn_weights,
  scale_attn_by_inverse_layer_idx); model_type must be "gpt2";
- ``model.safetensors``: read with the safetensors numpy API, memory-mapped; each tensor's shape is checked
  against the config before it is read, and every value must be finite. Pickled weights (``.bin``, ``.pt``,
  ``.pth``, ``.ckpt``, ``.pkl``) are never opened: unpickling runs code from the file;
- ``tokenizer.json``, or ``vocab.json`` + ``merges.txt`` (byte-level BPE), read with the ``tokenizers`` library.

The folder may hold at most :data:`MAX_FOLDER_BYTES` (2 GiB: GPT-2 small, 0.5 GB, and medium, 1.5 GB, fit;
large, 3.2 GB, does not): the weights are held as float64, twice their size in float32. Every problem is an
AttentionError naming the file and the field or tensor.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import AttentionError
from ..names import is_number, is_whole
from .config import Config
from .model import Model, Params
from .vocab import BPEVocab

MAX_FOLDER_BYTES = 2 * 1024**3
MAX_CONFIG_BYTES = 1024**2
MAX_FILES = 1000
MAX_TOKENIZER_BYTES = 64 * 1024**2
PICKLED = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
WHY_NOT_PICKLE = (
    "pickled weights are never opened here, because unpickling a file can run any code it contains; "
    "save the model with save_pretrained(..., safe_serialization=True) to get model.safetensors"
)
ACTIVATIONS = {
    "gelu_new": "gelu_new",
    "gelu_pytorch_tanh": "gelu_new",
    "gelu_fast": None,
    "gelu": "gelu",
    "relu": "relu",
}
BUFFERS = ("attn.bias", "attn.masked_bias")  # causal-mask buffers some checkpoints carry: not weights


def load(path: str | Path) -> Model:
    """The model in a GPT-2 checkpoint folder (see the module's docstring for what it must hold)."""
    folder = _folder(Path(path))
    config = read_config(folder / "config.json")
    params = read_weights(folder / "model.safetensors", config)
    vocab = read_tokenizer(folder, config)
    return Model(config, params, vocab, name=folder.name)


def _folder(path: Path) -> Path:
    if path.is_file():
        if path.suffix.lower() in PICKLED:
            raise AttentionError(f"{path.name}: {WHY_NOT_PICKLE}", field="file")
        raise AttentionError(
            f"{path.name} is a file; give the checkpoint's folder (config.json, model.safetensors and a tokenizer)",
            field="path",
        )
    if not path.is_dir():
        raise AttentionError(f"there is no folder {path.name!r}", field="path")
    files, total = [], 0
    for f in path.rglob("*"):  # stops as soon as a bound is passed: a wrong folder is not walked to its end
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
                "GiB), the most that can be opened (GPT-2 small and medium fit)",
                field="path",
            )
    if not (path / "model.safetensors").is_file():
        pickled = sorted(f.name for f in files if f.suffix.lower() in PICKLED)
        if pickled:
            raise AttentionError(f"{pickled[0]}: {WHY_NOT_PICKLE}", field="model.safetensors")
        if (path / "model.safetensors.index.json").is_file():
            raise AttentionError(
                "model.safetensors.index.json: sharded checkpoints are not opened here; save the model as one "
                "model.safetensors file",
                field="model.safetensors",
            )
        raise AttentionError(f"the folder {path.name!r} has no model.safetensors", field="model.safetensors")
    if not (path / "config.json").is_file():
        raise AttentionError(f"the folder {path.name!r} has no config.json", field="config.json")
    return path


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


def _check_kind(raw: object) -> None:
    """config.json holds an object that describes a decoder-only GPT-2 (model_type, architectures, no
    cross-attention); errors name the field."""
    if not isinstance(raw, dict):
        raise AttentionError("config.json must hold a JSON object", field="config.json")
    kind = raw.get("model_type")
    if kind != "gpt2":
        archs = raw.get("architectures")
        raise AttentionError(
            f"config.json: model_type is {kind!r}"
            + (f" (architectures {archs!r})" if archs else "")
            + "; only GPT-2 checkpoints (model_type 'gpt2') can be opened",
            field="model_type",
        )
    archs = raw.get("architectures")
    if archs is not None and (
        not isinstance(archs, list) or not all(a in ("GPT2LMHeadModel", "GPT2Model") for a in archs)
    ):
        raise AttentionError(
            f"config.json: architectures is {archs!r}; only GPT2LMHeadModel or GPT2Model can be opened",
            field="architectures",
        )
    if raw.get("add_cross_attention"):
        raise AttentionError(
            "config.json: add_cross_attention is true; only decoder-only GPT-2 is supported",
            field="add_cross_attention",
        )


def read_config(path: Path) -> Config:
    """The Config of a GPT-2 config.json; errors name the field."""
    raw = _read_json(path, MAX_CONFIG_BYTES)
    _check_kind(raw)

    def whole(name: str, default: object = None) -> int:
        value = raw.get(name, default)
        if not (is_whole(value) and value > 0):
            raise AttentionError(f"config.json: {name} must be a whole number > 0; got {value!r}", field=name)
        return value

    def flag(name: str, default: bool) -> bool:
        value = raw.get(name, default)
        if not isinstance(value, bool):
            raise AttentionError(f"config.json: {name} must be true or false; got {value!r}", field=name)
        return value

    d = whole("n_embd")
    if d % whole("n_head"):
        raise AttentionError(
            f"config.json: n_embd = {d} does not divide into n_head = {raw['n_head']} heads", field="n_head"
        )
    inner = raw.get("n_inner")
    act = raw.get("activation_function", "gelu_new")
    if ACTIVATIONS.get(act) is None:
        known = ", ".join(k for k, v in ACTIVATIONS.items() if v)
        raise AttentionError(
            f"config.json: activation_function {act!r} is not supported (use one of {known})",
            field="activation_function",
        )
    eps = raw.get("layer_norm_epsilon", 1e-5)
    if not (is_number(eps) and 0 < eps < 1):
        raise AttentionError(
            f"config.json: layer_norm_epsilon must be a number between 0 and 1; got {eps!r}", field="layer_norm_epsilon"
        )
    try:
        return Config(
            vocab_size=whole("vocab_size"),
            n_ctx=whole("n_positions"),
            d_model=d,
            n_layers=whole("n_layer"),
            n_heads=whole("n_head"),
            d_mlp=4 * d if inner is None else whole("n_inner"),
            positions="learned",
            tied=flag("tie_word_embeddings", True),
            bias=True,
            ln_eps=float(eps),
            activation=ACTIVATIONS[act],  # type: ignore[arg-type]
            scale_by_layer=flag("scale_attn_by_inverse_layer_idx", False),
            scale_attn=flag("scale_attn_weights", True),
        ).validate("config.json")
    except AttentionError as exc:
        names = {
            "n_ctx": "n_positions",
            "d_model": "n_embd",
            "n_layers": "n_layer",
            "n_heads": "n_head",
            "d_mlp": "n_inner",
        }
        raise AttentionError(
            exc.message.replace("config.json.", "config.json: "), field=names.get(exc.field or "", exc.field)
        ) from None


def expected_tensors(config: Config) -> dict[str, tuple[int, ...]]:
    """The tensors of a GPT-2 model.safetensors (without the "transformer." prefix) and their shapes."""
    d, V, m = config.d_model, config.vocab_size, config.d_mlp
    s: dict[str, tuple[int, ...]] = {"wte.weight": (V, d), "wpe.weight": (config.n_ctx, d)}
    for layer in range(config.n_layers):
        p = f"h.{layer}."
        s.update(
            {
                p + "ln_1.weight": (d,),
                p + "ln_1.bias": (d,),
                p + "attn.c_attn.weight": (d, 3 * d),
                p + "attn.c_attn.bias": (3 * d,),
                p + "attn.c_proj.weight": (d, d),
                p + "attn.c_proj.bias": (d,),
                p + "ln_2.weight": (d,),
                p + "ln_2.bias": (d,),
                p + "mlp.c_fc.weight": (d, m),
                p + "mlp.c_fc.bias": (m,),
                p + "mlp.c_proj.weight": (m, d),
                p + "mlp.c_proj.bias": (d,),
            }
        )
    s.update({"ln_f.weight": (d,), "ln_f.bias": (d,)})
    if not config.tied:
        s["lm_head.weight"] = (V, d)
    return s


def _why_shape(name: str, config: Config) -> str:
    """Which config fields decide a tensor's shape, for the message."""
    c = config
    if name.startswith("wte"):
        return f"vocab_size = {c.vocab_size}, n_embd = {c.d_model}"
    if name.startswith("wpe"):
        return f"n_positions = {c.n_ctx}, n_embd = {c.d_model}"
    if "mlp" in name:
        return f"n_embd = {c.d_model}, n_inner = {c.d_mlp}"
    return f"n_embd = {c.d_model}"


def read_weights(path: Path, config: Config) -> Params:
    """The parameters (float64) from model.safetensors, each tensor checked against the config."""
    try:
        from safetensors import SafetensorError, safe_open
    except ImportError:  # pragma: no cover - a requirement
        raise AttentionError(
            "reading model.safetensors needs the safetensors package (pip install safetensors)",
            field="model.safetensors",
        ) from None
    want = expected_tensors(config)
    try:
        with safe_open(str(path), framework="np") as f:  # memory-mapped: a tensor is read when asked for
            tensors = _tensors(f, want, config)
    except SafetensorError as exc:
        raise AttentionError(
            f"model.safetensors could not be read as a safetensors file: {exc}", field="model.safetensors"
        ) from None
    return _to_params(tensors, config)


def _tensors(f: Any, want: dict[str, tuple[int, ...]], config: Config) -> dict[str, np.ndarray]:
    """Every tensor config.json's GPT-2 needs from the open file ``f``, each checked (:func:`_tensor`); a tensor it
    does not have, or one it needs and the file lacks, is named."""
    tensors: dict[str, np.ndarray] = {}
    names = {k.removeprefix("transformer."): k for k in f.keys()}  # noqa: SIM118 - safe_open is not iterable
    extra = sorted(k for k in names if k not in want and k != "lm_head.weight" and not k.endswith(BUFFERS))
    if extra:
        raise AttentionError(
            f"model.safetensors has a tensor {extra[0]!r} that a GPT-2 of config.json's size does not have "
            f"(n_layer = {config.n_layers})",
            field=extra[0],
        )
    for name, shape in want.items():
        if name not in names:
            tied = " (tie_word_embeddings is false)" if name == "lm_head.weight" else ""
            raise AttentionError(
                f"model.safetensors has no tensor {name!r}, which config.json's GPT-2 needs{tied}", field=name
            )
        tensors[name] = _tensor(f, names[name], name, shape, config)
    return tensors


def _tensor(f: Any, stored: str, name: str, shape: tuple[int, ...], config: Config) -> np.ndarray:
    """The tensor ``stored`` in the open file ``f`` as a read-only float64 array, checked: the shape config.json
    gives ``name``, a float type, every value finite."""
    sl = f.get_slice(stored)
    got = tuple(sl.get_shape())
    if got != shape:
        raise AttentionError(
            f"model.safetensors: {name} has shape {list(got)} but config.json "
            f"({_why_shape(name, config)}) needs {list(shape)}",
            field=name,
        )
    if sl.get_dtype() not in ("F16", "F32", "F64"):
        raise AttentionError(
            f"model.safetensors: {name} is stored as {sl.get_dtype()}; only F16, F32 and F64 are read",
            field=name,
        )
    arr = np.asarray(f.get_tensor(stored), dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        quick = np.isfinite(arr.sum())  # one pass: a finite sum means every value is finite
    bad = np.zeros(1, bool) if quick else ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AttentionError(
            f"model.safetensors: {name} at {list(idx)} is {arr[idx]}; every weight must be finite",
            field=name,
        )
    arr.flags.writeable = False  # the model keeps it as it is, without another copy
    return arr


def _to_params(t: dict[str, np.ndarray], config: Config) -> Params:
    """GPT-2's tensors under this package's names (Conv1D weights are already x @ W)."""
    d = config.d_model
    p: Params = {"W_E": t["wte.weight"], "W_pos": t["wpe.weight"]}
    for layer in range(config.n_layers):
        h, q = f"h.{layer}.", f"{layer}."
        W, b = t[h + "attn.c_attn.weight"], t[h + "attn.c_attn.bias"]  # (d, 3d), (3d,)
        p[q + "ln1.g"], p[q + "ln1.b"] = t[h + "ln_1.weight"], t[h + "ln_1.bias"]
        for k, m in enumerate("qkv"):
            p[q + f"W_{m}"], p[q + f"b_{m}"] = W[:, k * d : (k + 1) * d], b[k * d : (k + 1) * d]
        p[q + "W_o"], p[q + "b_o"] = t[h + "attn.c_proj.weight"], t[h + "attn.c_proj.bias"]
        p[q + "ln2.g"], p[q + "ln2.b"] = t[h + "ln_2.weight"], t[h + "ln_2.bias"]
        p[q + "W_fc"], p[q + "b_fc"] = t[h + "mlp.c_fc.weight"], t[h + "mlp.c_fc.bias"]
        p[q + "W_proj"], p[q + "b_proj"] = t[h + "mlp.c_proj.weight"], t[h + "mlp.c_proj.bias"]
    p["ln_f.g"], p["ln_f.b"] = t["ln_f.weight"], t["ln_f.bias"]
    if not config.tied:
        p["W_U"] = t["lm_head.weight"].T  # (d, V)
    return p


def read_tokenizer(folder: Path, config: Config) -> BPEVocab:
    """tokenizer.json, or vocab.json + merges.txt (byte-level BPE as GPT-2's), read with ``tokenizers``."""
    try:
        import tokenizers
    except ImportError:  # pragma: no cover - a requirement
        raise AttentionError(
            "reading the tokenizer needs the tokenizers package (pip install tokenizers)", field="tokenizer.json"
        ) from None
    tj, vj, mt = folder / "tokenizer.json", folder / "vocab.json", folder / "merges.txt"
    if tj.is_file():
        name = tj.name
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
        name = "vocab.json and merges.txt"
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
    if len(vocab) > config.vocab_size:
        raise AttentionError(
            f"{name}: the tokenizer has {len(vocab)} tokens but config.json's vocab_size is {config.vocab_size}",
            field="vocab_size",
        )
    return vocab


def _bounded(path: Path) -> None:
    size = path.stat().st_size
    if size > MAX_TOKENIZER_BYTES:
        raise AttentionError(
            f"{path.name} is {size:,} bytes; at most {MAX_TOKENIZER_BYTES:,} are read", field=path.name
        )
