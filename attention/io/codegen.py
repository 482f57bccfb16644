"""The state as runnable code: a numpy-only Python script and a Jupyter notebook that rebuild it step by step.

:func:`python_script` and :func:`notebook` turn a preset (the current state) into code that rebuilds it and
prints every step like the documents do. No Streamlit here: both return text for the UI to offer as a download.
"""

from __future__ import annotations

import html
import json
import textwrap
from collections.abc import Sequence

import numpy as np

from .. import positions, rng
from ..errors import AttentionError
from ..names import ARRAYS
from ..source import cross_options, source_rows
from .presets import Preset
from .tables import conventions, one_line


def _md(text: object) -> str:
    """User text made safe for notebook markdown (no HTML, no markdown syntax)."""
    s = html.escape(one_line(text), quote=False)
    for ch in "\\`*_{}[]()#+!|~":
        s = s.replace(ch, "\\" + ch)
    return s


def _positions_section(kind: str) -> tuple[str, str]:
    """The positions step (sinusoidal PE added to X, or the rotary function used on Q and K)."""
    if kind == "sinusoidal":
        md = (
            "## Step 2b: positions\n\nAttention alone cannot see word order, so a sinusoidal position code is added "
            'to each row of X ("Attention is all you need"): PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), '
            "PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model))."
        )
        code = "\n".join(
            [
                "n, d_model = X.shape[-2], X.shape[-1]",
                "pos = np.arange(n)[:, None]",
                "angle = pos / np.power(10000.0, np.arange(0, d_model, 2)[None, :] / d_model)",
                "PE = np.zeros((n, d_model))",
                "PE[:, 0::2] = np.sin(angle)",
                "PE[:, 1::2] = np.cos(angle[:, : d_model // 2])",
                "X_in = X + PE  # what the projections see",
                'print("X + PE:\\n", X_in)',
            ]
        )
        return md, code
    md = (
        "## Step 2b: positions\n\nRotary positions (RoPE): each pair of columns (2i, 2i+1) of a query or key at "
        "position pos is turned by the angle pos · 10000^(−2i/d), so q·k depends only on how far apart two tokens are."
    )
    code = "\n".join(
        [
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
    )
    return md, code


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


class _Builder:
    """The steps as (markdown, code) sections, shared by the script and the notebook."""

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
        self.seeded = False

    # -- pieces
    def draw_lines(self, names: Sequence[str]) -> list[str]:
        out = []
        for name, shape in self.draws:
            if name in names:
                if not self.seeded:
                    out.append(f"np.random.seed({self.seed})  # numpy's legacy global generator: the documents' stream")
                    self.seeded = True
                normal = self.p.random is not None and self.p.random.generator == rng.NORMAL
                fn, what = ("randn", "standard normal") if normal else ("rand", "uniform on [0, 1)")
                factor = self.p.random.scales.get(name) if self.p.random is not None else None
                times = f" * {factor!r}" if factor is not None else ""
                out.append(
                    f"{name} = np.random.{fn}({', '.join(str(s) for s in shape)}){times}  # {what}, shape "
                    f"{_shape_text(shape)}"
                )
        return out

    def fixed_lines(self, name: str) -> list[str]:
        if name not in self.p.fixed:
            return []
        arr = np.asarray(self.p.fixed[name], dtype=np.float64)
        return [f"{name} = np.array({_literal(arr)})  # shape {_shape_text(arr.shape)}"]

    def sections(self) -> list[tuple[str, str]]:
        p, o, h = self.p, self.o, self.h
        drawn = [n for n, _ in self.draws]
        secs: list[tuple[str, str]] = []
        n, dm, dk, dv = self.n, self.d_model, self.d_k, self.d_v
        xshape = _shape_text(self.X.shape)

        # 1. tokens and X
        code = [f"tokens = {list(p.tokens)!r}"]
        if "X" in drawn and drawn[0] != "X":
            code += self.fixed_lines("X") + self.draw_lines(drawn)  # keep the declared draw order
        else:
            code += self.fixed_lines("X") + self.draw_lines(["X"])
        code += ['print("Input tokens:", tokens)', 'print("X:\\n", X)']
        md = (
            f"## Step 1: tokens and embeddings (X)\n\nEach of the {n} tokens is one row of X, a vector of d_model = "
            f"{dm} numbers: "
            f"X has shape {xshape}."
        )
        if self.batched:
            md += (
                f" X carries a batch axis (a batch of {self.X.shape[0]}), as in the document: every step below uses "
                f"`@`, "
                "which keeps that axis."
            )
        secs.append((md, "\n".join(code)))

        # 2. weights
        code = []
        for name in ("W_q", "W_k", "W_v"):
            code += self.fixed_lines(name)
        code += self.draw_lines([w for w in ("W_q", "W_k", "W_v")])
        code += ['print("W_q:\\n", W_q)', 'print("W_k:\\n", W_k)', 'print("W_v:\\n", W_v)']
        layout = "d_model × d_k" if o.projection == "x_w" else "d_k × d_model (the transposed layout)"
        md = (
            f"## Step 2: weights W_q, W_k, W_v\n\nThree weight matrices, each {layout}, turn an embedding into a "
            f"query, "
            f"a key and a value. Here d_k = {dk} and d_v = {dv}."
        )
        if self.draws:
            md += (
                f" The random ones come from `np.random.seed({self.seed})` followed by `np.random.rand` in the order "
                f"{', '.join(drawn)}: numpy's legacy generator, so the numbers are the same on every machine."
            )
        secs.append((md, "\n".join(code)))

        # 2b. positions
        if o.positions == "learned":
            code = [
                *self.fixed_lines("P"),
                "X_in = X + P  # what the projections see",
                'print("X + P:\\n", X_in)',
            ]
            md = (
                "## Step 2b: positions\n\nLearned positions: a matrix P with one row per position (n × d_model), "
                "added to X before the projections."
            )
            secs.append((md, "\n".join(code)))
        elif o.positions != "none":
            secs.append(_positions_section(o.positions))
        # 3. Q, K, V
        t = ".T" if o.projection == "x_wt" else ""
        op_q, op_k, op_v = (f"X·{w}ᵀ" if t else f"X·{w}" for w in ("W_q", "W_k", "W_v"))
        if h == 1:
            qshape = _shape_text(self.X.shape[:-1] + (dk,))
            wshape = _shape_text(self.m["W_q"].shape)
            code = [f"Q = X @ W_q{t}  # {xshape} @ {wshape}{t} -> {qshape}", f"K = X @ W_k{t}", f"V = X @ W_v{t}"]
            if o.positions == "rotary":
                code += ["Q, K = rotary(Q), rotary(K)  # turn each pair of columns by its position's angle"]
            md = (
                f"## Step 3: queries, keys and values\n\nQ = {op_q}, K = {op_k}, V = {op_v}: "
                "one query, key and value per token."
            )
        else:
            if t:
                sl_q, sl_v = "W_q[i * d_head:(i + 1) * d_head, :].T", "W_v[i * dv_head:(i + 1) * dv_head, :].T"
                sl_k = "W_k[i * d_head:(i + 1) * d_head, :].T"
                wd = "W_q.shape[0]", "W_v.shape[0]"
            else:
                sl_q, sl_v = "W_q[:, i * d_head:(i + 1) * d_head]", "W_v[:, i * dv_head:(i + 1) * dv_head]"
                sl_k = "W_k[:, i * d_head:(i + 1) * d_head]"
                wd = "W_q.shape[1]", "W_v.shape[1]"
            g = o.kv
            grouped = (
                []
                if g == h
                else [
                    f"kv_heads = {g}  # key/value heads; query head i reads block i // group",
                    "group = h // kv_heads",
                ]
            )
            if g != h:  # head i reads key/value block i // group
                sl_k, sl_v = (
                    s.replace("i * ", "(i // group) * ").replace("(i + 1)", "(i // group + 1)") for s in (sl_k, sl_v)
                )
            code = [
                f"h = {h}  # heads",
                *grouped,
                f"d_head = {wd[0]} // h  # query/key width per head",
                f"dv_head = {wd[1]} // {'h' if g == h else 'kv_heads'}  # value width per head",
                f"Q_heads = [X @ {sl_q} for i in range(h)]",
                f"K_heads = [X @ {sl_k} for i in range(h)]",
                f"V_heads = [X @ {sl_v} for i in range(h)]",
                *(
                    [
                        "Q_heads = [rotary(q) for q in Q_heads]  # RoPE within each head's columns",
                        "K_heads = [rotary(k) for k in K_heads]",
                    ]
                    if o.positions == "rotary"
                    else []
                ),
                "Q = np.concatenate(Q_heads, axis=-1)  # all heads side by side",
                "K = np.concatenate(K_heads, axis=-1)" if g == h else "K = np.concatenate(K_heads[::group], axis=-1)",
                "V = np.concatenate(V_heads, axis=-1)" if g == h else "V = np.concatenate(V_heads[::group], axis=-1)",
            ]
            md = (
                f"## Step 3: queries, keys and values, split into {h} heads\n\nQ = {op_q}, K = {op_k}, V = {op_v}, "
                f"computed per head: "
                f"head i uses the i-th block of d_k / h = {dk // h} columns of the weights (and {dv // o.kv} for "
                f"values). "
                "Each head then attends on its own."
            )
            if g != h:
                md += (
                    f" Grouped-query attention: W_k and W_v have only {g} blocks (kv_heads = {g}), and each serves "
                    f"{h // g} query heads" + (" (multi-query attention)." if g == 1 else ".")
                )
        if self.batched:
            code.append("# `@` keeps the batch axis: (1, n, d_model) @ (d_model, d_k) -> (1, n, d_k).")
        code += ['print("Q:\\n", Q)', 'print("K:\\n", K)', 'print("V:\\n", V)']
        secs.append((md, "\n".join(code)))

        if o.positions in ("sinusoidal", "learned"):  # the projections see X + PE (or X + P)
            md_, code_ = secs[-1]
            secs[-1] = (md_, code_.replace("X @ ", "X_in @ "))
        # 4. scores
        kt = "np.swapaxes({}, -1, -2)" if self.batched else "{}.T"
        if h == 1:
            code = [f"scores = Q @ {kt.format('K')}  # (..., {n}, {n}): query i · key j"]
        else:
            code = [
                f"scores = np.stack([Q_i @ {kt.format('K_i')} for Q_i, K_i in zip(Q_heads, K_heads)], axis=-3)"
                f"  # (..., h, {n}, {n})"
            ]
        if self.batched:
            code.insert(
                0,
                "# Not np.dot: on 3-D arrays np.dot pairs every batch item with every other, giving (1, n, 1, n);\n"
                "# `@` (matmul) treats the first axis as a batch and gives (1, n, n).",
            )
        code.append('print("Scores (Q @ K.T):\\n", scores)')
        md = (
            "## Step 4: scores\n\nEntry (i, j) of Q·Kᵀ is the dot product of token i's query with token j's key: how "
            "well they match. "
            "Rows are queries, columns are keys."
        )
        secs.append((md, "\n".join(code)))

        # 5. scale and mask
        width = "d_head" if h > 1 else "d_k"
        code = [] if h > 1 else ["d_k = Q.shape[-1]"]
        if o.scale is None:
            code.append(f"scale = 1.0 / np.sqrt({width})  # 1/√{width}")
            md = (
                f"## Step 5: scaling\n\nEvery score is multiplied by 1/√{width} = 1/√{dk // h}, which keeps the "
                f"scores' spread "
                "near 1 so the softmax does not saturate."
            )
        else:
            code.append(f"scale = {_num(o.scale)}  # a chosen factor instead of 1/√{width}")
            md = f"## Step 5: scaling\n\nEvery score is multiplied by the chosen factor {_num(o.scale)}."
        code.append(
            f"scaled = scores * scale  # as the dashboard does; scores / np.sqrt({width}) can differ in the last bit"
            if o.scale is None
            else "scaled = scores * scale"
        )
        if o.positions == "alibi":
            slopes = ", ".join(_num(s) for s in positions.alibi_slopes(h))
            code += [
                f"slopes = np.array([{slopes}])  # ALiBi: one slope per head, the paper's geometric sequence",
                "offset = np.arange(len(tokens))[:, None] - np.arange(len(tokens))[None, :]  # i - j",
                "bias = np.stack([-m * offset for m in slopes])" if h > 1 else "bias = -slopes[0] * offset",
                "scaled = scaled + bias  # a key d tokens before the query loses m·d",
            ]
            md += "\n\nALiBi adds each head's bias −m·(i − j) to the scaled scores: a fixed penalty for distance."
        parts = list(o.mask)
        if parts:
            code += ["n = len(tokens)", "allowed = np.ones((n, n), dtype=bool)  # True where a query may attend a key"]
        if "causal" in parts:
            code.append("allowed &= np.tril(np.ones((n, n), dtype=bool))  # causal: token i may attend tokens 1..i")
            md += "\n\nA causal mask forbids each token to look at later tokens: those cells become -inf."
        if "padding" in parts:
            code += [
                f"is_padding = np.array({list(o.padding)!r})  # one flag per token",
                "allowed &= ~is_padding[None, :]  # no token may attend a padding token",
            ]
            md += (
                "\n\nA padding mask forbids every token to attend the tokens flagged as padding: "
                "those cells become -inf."
            )
        if "custom" in parts:
            grid = ",\n    ".join(repr([bool(v) for v in row]) for row in o.custom_mask)
            code.append(f"custom = np.array([\n    {grid},\n])  # your own grid: row = query, column = key")
            code.append("allowed &= custom")
            md += "\n\nA custom mask (a grid you set, query × key) forbids the cells marked false."
        if "window" in parts:
            code += [
                f"window = {int(o.window)}  # sliding window: token i may attend tokens i - window + 1 .. i",
                "offset = np.arange(n)[:, None] - np.arange(n)[None, :]  # i - j",
                "allowed &= (offset >= 0) & (offset < window)",
            ]
            md += f"\n\nA sliding window lets each token see only itself and the {int(o.window) - 1} tokens before it."
        if parts:
            code.append("scaled = np.where(allowed, scaled, -np.inf)  # forbidden cells get -inf, so their weight is 0")
        code.append('print("Scaled scores:\\n", scaled)')
        secs.append((md, "\n".join(code)))

        # 6. softmax
        masked = bool(o.mask)
        if o.softmax == "none":
            body = ["    e = np.exp(x)  # nothing subtracted (exp overflows above about 709.78)"]
            doc = "exp / row sum, nothing subtracted, as document 000 does"
        elif o.softmax == "global_max":
            body = ["    m = np.max(x, axis=(-2, -1), keepdims=True)  # the whole matrix's max"]
            doc = "subtracting the whole matrix's max"
        else:
            body = ["    m = np.max(x, axis=-1, keepdims=True)  # each row's own max (stable)"]
            doc = "each row minus its own max, which is numerically stable"
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
        code = ["def softmax(x):", f'    """Row-wise softmax: {doc}."""'] + body + [""]
        if o.temperature != 1:
            code += [
                f"temperature = {_num(o.temperature)}  # T > 1 flattens the weights, T < 1 sharpens them",
                "weights = softmax(scaled / temperature)",
            ]
            tmd = (
                f" Dividing by the temperature T = {_num(o.temperature)} first flattens (T > 1) "
                "or sharpens (T < 1) them."
            )
        else:
            code.append("weights = softmax(scaled)")
            tmd = ""
        code.append('print("Attention weights:\\n", weights)')
        md = (
            f"## Step 6: softmax\n\nEach row of scaled scores becomes weights that are positive and sum to 1 "
            f"({doc}).{tmd}"
        )
        secs.append((md, "\n".join(code)))

        # 7. output
        if h == 1:
            code = ["output = weights @ V  # each output row mixes the value vectors by that row's weights"]
            md = "## Step 7: output\n\nOutput row i is the weighted sum of the value vectors, with token i's weights."
        else:
            code = [
                "output = np.concatenate([weights[..., i, :, :] @ V_heads[i] for i in range(h)], axis=-1)  # heads "
                "side by side"
            ]
            md = (
                "## Step 7: output\n\nEach head mixes its own value vectors with its weights; the heads' outputs are "
                "concatenated "
                "side by side (there is no output projection W_o here)."
            )
        if "W_o" in self.m:
            code = [c.replace("output = ", "concat = ", 1) for c in code]
            code += [
                *self.fixed_lines("W_o"),
                "output = concat @ W_o  # W_o mixes the heads' outputs (d_v × d_v)",
            ]
            md = md.replace(" (there is no output projection W_o here)", "") + (
                " Then W_o mixes them: output = concat · W_o."
            )
        code.append('print("Self-attention output:\\n", output)')
        secs.append((md, "\n".join(code)))

        # 8. reading
        w = "weights[0]" if self.batched else "weights"
        if h == 1:
            code = [
                f"A = {w}  # ({n}, {n})",
                "for i, token in enumerate(tokens):",
                "    if A[i].sum() == 0:",
                '        print(f"{token!r} attends to nothing (every key is masked)")',
                "        continue",
                "    j = int(np.argmax(A[i]))",
                '    print(f"{token!r} attends most to {tokens[j]!r} ({A[i, j]:.4f})")',
            ]
        else:
            code = [
                f"A = {w}  # (h, {n}, {n})",
                "for head in range(h):",
                "    for i, token in enumerate(tokens):",
                "        if A[head, i].sum() == 0:",
                '            print(f"head {head + 1}: {token!r} attends to nothing (every key is masked)")',
                "            continue",
                "        j = int(np.argmax(A[head, i]))",
                '        print(f"head {head + 1}: {token!r} attends most to {tokens[j]!r} ({A[head, i, j]:.4f})")',
            ]
        md = (
            "## Reading the weights\n\nFor each token, the key with the largest weight is the token it attends to most."
        )
        if any(w in drawn for w in ("W_q", "W_k", "W_v")):
            md += " The weights here are random, so this means nothing yet: training is what makes it meaningful."
        secs.append((md, "\n".join(code)))
        return self.cross(secs) if self.src else secs

    def cross(self, secs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The self-attention sections turned into cross-attention: X_kv (the source's rows, a literal) gives K and
        V; masks, ALiBi and the reading count keys along the source (S); causal and window are top-left aligned."""
        X_kv = source_rows(self.X, self.p.tokens, self.src)  # (S, d_model)
        S = X_kv.shape[-2]
        kv_lines = [
            f"source = {list(self.src)!r}  # the source sentence: keys and values come from it",
            f"X_kv = np.array({_literal(X_kv)})  # shape {_shape_text(X_kv.shape)}: a source word also in tokens "
            "takes its row of X, any other a vector drawn from its text",
            'print("Source tokens:", source)',
        ]
        if self.o.positions == "sinusoidal":  # the source gets its own position code, counted from 0
            kv_lines += [
                "pos_kv = np.arange(X_kv.shape[-2])[:, None]",
                "angle_kv = pos_kv / np.power(10000.0, np.arange(0, X_kv.shape[-1], 2)[None, :] / X_kv.shape[-1])",
                "PE_kv = np.zeros(X_kv.shape[-2:])",
                "PE_kv[:, 0::2] = np.sin(angle_kv)",
                "PE_kv[:, 1::2] = np.cos(angle_kv[:, : X_kv.shape[-1] // 2])",
                "X_kv = X_kv + PE_kv  # what the key and value projections see",
            ]
        swaps = [
            ("K = X @", "K = X_kv @"),
            ("V = X @", "V = X_kv @"),
            ("K_heads = [X @", "K_heads = [X_kv @"),
            ("V_heads = [X @", "V_heads = [X_kv @"),
            ("K = X_in @", "K = X_kv @"),
            ("V = X_in @", "V = X_kv @"),
            ("K_heads = [X_in @", "K_heads = [X_kv @"),
            ("V_heads = [X_in @", "V_heads = [X_kv @"),
            ("n = len(tokens)", "n, S = len(tokens), len(source)  # queries, keys"),
            ("np.ones((n, n), dtype=bool)", "np.ones((n, S), dtype=bool)"),
            ("np.arange(n)[None, :]", "np.arange(S)[None, :]"),
            ("np.arange(len(tokens))[None, :]", "np.arange(len(source))[None, :]"),
            ("{tokens[j]!r}", "{source[j]!r}"),
            ("Self-attention output:", "Cross-attention output:"),
        ]
        out = []
        for k, (md, code) in enumerate(secs):
            for a, b in swaps:
                code = code.replace(a, b)
            if k == 0:
                code += "\n" + "\n".join(kv_lines)
                md += (
                    f"\n\nCross-attention: the queries come from these {self.n} tokens, the keys and values from a "
                    f"source sentence of {S} tokens (X_kv), so the scores are {self.n} × {S}. A causal or window "
                    "mask is top-left aligned, as PyTorch's scaled_dot_product_attention does: query i sees keys "
                    "0..i of the source."
                )
            out.append((md, code))
        return out

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


_RESULT_NAMES = ARRAYS


def python_script(preset: Preset) -> str:
    """A self-contained, numpy-only Python script that rebuilds ``preset`` and prints every step.

    The script writes tokens, fixed matrices as ``np.array([...])`` literals (full ``repr`` precision)
    and random ones as ``np.random.seed(seed)`` + ``np.random.rand(...)`` in the preset's draw order,
    then follows the preset's conventions (X @ W or X @ W.T, softmax variant, scale, temperature, mask,
    heads) with the same numpy operations as the engine, so the arrays are bit-identical to
    ``preset.compute()``. It prints each step like the documents (``print("Q:\\n", Q)``, numpy's default
    8 decimals). Choice for exact checking: run with ``--json`` and it also prints one final line
    ``RESULTS_JSON {...}``: every array as nested lists of full-precision floats (JSON; masked cells are
    ``-Infinity``). A batched X (1, n, d) is handled with ``@`` (np.dot would give 4-D scores).
    """
    b = _Builder(preset)
    lines = ["#!/usr/bin/env python3"]
    lines += [f"# {line}" for line in b.intro().splitlines()]
    lines += [
        "#",
        "# Needs only numpy. Run it:",
        "#     python this_file.py           prints every step (numpy's default 8 decimals, like the documents)",
        "#     python this_file.py --json    also prints a last line RESULTS_JSON {...} with every array at full "
        "precision",
        "",
        "import json",
        "import sys",
        "",
        "import numpy as np",
        "",
    ]
    for md, code in b.sections():
        title, _, text = md.partition("\n\n")
        lines.append("# " + "-" * 98)
        lines.append("# " + title.lstrip("# "))
        for para in text.split("\n\n"):
            lines += _wrap_comment(para.replace("`", ""))
        lines.append("")
        lines.append(code)
        lines.append("")
    lines += [
        "# " + "-" * 98,
        'if "--json" in sys.argv[1:]:',
        "    results = {" + ", ".join(f"{n!r}: {n}" for n in _RESULT_NAMES) + "}",
        "    arrays = {name: np.asarray(value).tolist() for name, value in results.items()}",
        '    print("RESULTS_JSON " + json.dumps(arrays))',
        "",
    ]
    return "\n".join(lines)


def _wrap_comment(text: str, width: int = 100) -> list[str]:
    """A paragraph as ``# ``-prefixed comment lines of at most ``width`` characters."""
    return textwrap.wrap(
        " ".join(text.split()),
        width=width,
        initial_indent="# ",
        subsequent_indent="# ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def notebook(preset: Preset) -> str:
    """The same steps as :func:`python_script` as a Jupyter notebook (nbformat 4.5 JSON text).

    A markdown cell explains each step, a code cell computes and prints it; code cells have no outputs
    (run the notebook to fill them). Cell ids are fixed (``step-1-md`` ...), so the text is deterministic.
    """
    b = _Builder(preset)
    p = preset
    intro = [f"# {_md(p.title)}", "", "Scaled dot-product self-attention, step by step, in numpy."]
    if p.description:
        intro += ["", _md(p.description)]
    intro += [
        "",
        f"Conventions: {_md(conventions(b.o))}.",
        "",
        "Generated by the attention dashboard; running every cell in order rebuilds exactly the numbers it showed.",
    ]
    cells = [_cell("markdown", "intro", "\n".join(intro)), _cell("code", "setup", "import numpy as np")]
    for i, (md, code) in enumerate(b.sections(), start=1):
        cells.append(_cell("markdown", f"step-{i}-md", md))
        cells.append(_cell("code", f"step-{i}-code", code))
    nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def _cell(kind: str, cell_id: str, text: str) -> dict:
    cell: dict = {"cell_type": kind, "id": cell_id, "metadata": {}, "source": text.splitlines(keepends=True)}
    if kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell
