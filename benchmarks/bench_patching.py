"""Patching every head and every stream row (the Patching page's sweep, :func:`attention.model.sweep`): the shipped
model and a SmolLM2-135M-shaped random model.

The sweep runs each patch from the patched layer on, on the rows that can change (the rows from the first changed
position, or from the patched one, to the read position; the rows before come from the corrupted run as a KV cache
holds them). Beside it, on the shipped model, the naive sweep: each patch the whole corrupted run made again with the
intervention (``patch`` for a head, ``Model.run`` with ``patch_stream`` for a stream row), measured alternately in
one run, with the ratio. Goal: the shipped model's sweep ≤ 2 s.

The SmolLM2-shaped model (30 layers, d 576, 9 query heads sharing 3 key/value heads, SwiGLU 1536, RoPE, a
vocabulary of 49,152, tied) has random weights made here, no checkpoint, and computes in float32, the precision
``load`` chooses for a model of its size; its text is ``--tokens`` random tokens (16 by default) with one changed at
a quarter of the way in. Beside our sweep, "the torch way" (issue 39 §4): the same weights in transformers'
LlamaForCausalLM (float32, torch's own threads), one forward pass of the corrupted text per patch with one hook, as
TransformerLens' ``run_with_hooks`` does: a forward pre-hook on the layer's ``o_proj`` that puts in one head's clean
input columns, or a forward pre-hook on the decoder layer that puts in one clean row of the stream entering it. The
two sweeps' shares are compared (float32 against float32: they agree to ~1e-3 of a share) so the torch way is known to
compute the same thing. Goal: our sweep ≤ 0.15× the torch way. torch is a benchmark oracle only, never imported by
the product.

``--only K`` adds the Patching page's first part on the SmolLM2-shaped model: ``sweep(..., only=...)`` with K heads,
one in each of K layers spread over the model (the estimate's top heads may fall so), beside the same K layers'
every patch, which is what a limited sweep ran before it batched only the listed patches, and beside the whole
sweep; and the listed heads' shares against the whole layers' (the same to float32 rounding).

Run: ``python benchmarks/bench_patching.py [--repeats 5] [--tokens 16] [--skip-smollm2] [--skip-shipped] [--only 8]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if "--threads" in sys.argv:  # before numpy loads its BLAS: the same number of threads for numpy and torch
    _n = sys.argv[sys.argv.index("--threads") + 1]
    os.environ.update(OPENBLAS_NUM_THREADS=_n, OMP_NUM_THREADS=_n, MKL_NUM_THREADS=_n)

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attention.model import (  # noqa: E402
    Config,
    Model,
    builtin,
    induction,
    init_params,
    patch,
    patch_stream,
    restored,
    sweep,
)
from attention.model.vocab import WordVocab  # noqa: E402

GOAL = 2.0  # s: the shipped model's sweep
TORCH_GOAL = 0.15  # our SmolLM2-shaped sweep ÷ the torch way


def row(case: str, seconds: float, note: str = "") -> None:
    unit = f"{seconds * 1e3:9.2f} ms" if seconds < 1 else f"{seconds:9.2f} s "
    print(f"| {case:<64} | {unit} | {note}", flush=True)


def naive(m: Model, clean: list[int], corrupt: list[int]) -> None:
    """Every patch as a whole corrupted run with the intervention (cache cleared first, as the fast sweep's is)."""
    m.clear_cache()
    a, b = m.run(clean), m.run(corrupt)
    answer, wrong = int(np.argmax(a.logits[-1])), int(np.argmax(b.logits[-1]))
    for layer in range(m.config.n_layers):
        for h in range(m.config.n_heads):
            restored(patch(m, clean, corrupt, [(layer, h)]), a, b, -1, answer, wrong)
        for p in range(len(clean)):
            restored(m.run(corrupt, [patch_stream(layer, p, a.residuals[layer][p])]), a, b, -1, answer, wrong)


def fast(m: Model, clean: list[int], corrupt: list[int]) -> object:
    m.clear_cache()
    return sweep(m, clean, corrupt)


def one_pass(m: Model, ids: list[int]) -> None:
    m.clear_cache()
    m.run(ids)


def alternately(fns: dict[str, object], repeats: int) -> dict[str, float]:
    """Each function's median, the functions taking turns (after one warm-up each)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {k: float(np.median(v)) for k, v in times.items()}


def shipped(repeats: int) -> None:
    m = builtin("induction")
    clean = [int(i) for i in induction.history("induction")["example"]]
    corrupt = list(clean)
    corrupt[11] = next(i for i in range(m.config.vocab_size) if i not in clean)  # the page's first ready-made pair
    c = m.config
    count = c.n_layers * (c.n_heads + len(clean))
    got = alternately({"fast": lambda: fast(m, clean, corrupt), "naive": lambda: naive(m, clean, corrupt)}, repeats)
    what = f"{c.n_layers} layers × {c.n_heads} heads, {len(clean)} tokens: {count} patches"
    row("shipped model: sweep (from the patched layer, changed rows)", got["fast"], what)
    row(
        "shipped model: naive sweep (a whole run per patch)",
        got["naive"],
        f"{got['naive'] / got['fast']:.1f}× the sweep",
    )
    ok = got["fast"] <= GOAL
    print(f"goal: the shipped model's sweep ≤ {GOAL:g} s: {'met' if ok else 'MISSED'} ({got['fast']:.3f} s)")


def smollm2_shaped() -> Model:
    cfg = Config(
        vocab_size=49152,
        n_ctx=2048,
        d_model=576,
        n_layers=30,
        n_heads=9,
        n_kv_heads=3,
        d_mlp=1536,
        positions="rotary",
        rotary_layout="halves",
        rope_theta=100000.0,
        norm="rmsnorm",
        mlp="gated",
        activation="silu",
        bias=False,
        tied=True,
    )
    params = {k: v.astype(np.float32) for k, v in init_params(cfg, 0, 0.02).items()}
    return Model(cfg, params, WordVocab([f"w{i}" for i in range(1000)]), name="SmolLM2-shaped", dtype=np.float32)


def smollm2(repeats: int, n: int) -> None:
    t = time.perf_counter()
    m = smollm2_shaped()
    built = time.perf_counter() - t
    rs = np.random.RandomState(0)
    clean = rs.randint(0, 1000, n).tolist()
    corrupt = list(clean)
    corrupt[n // 4] = (clean[n // 4] + 1) % 1000
    c = m.config
    count = c.n_layers * (c.n_heads + n)
    theirs = TorchWay(m, clean, corrupt)
    m.run(clean)
    answer, wrong = int(np.argmax(m.run(clean).logits[-1])), int(np.argmax(m.run(corrupt).logits[-1]))
    times: dict[str, list[float]] = {"pass": [], "fast": [], "torch": []}
    cpu: dict[str, list[float]] = {"pass": [], "fast": [], "torch": []}
    for _ in range(repeats):  # taking turns; no warm-up beyond one pass each: a sweep takes seconds to minutes
        for name, fn in (("pass", lambda: one_pass(m, clean)), ("fast", lambda: fast(m, clean, corrupt)),
                         ("torch", lambda: theirs.sweep(answer, wrong))):
            t, c0 = time.perf_counter(), time.process_time()
            made = fn()
            times[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c0)
            if name == "fast":
                ours = made
            elif name == "torch":
                gap = float(np.abs(np.concatenate([ours.heads.ravel(), ours.streams.ravel()]) - made).max())
    got = {k: float(np.median(v)) for k, v in times.items()}
    row(f"SmolLM2-shaped (float32): one full pass, {n} tokens", got["pass"], f"model built in {built:.1f} s")
    what = f"30 layers × 9 heads, {n} tokens (changed at {n // 4 + 1}): {count} patches"
    row("SmolLM2-shaped: our sweep (a layer's patches batched, changed rows)", got["fast"], what)
    row("SmolLM2-shaped: the torch way (a forward pass with one hook per patch)", got["torch"],
        f"shares agree to {gap:.1e}")
    spent = {k: float(np.median(v)) for k, v in cpu.items()}
    print(f"   processor time (this process, all threads): ours {spent['fast']:.1f} s, the torch way "
          f"{spent['torch']:.1f} s: {spent['fast'] / spent['torch']:.3f}× (steadier than the clock on a busy machine)")
    ratio = got["fast"] / got["torch"]
    print(f"   = {got['fast'] / got['pass']:.0f} full passes' time for {count} patches", flush=True)
    print(f"goal: our sweep ≤ {TORCH_GOAL:g}× the torch way: {'met' if ratio <= TORCH_GOAL else 'MISSED'} "
          f"({ratio:.3f}×)", flush=True)


def limited(repeats: int, n: int, count: int) -> None:
    """The first part of the page's job (``count`` listed heads) beside the whole of their layers, taking turns."""
    m = smollm2_shaped()
    rs = np.random.RandomState(0)
    clean = rs.randint(0, 1000, n).tolist()
    corrupt = list(clean)
    corrupt[n // 4] = (clean[n // 4] + 1) % 1000
    L, H = m.config.n_layers, m.config.n_heads
    layers = sorted({int(la) for la in np.linspace(0, L - 1, count).round()})
    listed = [("head", la, la % H) for la in layers]
    whole = [("head", la, h) for la in layers for h in range(H)]
    whole += [("stream", la, p) for la in layers for p in range(n)]
    answer, wrong = int(np.argmax(m.run(clean).logits[-1])), int(np.argmax(m.run(corrupt).logits[-1]))
    jobs = {"listed": listed, "layers": whole, "every": None}
    made = {name: sweep(m, clean, corrupt, -1, answer, wrong, only=only) for name, only in jobs.items()}  # warm-up
    times: dict[str, list[float]] = {k: [] for k in jobs}
    cpu: dict[str, list[float]] = {k: [] for k in jobs}
    for _ in range(repeats):  # taking turns; the two texts' runs stay cached, as the page's job finds them
        for name, only in jobs.items():
            t, c0 = time.perf_counter(), time.process_time()
            made[name] = sweep(m, clean, corrupt, -1, answer, wrong, only=only)
            times[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c0)
    got = {k: float(np.median(v)) for k, v in times.items()}
    spent = {k: float(np.median(v)) for k, v in cpu.items()}
    a, b = made["listed"].heads, made["layers"].heads
    gap = float(np.nanmax(np.abs(a - b)))
    row(f"SmolLM2-shaped: only= {len(listed)} heads, one in each of layers {', '.join(str(la + 1) for la in layers)}",
        got["listed"], f"processor {spent['listed']:.2f} s")
    row(f"SmolLM2-shaped: the same {len(layers)} layers' every patch ({len(whole)} patches)", got["layers"],
        f"processor {spent['layers']:.2f} s; listed ÷ layers {got['listed'] / got['layers']:.3f}× "
        f"(processor {spent['listed'] / spent['layers']:.3f}×); shares agree to {gap:.1e}")
    row(f"SmolLM2-shaped: the whole sweep ({L * (H + n)} patches)", got["every"],
        f"processor {spent['every']:.2f} s; listed ÷ whole {got['listed'] / got['every']:.3f}× "
        f"(processor {spent['listed'] / spent['every']:.3f}×)")


class TorchWay:
    """The sweep as TransformerLens' run_with_hooks makes it: the model in torch (transformers' Llama, float32, our
    weights), the clean run's o_proj inputs and streams kept, then one forward pass of the corrupted text per patch,
    with one hook."""

    def __init__(self, m: Model, clean: list[int], corrupt: list[int]):
        import torch

        self.torch, self.hf = torch, llama_of(m)
        self.m, self.clean, self.corrupt = m, torch.tensor([clean]), torch.tensor([corrupt])
        kept: dict[int, object] = {}
        handles = [
            layer.self_attn.o_proj.register_forward_pre_hook(lambda mod, a, i=i: kept.__setitem__(i, a[0].clone()))
            for i, layer in enumerate(self.hf.model.layers)
        ]
        with torch.no_grad():
            out = self.hf(self.clean, output_hidden_states=True)
        for h in handles:
            h.remove()
        self.concat, self.streams = kept, out.hidden_states  # o_proj inputs (1, n, H·dₕ); streams (1, n, d)
        self.clean_logits = out.logits[0, -1]
        with torch.no_grad():
            self.corrupt_logits = self.hf(self.corrupt).logits[0, -1]

    def sweep(self, answer: int, wrong: int) -> np.ndarray:
        """Every share, heads (L × H) then stream rows (L × n), one hooked forward pass each."""
        c, torch = self.m.config, self.torch
        d_clean = float(self.clean_logits[answer] - self.clean_logits[wrong])
        d_corrupt = float(self.corrupt_logits[answer] - self.corrupt_logits[wrong])
        out = []
        for layer in range(c.n_layers):
            for h in range(c.n_heads):
                out.append(self.patched(self.hf.model.layers[layer].self_attn.o_proj, self._head(layer, h)))
        for layer in range(c.n_layers):
            for p in range(self.clean.shape[1]):
                out.append(self.patched(self.hf.model.layers[layer], self._row(layer, p)))
        with torch.no_grad():
            return (np.array([float(x[answer] - x[wrong]) for x in out]) - d_corrupt) / (d_clean - d_corrupt)

    def patched(self, module: object, hook: object) -> object:
        handle = module.register_forward_pre_hook(hook, with_kwargs=True)
        try:
            with self.torch.no_grad():
                return self.hf(self.corrupt).logits[0, -1]
        finally:
            handle.remove()

    def _head(self, layer: int, h: int) -> object:
        dh, clean = self.m.config.d_head, self.concat[layer]

        def hook(module, args, kwargs):
            x = args[0].clone()
            x[..., h * dh : (h + 1) * dh] = clean[..., h * dh : (h + 1) * dh]
            return (x, *args[1:]), kwargs

        return hook

    def _row(self, layer: int, p: int) -> object:
        clean = self.streams[layer]

        def hook(module, args, kwargs):
            if args:
                x = args[0].clone()
                x[:, p] = clean[:, p]
                return (x, *args[1:]), kwargs
            x = kwargs["hidden_states"].clone()
            x[:, p] = clean[:, p]
            return args, {**kwargs, "hidden_states": x}

        return hook


def llama_of(m: Model) -> object:
    """transformers' LlamaForCausalLM (eager attention, float32) with the numpy model's weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    c, p = m.config, m.params
    cfg = LlamaConfig(vocab_size=c.vocab_size, hidden_size=c.d_model, intermediate_size=c.d_mlp,
                      num_hidden_layers=c.n_layers, num_attention_heads=c.n_heads, num_key_value_heads=c.kv_heads,
                      max_position_embeddings=c.n_ctx, rms_norm_eps=c.ln_eps, rope_theta=c.rope_theta,
                      tie_word_embeddings=c.tied, attn_implementation="eager")
    hf = LlamaForCausalLM(cfg).eval()
    names = {"self_attn.q_proj": "W_q", "self_attn.k_proj": "W_k", "self_attn.v_proj": "W_v", "self_attn.o_proj": "W_o",
             "mlp.gate_proj": "W_gate", "mlp.up_proj": "W_fc", "mlp.down_proj": "W_proj"}
    with torch.no_grad():
        hf.model.embed_tokens.weight.copy_(torch.from_numpy(np.array(p["W_E"])))
        hf.model.norm.weight.copy_(torch.from_numpy(np.array(p["ln_f.g"])))
        for i, layer in enumerate(hf.model.layers):
            for theirs, ours in names.items():
                layer.get_submodule(theirs).weight.copy_(torch.from_numpy(np.array(p[f"{i}.{ours}"]).T))
            layer.input_layernorm.weight.copy_(torch.from_numpy(np.array(p[f"{i}.ln1.g"])))
            layer.post_attention_layernorm.weight.copy_(torch.from_numpy(np.array(p[f"{i}.ln2.g"])))
    return hf


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--skip-smollm2", action="store_true")
    ap.add_argument("--skip-shipped", action="store_true")
    ap.add_argument("--threads", type=int, help="BLAS and torch threads, the same for both (default: as installed)")
    ap.add_argument("--only", type=int, default=0, help="also time a sweep limited to this many heads (0: not)")
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    print(
        f"numpy {np.__version__}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}; medians of "
        f"{args.repeats} after a warm-up; threads {args.threads or 'as installed'}"
    )
    print(f"| {'case':<64} | {'median':>12} | note")
    if not args.skip_shipped:
        shipped(args.repeats)
    if args.only:
        limited(args.repeats, args.tokens, args.only)
    if not args.skip_smollm2:
        smollm2(args.repeats, args.tokens)


if __name__ == "__main__":
    main()
