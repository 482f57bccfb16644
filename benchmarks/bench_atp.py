"""Attribution patching (:func:`attention.model.estimate`) on a SmolLM2-135M-shaped random model: the linear estimate
of all 750 patches (30 layers × 9 heads + 30 layers × 16 stream rows) from the two texts' forward passes and one
backward pass, beside the same model's one full forward pass, and beside torch doing the same (transformers'
``LlamaForCausalLM`` of the same shape in float32: both texts forward, the corrupted one with the heads' outputs and
the streams kept, and ``backward()``), measured alternately in one run.

Goal (issue "Real models on a laptop" §4): ≤ 2 s at 16 tokens. The model is bench_patching's SmolLM2-shaped one
(random weights made here, float32, the precision ``load`` chooses at this size); its text is ``--tokens`` random
tokens with one changed a quarter of the way in. ``--skip-torch`` leaves torch out.

Run: ``python benchmarks/bench_atp.py [--repeats 5] [--tokens 16] [--skip-torch]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attention.model import Model, estimate  # noqa: E402
from attention.model.atp import STEPS  # noqa: E402
from benchmarks.bench_patching import alternately, row, smollm2_shaped  # noqa: E402

GOAL = 2.0  # s: attribution patching at 16 tokens


def torch_way(m: Model) -> object:
    """transformers' Llama of the same shape, float32, with our model's weights (so both compute the same D)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    c = m.config
    cfg = LlamaConfig(
        vocab_size=c.vocab_size, hidden_size=c.d_model, intermediate_size=c.d_mlp, num_hidden_layers=c.n_layers,
        num_attention_heads=c.n_heads, num_key_value_heads=c.kv_heads, rope_theta=c.rope_theta,
        tie_word_embeddings=True, max_position_embeddings=c.n_ctx, rms_norm_eps=c.ln_eps,
    )
    torch.set_num_threads(os.cpu_count() or 1)
    hf = LlamaForCausalLM(cfg).eval()
    p = m.params
    with torch.no_grad():
        hf.model.embed_tokens.weight.copy_(torch.from_numpy(np.array(p["W_E"])))
        for k, layer in enumerate(hf.model.layers):
            for ours, theirs in (("W_q", layer.self_attn.q_proj), ("W_k", layer.self_attn.k_proj),
                                 ("W_v", layer.self_attn.v_proj), ("W_o", layer.self_attn.o_proj),
                                 ("W_gate", layer.mlp.gate_proj), ("W_fc", layer.mlp.up_proj),
                                 ("W_proj", layer.mlp.down_proj)):
                theirs.weight.copy_(torch.from_numpy(np.array(p[f"{k}.{ours}"].T)))
            layer.input_layernorm.weight.copy_(torch.from_numpy(np.array(p[f"{k}.ln1.g"])))
            layer.post_attention_layernorm.weight.copy_(torch.from_numpy(np.array(p[f"{k}.ln2.g"])))
        hf.model.norm.weight.copy_(torch.from_numpy(np.array(p["ln_f.g"])))
    return hf


def torch_estimate(hf: object, clean: list[int], corrupt: list[int], answer: int, wrong: int) -> tuple[list, list]:
    """The same estimate the torch way: the clean run's activations, the corrupted run's gradients, their products."""
    import torch

    kept: list = []
    projections = [layer.self_attn.o_proj for layer in hf.model.layers]

    def keep(module: object, args: tuple) -> None:
        kept.append(args[0])
        if args[0].requires_grad:
            args[0].retain_grad()

    hooks = [proj.register_forward_pre_hook(keep) for proj in projections]
    try:
        with torch.no_grad():
            a = hf(torch.tensor([clean]), output_hidden_states=True)
        clean_heads, kept[:] = list(kept), []
        b = hf(torch.tensor([corrupt]), output_hidden_states=True)
        for h in b.hidden_states[:-1]:
            h.retain_grad()
        (b.logits[0, -1, answer] - b.logits[0, -1, wrong]).backward()
        with torch.no_grad():
            heads = [((x - y) * y.grad).sum() for x, y in zip(clean_heads, kept, strict=True)]
            pairs = zip(a.hidden_states[:-1], b.hidden_states[:-1], strict=True)
            streams = [((x - y) * y.grad).sum(-1) for x, y in pairs]
    finally:
        for hook in hooks:
            hook.remove()
    return heads, streams


def cpu_seconds(fn: object, repeats: int) -> float:
    """The median CPU time of ``fn`` (every thread of this process), after a warm-up."""
    fn()
    times = []
    for _ in range(repeats):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--skip-torch", action="store_true")
    args = ap.parse_args()
    print(
        f"numpy {np.__version__}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}; medians of "
        f"{args.repeats} after a warm-up"
    )
    m, n = smollm2_shaped(), args.tokens
    rs = np.random.RandomState(0)
    clean = rs.randint(0, 1000, n).tolist()
    corrupt = list(clean)
    corrupt[n // 4] = (clean[n // 4] + 1) % 1000
    a, b = m.run(clean).logits[-1], m.run(corrupt).logits[-1]
    answer, wrong = int(np.argmax(a)), int(np.argmax(b))
    if answer == wrong:
        wrong = int(np.argsort(-b)[1])

    def one_pass() -> None:
        m.clear_cache()
        m.run(clean)

    def ours() -> None:
        m.clear_cache()
        estimate(m, clean, corrupt, -1, answer, wrong)  # integrated gradients on the path, atp.STEPS runs

    def plain() -> None:
        m.clear_cache()
        estimate(m, clean, corrupt, -1, answer, wrong, steps=0)  # the gradient at the corrupted run alone

    fns = {"pass": one_pass, "atp": ours, "plain": plain}
    if not args.skip_torch:
        import torch

        hf = torch_way(m)
        fns["torch"] = lambda: torch_estimate(hf, clean, corrupt, answer, wrong)
        with torch.no_grad():
            theirs = hf(torch.tensor([corrupt])).logits[0, -1].numpy()
        print(f"torch's corrupted logits against ours: {np.abs(theirs - b).max():.2e} apart (float32)")
    print(f"| {'case':<64} | {'median':>12} | note")
    got = alternately(fns, args.repeats)
    count = m.config.n_layers * (m.config.n_heads + n)
    row(f"SmolLM2-shaped (float32): one full pass, {n} tokens", got["pass"])
    row(f"the estimate ({STEPS} steps on the path): every patch ({count})", got["atp"],
        f"{got['atp'] / got['pass']:.1f}× a pass, {got['atp'] / got['plain']:.1f}× the plain one")
    row("the plain estimate (the corrupted run's gradient alone)", got["plain"],
        f"{got['plain'] / got['pass']:.1f}× a pass")
    if "torch" in got:
        row("torch: the plain estimate (two forwards, one backward)", got["torch"],
            f"ours {got['plain'] / got['torch']:.2f}× torch")
    cpu = {name: cpu_seconds(fns[name], args.repeats) for name in ("pass", "atp", "plain")}
    row("CPU time (all threads): one full pass", cpu["pass"], "less sensitive to other work than the wall clock")
    row("CPU time (all threads): the estimate", cpu["atp"], f"{cpu['atp'] / cpu['pass']:.1f}× a pass")
    row("CPU time (all threads): the plain estimate", cpu["plain"], f"{cpu['plain'] / cpu['pass']:.1f}× a pass")
    ok = got["atp"] <= GOAL
    print(f"goal: the estimate ≤ {GOAL:g} s at {n} tokens: {'met' if ok else 'MISSED'} ({got['atp']:.3f} s)")


if __name__ == "__main__":
    main()
