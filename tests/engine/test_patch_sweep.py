"""The patching sweep, which runs each patch from the patched layer on and only on the rows that can change, against
the naive patch: the whole corrupted run made again with the intervention (:func:`attention.model.patch` for a head,
``Model.run`` with ``patch_stream`` for a stream row), share by share, on every family's parts and on the shipped
model; and the journey's reading on the shipped model's ready-made pair.

Bound: a share is (D_patched − D_corrupted) / (D_clean − D_corrupted), differences of logits of order 1 to 10 divided
by a gap of order 1 to 10. Both ways compute the same float64 products on the same rows, only cut to fewer rows (a
matrix product's rows do not depend on each other, though a BLAS kernel may round a smaller block differently in the
last bit): about 1e-15 relative per step, a few hundred steps, so 1e-9 on a share is 10⁴ times the rounding and a
millionth of a share any person could read. A real mistake (the last layer left out, the earlier rows' keys from the
wrong run) moves a share far past the bound, as the last test shows."""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import Config, Model, builtin, init_params, patch, patch_stream, readout, restored, sweep
from attention.model.vocab import WordVocab
from tests.helpers.examples import TYPES, example_parts

TOL = 1e-9
SIZES = dict(vocab_size=40, n_ctx=16, d_model=32, n_layers=3, n_heads=4, d_mlp=48)
FAMILIES = {  # GPT-2 (the defaults), every family's examples (from the engine's table), and an attention-only model
    "gpt-2: LayerNorm, biases, learned positions": {},
    **{name: example_parts(name, vocab_size=40, n_ctx=16) for name in TYPES},
    "attention only": dict(attention_only=True, positions="sinusoidal"),
}


def _model(parts: dict) -> Model:
    cfg = Config(**{**SIZES, **parts}).validate()
    params = init_params(cfg, seed=1, std=0.3)
    rs = np.random.RandomState(2)
    params = {k: v + rs.normal(0, 0.3, v.shape) if k.endswith(".g") else v for k, v in params.items()}
    return Model(cfg, params, WordVocab([f"w{i}" for i in range(40)]))


def _naive(m: Model, clean: list[int], corrupt: list[int], t: int, answer: int, wrong: int):
    """Every share the slow way: the whole corrupted run again with one intervention, (L, H) and (L, n)."""
    c, n = m.config, len(clean)
    a, b = m.run(clean), m.run(corrupt)
    heads = np.array(
        [
            [restored(patch(m, clean, corrupt, [(la, h)]), a, b, t, answer, wrong) for h in range(c.n_heads)]
            for la in range(c.n_layers)
        ]
    )
    streams = np.array(
        [
            [
                restored(m.run(corrupt, [patch_stream(la, p, a.residuals[la][p])]), a, b, t, answer, wrong)
                for p in range(n)
            ]
            for la in range(c.n_layers)
        ]
    )
    return heads, streams


def _check(m: Model, clean: list[int], corrupt: list[int], position: int) -> None:
    a, b = m.run(clean).logits[position], m.run(corrupt).logits[position]
    answer = int(np.argmax(a))
    wrong = next(int(t) for t in np.argsort(-b) if t != answer)  # the corrupted run's best other token
    s = sweep(m, clean, corrupt, position, answer, wrong)
    heads, streams = _naive(m, clean, corrupt, position, answer, wrong)
    assert s.done
    np.testing.assert_allclose(s.heads, heads, rtol=0, atol=TOL)
    np.testing.assert_allclose(s.streams, streams, rtol=0, atol=TOL)
    assert s.clean == pytest.approx(a[answer] - a[wrong], abs=1e-9)
    assert s.corrupt == pytest.approx(b[answer] - b[wrong], abs=1e-9)
    assert np.ptp(heads) > 1e-2  # the heads differ: the comparison has something to catch
    assert np.isfinite(streams).all() and np.abs(streams[:, position + 1 :]).max(initial=0) == 0


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_sweep_is_the_naive_patch_on_every_family(name: str) -> None:
    m = _model(FAMILIES[name])
    rs = np.random.RandomState(3)
    clean = rs.randint(0, 40, 12).tolist()
    corrupt = list(clean)
    corrupt[3], corrupt[7] = (clean[3] + 1) % 40, (clean[7] + 5) % 40  # two changes: rows from the first on
    for position in (11, 8):  # the last row, and one before it (the rows after it are left out)
        _check(m, clean, corrupt, position)


def test_the_sweep_is_the_naive_patch_on_the_shipped_model_and_names_the_journeys_heads() -> None:
    """The ready-made pair: a repeat of 12 words, and the same with word 12 (the last word's earlier copy) changed.
    At the last position the induction head (layer 2 · head 1) copies what followed the earlier copy; in the
    corrupted text there is none. Patching the previous-token head (layer 1 · head 2) puts back the key the
    induction head finds; patching the induction head puts back what it copies: both restore most of the
    difference, the stream entering layer 1 restores all of it at word 12, and at word 13 for layer 2."""
    m = builtin("induction")
    from attention.model import induction

    clean = [int(i) for i in induction.history("induction")["example"]]
    corrupt = list(clean)
    corrupt[11] = next(i for i in range(m.config.vocab_size) if i not in clean)
    s = sweep(m, clean, corrupt)
    heads, streams = _naive(m, clean, corrupt, s.position, s.answer, s.wrong)
    np.testing.assert_allclose(s.heads, heads, rtol=0, atol=TOL)
    np.testing.assert_allclose(s.streams, streams, rtol=0, atol=TOL)
    assert s.answer == clean[12]  # the clean prediction: what followed the earlier copy
    top = sorted(((s.heads[la, h], (la, h)) for la in range(2) for h in range(2)), reverse=True)[:2]
    assert {where for _, where in top} == {(0, 1), (1, 0)}
    assert min(share for share, _ in top) > 0.5
    assert s.streams[0, 11] == pytest.approx(1.0, abs=1e-12) and np.abs(np.delete(s.streams[0], 11)).max() < 1e-12
    assert s.streams[1, 12] > 0.9


def _short(onward):
    """The sweep's onward pass with a mistake: it stops before the last layer."""

    def made(self, start_layer, x, start, through=None):
        if through is not None:
            return onward(self, start_layer, x, start, through)
        return self.read(onward(self, start_layer, x, start, through=self.model.config.n_layers - 1)[:, -1])

    return made


def _next_layers_keys(init):
    """The sweep's set-up with a mistake: the keys and values of the rows before the first change taken from the
    next layer (an index off by one)."""

    def made(self, *args) -> None:
        init(self, *args)
        self.kv = self.kv[1:] + self.kv[:1]

    return made


def _shifted(heads_patched):
    """The batch with a mistake: each head's patched stream in the next head's element."""
    return lambda self, layer, heads: np.roll(heads_patched(self, layer, heads), 1, axis=0)


def _group_start(streams_patched):
    """The batch with a mistake: every element of a group of stream rows patched at the group's first row."""
    return lambda self, layer, lo, rows: streams_patched(self, layer, lo, [lo] * len(rows))


MISTAKES = {
    "the last layer left out": ("onward", _short),
    "the earlier rows' keys from the next layer": ("__init__", _next_layers_keys),
    "each head's patch in the next head's batch element": ("heads_patched", _shifted),
    "each stream row of a group patched at the group's first row": ("streams_patched", _group_start),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_a_mistake_the_sweep_could_make_is_caught_by_the_bound(mistake: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep made with a realistic mistake in its batched onward pass, against the naive patch: far past the
    bound on the patches the mistake reaches, while the right sweep stays within it."""
    m = _model(FAMILIES["llama"])
    rs = np.random.RandomState(3)
    clean = rs.randint(0, 40, 12).tolist()
    corrupt = list(clean)
    corrupt[3] = (clean[3] + 1) % 40
    right = sweep(m, clean, corrupt)
    heads, streams = _naive(m, clean, corrupt, right.position, right.answer, right.wrong)
    assert max(np.abs(right.heads - heads).max(), np.abs(right.streams - streams).max()) <= TOL
    name, wrap = MISTAKES[mistake]
    monkeypatch.setattr(readout._Onward, name, wrap(getattr(readout._Onward, name)))
    wrong = sweep(m, clean, corrupt)
    off = max(np.abs(wrong.heads - heads).max(), np.abs(wrong.streams - streams).max())
    assert off > 1e3 * TOL, off


def test_a_batch_cut_into_pieces_is_the_same_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long text's batch runs in pieces (bounded memory): one element per piece gives the same shares."""
    m = _model(FAMILIES["gemma3_text"])
    rs = np.random.RandomState(4)
    clean = rs.randint(0, 40, 10).tolist()
    corrupt = list(clean)
    corrupt[2] = (clean[2] + 7) % 40
    answer = int(np.argmax(m.run(clean).logits[-1]))
    wrong = (answer + 1) % 40
    whole = sweep(m, clean, corrupt, answer=answer, wrong=wrong)
    monkeypatch.setattr(readout._Onward, "CELLS", 1)
    pieces = sweep(m, clean, corrupt, answer=answer, wrong=wrong)
    np.testing.assert_allclose(pieces.heads, whole.heads, rtol=0, atol=TOL)
    np.testing.assert_allclose(pieces.streams, whole.streams, rtol=0, atol=TOL)
    assert np.ptp(whole.heads) > 1e-3 and np.ptp(whole.streams) > 1e-3  # shares that differ: a mix-up would show


# A limited sweep on two layers: listed heads of both (two in layer 1, so a batch of the listed ones), stream rows
# inside the changed span that share a group (4, 5), that start a group of their own (9), and that sit at the first
# change (3: its group runs with the heads' batch), one before the first change (1: exactly 0, nothing run) and one
# after the read position (11 at position 10: exactly 0), in a jumbled order.
ONLY = [("stream", 1, 9), ("head", 1, 1), ("head", 0, 3), ("stream", 0, 4), ("stream", 1, 1), ("head", 0, 0),
        ("stream", 0, 5), ("stream", 1, 11), ("stream", 1, 3)]

def _pair(m: Model) -> tuple[list[int], list[int], dict]:
    """A pair changed at 3 and 7, and the answer and wrong tokens at position 10, as :func:`_check` chooses them."""
    rs = np.random.RandomState(3)
    clean = rs.randint(0, 40, 12).tolist()
    corrupt = list(clean)
    corrupt[3], corrupt[7] = (clean[3] + 1) % 40, (clean[7] + 5) % 40  # the first change at 3
    a, b = m.run(clean).logits[10], m.run(corrupt).logits[10]
    answer = int(np.argmax(a))
    return clean, corrupt, dict(position=10, answer=answer, wrong=next(int(t) for t in np.argsort(-b) if t != answer))


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_limited_sweep_makes_the_full_sweeps_shares_for_the_listed_patches(name: str) -> None:
    """The listed patches, batched by layer among themselves only, against the full sweep's entries and against the
    naive patch (a whole corrupted run per listed patch), to the float64 bound; every other entry NaN."""
    m = _model(FAMILIES[name])
    clean, corrupt, at = _pair(m)
    full = sweep(m, clean, corrupt, **at)
    part = sweep(m, clean, corrupt, **at, only=ONLY)
    assert part.done and (part.clean, part.corrupt) == pytest.approx((full.clean, full.corrupt), abs=1e-12)
    a, b = m.run(clean), m.run(corrupt)
    for kind, layer, i in ONLY:
        got, whole = (part.heads, full.heads) if kind == "head" else (part.streams, full.streams)
        assert abs(got[layer, i] - whole[layer, i]) <= TOL, (kind, layer, i)
        iv = patch(m, clean, corrupt, [(layer, i)]) if kind == "head" else m.run(
            corrupt, [patch_stream(layer, i, a.residuals[layer][i])]
        )
        assert abs(got[layer, i] - restored(iv, a, b, 10, full.answer, full.wrong)) <= TOL, (kind, layer, i)
    assert part.streams[1, 1] == 0 and part.streams[1, 11] == 0  # outside the rows that can change: exactly 0
    listed = {(kind, layer, i) for kind, layer, i in ONLY}
    for kind, shares in (("head", part.heads), ("stream", part.streams)):
        for (layer, i), v in np.ndenumerate(shares):
            assert np.isnan(v) == ((kind, layer, i) not in listed), (kind, layer, i)
    assert np.ptp([full.heads[la, h] for _, la, h in ONLY[1:3]]) > 1e-3  # listed shares differ: a mix-up would show


def _counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """Counters on what a sweep runs: each head and stream row put into a batch (``patches``: (kind, layer, i)), and
    each batched layer call (``rows``: batch elements × rows; the two texts' own runs are not batched)."""
    seen: dict[str, list] = {"patches": [], "rows": []}
    heads_patched, streams_patched, layer = readout._Onward.heads_patched, readout._Onward.streams_patched, Model.layer

    def heads(self, at, hs):
        seen["patches"] += [("head", at, h) for h in hs]
        return heads_patched(self, at, hs)

    def streams(self, at, lo, rows):
        seen["patches"] += [("stream", at, p) for p in rows]
        return streams_patched(self, at, lo, rows)

    def counted_layer(self, at, x, *args, **kwargs):
        if x.ndim == 3:
            seen["rows"].append(x.shape[0] * x.shape[1])
        return layer(self, at, x, *args, **kwargs)

    monkeypatch.setattr(readout._Onward, "heads_patched", heads)
    monkeypatch.setattr(readout._Onward, "streams_patched", streams)
    monkeypatch.setattr(Model, "layer", counted_layer)
    return seen


def _rows(L: int, f: int, t: int, jobs: list[tuple[str, int, int]], starts: dict[int, int]) -> int:
    """Batch elements × rows the layers run for these patches: a head of layer l on rows f .. t through layers
    l + 1 .. L − 1; a stream row p on rows from its group's first row to t through layers l .. L − 1."""
    return sum((L - 1 - la) * (t - f + 1) if kind == "head" else (L - la) * (t - starts[i] + 1) for kind, la, i in jobs)


def test_a_limited_sweep_runs_only_the_listed_patches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: a limited sweep puts exactly the listed patches that can change anything into its batches,
    each once, and its layers run exactly their rows (row 5 grouped with 4, from row 4); the full sweep runs every
    head and every row from f to t, in groups of three from f."""
    m = _model(FAMILIES["llama"])
    clean, corrupt, at = _pair(m)
    L, H, f, t = m.config.n_layers, m.config.n_heads, 3, at["position"]
    seen = _counted(monkeypatch)
    sweep(m, clean, corrupt, **at, only=ONLY)
    made = [job for job in ONLY if job[0] == "head" or f <= job[2] <= t]
    assert sorted(seen["patches"]) == sorted(made) and len(made) == 7
    assert sum(seen["rows"]) == _rows(L, f, t, made, {3: 3, 4: 4, 5: 4, 9: 9}) == 54
    seen["rows"].clear()
    seen["patches"].clear()
    sweep(m, clean, corrupt, **at)
    every = [("head", la, h) for la in range(L) for h in range(H)] + [
        ("stream", la, p) for la in range(L) for p in range(f, t + 1)
    ]
    assert sorted(seen["patches"]) == sorted(every)
    assert sum(seen["rows"]) == _rows(L, f, t, every, {p: p - (p - f) % 3 for p in range(f, t + 1)}) == 161
