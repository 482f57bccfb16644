"""The code and prose of each step of attention, written from a preset: shared by the script and the notebook.

:func:`sections` turns a preset (the current state) into (markdown, code) pairs, one per step that applies, in the
order the code runs. Each step has its own builder, listed in :data:`STEPS`; a builder writes its code from the
state's names (X or X_in, X_kv for cross-attention, concat before W_o) and never patches another's text. How the
sections become files is :mod:`attention.io.codegen`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .. import positions, rng
from ..errors import AttentionError
from ..names import WEIGHTS
from ..options import Options
from ..source import cross_options, source_rows
from .presets import Preset
from .tables import conventions, one_line


def _num(x: float) -> str:
    return repr(float(x))


def _literal(arr: np.ndarray, indent: str = "") -> str:
    """A nested list literal of ``arr`` with full-precision floats, one row per line."""
    if arr.ndim == 1:
        return "[" + ", ".join(_num(x) for x in arr.tolist()) + "]"
    inner = indent + "    "
    return "[\n" + ",\n".join(inner + _literal(sub, inner) for sub in arr) + ",\n" + indent + "]"


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class Builder:
    """What every step's builder reads: the preset, its conventions, sizes and draws, and the names the code uses
    (X, or X_in when positions are added to X; X_kv for cross-attention's keys and values)."""

    def __init__(self, preset: Preset):
        if not isinstance(preset, Preset):
            raise AttentionError(f"expected a Preset, got {type(preset).__name__}")
        self.p = preset
        self.src = tuple(preset.source_tokens)  # cross-attention's source sentence (empty: self-attention)
        self.o = cross_options(preset.options) if self.src else preset.options
        self.m = preset.matrices()
        self.X = self.m["X"]
        self.batched = self.X.ndim == 3
        self.n, self.d_model = self.X.shape[-2], self.X.shape[-1]
        t = self.o.projection == "x_wt"
        self.d_k = self.m["W_q"].shape[0 if t else 1]
        self.d_v = self.m["W_v"].shape[0 if t else 1]
        self.h = self.o.heads
        self.seed = None
        if preset.random is not None:
            self.seed = preset.seed if preset.seed is not None else preset.random.seed
        self.draws = list(preset.random.draws) if preset.random is not None else []
        self.drawn = [name for name, _ in self.draws]
        self.seeded = False
        self.x_in = "X_in" if self.o.positions in positions.ADDED else "X"  # what the projections see
        self.x_kv = "X_kv" if self.src else self.x_in  # what the key and value projections see
        self.keys = "source" if self.src else "tokens"  # the tokens the keys belong to
        self.S = "S" if self.src else "n"  # the number of keys, in the mask code

    def generator(self) -> tuple[str, str]:
        """The numpy function the random matrices are drawn with, and what it draws."""
        if self.p.random is not None and self.p.random.generator == rng.NORMAL:
            return "randn", "standard normal"
        return "rand", "uniform on [0, 1)"

    def draw_lines(self, names: Sequence[str]) -> list[str]:
        """The draws of ``names`` in the preset's draw order, the seed line before the first draw of the script."""
        out = []
        fn, what = self.generator()
        for name, shape in self.draws:
            if name in names:
                if not self.seeded:
                    out.append(f"np.random.seed({self.seed})  # numpy's legacy global generator: the documents' stream")
                    self.seeded = True
                factor = self.p.random.scales.get(name) if self.p.random is not None else None
                times = f" * {factor!r}" if factor is not None else ""
                out.append(
                    f"{name} = np.random.{fn}({', '.join(str(s) for s in shape)}){times}  # {what}, shape "
                    f"{_shape_text(shape)}"
                )
        return out

    def fixed_lines(self, name: str) -> list[str]:
        """A fixed matrix as a full-precision literal (nothing when ``name`` is drawn or absent)."""
        if name not in self.p.fixed:
            return []
        arr = np.asarray(self.p.fixed[name], dtype=np.float64)
        return [f"{name} = np.array({_literal(arr)})  # shape {_shape_text(arr.shape)}"]

    def sections(self) -> list[tuple[str, str]]:
        """Every step that applies, as (markdown, code), in the order of :data:`STEPS`."""
        self.seeded = False
        built = (step.build(self) for step in STEPS)
        return [section for section in built if section is not None]

    def intro(self) -> str:
        p = self.p
        src = p.source.get("document") if p.source else None
        kind = "cross" if self.src else "self"
        return "\n".join(
            filter(
                None,
                [
                    f"{one_line(p.title)}: scaled dot-product {kind}-attention, step by step.",
                    f"Rebuilt from the dashboard's preset {one_line(p.id)!r}"
                    + (f" (document {one_line(src)})." if src else "."),
                    f"Conventions: {conventions(self.o)}.",
                ],
            )
        )


Section = tuple[str, str]  # (markdown, code)


def _tokens_step(b: Builder) -> Section:
    """Step 1: the tokens and X (fixed, or drawn first); cross-attention adds the source sentence's rows X_kv."""
    n, dm, xshape = b.n, b.d_model, _shape_text(b.X.shape)
    code = [f"tokens = {list(b.p.tokens)!r}"]
    if "X" in b.drawn and b.drawn[0] != "X":
        code += b.fixed_lines("X") + b.draw_lines(b.drawn)  # keep the declared draw order
    else:
        code += b.fixed_lines("X") + b.draw_lines(["X"])
    code += ['print("Input tokens:", tokens)', 'print("X:\\n", X)']
    md = (
        f"## Step 1: tokens and embeddings (X)\n\nEach of the {n} tokens is one row of X, a vector of d_model = "
        f"{dm} numbers: X has shape {xshape}."
    )
    if b.batched:
        md += (
            f" X carries a batch axis (a batch of {b.X.shape[0]}), as in the document: every step below uses `@`, "
            "which keeps that axis."
        )
    if b.src:
        source_code, source_md = _source_rows(b)
        code += source_code
        md += source_md
    return md, "\n".join(code)


def _source_rows(b: Builder) -> tuple[list[str], str]:
    """Cross-attention: X_kv (the source's rows, a literal) gives K and V; masks, ALiBi and the reading count keys
    along the source (S); causal and window are top-left aligned."""
    X_kv = source_rows(b.X, b.p.tokens, b.src)  # (S, d_model)
    code = [
        f"source = {list(b.src)!r}  # the source sentence: keys and values come from it",
        f"X_kv = np.array({_literal(X_kv)})  # shape {_shape_text(X_kv.shape)}: a source word also in tokens "
        "takes its row of X, any other a vector drawn from its text",
        'print("Source tokens:", source)',
    ]
    if b.o.positions == "sinusoidal":  # the source gets its own position code, counted from 0
        code += [
            "pos_kv = np.arange(X_kv.shape[-2])[:, None]",
            "angle_kv = pos_kv / np.power(10000.0, np.arange(0, X_kv.shape[-1], 2)[None, :] / X_kv.shape[-1])",
            "PE_kv = np.zeros(X_kv.shape[-2:])",
            "PE_kv[:, 0::2] = np.sin(angle_kv)",
            "PE_kv[:, 1::2] = np.cos(angle_kv[:, : X_kv.shape[-1] // 2])",
            "X_kv = X_kv + PE_kv  # what the key and value projections see",
        ]
    md = (
        f"\n\nCross-attention: the queries come from these {b.n} tokens, the keys and values from a source sentence "
        f"of {X_kv.shape[-2]} tokens (X_kv), so the scores are {b.n} × {X_kv.shape[-2]}. A causal or window mask is "
        "top-left aligned, as PyTorch's scaled_dot_product_attention does: query i sees keys 0..i of the source."
    )
    return code, md


def _weights_step(b: Builder) -> Section:
    """Step 2: W_q, W_k, W_v, fixed literals then the draws; the text says how the random ones are drawn."""
    code = []
    for name in WEIGHTS:
        code += b.fixed_lines(name)
    code += b.draw_lines(WEIGHTS)
    code += ['print("W_q:\\n", W_q)', 'print("W_k:\\n", W_k)', 'print("W_v:\\n", W_v)']
    layout = "d_model × d_k" if b.o.projection == "x_w" else "d_k × d_model (the transposed layout)"
    md = (
        f"## Step 2: weights W_q, W_k, W_v\n\nThree weight matrices, each {layout}, turn an embedding into a query, "
        f"a key and a value. Here d_k = {b.d_k} and d_v = {b.d_v}."
    )
    if b.draws:
        md += " " + _draws_text(b)
    return md, "\n".join(code)


def _draws_text(b: Builder) -> str:
    """What the draws do, as the code does them: the seed, rand (uniform) or randn (normal), the order, the
    factors a drawn matrix is multiplied by."""
    fn, what = b.generator()
    scales = b.p.random.scales if b.p.random is not None else {}
    factors = [f"{name} by {scales[name]!r}" for name in b.drawn if name in scales]
    times = f", then multiplies {_and(factors)}" if factors else ""
    return (
        f"The random ones come from `np.random.seed({b.seed})` followed by `np.random.{fn}` ({what}) in the order "
        f"{', '.join(b.drawn)}{times}: numpy's legacy generator, so the numbers are the same on every machine."
    )


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _positions_step(b: Builder) -> Section | None:
    """Step 2b: learned P or the sinusoidal PE added to X (giving X_in), or the rotary function used on Q and K;
    none for ALiBi (a bias on the scaled scores, step 5) or without positions."""
    build = _POSITIONS.get(b.o.positions)
    return None if build is None else build(b)


def _learned(b: Builder) -> Section:
    md = (
        "## Step 2b: positions\n\nLearned positions: a matrix P with one row per position (n × d_model), "
        "added to X before the projections."
    )
    return md, "\n".join([*b.fixed_lines("P"), "X_in = X + P  # what the projections see", 'print("X + P:\\n", X_in)'])


def _sinusoidal(b: Builder) -> Section:
    md = (
        "## Step 2b: positions\n\nAttention alone cannot see word order, so a sinusoidal position code is added "
        'to each row of X ("Attention is all you need"): PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), '
        "PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model))."
    )
    code = [
        "n, d_model = X.shape[-2], X.shape[-1]",
        "pos = np.arange(n)[:, None]",
        "angle = pos / np.power(10000.0, np.arange(0, d_model, 2)[None, :] / d_model)",
        "PE = np.zeros((n, d_model))",
        "PE[:, 0::2] = np.sin(angle)",
        "PE[:, 1::2] = np.cos(angle[:, : d_model // 2])",
        "X_in = X + PE  # what the projections see",
        'print("X + PE:\\n", X_in)',
    ]
    return md, "\n".join(code)


def _rotary(b: Builder) -> Section:
    if not b.o.plain_rotation:
        return _rotary_as_options_say(b.o)
    md = (
        "## Step 2b: positions\n\nRotary positions (RoPE): each pair of columns (2i, 2i+1) of a query or key at "
        "position pos is turned by the angle pos · 10000^(−2i/d), so q·k depends only on how far apart two tokens are."
    )
    code = [
        "def rotary(x, base=10000.0):",
        "    n, d = x.shape[-2:]",
        "    e = d - d % 2  # an odd last column is not turned",
        "    theta = np.arange(n)[:, None] * np.power(base, -np.arange(0, e, 2)[None, :] / d)",
        "    cos, sin = np.cos(theta), np.sin(theta)",
        "    even, odd = x[..., 0:e:2], x[..., 1:e:2]",
        "    out = x.copy()",
        "    out[..., 0:e:2] = even * cos - odd * sin",
        "    out[..., 1:e:2] = even * sin + odd * cos",
        "    return out",
    ]
    return md, "\n".join(code)


_PAIRS = {
    "interleaved": ("(slice(0, r, 2), slice(1, r, 2))", "the pairs (2i, 2i+1)"),
    "halves": ("(slice(0, r // 2), slice(r // 2, r))", "the pairs (i, i + r/2), Hugging Face's rotate_half"),
}


def _scaling_lines(o: Options) -> list[str]:
    """The frequencies stretched as ``rope_scaling`` says (see :func:`attention.positions.scaled_frequencies`)."""
    if o.rope_scaling == "linear":
        return [
            f"    omega = omega / {float(o.rope_factor)!r}  # linear scaling: every position counts as pos / factor"
        ]
    if o.rope_scaling != "llama3":
        return []
    numbers = (float(o.rope_factor), float(o.rope_low_freq_factor), float(o.rope_high_freq_factor))
    return [
        f"    factor, low, high, context = {', '.join(map(repr, numbers))}, {int(o.rope_original_context)}  # llama3",
        "    wavelength = 2 * np.pi / omega",
        "    s = (context / wavelength - low) / (high - low)",
        "    between = (1 - s) * omega / factor + s * omega",
        "    omega = np.where(wavelength < context / high, omega, np.where(wavelength > context / low, omega / factor, "
        "between))",
    ]


def _rotary_as_options_say(o: Options) -> Section:
    """RoPE with a checkpoint's base, pairs, rotated columns and frequency scaling (a model's head)."""
    pairs, said = _PAIRS[o.rotary_layout]
    dims = "every column of a head" if o.rotary_dims is None else f"the first {o.rotary_dims} columns of each head"
    scaled = "" if o.rope_scaling == "none" else f", the frequencies scaled as {o.rope_scaling!r} says"
    md = (
        f"## Step 2b: positions\n\nRotary positions (RoPE), as this model turns them: {said} of {dims} at position "
        f"pos are turned by the angle pos · ω_i, ω_i = {float(o.rope_theta):.10g}^(−2i/r){scaled}; q·k then depends "
        "only on how far apart two tokens are."
    )
    code = [
        f"def rotary(x, base={float(o.rope_theta)!r}, dims={o.rotary_dims!r}):",
        "    n, d = x.shape[-2:]",
        "    width = d if dims is None else dims  # the columns the frequencies are spread over",
        "    omega = np.power(base, -np.arange(0, width - width % 2, 2) / width)  # each pair's turning speed",
        *_scaling_lines(o),
        "    r = 2 * len(omega)  # the columns turned; the others stay as they are",
        "    theta = np.arange(n)[:, None] * omega[None, :]",
        "    cos, sin = np.cos(theta), np.sin(theta)",
        f"    first, second = {pairs}",
        "    a, b = x[..., first], x[..., second]",
        "    out = x.copy()",
        "    out[..., first] = a * cos - b * sin",
        "    out[..., second] = a * sin + b * cos",
        "    return out",
    ]
    return md, "\n".join(code)


_POSITIONS: dict[str, Callable[[Builder], Section]] = {
    "learned": _learned,
    "sinusoidal": _sinusoidal,
    "rotary": _rotary,
}


def _projections_step(b: Builder) -> Section:
    """Step 3: Q, K and V, one product each, or per head (head i's block of columns; grouped key/value blocks)."""
    code, md = _one_head_qkv(b) if b.h == 1 else _heads_qkv(b)
    if b.batched:
        code.append("# `@` keeps the batch axis: (1, n, d_model) @ (d_model, d_k) -> (1, n, d_k).")
    code += ['print("Q:\\n", Q)', 'print("K:\\n", K)', 'print("V:\\n", V)']
    return md, "\n".join(code)


def _products(b: Builder) -> tuple[str, str, str]:
    """The three products as the text writes them: X·W_q or X·W_qᵀ..."""
    t = b.o.projection == "x_wt"
    return tuple(f"X·{w}ᵀ" if t else f"X·{w}" for w in WEIGHTS)  # type: ignore[return-value]


def _one_head_qkv(b: Builder) -> tuple[list[str], str]:
    t = ".T" if b.o.projection == "x_wt" else ""
    qshape = _shape_text(b.X.shape[:-1] + (b.d_k,))
    wshape = _shape_text(b.m["W_q"].shape)
    code = [
        f"Q = {b.x_in} @ W_q{t}  # {_shape_text(b.X.shape)} @ {wshape}{t} -> {qshape}",
        f"K = {b.x_kv} @ W_k{t}",
        f"V = {b.x_kv} @ W_v{t}",
    ]
    norm, said = _qk_norm_lines(b.o)
    code += norm + [f"{w.upper()} = qk_norm({w.upper()}, {w}_norm)" for w in _normed(b.o)]
    if b.o.positions == "rotary":
        code += ["Q, K = rotary(Q), rotary(K)  # turn each pair of columns by its position's angle"]
    op_q, op_k, op_v = _products(b)
    md = (
        f"## Step 3: queries, keys and values\n\nQ = {op_q}, K = {op_k}, V = {op_v}: "
        "one query, key and value per token." + said
    )
    return code, md


def _qk_norm_lines(o: Options) -> tuple[list[str], str]:
    """QK-norm's gains and function, when the options have them (as :func:`attention.steps.rms_norm` computes it),
    and what the text says of it; nothing otherwise."""
    if not (o.q_norm or o.k_norm):
        return [], ""
    code = [
        *(f"{w}_norm = np.array({_literal(np.array(getattr(o, f'{w}_norm')))})" for w in _normed(o)),
        f"def qk_norm(x, gains, eps={float(o.qk_norm_eps)!r}):",
        '    """QK-norm: each row divided by its root mean square, then scaled per column."""',
        "    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gains",
    ]
    said = (
        " QK-norm (as Qwen3 and Gemma 3 do) then divides each row of a head's "
        + " and ".join({"q": "queries", "k": "keys"}[w] for w in _normed(o))
        + " by its root mean square and scales each column by its gain, before any rotation."
    )
    return code, said


def _normed(o: Options) -> list[str]:
    """"q", "k": which of Q and K the options' QK-norm normalises."""
    return [w for w in "qk" if getattr(o, f"{w}_norm")]


def _head_block(w: str, width: str, block: tuple[str, str], transposed: bool) -> str:
    """Head block ``block`` = (its index, the next index) of ``w``'s columns (rows of a transposed W), as code."""
    start, stop = block
    if transposed:
        return f"{w}[{start} * {width}:({stop}) * {width}, :].T"
    return f"{w}[:, {start} * {width}:({stop}) * {width}]"


def _heads_qkv(b: Builder) -> tuple[list[str], str]:
    h, g, o = b.h, b.o.kv, b.o
    t = o.projection == "x_wt"
    grouped = g != h  # head i reads key/value block i // group
    kv_block = ("(i // group)", "i // group + 1") if grouped else ("i", "i + 1")
    sl_q = _head_block("W_q", "d_head", ("i", "i + 1"), t)
    sl_k = _head_block("W_k", "d_head", kv_block, t)
    sl_v = _head_block("W_v", "dv_head", kv_block, t)
    axis = 0 if t else 1
    code = [
        f"h = {h}  # heads",
        *(
            [f"kv_heads = {g}  # key/value heads; query head i reads block i // group", "group = h // kv_heads"]
            if grouped
            else []
        ),
        f"d_head = W_q.shape[{axis}] // h  # query/key width per head",
        f"dv_head = W_v.shape[{axis}] // {'kv_heads' if grouped else 'h'}  # value width per head",
        f"Q_heads = [{b.x_in} @ {sl_q} for i in range(h)]",
        f"K_heads = [{b.x_kv} @ {sl_k} for i in range(h)]",
        f"V_heads = [{b.x_kv} @ {sl_v} for i in range(h)]",
    ]
    norm, said = _qk_norm_lines(o)
    code += norm + [f"{w.upper()}_heads = [qk_norm(x, {w}_norm) for x in {w.upper()}_heads]" for w in _normed(o)]
    if o.positions == "rotary":
        code += [
            "Q_heads = [rotary(q) for q in Q_heads]  # RoPE within each head's columns",
            "K_heads = [rotary(k) for k in K_heads]",
        ]
    every = "[::group]" if grouped else ""
    code += [
        "Q = np.concatenate(Q_heads, axis=-1)  # all heads side by side",
        f"K = np.concatenate(K_heads{every}, axis=-1)",
        f"V = np.concatenate(V_heads{every}, axis=-1)",
    ]
    op_q, op_k, op_v = _products(b)
    md = (
        f"## Step 3: queries, keys and values, split into {h} heads\n\nQ = {op_q}, K = {op_k}, V = {op_v}, "
        f"computed per head: head i uses the i-th block of d_k / h = {b.d_k // h} columns of the weights (and "
        f"{b.d_v // g} for values). Each head then attends on its own."
    ) + said
    if grouped:
        md += (
            f" Grouped-query attention: W_k and W_v have only {g} blocks (kv_heads = {g}), and each serves "
            f"{h // g} query heads" + (" (multi-query attention)." if g == 1 else ".")
        )
    return code, md


def _scores_step(b: Builder) -> Section:
    """Step 4: Q·Kᵀ, per head with heads; a batched X swaps the last two axes of K instead of ``.T``."""
    kt = "np.swapaxes({}, -1, -2)" if b.batched else "{}.T"
    code = []
    if b.batched:
        code.append(
            "# Not np.dot: on 3-D arrays np.dot pairs every batch item with every other, giving (1, n, 1, n);\n"
            "# `@` (matmul) treats the first axis as a batch and gives (1, n, n)."
        )
    if b.h == 1:
        code.append(f"scores = Q @ {kt.format('K')}  # (..., {b.n}, {b.n}): query i · key j")
    else:
        code.append(
            f"scores = np.stack([Q_i @ {kt.format('K_i')} for Q_i, K_i in zip(Q_heads, K_heads)], axis=-3)"
            f"  # (..., h, {b.n}, {b.n})"
        )
    code.append('print("Scores (Q @ K.T):\\n", scores)')
    md = (
        "## Step 4: scores\n\nEntry (i, j) of Q·Kᵀ is the dot product of token i's query with token j's key: how "
        "well they match. Rows are queries, columns are keys."
    )
    return md, "\n".join(code)


def _scale_step(b: Builder) -> Section:
    """Step 5: the scale (1/√d_k or a chosen factor), ALiBi's bias, then the mask's parts ANDed into one grid."""
    code, md = _scale(b)
    if b.o.positions == "alibi":
        alibi_code, alibi_md = _alibi(b)
        code += alibi_code
        md += alibi_md
    mask_code, mask_md = _mask(b)
    code += mask_code
    md += mask_md
    code.append('print("Scaled scores:\\n", scaled)')
    return md, "\n".join(code)


def _scale(b: Builder) -> tuple[list[str], str]:
    o, h = b.o, b.h
    width = "d_head" if h > 1 else "d_k"
    code = [] if h > 1 else ["d_k = Q.shape[-1]"]
    if o.scale is None:
        code += [
            f"scale = 1.0 / np.sqrt({width})  # 1/√{width}",
            f"scaled = scores * scale  # as the dashboard does; scores / np.sqrt({width}) can differ in the last bit",
        ]
        md = (
            f"## Step 5: scaling\n\nEvery score is multiplied by 1/√{width} = 1/√{b.d_k // h}, which keeps the "
            "scores' spread near 1 so the softmax does not saturate."
        )
    else:
        code += [f"scale = {_num(o.scale)}  # a chosen factor instead of 1/√{width}", "scaled = scores * scale"]
        md = f"## Step 5: scaling\n\nEvery score is multiplied by the chosen factor {_num(o.scale)}."
    return code, md


def _alibi(b: Builder) -> tuple[list[str], str]:
    slopes = ", ".join(_num(s) for s in positions.alibi_slopes(b.h))
    code = [
        f"slopes = np.array([{slopes}])  # ALiBi: one slope per head, the paper's geometric sequence",
        f"offset = np.arange(len(tokens))[:, None] - np.arange(len({b.keys}))[None, :]  # i - j",
        "bias = np.stack([-m * offset for m in slopes])" if b.h > 1 else "bias = -slopes[0] * offset",
        "scaled = scaled + bias  # a key d tokens before the query loses m·d",
    ]
    return code, "\n\nALiBi adds each head's bias −m·(i − j) to the scaled scores: a fixed penalty for distance."


def _mask(b: Builder) -> tuple[list[str], str]:
    """The mask's parts, each ANDed into ``allowed`` (queries × keys), then -inf where it is False."""
    o, S = b.o, b.S
    parts = list(o.mask)
    if not parts:
        return [], ""
    sizes = "n, S = len(tokens), len(source)  # queries, keys" if b.src else "n = len(tokens)"
    code = [sizes, f"allowed = np.ones((n, {S}), dtype=bool)  # True where a query may attend a key"]
    md = ""
    if "causal" in parts:
        code.append(f"allowed &= np.tril(np.ones((n, {S}), dtype=bool))  # causal: token i may attend tokens 1..i")
        md += "\n\nA causal mask forbids each token to look at later tokens: those cells become -inf."
    if "padding" in parts:
        code += [
            f"is_padding = np.array({list(o.padding)!r})  # one flag per token",
            "allowed &= ~is_padding[None, :]  # no token may attend a padding token",
        ]
        md += "\n\nA padding mask forbids every token to attend the tokens flagged as padding: those cells become -inf."
    if "custom" in parts:
        grid = ",\n    ".join(repr([bool(v) for v in row]) for row in o.custom_mask)
        code += [
            f"custom = np.array([\n    {grid},\n])  # your own grid: row = query, column = key",
            "allowed &= custom",
        ]
        md += "\n\nA custom mask (a grid you set, query × key) forbids the cells marked false."
    if "window" in parts:
        code += [
            f"window = {int(o.window)}  # sliding window: token i may attend tokens i - window + 1 .. i",
            f"offset = np.arange(n)[:, None] - np.arange({S})[None, :]  # i - j",
            "allowed &= (offset >= 0) & (offset < window)",
        ]
        md += f"\n\nA sliding window lets each token see only itself and the {int(o.window) - 1} tokens before it."
    code.append("scaled = np.where(allowed, scaled, -np.inf)  # forbidden cells get -inf, so their weight is 0")
    return code, md


_SOFTMAX = {  # variant -> (the line taking the max, or exp without one; what the docstring says it does)
    "none": (
        "    e = np.exp(x)  # nothing subtracted (exp overflows above about 709.78)",
        "exp / row sum, nothing subtracted, as the 'She likes coffee' example does",
    ),
    "global_max": (
        "    m = np.max(x, axis=(-2, -1), keepdims=True)  # the whole matrix's max",
        "subtracting the whole matrix's max",
    ),
    "row_max": (
        "    m = np.max(x, axis=-1, keepdims=True)  # each row's own max (stable)",
        "each row minus its own max, which is numerically stable",
    ),
}


def _softmax_step(b: Builder) -> Section:
    """Step 6: the softmax variant written out (a fully masked row gives zeros), with the temperature."""
    o = b.o
    masked = bool(o.mask)
    first, doc = _SOFTMAX[o.softmax]
    body = [first]
    if o.softmax != "none":
        if masked:
            body.append("    m = np.where(np.isfinite(m), m, 0.0)  # a fully masked row (all -inf) has max -inf")
        body.append("    e = np.exp(x - m)")
    body.append("    total = np.sum(e, axis=-1, keepdims=True)")
    if masked:
        body.append(
            "    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)  # a fully masked row gets all 0"
        )
    else:
        body.append("    return e / total")
    code = ["def softmax(x):", f'    """Row-wise softmax: {doc}."""', *body, ""]
    tmd = ""
    if o.temperature != 1:
        code += [
            f"temperature = {_num(o.temperature)}  # T > 1 flattens the weights, T < 1 sharpens them",
            "weights = softmax(scaled / temperature)",
        ]
        tmd = f" Dividing by the temperature T = {_num(o.temperature)} first flattens (T > 1) or sharpens (T < 1) them."
    else:
        code.append("weights = softmax(scaled)")
    code.append('print("Attention weights:\\n", weights)')
    md = f"## Step 6: softmax\n\nEach row of scaled scores becomes weights that are positive and sum to 1 ({doc}).{tmd}"
    return md, "\n".join(code)


def _output_step(b: Builder) -> Section:
    """Step 7: weights · V (per head, side by side), then W_o when the state has one."""
    wo = "W_o" in b.m
    target = "concat" if wo else "output"
    if b.h == 1:
        code = [f"{target} = weights @ V  # each output row mixes the value vectors by that row's weights"]
        md = "## Step 7: output\n\nOutput row i is the weighted sum of the value vectors, with token i's weights."
    else:
        code = [
            f"{target} = np.concatenate([weights[..., i, :, :] @ V_heads[i] for i in range(h)], axis=-1)  # heads "
            "side by side"
        ]
        md = (
            "## Step 7: output\n\nEach head mixes its own value vectors with its weights; the heads' outputs are "
            "concatenated side by side" + ("" if wo else " (there is no output projection W_o here)") + "."
        )
    if wo:
        r, c = b.m["W_o"].shape
        size = f"(d_v × d_v) = ({r} × {c})" if r == c else f"(d_v × d_out) = ({r} × {c}): a model head's write"
        code += [*b.fixed_lines("W_o"), f"output = concat @ W_o  # W_o mixes the heads' outputs {size}"]
        md += " Then W_o mixes them: output = concat · W_o."
    kind = "Cross" if b.src else "Self"
    code.append(f'print("{kind}-attention output:\\n", output)')
    return md, "\n".join(code)


def _reading_step(b: Builder) -> Section:
    """The reading: for each query (and head), the key it attends to most, or that every key is masked."""
    w = "weights[0]" if b.batched else "weights"
    key = f"{{{b.keys}[j]!r}}"
    if b.h == 1:
        code = [
            f"A = {w}  # ({b.n}, {b.n})",
            "for i, token in enumerate(tokens):",
            "    if A[i].sum() == 0:",
            '        print(f"{token!r} attends to nothing (every key is masked)")',
            "        continue",
            "    j = int(np.argmax(A[i]))",
            f'    print(f"{{token!r}} attends most to {key} ({{A[i, j]:.4f}})")',
        ]
    else:
        code = [
            f"A = {w}  # (h, {b.n}, {b.n})",
            "for head in range(h):",
            "    for i, token in enumerate(tokens):",
            "        if A[head, i].sum() == 0:",
            '            print(f"head {head + 1}: {token!r} attends to nothing (every key is masked)")',
            "            continue",
            "        j = int(np.argmax(A[head, i]))",
            f'        print(f"head {{head + 1}}: {{token!r}} attends most to {key} ({{A[head, i, j]:.4f}})")',
        ]
    md = "## Reading the weights\n\nFor each token, the key with the largest weight is the token it attends to most."
    if any(name in b.drawn for name in WEIGHTS):
        md += " The weights here are random, so this means nothing yet: training is what makes it meaningful."
    return md, "\n".join(code)


@dataclass(frozen=True)
class _Step:
    """One step of the generated code: its name and the builder that writes it (None when it does not apply)."""

    key: str
    build: Callable[[Builder], Section | None]


STEPS: tuple[_Step, ...] = (
    _Step("tokens", _tokens_step),
    _Step("weights", _weights_step),
    _Step("positions", _positions_step),
    _Step("projections", _projections_step),
    _Step("scores", _scores_step),
    _Step("scale_and_mask", _scale_step),
    _Step("softmax", _softmax_step),
    _Step("output", _output_step),
    _Step("reading", _reading_step),
)


def sections(preset: Preset) -> tuple[Builder, list[Section]]:
    """The preset's builder (its conventions and intro) and every step that applies, as (markdown, code)."""
    b = Builder(preset)
    return b, b.sections()
