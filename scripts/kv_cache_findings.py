"""The KV cache's findings on SmolLM2-135M-Instruct (docs/models.md, "The KV cache at length"): every eviction policy
at several budgets on the shipped long text, and the retrieval heads of a needle copied from far back, with the
needle's copy after ablating the top heads and as many random ones. Prints one JSON record.

    python scripts/kv_cache_findings.py [n] [m] [haystack]     (defaults 1024 128 480)
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from attention.model import load, models_folder
from attention.model.eviction import POLICIES, copy_accuracy, evict_curve, long_text, needle_text, retrieval_scores

BUDGETS = (16, 32, 64, 128, 256, 512)
NEEDLES = (
    ("The secret password for the old vault is purple elephant seventeen.", "the secret password for the old vault"),
    ("The name of the captain's ship was the Silver Heron.", "the name of the captain's ship"),
)


def eviction(model, ids: list[int], m: int) -> list[dict]:
    """Every policy at every budget below the prefix's length: mean losses and top-1 agreement."""
    runs = [(p, b) for b in BUDGETS if b < len(ids) - m for p in POLICIES]
    t = time.perf_counter()
    out = evict_curve(model, ids, m, runs)
    took = time.perf_counter() - t
    return [dict(policy=r.policy, budget=r.budget, loss=r.mean_loss, full=r.full_mean_loss, top1=r.agreement,
                 seconds=took) for r in out]


def retrieval(model, haystack: int, k: int = 10, draws: int = 3) -> dict:
    """Retrieval scores averaged over the needles, the top k heads, and the copy with them or k random heads
    ablated."""
    text = long_text()
    scores, cases = [], []
    for needle, question in NEEDLES:
        ids, span, answer = needle_text(model, text, needle, question, haystack)
        s, copied = retrieval_scores(model, ids, span, answer)
        scores.append(s)
        cases.append((ids, answer, copied.tolist()))
    mean = np.mean(scores, axis=0)  # (L, H)
    order = np.argsort(-mean, axis=None)[:k]
    top = [tuple(int(i) for i in np.unravel_index(o, mean.shape)) for o in order]
    rs = np.random.RandomState(0)
    L, H = mean.shape
    others = [(la, h) for la in range(L) for h in range(H) if (la, h) not in top]
    randoms = [[others[i] for i in rs.choice(len(others), k, replace=False)] for _ in range(draws)]
    copies = {"none": [], "top": [], **{f"random{d}": [] for d in range(draws)}}
    for ids, answer, _ in cases:
        copies["none"].append(copy_accuracy(model, ids, answer))
        copies["top"].append(copy_accuracy(model, ids, answer, top))
        for d in range(draws):
            copies[f"random{d}"].append(copy_accuracy(model, ids, answer, randoms[d]))
    return dict(top=[(la, h, float(mean[la, h])) for la, h in top], copied=[c[2] for c in cases],
                copies=copies, randoms=randoms, lengths=[len(c[0]) for c in cases])


def main() -> None:
    n, m, haystack = (int(a) for a in (sys.argv[1:] + ["1024", "128", "480"][len(sys.argv) - 1 :])[:3])
    model = load(models_folder.packaged()["SmolLM2-135M-Instruct"])
    ids = model.vocab.encode(long_text())[:n]
    print(json.dumps(dict(n=len(ids), m=m, retrieval=retrieval(model, haystack), eviction=eviction(model, ids, m))))


if __name__ == "__main__":
    main()
