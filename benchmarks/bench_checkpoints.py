"""The inside pages on a server GPT-2 folder, timed on the server (AppTest, no browser): how long a learner waits.

Builds two random GPT-2 folders with transformers (dev requirement) and a byte-level BPE trained on this README:
"tiny" (2 layers × 4 heads, width 64: every head drawn) and "wide" (12 × 12 heads as GPT-2 small, width 192: the
score grids, then one layer's 12 heads). For each page (Every head, First token), in a fresh session each repeat:
choosing the model (the folder is read once per process: the first repeat includes it), typing a text, pressing
*Repeat these tokens* (so 2 × its tokens) and a rerun with nothing changed. Prints medians over the repeats. Runs are
cached by content across sessions, as on a server: the first repeat of a page computes, later ones mostly draw.
Run: python benchmarks/bench_checkpoints.py [--repeats 5] [--text "..."]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TEXT = (
    "Attention is all you need, said the paper. Every head reads keys and values; queries ask and softmax weighs them."
)


def build(folder: Path, layers: int, heads: int, width: int) -> None:
    """A random GPT-2 checkpoint folder of this size, with a BPE tokenizer of 2,000 tokens."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel

    folder.mkdir(parents=True, exist_ok=True)
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator((ROOT / "README.md").read_text().splitlines(), vocab_size=2000, show_progress=False)
    tok.save(str(folder / "tokenizer.json"))
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=1024, n_embd=width, n_layer=layers, n_head=heads)
    cfg.bos_token_id = cfg.eos_token_id = 0
    GPT2LMHeadModel(cfg).eval().save_pretrained(str(folder), safe_serialization=True)


def timed(step) -> tuple[object, float]:
    start = time.perf_counter()
    out = step()
    return out, time.perf_counter() - start


def one(page: str, name: str, text: str) -> dict[str, float]:
    from tests.helpers.apptest import app, no_exception

    at = app(page)
    at, t_open = timed(lambda: at.selectbox(key="inside.w.model").set_value(f"server:{name}").run())
    at, t_text = timed(lambda: at.text_input(key="inside.w.typed").input(text).run())
    at, t_repeat = timed(lambda: at.button(key="inside.repeat").click().run())
    _, t_rerun = timed(lambda: at.run())
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    return {
        "open": t_open,
        "text": t_text,
        "repeat": t_repeat,
        "rerun": t_rerun,
        "tokens": len(at.session_state["attention_session"].inside.ids),
        "charts": len(at.get("vega_lite_chart")),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--text", default=TEXT)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sizes = {"tiny": (2, 4, 64), "wide": (12, 12, 192)}
        for name, size in sizes.items():
            build(Path(tmp) / name, *size)
        os.environ["ATTENTION_MODELS"] = ";".join(f"{n}={Path(tmp) / n}" for n in sizes)
        for name, (layers, heads, width) in sizes.items():
            for page in ("every_head", "first_token"):
                runs = [one(page, name, args.text) for _ in range(args.repeats)]
                med = {k: statistics.median(r[k] for r in runs) for k in ("open", "text", "repeat", "rerun")}
                print(
                    f"{name} ({layers} × {heads} heads, width {width}) {page}: {runs[0]['tokens']} tokens, "
                    f"{runs[0]['charts']} charts; choose the model {med['open']:.2f} s "
                    f"(first: {runs[0]['open']:.2f} s), "
                    f"type a text {med['text']:.2f} s, repeat it {med['repeat']:.2f} s, rerun {med['rerun']:.2f} s "
                    f"(medians of {args.repeats})"
                )


if __name__ == "__main__":
    main()
