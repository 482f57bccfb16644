"""The transformer in numpy: the shipped model's forward with every head's trace, an intervention's rerun, one
training step, training the shipped model from scratch, and two checkpoints of published models' shapes against torch.

Every case runs several times in one process after a warm-up and prints the median. The checkpoints (random weights,
made here with transformers and saved under a temporary folder that is deleted afterwards):

- GPT-2 small's shape (124M parameters, saved as float32);
- SmolLM2-135M's shape (a Llama with grouped key/value heads, RoPE and SwiGLU, saved as bfloat16 like the published
  file).

For each: its load time (config, safetensors, tokenizer, in the compute precision ``load`` chooses), the peak
resident memory of a fresh process that loads it and runs 256 tokens, and the forward pass at 64 and 256 tokens,
ours (every head a trace) and torch float32 (the library's default attention, as many threads as cores) measured
alternately in one run, with the ratio ours ÷ torch. Goals: forward ≤ 1.5× torch at 64 tokens, load ≤ 5 s, peak
memory ≤ 3× the weights' float32 size.

Run: ``python benchmarks/bench_model.py [--skip-gpt2] [--skip-smollm2] [--skip-train]`` (a few minutes; about 3 GB
of memory).
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


# --------------------------------------------------------------------------- checkpoints against torch

FORWARD_GOAL = 1.5  # ours ÷ torch float32 at 64 tokens
LOAD_GOAL = 5.0  # seconds
MEMORY_GOAL = 3.0  # peak resident memory of load + a 256-token run ÷ the weights' float32 size

PEAK_SCRIPT = """
import sys, numpy as np
sys.path.insert(0, {root!r})
from attention.model import load

def status(field):  # kB; /proc's high-water mark is the new process's own (getrusage's carries the parent's over)
    return next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith(field + ":"))

base = status("VmRSS")
m = load({folder!r})
r = m.run(list(np.random.RandomState(0).randint(0, m.config.vocab_size, {n})))
_ = [r.head(layer, h) for layer in range(m.config.n_layers) for h in range(m.config.n_heads)]
print((status("VmHWM") - base) * 1024)
"""


def _tokenizer(folder: Path) -> None:
    from tokenizers import ByteLevelBPETokenizer

    tok = ByteLevelBPETokenizer()
    corpus = ["a small corpus for a tokenizer of the benchmark"] * 10
    tok.train_from_iterator(corpus, vocab_size=300, show_progress=False)
    tok.save(str(folder / "tokenizer.json"))


def _gpt2_folder(folder: Path) -> tuple[object, int]:
    """GPT-2 small's shape (12 layers, 12 heads, d 768, vocabulary 50257), random, saved as float32."""
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config()).eval()
    model.save_pretrained(str(folder), safe_serialization=True)
    return model, sum(p.numel() for p in model.parameters())


def _smollm2_folder(folder: Path) -> tuple[object, int]:
    """SmolLM2-135M's shape (a Llama: 30 layers, d 576, 9 query heads sharing 3 key/value heads, SwiGLU 1536, RoPE
    θ = 1e5, tied embeddings, vocabulary 49152), random, saved as bfloat16 as the published file is."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
        num_key_value_heads=3, max_position_embeddings=8192, rope_theta=100000.0, tie_word_embeddings=True,
        rms_norm_eps=1e-5,
    )
    model = LlamaForCausalLM(cfg).eval()
    model.to(torch.bfloat16).save_pretrained(str(folder), safe_serialization=True)
    return model.float(), sum(p.numel() for p in model.parameters())


def _alternately(fns: dict[str, object], repeats: int = 9) -> dict[str, tuple[float, float]]:
    """The median wall time and CPU time (every thread's seconds) of each function, run in turn so that load on the
    machine hits every side alike; CPU time is what other jobs on the machine move least."""
    for fn in fns.values():
        fn()  # warm up
    wall: dict[str, list[float]] = {k: [] for k in fns}
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t, c = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c)
    return {k: (float(np.median(wall[k])), float(np.median(cpu[k]))) for k in fns}


def checkpoint(name: str, make) -> None:  # noqa: ANN001 - make(folder) -> (torch model, parameter count)
    """Load time, peak memory and the forward pass at 64 and 256 tokens of a random checkpoint of a published
    model's shape, ours (every head's trace) ÷ torch float32 with the same thread count."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is made here: the hub is never asked
    import subprocess

    import torch

    from attention.model import load

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / name
        model, count = make(folder)
        _tokenizer(folder)
        size = sum(f.stat().st_size for f in folder.iterdir())
        print(f"{name}: {count / 1e6:.1f}M parameters, folder {size / 1e9:.2f} GB")
        loads = []
        for _ in range(3):
            t = time.perf_counter()
            ours = load(folder)
            loads.append(time.perf_counter() - t)
        load_s = float(np.median(loads))
        row(f"{name}: load ({ours.dtype} compute)", load_s, f"goal ≤ {LOAD_GOAL:.0f} s: {_met(load_s <= LOAD_GOAL)}")
        code = PEAK_SCRIPT.format(root=str(ROOT), folder=str(folder), n=256)
        peak = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        ratio = peak / (4 * count)
        print(
            f"| {name + ': peak memory, load + 256 tokens':<58} | {peak / 1e9:9.2f} GB | "
            f"{ratio:.2f}× the weights' float32 size ({4 * count / 1e9:.2f} GB); goal ≤ {MEMORY_GOAL:.0f}×: "
            f"{_met(ratio <= MEMORY_GOAL)}"
        )
        torch.set_num_threads(os.cpu_count() or 1)
        for n in (64, 256):
            ids = np.random.RandomState(n).randint(0, ours.config.vocab_size, n).tolist()
            t_ids = torch.tensor([ids])

            def ours_fn(ids=ids) -> None:
                ours.clear_cache()
                run = ours.run(ids)
                for layer in range(ours.config.n_layers):
                    for h in range(ours.config.n_heads):
                        run.head(layer, h)

            def torch_fn(t_ids=t_ids) -> None:
                with torch.inference_mode():
                    model(t_ids)

            got = _alternately({"ours": ours_fn, "torch": torch_fn})
            ratio, cpu_ratio = got["ours"][0] / got["torch"][0], got["ours"][1] / got["torch"][1]
            goal = f"; goal ≤ {FORWARD_GOAL}×: {_met(ratio <= FORWARD_GOAL)}" if n == 64 else ""
            row(f"{name}: forward + every head's trace, {n} tokens, ours", got["ours"][0], f"{ours.dtype}")
            row(
                f"{name}: forward, {n} tokens, torch float32",
                got["torch"][0],
                f"ours ÷ torch = {ratio:.2f}{goal} (CPU time {cpu_ratio:.2f})",
            )


def _met(ok: bool) -> str:
    return "met" if ok else "MISSED"


def gpt2_small() -> None:
    checkpoint("GPT-2 small", _gpt2_folder)


def smollm2() -> None:
    checkpoint("SmolLM2-135M shape", _smollm2_folder)


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
    if "--skip-smollm2" not in sys.argv:
        smollm2()


if __name__ == "__main__":
    main()
