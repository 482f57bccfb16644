"""The KV cache's findings on SmolLM2-135M-Instruct (docs/models.md, "The KV cache at length"): every eviction policy
at several budgets on the shipped long text, then the retrieval heads of a needle copied from far back, and the
needle's copy with the top k heads ablated and with as many random ones. Prints one JSON line per result as it goes.

    python scripts/kv_cache_findings.py [n] [m] [haystack] [k]     (defaults 320 48 200 5: the docs' figures)
"""

from __future__ import annotations

import json
import sys

import numpy as np

from attention.model import load, models_folder
from attention.model.eviction import (
    NEEDLE,
    POLICIES,
    QUESTION,
    copy_accuracy,
    evict_curve,
    first_token_shares,
    long_text,
    needle_text,
    retrieval_scores,
)

BUDGETS = (16, 32, 64, 128, 256, 512, 1024)


def sinks(model, n: int) -> None:
    """Each layer's and head's share on the first token from the queries at positions 64, 512 and the text's last
    (2,048 or fewer): the mean over heads, the heads above 0.5, the layers' means."""
    ids = model.encode(long_text())[:n]
    at = sorted({p for p in (64, 512, len(ids)) if p <= len(ids)})
    shares = first_token_shares(model, ids, [p - 1 for p in at])  # (L, H, k)
    for k, p in enumerate(at):
        s = shares[..., k]
        print(json.dumps(dict(position=p, mean=float(s.mean()), median=float(np.median(s)),
                              above_half=int((s > 0.5).sum()), heads=int(s.size),
                              layers=[round(float(v), 3) for v in s.mean(axis=1)])), flush=True)


def eviction(model, n: int, m: int) -> None:
    """Every policy at every budget below the prefix's length: mean losses and top-1 agreement."""
    ids = model.encode(long_text())[:n]
    runs = [(p, b) for b in BUDGETS if b < len(ids) - m for p in POLICIES]
    for r in evict_curve(model, ids, m, runs):
        print(json.dumps(dict(n=len(ids), m=m, policy=r.policy, budget=r.budget, loss=r.mean_loss,
                              full=r.full_mean_loss, top1=r.agreement)), flush=True)


def retrieval(model, haystack: int, k: int) -> None:
    """Retrieval scores on one needle, the top k heads, and the copy with them or k random heads ablated."""
    ids, needle, answer = needle_text(model, long_text(), NEEDLE, QUESTION, haystack)
    scores, copied = retrieval_scores(model, ids, needle, answer)
    order = np.argsort(-scores, axis=None)[:k]
    top = [tuple(int(i) for i in np.unravel_index(o, scores.shape)) for o in order]
    print(json.dumps(dict(n=len(ids), needle=needle, answer=answer, copied=copied.tolist(),
                          top=[(la, h, float(scores[la, h])) for la, h in top])), flush=True)
    L, H = scores.shape
    others = [(la, h) for la in range(L) for h in range(H) if (la, h) not in top]
    rs = np.random.RandomState(0)
    randoms = [others[i] for i in rs.choice(len(others), k, replace=False)]
    for name, heads in (("top", top), ("random", randoms)):
        share, loss = copy_accuracy(model, ids, answer, heads)
        print(json.dumps(dict(ablated=name, heads=heads, copied=share, loss=loss)), flush=True)


def main() -> None:
    n, m, haystack, k = (int(a) for a in (sys.argv[1:] + ["320", "48", "200", "5"][len(sys.argv) - 1 :])[:4])
    model = load(models_folder.packaged()["SmolLM2-135M-Instruct"])
    sinks(model, n)
    eviction(model, n, m)
    retrieval(model, haystack, k)


if __name__ == "__main__":
    main()
