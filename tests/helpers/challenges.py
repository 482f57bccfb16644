"""A challenge's goal read by plain Python loops over the trace's arrays: the oracle beside the engine's evaluate."""

from __future__ import annotations

import math

import numpy as np

import attention
from attention.labs import challenges as ch


def naive_met(c: ch.Challenge, trace: attention.Trace) -> bool:
    """The goal read straight off the definition: each row the goal names, compared by plain Python."""
    A = np.asarray(getattr(trace, c.condition.array))
    if A.ndim == 3:  # a batch of one, or the heads: the head the goal names
        A = A[0] if c.condition.head is None else A[c.condition.head]
    tokens = list(trace.tokens)
    cond = c.condition
    index = {t: k for k, t in enumerate(tokens)}
    rows = range(A.shape[0]) if cond.row == ch.ALL else [index.get(cond.row, cond.row)]
    ops = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
    for i in rows:
        row = [float(v) for v in A[i]]
        j = i if cond.col == ch.SELF else index.get(cond.col, cond.col)
        if cond.kind == "entropy":
            ok = ops[cond.op](-math.fsum(v * math.log2(v) for v in row if v > 0), cond.value)
        elif cond.kind == "argmax":
            ok = all(row[j] > v for k, v in enumerate(row) if k != j)
        else:
            ok = ops[cond.op](row[j], cond.value)
        if not ok:
            return False
    return True
