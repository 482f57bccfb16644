"""The transformer in numpy: the shipped model's forward with every head's trace, an intervention's rerun, one
training step, training the shipped model from scratch, and a GPT-2-small-sized model against torch.

Every case runs several times in one process after a warm-up and prints the median. The GPT-2-small-sized model
(124M parameters, random weights) is made here with transformers and saved under a temporary folder that is deleted
afterwards: its load time (config, 0.5 GB of safetensors as float32, tokenizer; read into float64), and its forward
at 128 tokens, ours (float64, every head a trace) and torch's (float32, the library's default attention; and
float64, eager) measured alternately in one run, with the ratio ours ÷ torch.

Run: ``python benchmarks/bench_model.py [--skip-gpt2] [--skip-train]`` (about two minutes; the 124M model needs
about 3 GB of memory).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attention.model import Model, ablate, builtin, init_params, loss_and_grads, replace_matrix  # noqa: E402
from attention.model.induction import sequences  # noqa: E402

REPEATS = 7
SMALL_REPEATS = 101  # for the sub-millisecond cases, where one busy moment would move a median of 7


def median(fn, repeats: int = REPEATS) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def row(case: str, seconds: float, note: str = "") -> None:
    unit = f"{seconds * 1e3:9.2f} ms" if seconds < 1 else f"{seconds:9.2f} s "
    print(f"| {case:<58} | {unit} | {note}")


def shipped() -> None:
    m = builtin("induction")
    n = 64
    ids = np.random.RandomState(0).randint(0, m.config.vocab_size, n).tolist()

    def forward() -> None:
        m.clear_cache()
        run = m.run(ids)
        for layer in range(m.config.n_layers):
            for h in range(m.config.n_heads):
                run.head(layer, h)

    if m.config.n_ctx < n:  # the shipped model's context is shorter: time its shape at 64 tokens, random weights
        cfg = m.config.replace(n_ctx=n)
        wide = Model(cfg, init_params(cfg, 0, 0.3), m.vocab)

        def forward_wide() -> None:
            wide.clear_cache()
            run = wide.run(ids)
            for layer in range(cfg.n_layers):
                for h in range(cfg.n_heads):
                    run.head(layer, h)

        row(
            f"its shape, context {n} (random weights): forward + every head's trace, {n} tokens",
            median(forward_wide, SMALL_REPEATS),
        )
    big = m.config.n_ctx < n
    if big:  # and the shipped model itself at its whole context
        n = m.config.n_ctx
        ids = ids[:n]
    row(
        f"induction model: forward + every head's trace, {n} tokens",
        median(forward, SMALL_REPEATS),
        f"{m.config.n_layers} layers × {m.config.n_heads} heads, d_model {m.config.d_model}"
        + (f" (its context is {n} tokens)" if big else ""),
    )
    m.clear_cache()
    m.run(ids)
    count = [0]

    last = m.config.n_layers - 1
    rows_o = m.layer_weights(last)[3][: m.config.d_head]  # head 0's rows of W_o

    def rerun() -> None:  # a new intervention on the last layer each time: layer 0 comes from the cache
        count[0] += 1
        m.run(ids, [replace_matrix(last, 0, "W_o", rows_o * (1 + 1e-3 * count[0]))])

    row("a new intervention on the last layer: rerun (layer 1 from the cache)", median(rerun, SMALL_REPEATS))

    def full_rerun() -> None:
        m.clear_cache()
        m.run(ids, [ablate(m.config.n_layers - 1, 0)])

    row("the same intervention without the cache", median(full_rerun, SMALL_REPEATS))
    script = _script()
    batch = script.batch(0)
    params = {k: np.array(v) for k, v in m.params.items()}
    row(
        f"one training step: loss and gradient, batch {batch.shape[0]} × {batch.shape[1]}",
        median(lambda: loss_and_grads(m.config, params, batch)),
    )


def _script():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("train_induction", ROOT / "scripts" / "train_induction.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def train_from_scratch() -> None:
    script = _script()
    times, cpu = [], []
    for _ in range(3):
        t, c = time.perf_counter(), time.process_time()
        out = script.build()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)  # the time this process ran: what the wall time is on an idle machine
    steps = len(out["losses"]) - 1
    m = builtin("induction")
    fresh = sequences(np.random.RandomState([script.SEED, 3]), 256, m.config.vocab_size, script.HALF)
    from attention.model.induction import measure

    params = {k.removeprefix("param/"): v for k, v in out.items() if k.startswith("param/")}
    r = measure(m.config, params, fresh, script.HALF)
    row(
        f"train the induction model from scratch ({steps} Adam steps)",
        float(np.median(times)),
        f"goal ≤ 20 s; CPU time {np.median(cpu):.1f} s; best layer-2 induction {r['induction'][1].max():.3f}, "
        f"repeated-half loss {r['loss_repeated']:.4f}",
    )


def gpt2_small() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is made here: the hub is never asked
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel

    from attention.model import load

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gpt2-small-random"
        tok = ByteLevelBPETokenizer()
        tok.train_from_iterator(
            ["a small corpus for a tokenizer of the benchmark"] * 10, vocab_size=300, show_progress=False
        )
        cfg = GPT2Config()  # GPT-2 small's sizes: 12 layers, 12 heads, d 768, vocabulary 50257, context 1024
        model = GPT2LMHeadModel(cfg).eval()
        params = sum(p.numel() for p in model.parameters())
        model.save_pretrained(str(folder), safe_serialization=True)
        tok.save(str(folder / "tokenizer.json"))
        size = sum(f.stat().st_size for f in folder.iterdir())
        print(f"GPT-2-small-sized random model: {params / 1e6:.1f}M parameters, folder {size / 1e9:.2f} GB")
        loads = []
        for _ in range(3):
            t = time.perf_counter()
            ours = load(folder)
            loads.append(time.perf_counter() - t)
        row("GPT-2 small (124M): load (config, safetensors, tokenizer)", float(np.median(loads)), "median of 3")
        ids = np.random.RandomState(0).randint(0, cfg.vocab_size, 128).tolist()
        t_ids = torch.tensor([ids])
        torch64 = GPT2LMHeadModel.from_pretrained(str(folder), attn_implementation="eager", dtype=torch.float64).eval()

        def ours_fn() -> None:
            ours.clear_cache()
            ours.run(ids)

        def torch_fn(m=model) -> None:
            with torch.inference_mode():
                m(t_ids)

        def torch64_fn() -> None:
            torch_fn(torch64)

        ours_fn(), torch_fn(), torch64_fn()
        a, b, c = [], [], []
        cpu: dict[str, list[float]] = {"ours": [], "torch": [], "torch64": []}
        for _ in range(5):  # alternately, so load on the machine hits every side
            for fn, out, name in ((ours_fn, a, "ours"), (torch_fn, b, "torch"), (torch64_fn, c, "torch64")):
                t, p = time.perf_counter(), time.process_time()
                fn()
                out.append(time.perf_counter() - t)
                cpu[name].append(time.process_time() - p)  # CPU seconds of every thread: a ratio load moves less
        ours_t, torch_t, torch64_t = (float(np.median(x)) for x in (a, b, c))
        ours_c, torch_c, torch64_c = (float(np.median(cpu[k])) for k in ("ours", "torch", "torch64"))
        run = ours.run(ids)
        with torch.inference_mode():
            want = torch64(t_ids).logits[0].numpy()
        err = float(np.abs(run.logits - want).max() / np.abs(want).max())
        last, dh = cfg.n_layer - 1, cfg.n_embd // cfg.n_head
        rows_o = ours.layer_weights(last)[3][:dh]
        count = [0]

        def rerun() -> None:  # a new intervention on the last layer each time; layers 0 .. 10 from the cache
            count[0] += 1
            ours.run(ids, [replace_matrix(last, 0, "W_o", rows_o * (1 + 1e-3 * count[0]))])

        ours.run(ids)
        row("GPT-2 small: an intervention on layer 12, rerun", median(rerun, 5), "layers 1-11 from the cache")
        row(
            "GPT-2 small: forward, 128 tokens, ours (float64, every head a trace)",
            ours_t,
            f"largest difference from torch float64: {err:.1e} of the largest logit",
        )
        row(
            "GPT-2 small: forward, 128 tokens, torch float32",
            torch_t,
            f"ours ÷ torch = {ours_t / torch_t:.1f} (CPU time: {ours_c:.2f} s ÷ {torch_c:.2f} s "
            f"= {ours_c / torch_c:.1f})",
        )
        row(
            "GPT-2 small: forward, 128 tokens, torch float64 (eager)",
            torch64_t,
            f"ours ÷ torch = {ours_t / torch64_t:.1f} (CPU time: {ours_c:.2f} s ÷ {torch64_c:.2f} s "
            f"= {ours_c / torch64_c:.1f})",
        )


def main() -> None:
    import torch

    print(
        f"numpy {np.__version__}, torch {torch.__version__} ({torch.get_num_threads()} threads); "
        f"{os.cpu_count()} cores; medians after a warm-up"
    )
    print(f"| {'case':<58} | {'median':>12} | note")
    print(f"|{'-' * 60}|{'-' * 14}|------")
    shipped()
    if "--skip-train" not in sys.argv:
        train_from_scratch()
    if "--skip-gpt2" not in sys.argv:
        gpt2_small()


if __name__ == "__main__":
    main()
