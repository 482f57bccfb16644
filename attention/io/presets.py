"""Presets: one human-readable JSON file each in ``presets/``, found by listing the folder, validated on load.

A preset holds the tokens, the fixed matrices and/or a random draw spec (seed + order on numpy's
legacy generator), the conventions (``Options``), and the numbers its document prints, so the app
can say "matches the document" and the tests can check it. Floats are written with ``repr``
precision, so a saved preset loads back bit-exact.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from .. import masks, rng
from ..errors import AttentionError
from ..names import ARRAYS, EXTRAS, INPUTS, MAX_DIM, MAX_SEED, MAX_TOKENS, inputs_of, is_number, is_whole
from ..options import ROTATION_DEFAULTS
from ..options import from_json as options_from_json
from ..options import short as _short
from ..source import cross_options, source_rows
from ..trace import Options, Trace, cross_attention, self_attention
from .folders import shipped_folder
from .jsonfile import NonFinite, load_json

FORMAT = "attention-preset/1"
PRESET_DIR = shipped_folder("presets")


@dataclass(frozen=True)
class RandomSpec:
    """Seed and draw order: ``RandomState(seed).rand(*shape)`` for each (name, shape), in order."""

    seed: int
    draws: tuple[tuple[str, tuple[int, ...]], ...]
    generator: str = rng.GENERATOR
    scales: Mapping[str, float] = field(default_factory=dict)  # a factor per drawn matrix (1 when absent)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.draws)


@dataclass(frozen=True)
class Preset:
    """A loaded preset. ``matrices()`` gives X, W_q, W_k, W_v (fixed ones plus the random draws for
    ``seed``); ``compute()`` runs the engine with the preset's conventions."""

    id: str
    title: str
    tokens: tuple[str, ...]
    options: Options
    fixed: Mapping[str, np.ndarray]
    random: RandomSpec | None = None
    seed: int | None = None
    source: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    expected: Mapping[str, np.ndarray] = field(default_factory=dict)
    expected_shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    notes: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""  # the sidebar's name for it (the title when empty)
    order: float = 1000.0  # where it sits in the sidebar's list (then by id)
    source_tokens: tuple[str, ...] = ()  # a source sentence: cross-attention's keys and values (attention.source)

    @property
    def is_random(self) -> bool:
        return self.random is not None

    def with_seed(self, seed: int | None) -> Preset:
        """The same preset with its random parts drawn from ``seed`` (None: the preset's own seed)."""
        if seed is None:
            return self
        seed = _check_seed(seed, "seed")  # checked even where it is ignored, so a bad seed never passes silently
        if self.random is None:
            return self
        return replace(self, seed=seed)

    def matrices(self) -> dict[str, np.ndarray]:
        """X, W_q, W_k, W_v (then W_o and P when the preset has them) as float arrays (X may carry a batch axis, as
        the 'The cat sat on the mat' example's (1, 6, 8))."""
        out = {name: np.array(value, dtype=np.float64) for name, value in self.fixed.items()}
        if self.random is not None:
            out.update(
                rng.draw(
                    self.seed if self.seed is not None else self.random.seed,
                    self.random.draws,
                    self.random.generator,
                    self.random.scales,
                )
            )
        return {name: out[name] for name in inputs_of(out)}

    def compute(self) -> Trace:
        m = self.matrices()
        if self.source_tokens:  # queries from the tokens, keys and values from the source sentence's rows
            X_kv = source_rows(m["X"], self.tokens, self.source_tokens)  # (S, d_model)
            return cross_attention(
                m["X"],
                X_kv,
                m["W_q"],
                m["W_k"],
                m["W_v"],
                cross_options(self.options),
                W_o=m.get("W_o"),
                tokens=self.tokens,
                tokens_kv=self.source_tokens,
            )
        return self_attention(
            m["X"],
            m["W_q"],
            m["W_k"],
            m["W_v"],
            W_o=m.get("W_o"),
            P=m.get("P"),
            tokens=self.tokens,
            options=self.options,
        )

    def to_dict(self) -> dict[str, Any]:
        """The preset as the JSON-ready dict of the file format."""
        d: dict[str, Any] = {"format": FORMAT, "id": self.id, "title": self.title}
        if self.label:
            d["label"] = self.label
        if self.order != 1000.0:
            d["order"] = self.order
        if self.source:
            d["source"] = dict(self.source)
        if self.description:
            d["description"] = self.description
        d["tokens"] = list(self.tokens)
        if self.source_tokens:
            d["source_tokens"] = list(self.source_tokens)
        d["options"] = _options_to_dict(self.options)
        d["matrices"] = {name: np.asarray(v).tolist() for name, v in self.fixed.items()}
        if self.random is not None:
            d["random"] = {
                "generator": self.random.generator,
                "seed": self.seed if self.seed is not None else self.random.seed,
                "draws": [
                    {"name": n, "shape": list(s)}
                    | ({"scale": self.random.scales[n]} if n in self.random.scales else {})
                    for n, s in self.random.draws
                ],
            }
        if self.expected or self.expected_shapes:
            d["expected"] = {name: np.asarray(v).tolist() for name, v in self.expected.items()}
            if self.expected_shapes:
                d["expected"]["shapes"] = {k: list(v) for k, v in self.expected_shapes.items()}
        if self.notes:
            d["notes"] = dict(self.notes)
        return d

    def to_json(self) -> str:
        """Serialise; floats keep full precision (``repr``), so loading gives identical arrays."""
        return _dump(self.to_dict()) + "\n"


def from_state(
    tokens: Sequence[str],
    matrices: Mapping[str, np.ndarray],
    options: Options,
    *,
    id: str = "my_preset",
    title: str = "My preset",
    description: str = "",
    source: Mapping[str, str] | None = None,
    source_tokens: Sequence[str] = (),
) -> Preset:
    """A preset holding the given state as fixed matrices (what 'save my preset' writes); ``source_tokens`` a
    source sentence for cross-attention (:mod:`attention.source`)."""
    fixed = {name: np.array(matrices[name], dtype=np.float64) for name in inputs_of(matrices)}
    preset = Preset(
        id=id,
        title=title,
        tokens=tuple(tokens),
        options=options,
        fixed=fixed,
        description=description,
        source=dict(source or {}),
        source_tokens=tuple(source_tokens),
    )
    return parse_preset(preset.to_json(), f"{id}.json")  # one validation path for every preset


def blank(n: int, d_model: int, d_k: int | None = None, seed: int = 0, tokens: Sequence[str] | None = None) -> Preset:
    """A "blank n×d" preset: n tokens, X (n, d_model) and W (d_model, d_k) all drawn from ``seed``."""
    d_k = d_model if d_k is None else d_k
    for what, v, hi in (("n (tokens)", n, MAX_TOKENS), ("d_model", d_model, MAX_DIM), ("d_k", d_k, MAX_DIM)):
        if not (isinstance(v, (int, np.integer)) and 1 <= v <= hi):
            raise AttentionError(f"{what} must be a whole number from 1 to {hi}; got {v!r}")
    toks = tuple(tokens) if tokens is not None else tuple(f"t{i + 1}" for i in range(n))
    if len(toks) != n:
        raise AttentionError(f"{len(toks)} tokens given for n = {n}")
    draws = (("X", (n, d_model)), ("W_q", (d_model, d_k)), ("W_k", (d_model, d_k)), ("W_v", (d_model, d_k)))
    return Preset(
        id="blank",
        title=f"Blank {n}×{d_model}",
        tokens=toks,
        options=Options(),
        fixed={},
        random=RandomSpec(seed, draws, rng.NORMAL, {w: 1 / float(np.sqrt(d_model)) for w in ("W_q", "W_k", "W_v")}),
        seed=_check_seed(seed, "seed"),
        description="Every matrix drawn from a normal distribution with the seed, in the order X, W_q, W_k, W_v: "
        "X with variance 1 and each W with variance 1/d_model, so Q, K and V have variance about 1 "
        "(as a trained model is initialised). Centred values give scores of both signs, so "
        "different tokens attend to different keys; with the tutorials' uniform [0, 1) values every "
        "score is positive and every row prefers the same few keys (those with the largest keys).",
    )


def list_presets() -> list[str]:
    """The ids of the preset files in ``presets/``, in the order their files give (then by id).

    A new ``<id>.json`` dropped into the folder is listed with no code change. A file that does not
    validate is left out here; :func:`load_preset` names what is wrong with it.
    """
    return [p.id for p in _catalogue(_folder_stamp())]


def preset_label(preset_id: str) -> str:
    """The sidebar's name for a preset: its file's ``label``, else its title."""
    for p in _catalogue(_folder_stamp()):
        if p.id == preset_id:
            return p.label or p.title
    return preset_id


def _folder_stamp() -> tuple[tuple[str, int, int], ...]:
    """What the folder holds now (name, size, mtime), so the catalogue is re-read only when a file changes."""
    return tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in sorted(PRESET_DIR.glob("*.json")))


@functools.lru_cache(maxsize=4)
def _catalogue(stamp: tuple[tuple[str, int, int], ...]) -> tuple[Preset, ...]:
    found = []
    for name, _, _ in stamp:
        try:
            preset = read_preset_file(PRESET_DIR / name)
        except AttentionError:
            continue
        if preset.id == name.removesuffix(".json"):
            found.append(preset)
    return tuple(sorted(found, key=lambda p: (p.order, p.id)))


def load_preset(preset_id: str, seed: int | None = None) -> Preset:
    """Load ``presets/<id>.json``; ``seed`` redraws the preset's random parts (None keeps its own)."""
    ids = list_presets()
    if preset_id not in ids:
        raise AttentionError(f"unknown preset {preset_id!r}; choose one of {', '.join(ids)}")
    return read_preset_file(PRESET_DIR / f"{preset_id}.json").with_seed(seed)


def read_preset_file(path: Path) -> Preset:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise AttentionError(f"{Path(path).name}: cannot read the preset file ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise AttentionError(f"{Path(path).name}: the preset file is not UTF-8 text") from None
    return parse_preset(text, Path(path).name)


def parse_preset(text: str | bytes, filename: str = "preset.json") -> Preset:
    """Parse and validate preset JSON; every failure names the file and the field (bounded: see :mod:`.jsonfile`)."""
    data = load_json(text, filename)
    found = _find_non_finite(data, "")
    if found is not None:
        where, literal = found
        raise _Validator(filename).fail(
            where or "(top level)", f"is {literal}, which is not allowed in a preset; every number must be finite"
        )
    return _Validator(filename).preset(data)


def _find_non_finite(value: Any, where: str) -> tuple[str, str] | None:
    """The dotted path and text of the first NaN/Infinity literal in parsed JSON, or None."""
    if isinstance(value, NonFinite):
        return where, str(value)
    if isinstance(value, dict):
        for k, v in value.items():
            hit = _find_non_finite(v, f"{where}.{k}" if where else str(k))
            if hit:
                return hit
    elif isinstance(value, list):
        for i, v in enumerate(value):
            hit = _find_non_finite(v, f"{where}[{i}]")
            if hit:
                return hit
    return None


class _Validator:
    """Hand-written schema check; each error names the file and the dotted field path."""

    def __init__(self, filename: str):
        self.filename = filename

    def fail(self, where: str, message: str) -> AttentionError:
        return AttentionError(f"{self.filename}: field '{where}' {message}")

    def obj(self, value: Any, where: str, required: set[str], optional: set[str]) -> dict:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be an object, got {type(value).__name__}")
        missing = sorted(required - value.keys())
        if missing:
            raise self.fail(f"{where}.{missing[0]}" if where != "(top level)" else missing[0], "is missing")
        extra = sorted(value.keys() - required - optional)
        if extra:
            name = f"{where}.{extra[0]}" if where != "(top level)" else extra[0]
            raise self.fail(name, f"is not a known field (known: {', '.join(sorted(required | optional))})")
        return value

    def text(self, value: Any, where: str, max_len: int = 10_000) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"must be text, got {type(value).__name__}")
        if len(value) > max_len:
            raise self.fail(where, f"is longer than {max_len} characters")
        return value

    def source_tokens(self, value: Any) -> tuple[str, ...]:
        """The source sentence (cross-attention): 0 to MAX_TOKENS words, each non-empty text without spaces."""
        if not isinstance(value, list) or len(value) > MAX_TOKENS:
            raise self.fail("source_tokens", f"must be a list of at most {MAX_TOKENS} token strings")
        words = tuple(self.text(w, f"source_tokens[{i}]", 200) for i, w in enumerate(value))
        for i, w in enumerate(words):
            if not w or w.split() != [w]:
                raise self.fail(f"source_tokens[{i}]", "must be one word: non-empty text without spaces")
        return words

    def number(self, value: Any, where: str) -> float:
        if not is_number(value):
            raise self.fail(where, f"must be a finite number, got {_short(value)}")
        if not math.isfinite(value):  # NaN/Infinity literals are caught earlier: this is a number too large to hold
            raise self.fail(where, "is a number too large for a 64-bit float (the largest is about 1.8e308)")
        return float(value)

    def matrix(self, value: Any, where: str) -> np.ndarray:
        def walk(v: Any, path: str, depth: int) -> None:
            if depth > 3:
                raise self.fail(path, "is nested too deeply (at most 3-D)")
            if isinstance(v, list):
                if not v:
                    raise self.fail(path, "is an empty list")
                for i, item in enumerate(v):
                    walk(item, f"{path}[{i}]", depth + 1)
            else:
                self.number(v, path)

        walk(value, where, 0)
        try:
            arr = np.array(value, dtype=np.float64)
        except ValueError:
            raise self.fail(where, "has rows of different lengths") from None
        if arr.ndim not in (2, 3):
            raise self.fail(where, f"must be a 2-D matrix (or 3-D with a batch axis), got {arr.ndim}-D")
        return arr

    def shape(self, value: Any, where: str, max_dims: int = 3) -> tuple[int, ...]:
        def whole(v: Any) -> bool:
            return is_whole(v) and 1 <= v <= MAX_TOKENS

        if not (isinstance(value, list) and 1 <= len(value) <= max_dims and all(whole(v) for v in value)):
            raise self.fail(
                where, f"must be a list of 1 to {max_dims} whole numbers from 1 to {MAX_TOKENS}, got {_short(value)}"
            )
        return tuple(value)

    def preset(self, data: Any) -> Preset:
        """The whole file, one field after another in the file format's order, then the shapes by a dry run."""
        top = self.obj(
            data,
            "(top level)",
            {"format", "id", "title", "tokens", "options"},
            {"source", "description", "matrices", "random", "expected", "notes", "label", "order", "source_tokens"},
        )
        if top["format"] != FORMAT:
            raise self.fail("format", f"must be {FORMAT!r}, got {_short(top['format'])}")
        pid = self.preset_id(top["id"])
        title = self.text(top["title"], "title", 200)
        label = self.text(top.get("label", ""), "label", 80)
        order = self.number(top.get("order", 1000.0), "order")
        tokens = self.tokens(top["tokens"])
        options = self.options(top["options"], len(tokens))
        source_tokens = self.source_tokens(top.get("source_tokens", []))
        source_obj = self.obj(top.get("source", {}), "source", set(), {"document", "url", "note"})
        source = {k: self.text(v, f"source.{k}", 2000) for k, v in source_obj.items()}
        description = self.text(top.get("description", ""), "description")
        matrices_obj = self.obj(top.get("matrices", {}), "matrices", set(), set(INPUTS) | set(EXTRAS))
        fixed = {name: self.matrix(v, f"matrices.{name}") for name, v in matrices_obj.items()}
        random = None if top.get("random") is None else self.random(top["random"], fixed)
        self.all_inputs(fixed, random)
        expected, shapes = self.expected(top["expected"]) if "expected" in top else ({}, {})
        notes = top.get("notes", {})
        if not isinstance(notes, dict):
            raise self.fail("notes", "must be an object")
        preset = Preset(
            id=pid,
            title=title,
            tokens=tokens,
            options=options,
            fixed=fixed,
            random=random,
            seed=random.seed if random else None,
            source=source,
            description=description,
            expected=expected,
            expected_shapes=shapes,
            notes=notes,
            source_tokens=source_tokens,
            label=label,
            order=order,
        )
        self.consistent(preset)
        return preset

    def preset_id(self, value: Any) -> str:
        pid = self.text(value, "id", 100)
        if not pid or not all(c.isalnum() or c in "_-" for c in pid):
            raise self.fail("id", f"must be letters, digits, '_' or '-', got {_short(pid)}")
        return pid

    def tokens(self, value: Any) -> tuple[str, ...]:
        """1 to MAX_TOKENS token strings."""
        if not isinstance(value, list) or not value:
            raise self.fail("tokens", "must be a non-empty list of token strings")
        if len(value) > MAX_TOKENS:
            raise self.fail("tokens", f"lists {len(value)} tokens; at most {MAX_TOKENS}")
        return tuple(self.text(t, f"tokens[{i}]", 200) for i, t in enumerate(value))

    def random(self, value: Any, fixed: Mapping[str, np.ndarray]) -> RandomSpec:
        """The random draws: a generator, a seed, and the draws in order, each a matrix not given in ``fixed``."""
        r = self.obj(value, "random", {"generator", "seed", "draws"}, set())
        if r["generator"] not in rng.GENERATORS:
            raise self.fail("random.generator", f"must be {rng.GENERATOR!r} or {rng.NORMAL!r}")
        seed = r["seed"]
        if not (is_whole(seed) and 0 <= seed <= MAX_SEED):
            raise self.fail("random.seed", f"must be a whole number from 0 to {MAX_SEED}, got {_short(seed)}")
        if not isinstance(r["draws"], list) or not r["draws"]:
            raise self.fail("random.draws", "must be a non-empty list of {name, shape}")
        draws: list[tuple[str, tuple[int, ...]]] = []
        scales: dict[str, float] = {}
        for i, value_ in enumerate(r["draws"]):
            name, shape, scale = self.draw(value_, f"random.draws[{i}]", set(fixed) | {n for n, _ in draws})
            draws.append((name, shape))
            if scale is not None:
                scales[name] = scale
        return RandomSpec(seed, tuple(draws), r["generator"], scales)

    def draw(self, value: Any, where: str, taken: set[str]) -> tuple[str, tuple[int, ...], float | None]:
        """One draw: (the input's name, its shape, its factor or None)."""
        dr = self.obj(value, where, {"name", "shape"}, {"scale"})
        if dr["name"] not in INPUTS:
            raise self.fail(f"{where}.name", f"must be one of {', '.join(INPUTS)}, got {_short(dr['name'])}")
        if dr["name"] in taken:
            raise self.fail(f"{where}.name", f"{_short(dr['name'])} is given twice")
        shape = self.shape(dr["shape"], f"{where}.shape")
        scale = self.number(dr["scale"], f"{where}.scale") if "scale" in dr else None
        return dr["name"], shape, scale

    def all_inputs(self, fixed: Mapping[str, np.ndarray], random: RandomSpec | None) -> None:
        """Every input of :data:`INPUTS` is given or drawn."""
        have = set(fixed) | set(random.names if random else ())
        missing = [n for n in INPUTS if n not in have]
        if missing:
            raise self.fail(f"matrices.{missing[0]}", "is missing (give it in 'matrices' or draw it in 'random.draws')")

    def expected(self, value: Any) -> tuple[dict[str, np.ndarray], dict[str, tuple[int, ...]]]:
        """The document's printed arrays, and the shapes it prints."""
        expected, shapes = {}, {}
        exp = self.obj(value, "expected", set(), set(ARRAYS) | {"shapes"})
        for name, v in exp.items():
            if name == "shapes":
                shapes_obj = self.obj(v, "expected.shapes", set(), set(ARRAYS) | {"scores_np_dot"})
                shapes = {k: self.shape(s, f"expected.shapes.{k}", 4) for k, s in shapes_obj.items()}
            else:
                expected[name] = self.matrix(v, f"expected.{name}")
        return expected, shapes

    def options(self, value: Any, n: int) -> Options:
        """The options object, read by :func:`attention.options.from_json` (the one reader of options), its message
        given the field's path."""
        o = self.obj(value, "options", set(), {f.name for f in fields(Options)})
        try:
            return options_from_json(o, n=n)
        except AttentionError as exc:
            raise self.fail(f"options.{exc.field}", exc.message.removeprefix(f"{exc.field} ")) from None

    def consistent(self, preset: Preset) -> None:
        """Shapes agree with the tokens and with each other (checked by a dry run of the engine)."""
        try:
            m = preset.matrices()
            if m["X"].shape[-2] != len(preset.tokens):
                raise self.fail("tokens", f"lists {len(preset.tokens)} tokens but X has {m['X'].shape[-2]} rows")
            preset.compute()
        except AttentionError as exc:
            if exc.message.startswith(self.filename):
                raise
            where = self.field_of(preset, exc.matrix)
            raise AttentionError(
                f"{self.filename}: field '{where}': {exc.message}", matrix=exc.matrix, cell=exc.cell
            ) from None

    @staticmethod
    def field_of(preset: Preset, matrix: str | None) -> str:
        """The file field a dry-run error points at: the matrix's entry, the padding flags, or the softmax."""
        if matrix in preset.fixed:
            return f"matrices.{matrix}"
        if preset.random is not None and matrix in preset.random.names:
            return f"random.draws ({matrix})"
        return {"mask": "options.padding", "weights": "options.softmax"}.get(matrix or "", "matrices")


def _check_seed(seed: object, where: str) -> int:
    if not is_whole(seed) or not 0 <= int(seed) <= MAX_SEED:
        raise AttentionError(f"{where} must be a whole number from 0 to {MAX_SEED}; got {seed!r}")
    return int(seed)


def _options_to_dict(o: Options) -> dict[str, Any]:
    d: dict[str, Any] = {
        "projection": o.projection,
        "softmax": o.softmax,
        "scale": o.scale,
        "temperature": o.temperature,
        "mask": masks.join(o.mask),
        "heads": o.heads,
    }
    if o.padding:
        d["padding"] = list(o.padding)
    if o.custom_mask:
        d["custom_mask"] = [list(r) for r in o.custom_mask]
    if o.positions != "none":
        d["positions"] = o.positions
    if o.kv_heads is not None:
        d["kv_heads"] = o.kv_heads
    if "window" in o.mask or o.window != Options.window:
        d["window"] = o.window
    for name in ("q_norm", "k_norm"):  # QK-norm's gains, when the pass has them
        if getattr(o, name):
            d[name] = list(getattr(o, name))
    if o.qk_norm_eps != Options.qk_norm_eps:
        d["qk_norm_eps"] = o.qk_norm_eps
    for name, default in ROTATION_DEFAULTS.items():  # how rotary positions turn Q and K, when not the paper's way
        if getattr(o, name) != default:
            d[name] = getattr(o, name)
    return d


def _dump(value: Any, indent: int = 0) -> str:
    """JSON with one matrix row per line (readable), floats in full ``repr`` precision."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}  {json.dumps(k, ensure_ascii=False)}: {_dump(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        rows = [f"{pad}  {_dump(v, indent + 1)}" for v in value]
        return "[\n" + ",\n".join(rows) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False, allow_nan=False)
