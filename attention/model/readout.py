"""What the heads write into a prediction: the logit lens, direct logit attribution, and activation patching.

**The logit lens** reads the residual stream after the embeddings and after each layer as if it were the last one:
through the final norm and the unembedding,

    lens[l] = norm_f(x_l[t]) W_U                                   (V,) for l = 0 .. L; lens[L] = the model's logits

**Direct logit attribution.** The stream after the last layer is a sum of what each part wrote into it:

    x_L = x_0 + Σ_l ( Σ_h concat_h^l W_o^{l,h} + b_o^l ) + Σ_l mlp_l        (the embeddings, heads, biases, MLPs)

Holding the final norm's scale at its value at position t makes norm_f affine, and the logit of a token splits:

    LayerNorm:  norm_f(x) = (x − mean(x)) / σ ⊙ g + β       each part c writes  (c − mean(c)) / σ ⊙ g · W_U[:, tok]
    RMSNorm:    norm_f(x) = x / rms(x) ⊙ g                  each part c writes   c / rms ⊙ g · W_U[:, tok]

β · W_U[:, tok] (the final norm's shift) and every b_o and MLP bias go into ``biases``; the parts add up to the logit.

**Activation patching** runs the corrupted text with some heads' outputs (concat_h, before W_o) taken from the clean
run at the same positions: how much of the clean − corrupted logit difference does a head carry?
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np

from ..errors import AttentionError
from ..names import is_whole
from .attend import linear
from .interventions import patch_head
from .model import Model, Run, block_out, final_logits, normed, unembedding


def _position(run: Run, position: object) -> int:
    """A position of the run (negative counts from the end), checked."""
    n = run.logits.shape[-2]
    if not (is_whole(position) and -n <= position < n):
        raise AttentionError(f"there is no position {position!r}: the text has {n} tokens", field="position")
    return int(position) % n


def _token(model: Model, token: object, field: str) -> int:
    """A token of the model's vocabulary as its id: an id, or a string that is one token (:meth:`Model.token_id`)."""
    return model.token_id(token, field)


def _model(run: Run) -> Model:
    if not isinstance(run, Run) or run.model is None:
        raise AttentionError("the lens and the attribution read a Run made by Model.run", field="run")
    if run.batched:
        raise AttentionError(
            f"this run holds a batch of {len(run.ids)} texts: read one at a time, run.row(b)", field="run"
        )
    return run.model


def lens(run: Run, position: int) -> np.ndarray:
    """The logit lens at ``position``: (layers + 1, V), row l the logits read from the stream entering layer l (row 0
    after the embeddings), the last row after every layer, equal to ``run.logits[position]``."""
    t, model = _position(run, position), _model(run)
    streams = np.stack([x[t] for x in run.residuals])  # (L + 1, d)
    return final_logits(model.config, model.params, streams)  # (L + 1, V)


@dataclass(frozen=True)
class Attribution:
    """The direct contribution of each part of the model to one logit, with the final norm's scale held.

    ``heads`` (layers, query heads), ``mlps`` (layers,), ``embeddings`` and ``biases`` floats; ``total`` their sum,
    equal to ``run.logits[position, token]``; ``scale`` the final norm's divisor held at that position (σ for
    LayerNorm, the root mean square for RMSNorm, 1 without a final norm)."""

    position: int
    token: int
    heads: np.ndarray
    mlps: np.ndarray
    embeddings: float
    biases: float
    total: float
    scale: float


def read_direction(model: Model, x: np.ndarray, token: int) -> tuple[np.ndarray, float, float]:
    """The final norm and the unembedding as an affine map at the stream x (d,), its scale held: the logit of
    ``token`` for a stream y near x is y · direction + shift. Returns (direction (d,), shift, the held scale)."""
    c, p = model.config, model.params
    w = unembedding(c, p)[:, token]  # (d,)
    if c.attention_only:
        return w, 0.0, 1.0
    if c.norm == "layernorm":
        sigma = float(np.sqrt(np.var(x) + c.ln_eps))  # held
        gw = p["ln_f.g"] * w  # (d,)
        return (gw - gw.mean()) / sigma, float(p["ln_f.b"] @ w), sigma  # (c − mean c)·gw = c·(gw − mean gw)
    rms = float(np.sqrt(np.mean(x * x) + c.ln_eps))  # held
    return (c.norm_offset + p["ln_f.g"]) * w / rms, 0.0, rms


def _held(model: Model, layer: int, a: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """What a piece of layer ``layer``'s attention output (d,) writes into the stream: itself, or through the
    layer's post-attention RMSNorm (Gemma 3) with its scale held at the whole output a (d,)."""
    c, p = model.config, model.params
    if not c.post_norms:
        return lambda piece: piece
    rms = np.sqrt(np.mean(a * a) + c.ln_eps)
    return lambda piece: piece / rms * (c.norm_offset + p[f"{layer}.ln_post_attn.g"])


def _parts(run: Run, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What each part wrote into the last stream at position t: heads (L, H, d), MLPs (L, d), the embeddings (d,)
    and the biases (d,). They add up to the stream: x_L[t] = Σ heads + Σ MLPs + embeddings + biases."""
    model = run.model
    c, p = model.config, model.params
    L, H, dh = c.n_layers, c.n_heads, c.d_head
    heads, mlps, bias = np.zeros((L, H, c.d_model)), np.zeros((L, c.d_model)), np.zeros(c.d_model)
    for layer in range(L):
        W_o = run.traces.W_o(layer)  # (H·dₕ, d): as this run used it (a replaced block included)
        concat = run.traces.concats[layer][t]  # (H·dₕ,): as this run had it (ablated or patched heads included)
        b_o = p[f"{layer}.b_o"] if c.bias else np.zeros(c.d_model)
        into = _held(model, layer, concat @ W_o + b_o)
        for h in range(H):
            heads[layer, h] = into(concat[h * dh : (h + 1) * dh] @ W_o[h * dh : (h + 1) * dh])  # (d,)
        bias += into(b_o)
        attn = heads[layer].sum(axis=0) + into(b_o)  # (d,): what the attention wrote, by the held norm
        if not c.attention_only:
            mlps[layer] = run.residuals[layer + 1][t] - run.residuals[layer][t] - attn  # (d,): the rest is the MLP's
    return heads, mlps, run.residuals[0][t], bias


def attribute(run: Run, position: int, token: int | str | None = None) -> Attribution:
    """Each head's, MLP's, the embeddings' and the biases' share of the logit of ``token`` (an id or a string that is
    one token, e.g. " Paris"; by default the prediction) at ``position``; see the module's docstring."""
    t, model = _position(run, position), _model(run)
    token = int(np.argmax(run.logits[t])) if token is None else _token(model, token, "token")
    if any(iv.kind == "stream" for iv in run.interventions):
        raise AttentionError(
            "this run has a patched residual stream, which no part of the model wrote: attribute a run without "
            "stream patches (head patches and ablations are fine)",
            field="run",
        )
    direction, shift, scale = read_direction(model, run.residuals[-1][t], int(token))
    heads, mlps, embedded, bias = _parts(run, t)
    return Attribution(
        position=t,
        token=int(token),
        heads=heads @ direction,  # (L, H)
        mlps=mlps @ direction,  # (L,)
        embeddings=float(embedded @ direction),
        biases=float(bias @ direction + shift),
        total=float(run.logits[t, token]),
        scale=scale,
    )


def patch(model: Model, clean_ids: Sequence[int], corrupt_ids: Sequence[int], heads: Sequence[tuple[int, int]]) -> Run:
    """The corrupted run with the outputs (before W_o) of the listed ``(layer, head)`` pairs taken from the clean
    run. An empty list gives the corrupted run; every head of every layer gives the clean run's logits at every
    position where the two texts have the same token (there, the stream is the token's embedding, what the heads
    wrote and what the MLPs made of it)."""
    clean_ids, corrupt_ids = _same_length(model, clean_ids, corrupt_ids)
    clean = model.run(clean_ids)
    dh = model.config.d_head
    ivs = [patch_head(layer, head, clean.traces.concats[layer][:, head * dh : (head + 1) * dh])  # (n, dₕ)
           for layer, head in _pairs(model, heads)]
    return model.run(corrupt_ids, ivs)


def _pairs(model: Model, heads: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The (layer, head) pairs, checked, each once."""
    L, H = model.config.n_layers, model.config.n_heads
    out: list[tuple[int, int]] = []
    for pair in heads:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(is_whole(v) for v in pair)):
            raise AttentionError(f"a head to patch is a (layer, head) pair; got {pair!r}", field="heads")
        layer, head = int(pair[0]), int(pair[1])
        if not (0 <= layer < L and 0 <= head < H):
            raise AttentionError(
                f"there is no layer {layer} · head {head}: the model has {L} layers of {H} heads", field="heads"
            )
        if (layer, head) not in out:
            out.append((layer, head))
    return out


def restored(patched: Run, clean: Run, corrupt: Run, position: int, answer: int, wrong: int) -> float:
    """How much of the clean − corrupted logit difference a patched run restores: (D_patched − D_corrupt) /
    (D_clean − D_corrupt), where D = logit[answer] − logit[wrong] at ``position``; 0 the corrupted run, 1 the clean."""
    d = [r.logits[position, answer] - r.logits[position, wrong] for r in (patched, clean, corrupt)]
    return float((d[0] - d[2]) / (d[1] - d[2]))


@dataclass(frozen=True)
class Sweep:
    """Patching swept over every head (``heads``, (layers, query heads)) or every stream row (``streams``, (layers,
    n): the stream entering each layer at each position), each value the share of the logit difference restored;
    ``done`` False when it was cancelled (the rest are NaN); ``clean`` and ``corrupt`` the two runs' differences
    D = logit[answer] − logit[wrong] at ``position`` (a patch that restores everything gives ``clean``)."""

    position: int
    answer: int
    wrong: int
    heads: np.ndarray
    streams: np.ndarray
    done: bool
    clean: float = float("nan")
    corrupt: float = float("nan")


def sweep(
    model: Model,
    clean_ids: Sequence[int],
    corrupt_ids: Sequence[int],
    position: int = -1,
    answer: int | str | None = None,
    wrong: int | str | None = None,
    on_step: Callable[[int, int], object] | None = None,
    lock: AbstractContextManager = nullcontext(),  # noqa: B008 (stateless: one shared default is safe)
    only: Sequence[tuple[str, int, int]] | None = None,
) -> Sweep:
    """Patch each head's output, then the stream entering each layer at each position, from the clean run into the
    corrupted one, and measure what each restores (:func:`restored`) at ``position``: ``answer`` is the clean run's
    prediction there and ``wrong`` the corrupted run's unless given. ``on_step(done, total)`` reports progress;
    returning False cancels. ``only`` limits the sweep to the listed patches, made in that order: ("head", layer,
    head) and ("stream", layer, position); the others stay NaN. ``lock`` is held while the two texts run through
    the model's run cache (which is not shared safely between threads); the patches themselves read only those runs.

    Each patch is the corrupted run made again from the patched layer on, as :func:`patch` makes it, but only where
    it can differ (see :class:`_Onward`): the same numbers to float64 rounding, without a full run per patch. A
    layer's patches run as one batch; with ``only``, the batch holds the listed patches of that layer and no other."""
    clean_ids, corrupt_ids = _same_length(model, clean_ids, corrupt_ids)
    with lock:
        clean, corrupt = model.run(clean_ids), model.run(corrupt_ids)
    t = _position(clean, position)
    answer = int(np.argmax(clean.logits[t])) if answer is None else _token(model, answer, "answer")
    wrong = int(np.argmax(corrupt.logits[t])) if wrong is None else _token(model, wrong, "wrong")
    _differs(clean, corrupt, t, answer, wrong)
    L, H, n = model.config.n_layers, model.config.n_heads, len(clean_ids)
    heads, streams = np.full((L, H), np.nan), np.full((L, n), np.nan)
    jobs = [("head", layer, h) for layer in range(L) for h in range(H)]
    jobs += [("stream", layer, p) for layer in range(L) for p in range(n)]
    if only is not None:
        jobs = _only(only, set(jobs))
    onward = _Onward(model, clean, corrupt, t, answer, wrong, _by_layer(jobs))
    for k, (kind, layer, i) in enumerate(jobs):
        if on_step is not None and on_step(k, len(jobs)) is False:
            return Sweep(t, answer, wrong, heads, streams, False, onward.clean, onward.corrupt)
        if kind == "head":
            heads[layer, i] = onward.head(layer, i)
        else:
            streams[layer, i] = onward.stream(layer, i)
    if on_step is not None:
        on_step(len(jobs), len(jobs))
    return Sweep(t, answer, wrong, heads, streams, True, onward.clean, onward.corrupt)


def _only(only: Sequence[tuple[str, int, int]], every: set[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """The patches a limited sweep makes, checked against every patch it could make, each once, in order."""
    out: list[tuple[str, int, int]] = []
    for item in only:
        job = tuple(item) if isinstance(item, (tuple, list)) and len(item) == 3 else None
        if job is None or not all(is_whole(v) for v in job[1:]) or (job[0], int(job[1]), int(job[2])) not in every:
            raise AttentionError(
                f"a patch to make is ('head', layer, head) or ('stream', layer, position) within the model and the "
                f"text; got {str(item)[:60]}",
                field="only",
            )
        job = (job[0], int(job[1]), int(job[2]))
        if job not in out:
            out.append(job)
    return out


def _by_layer(jobs: Sequence[tuple[str, int, int]]) -> dict[int, tuple[list[int], list[int]]]:
    """The patches to make, by layer: its heads and its stream rows, each in increasing order."""
    out: dict[int, tuple[list[int], list[int]]] = {}
    for kind, layer, i in jobs:
        out.setdefault(layer, ([], []))[kind == "stream"].append(i)
    return {layer: (sorted(hs), sorted(ps)) for layer, (hs, ps) in out.items()}


CALL = 60  # a layer call's overhead in rows of work: on SmolLM2 at 14 tokens, fitted to a sweep's recorded batches


def run_cost(n_layers: int, rows: int) -> float:
    """A full run's relative time in :func:`sweep_costs`'s units: ``rows`` rows through every layer, one call each."""
    return n_layers * (rows + CALL)


def sweep_costs(
    n_layers: int, first: int, t: int, parts: Sequence[Sequence[tuple[str, int, int]]]
) -> list[float]:
    """The relative time each patch of :func:`sweep` takes, one sweep per part (``only`` = the part), in the parts'
    order: for a time-left estimate from the measured pace. A layer's patches run as one batch when the first of
    them is asked (:class:`_Onward`), so that patch carries the batch's cost and the rest of the layer's cost nothing;
    a batch of e elements on m rows entering layer l costs about (L − l) · (e · m + CALL) row-layers (CALL: a layer
    call's own overhead, measured). ``first`` is the first position where the texts differ, ``t`` the position
    read."""
    costs: list[float] = []
    for part in parts:
        wanted, seen = _by_layer(part), set()
        for _, layer, _ in part:
            if layer in seen:
                costs.append(0.0)
                continue
            seen.add(layer)
            hs, ps = wanted[layer]
            groups = _groups([p for p in ps if first <= p <= t], _Onward.GROUP)
            if hs and not (groups and groups[0][0] == first):
                groups.insert(0, [])
            rows = [(len(hs) if not g or g[0] == first else 0) + len(g) for g in groups]  # elements per batch
            spans = [t - (g[0] if g else first) + 1 for g in groups]  # rows each batch runs on
            costs.append(sum((n_layers - layer) * (e * m + CALL) for e, m in zip(rows, spans, strict=True)))
    return costs


def _groups(rows: Sequence[int], size: int) -> list[list[int]]:
    """Increasing stream rows cut into groups, each spanning at most ``size`` positions from its first row: every
    row of ``lo .. t`` gives the groups ``lo .. lo + size − 1``, ``lo + size ..`` and so on."""
    out: list[list[int]] = []
    for p in rows:
        if out and p < out[-1][0] + size:
            out[-1].append(p)
        else:
            out.append([p])
    return out


def _differs(clean: Run, corrupt: Run, t: int, answer: int, wrong: int) -> None:
    """Refuse a sweep with nothing to restore: the same answer and wrong token, or the same difference in both runs."""
    if answer == wrong:
        raise AttentionError(
            "the answer and the wrong token are the same token (both texts predict it there, unless they were "
            "given): choose a wrong token, or a position where the two texts' predictions differ",
            field="wrong",
        )
    gap = (clean.logits[t, answer] - clean.logits[t, wrong]) - (corrupt.logits[t, answer] - corrupt.logits[t, wrong])
    if abs(gap) <= 1e-6 * max(1.0, float(np.abs(clean.logits[t]).max())):
        raise AttentionError(
            "the two texts give the same logit difference at that position (to a millionth of the largest logit): "
            "patching has nothing to restore",
            field="corrupt_ids",
        )


class _Onward:
    """The shares of a layer's patches, computed together from the patched layer on and only on the rows that can
    change.

    Causal attention lets row r see rows 0 .. r only. So, with f the first position where the texts differ, every
    layer's rows before f are the same in the clean, corrupted and patched runs, and rows after the read position t
    change nothing at t. The patches of layer l therefore run as one batch on rows f .. t only, reading the
    corrupted run's keys and values of the rows before f as a KV cache does (:meth:`Model.layer`):

    - head h's patch: the corrupted layer's attention is as it was up to its heads' outputs, so only what follows
      them is made again: concat with head h's columns from the clean run, through W_o and the rest of the block;
    - the stream row p (f ≤ p ≤ t): the corrupted rows entering layer l with row p from the clean run, in groups
      of ``GROUP`` consecutive p that run on rows p₀ .. t for the group's first p₀ (the rows before p come out as
      the corrupted run has them: they cannot see p; a group from f runs with the heads, on rows f .. t);

    then layers l + 1 .. L − 1 run on each batch, and D = logit[answer] − logit[wrong] is read from each element's
    last row:

        D(x) = N_f(x) W_U[:, answer] − N_f(x) W_U[:, wrong]

    A stream patch before f puts in the row that is already there, and one after t reaches no row that is read:
    both restore exactly 0. The batch is cut into pieces of at most ``CELLS`` attention weights.

    ``wanted`` (layer → its heads and its stream rows, as :func:`_by_layer` gives them) holds the patches asked for:
    each layer's batch is made of its wanted patches only, and a layer not in it runs nothing. The wanted stream rows
    are grouped in order, each group spanning at most ``GROUP`` positions from its first wanted row (so a subset's
    groups can start elsewhere than the full sweep's; every patch restores the same share either way)."""

    CELLS = 1 << 24  # attention weights per piece of the batch (a piece's scores: 128 MB in float64)
    GROUP = 3  # stream rows per batch: rows p .. t run for the group's first p (the rest recompute a few rows)

    def __init__(
        self, model: Model, clean: Run, corrupt: Run, t: int, answer: int, wrong: int,
        wanted: dict[int, tuple[list[int], list[int]]],
    ):
        c = model.config
        self.model, self.clean_run, self.corrupt_run, self.t, self.wanted = model, clean, corrupt, t, wanted
        self.columns = unembedding(c, model.params)[:, [answer, wrong]]  # (d, 2)
        self.first = next(i for i, (a, b) in enumerate(zip(clean.ids, corrupt.ids, strict=True)) if a != b)
        lights = (corrupt.traces.light(layer) for layer in range(c.n_layers))  # no n × n array
        self.kv = [(a.K, a.V) for a in lights]  # (G, n, dₕ) each
        self.clean, self.corrupt = float(self.read(clean.residuals[-1][t])), float(self.read(corrupt.residuals[-1][t]))
        self._done: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def read(self, x: np.ndarray) -> np.ndarray:
        """D at last stream rows x (..., d): (...)."""
        c, p = self.model.config, self.model.params
        h = x if c.attention_only else normed(c, p, "ln_f", x)  # (..., d)
        both = h @ self.columns  # (..., 2): the two logits
        return both[..., 0] - both[..., 1]

    def head(self, layer: int, head: int) -> float:
        """The share restored by head ``head`` of ``layer`` writing its clean output."""
        return float(self.layer(layer)[0][head])

    def stream(self, layer: int, p: int) -> float:
        """The share restored by the stream entering ``layer`` holding its clean row at position p."""
        return float(self.layer(layer)[1][p])

    def layer(self, layer: int) -> tuple[np.ndarray, np.ndarray]:
        """The shares of the wanted heads of ``layer`` (H,) and of the wanted stream rows entering it (n,), made
        once; the rest NaN (a stream row before f or after t: 0, made without running anything)."""
        if layer not in self._done:
            H, n, f, t = self.model.config.n_heads, len(self.clean_run.ids), self.first, self.t
            hs, ps = self.wanted.get(layer, ([], []))
            heads, streams = np.full(H, np.nan), np.full(n, np.nan)  # (H,), (n,)
            streams[[p for p in ps if not f <= p <= t]] = 0.0
            groups = _groups([p for p in ps if f <= p <= t], self.GROUP)  # each runs on rows from its first p to t
            if hs and not (groups and groups[0][0] == f):
                groups.insert(0, [])  # the heads' patches run on rows f .. t: alone, or with the group from f
            for rows in groups:
                lo = rows[0] if rows else f
                k = len(hs) if lo == f else 0  # the heads' batch elements come first
                parts = [self.heads_patched(layer, hs)] if k else []  # (k, t − f + 1, d)
                parts += [self.streams_patched(layer, lo, rows)] if rows else []  # (len(rows), t − lo + 1, d)
                x = np.concatenate(parts)  # (k + len(rows), t − lo + 1, d)
                shares = (self.onward(layer + 1, x, lo) - self.corrupt) / (self.clean - self.corrupt)
                heads[hs[:k]], streams[rows] = shares[:k], shares[k:]
            self._done[layer] = heads, streams
        return self._done[layer]

    def heads_patched(self, layer: int, heads: Sequence[int]) -> np.ndarray:
        """The stream after ``layer`` on rows f .. t with one listed head's output from the clean run per batch
        element: (len(heads), m, d)."""
        c, f, t = self.model.config, self.first, self.t
        dh = c.d_head
        concat = np.repeat(self.corrupt_run.traces.concats[layer][None, f : t + 1], len(heads), axis=0)  # (k, m, H·dₕ)
        clean = self.clean_run.traces.concats[layer][f : t + 1]  # (m, H·dₕ)
        for j, h in enumerate(heads):
            concat[j, :, h * dh : (h + 1) * dh] = clean[:, h * dh : (h + 1) * dh]
        W_o = self.model.layer_weights(layer)[3]  # (H·dₕ, d)
        x = self.corrupt_run.residuals[layer][f : t + 1]  # (m, d): the stream entering the layer
        return block_out(c, self.model.params, layer, x, linear(concat, W_o))  # (k, m, d)

    def streams_patched(self, layer: int, lo: int, rows: Sequence[int]) -> np.ndarray:
        """The stream after ``layer`` on rows lo .. t, with row p of the stream entering it from the clean run, one
        listed p (lo ≤ p ≤ t) per batch element: (len(rows), t − lo + 1, d)."""
        x = np.repeat(self.corrupt_run.residuals[layer][None, lo : self.t + 1], len(rows), axis=0)  # (k, t − lo + 1, d)
        x[np.arange(len(rows)), np.asarray(rows, dtype=int) - lo] = self.clean_run.residuals[layer][rows]  # j: row p_j
        return self.onward(layer, x, lo, through=layer + 1)

    def onward(self, start_layer: int, x: np.ndarray, start: int, through: int | None = None) -> np.ndarray:
        """Batch x (B, m, d) entering ``start_layer`` at rows start .. t, run through the layers before ``through``:
        that stream (B, m, d); or, run through every layer (``through`` None), D at each element's last row (B,)."""
        L = self.model.config.n_layers
        end = L if through is None else through
        piece = max(1, self.CELLS // (self.model.config.n_heads * x.shape[1] * (self.t + 1)))
        out = []
        for lo in range(0, len(x), piece):
            y = x[lo : lo + piece]  # (b, m, d)
            for at in range(start_layer, end):
                past = (self.kv[at][0][:, :start], self.kv[at][1][:, :start]) if start else None  # (G, start, dₕ) each
                _, y = self.model.layer(at, y, start, past, keep=False)  # (b, m, d): no n × n array kept
            out.append(y if through is not None else self.read(y[:, -1]))
        return np.concatenate(out)


def _same_length(model: Model, clean_ids: Sequence[int], corrupt_ids: Sequence[int]) -> tuple[list[int], list[int]]:
    clean_ids, corrupt_ids = model.check_ids(clean_ids), model.check_ids(corrupt_ids)
    if len(clean_ids) != len(corrupt_ids):
        raise AttentionError(
            f"the clean text has {len(clean_ids)} tokens and the corrupted one {len(corrupt_ids)}: patching needs "
            "the same length",
            field="corrupt_ids",
        )
    return clean_ids, corrupt_ids
