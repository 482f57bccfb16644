"""Work in background threads of this server, polled by a page: live training and patching sweeps; Cancel.

A :class:`Job` runs one piece of work step by step in a thread: it counts the steps made (``done`` of ``total``),
stops at the next step once cancelled, and when it ends holds its ``result``. At most :data:`RUNNING_MAX` jobs of
one kind run at once in this process, so a crowd of learners cannot stall the server; the last :data:`KEPT` jobs
are remembered, so a page polls a job by its id and a finished result is shown again without being recomputed.

- :func:`train`: :func:`attention.model.induction.recipe_model` trained on the recipe's batches for ``steps`` steps
  (the learning rate held for ``hold`` steps, then falling), every step's loss recorded as it goes; its result is the
  trained model, held (:func:`attention.ui.core.models.hold`, kind "trained"), by id.
- :func:`estimate`: the gradients' estimate of every patch (:func:`attention.model.estimate`), made at
  once in the page's own thread and kept by content.
- :func:`last_logits`: a text's logits after its last token, kept by content (Patching reads a pair's two texts
  in turn on every rerun, and a long pair's two runs do not both fit the model's run cache).
- :func:`patch`: exact patching (:func:`attention.model.sweep`) of a clean and a corrupted text on a model, within
  a scope (the heads, the stream, or both; chosen layers), all asked as one :class:`PatchRequest` (which
  :func:`patch_key` turns into the job's key), the heads the estimate ranks highest first, made alone: its
  ``partial`` holds the top heads' exact shares as soon as they are made, and its result is a :class:`Refined` (the
  estimate, the exact sweep, and the top heads patched together). A running or finished job of the same key is
  shared by the sessions that ask for it (one counted watcher each: a session's Cancel stops it only when no other
  waits on it).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...errors import AttentionError
from ...model import Estimate, Sweep, eviction, induction, restored, sweep
from ...model import estimate as atp_estimate
from ...model import patch as patch_heads
from ...model import train as train_model
from ...model.atp import STEPS as ATP_STEPS
from ...model.readout import run_cost, sweep_costs
from . import models
from .cache import Registry, TraceCache, kept, nothing

_LOG = logging.getLogger(__name__)
RUNNING_MAX = 2  # jobs of one kind running at once in this process
KEPT = 32  # jobs remembered (the oldest finished ones are let go)
BUSY = {  # what a refused start says, by kind
    "train": "this server is already training {running} models (at most {most} at once)",
    "patch": "this server is already patching {running} pairs of texts (at most {most} at once)",
    "kvcache": "this server is already studying the KV cache of {running} texts (at most {most} at once)",
}
WORK = {"train": "training", "patch": "patching", "kvcache": "KV cache study"}  # what a failure names, by kind
_JOBS = Registry(KEPT, may_go=lambda job: job.state != "running")  # Job by id; the oldest finished ones let go
_LOCK = threading.Lock()


@dataclass(eq=False)
class Job:
    """One piece of work in a thread: ``kind`` "train" or "patch"; ``done`` of ``total`` steps made; ``key`` what
    it computes (a patching job's model, texts and tokens); ``losses`` a training job's loss before each step's
    update (as :func:`attention.model.train` counts them); ``state`` "running", "done", "cancelled" or "failed";
    ``result`` what a finished job made (the trained model's id, or the Sweep)."""

    id: str
    kind: str
    total: int
    key: tuple = ()
    done: int = 0
    losses: list[float] = field(default_factory=list)
    state: str = "running"
    result: object = None
    message: str = ""
    seconds: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    cancel: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    watchers: int = 1  # sessions waiting on it (a patching job is shared): the last one's Cancel stops it
    partial: object = None  # what a patching job has made so far (a Refined), for the page to show as it runs
    costs: tuple[float, ...] = ()  # each step's relative cost (a patching job's, from the engine); () all alike
    at: float = 0.0  # when ``done`` last grew (perf_counter): the pace is measured up to there

    def step_to(self, done: int) -> None:
        """``done`` steps are made (the time is noted when the count grows)."""
        if done > self.done:
            self.at = time.perf_counter()
        self.done = done

    @property
    def seconds_left(self) -> float | None:
        """The time the steps left should take at the pace so far (None before the first step is made)."""
        return self.left_at(time.perf_counter())

    def left_at(self, now: float) -> float | None:
        """:attr:`seconds_left` at the time ``now`` (a clock of its own for a replayed sweep)."""
        if self.done <= 0 or self.state != "running":
            return None
        return time_left(self.at - self.started, self.done, self.total, self.costs, now - self.at)


def time_left(
    elapsed: float, done: int, total: int, costs: tuple[float, ...] = (), since: float = 0.0
) -> float | None:
    """The seconds the steps after the first ``done`` of ``total`` should take, at the pace measured when the
    ``done``-th was made (``elapsed`` after the start; ``since`` is the time since): the time per unit of cost of the
    steps made, times the cost of the steps still to run, less the time since (but never less than the steps after the
    batch running now: a batch that runs long is not counted twice). ``costs``, one per step, are the steps' relative
    costs (a patching sweep's early layers cost more than its late ones, and a layer's batch is paid at its first
    patch); with none, every step alike. None before anything measurable is made."""
    costs = costs or (1.0,) * total
    made = sum(costs[:done])
    if done <= 0 or made <= 0:
        return None
    pace = elapsed / made  # s per unit of cost
    running = next((i for i in range(done, total) if costs[i] > 0), total)  # the next step that costs (a batch)
    return max(pace * sum(costs[done:]) - since, pace * sum(costs[running + 1 :]))


def _start(
    kind: str, total: int, work: Callable[[Job], object], key: tuple = (), costs: tuple[float, ...] = ()
) -> Job:
    """Run ``work(job)`` in a thread (its return value the result; None: cancelled); an AttentionError (nothing
    started) when :data:`RUNNING_MAX` jobs of this kind already run. A job with a ``key`` is shared: a running one
    of the same key (not cancelled) gains a watcher and is returned, as is a finished one, and nothing starts."""
    with _LOCK:
        if key and (same := _same(key)) is not None:
            same.watchers += same.state == "running"
            return same
        running = sum(job.state == "running" and job.kind == kind for job in _JOBS.values())
        if running >= RUNNING_MAX:
            raise AttentionError(
                BUSY[kind].format(running=running, most=RUNNING_MAX) + "; try again in a few seconds", field=kind
            )
        job = Job(uuid.uuid4().hex, kind, total, key, costs=costs)
        _JOBS.add(job.id, job)
    threading.Thread(target=_run, args=(job, work), name=f"{kind}-{job.id[:8]}", daemon=True).start()
    return job


def _same(key: tuple) -> Job | None:
    """The latest job computing or having computed ``key`` (not cancelled), the lock held."""
    alive = (j for j in reversed(_JOBS.values()) if j.key == key and not j.cancel.is_set())
    return next((j for j in alive if j.state in ("running", "done")), None)


def get(job_id: str | None) -> Job | None:
    """The job with this id, if this process still remembers it."""
    with _LOCK:
        return _JOBS.get(job_id) if job_id else None


def finished(key: tuple) -> Job | None:
    """The latest job that finished computing ``key``, if this process still remembers one."""
    with _LOCK:
        return next((j for j in reversed(_JOBS.values()) if j.key == key and j.state == "done"), None)


def cancel(job_id: str | None) -> bool:
    """One watcher leaves the job; the last one asks it to stop at its next step (a training job keeps its losses so
    far; no result is kept). False when it runs on for other sessions (the caller forgets its id: one leave each)."""
    with _LOCK:
        job = _JOBS.get(job_id) if job_id else None
        if job is None or job.state != "running" or job.cancel.is_set():
            return True
        job.watchers -= 1
        if job.watchers > 0:
            return False
        job.cancel.set()
        return True


def wait(job_id: str, timeout: float = 60.0) -> Job:
    """The job once it has ended (for scripts and tests); a TimeoutError if it runs longer than ``timeout`` s."""
    job = get(job_id)
    if job is None:
        raise KeyError(job_id)
    if not job.finished.wait(timeout):
        raise TimeoutError(f"{job.kind} job {job_id} still running after {timeout} s")
    return job


def _run(job: Job, work: Callable[[Job], object]) -> None:
    try:
        result = work(job)
        if result is None:
            job.state = "cancelled"
        else:
            job.result, job.state = result, "done"
    except AttentionError as e:
        job.message, job.state = str(e), "failed"
    except Exception:  # a bug: logged, and the page says the work failed rather than waiting forever
        _LOG.exception("%s job %s failed", job.kind, job.id)
        job.message, job.state = (
            f"the {WORK[job.kind]} failed on the server (the error is logged)",
            "failed",
        )
    finally:
        job.seconds = time.perf_counter() - job.started
        job.finished.set()


def train(steps: int, hold: int) -> Job:
    """Train the shipped model's recipe from scratch for ``steps`` steps in a thread (see the module's docstring)."""

    def work(job: Job) -> str | None:
        def on_step(step: int, loss: float) -> bool:
            job.losses.append(loss)
            job.step_to(step)
            return not job.cancel.is_set()

        result = train_model(
            induction.recipe_model("trained here"),
            induction.recipe_batch,
            job.total,
            lr=functools.partial(induction.learning_rate, steps=job.total, hold=hold),
            on_step=on_step,
        )
        return None if result.cancelled else models.hold(result.model, "trained")

    return _start("train", steps, work)


SCOPES = {"both": "every head and every stream row", "heads": "the heads", "streams": "the stream"}
TOP = 8  # heads the exact patching makes first (the estimate's largest), shown as soon as they are made
TOGETHER = 3  # the top heads patched together, beside the sum of their single shares


@dataclass(frozen=True)
class PatchRequest:
    """What a patching job computes: on the model ``model_id``, the clean and corrupted texts' ids (the same length),
    D = logit[answer] − logit[wrong] at the last position, within ``scope`` ("both", "heads" or "streams") and
    ``layers`` (0-based; () for every layer). :func:`patch` starts one, :func:`patch_key` is how it is looked up."""

    model_id: str
    clean: tuple[int, ...]
    corrupt: tuple[int, ...]
    answer: int
    wrong: int
    scope: str = "both"
    layers: tuple[int, ...] = ()

    @classmethod
    def of(cls, p: object, answer: int, wrong: int) -> PatchRequest:
        """The Patching state's model, pair, scope and layers (a :class:`~.session.Patching`), for these tokens."""
        return cls(p.model, p.clean, p.corrupt, answer, wrong, p.scope, p.layers)


@dataclass(frozen=True)
class Refined:
    """A patching job's result: ``estimate`` the gradients' (integrated on the path); ``exact`` the sweep within
    the job's scope (NaN outside it); ``together`` the TOGETHER heads with the largest exact single shares, as
    (their (layer, head) pairs, the share of patching them together); None before they are made."""

    estimate: Estimate
    exact: Sweep
    together: tuple[tuple[tuple[int, int], ...], float] | None = None


ESTIMATES_KEPT = 16
_ESTIMATES = TraceCache(max_bytes=0, max_entries=ESTIMATES_KEPT, ttl=3600, measure=nothing)


def estimate(model_id: str, clean: tuple[int, ...], corrupt: tuple[int, ...], answer: int, wrong: int) -> Estimate:
    """The estimate of every head's and stream row's patch from gradients on the path between the two runs
    (:func:`attention.model.estimate`), kept by content.
    An AttentionError when there is nothing to restore."""
    key = ("estimate", model_id, tuple(clean), tuple(corrupt), int(answer), int(wrong))
    return _ESTIMATES.get(key, lambda: _estimated(model_id, clean, corrupt, answer, wrong))


def _estimated(model_id: str, clean: tuple[int, ...], corrupt: tuple[int, ...], answer: int, wrong: int) -> Estimate:
    """The estimate itself, its arrays made read-only (it is shared by every session asking for the same pair)."""
    m = models.get(model_id)
    with models.LOCK:
        made = atp_estimate(m, list(clean), list(corrupt), -1, answer, wrong, path_steps(m, len(clean)))
    made.heads.flags.writeable = made.streams.flags.writeable = False
    return made


PATH_BYTES = 1 << 30  # the most the estimate's runs on the path may keep of every head's weights


def path_bytes(m: models.Model, n: int) -> int:
    """What the estimate's runs on the path keep of every head's weights on an n-token pair (the path's runs are one
    hooked batch of STEPS texts, which keeps its scores, scaled scores and weights whole): bytes."""
    c = m.config
    return ATP_STEPS * c.n_layers * c.n_heads * n * n * 3 * m.dtype.itemsize


def path_steps(m: models.Model, n: int) -> int:
    """The estimate's steps on the path for an n-token pair: the engine's, unless their runs would keep more than
    PATH_BYTES (SmolLM2 past about 280 tokens); then 0, the gradient at the corrupted run alone, one layer's
    weights at a time."""
    return ATP_STEPS if path_bytes(m, n) <= PATH_BYTES else 0


def default_tokens(clean: np.ndarray, corrupt: np.ndarray, answer: int | None, wrong: int | None) -> tuple[int, int]:
    """The answer and the wrong token from the two runs' last logits (V,) each: by default the clean prediction, and
    the corrupted one (its next best when both predict the same token); a chosen one is kept."""
    answer = int(np.argmax(clean)) if answer is None else int(answer)
    wrong = next(int(t) for t in np.argsort(-corrupt) if int(t) != answer) if wrong is None else int(wrong)
    return answer, wrong


@kept(64, ttl=3600)  # (V,) each, SmolLM2's 0.2 MB; a pair of 2,047-token runs (0.7 GB each) overfills the run cache
def last_logits(model_id: str, ids: tuple[int, ...]) -> np.ndarray:
    """The model's logits after the last token of ``ids``, nothing ablated: (V,), copied from its run (the run may
    go, the row stays), read-only, kept by content. Patching reads a pair's two texts in turn on every rerun: with
    only their runs kept, at length each would run again each time."""
    m = models.get(model_id)
    with models.LOCK:
        row = m.run(list(ids)).logits[-1].copy()  # (V,)
    row.flags.writeable = False
    return row


def pair_estimate(model_id: str, clean: tuple[int, ...], corrupt: tuple[int, ...], answer: int | None,
                  wrong: int | None) -> Estimate | None:
    """The estimate for a pair with its tokens as the page chooses them (None when there is nothing to restore)."""
    a, b = last_logits(model_id, tuple(clean)), last_logits(model_id, tuple(corrupt))
    try:
        return estimate(model_id, clean, corrupt, *default_tokens(a, b, answer, wrong))
    except AttentionError:
        return None


def named(shares: np.ndarray, count: int) -> list[tuple[int, int, float]]:
    """The ``count`` heads with the largest positive shares (layers, heads) as (layer, head, share); NaN left out."""
    flat = np.nan_to_num(shares, nan=-np.inf)
    order = np.argsort(-flat, axis=None)[:count]
    return [(*divmod(int(k), shares.shape[1]), float(shares.flat[k])) for k in order if flat.flat[k] > 0]


def top_heads(p: object) -> tuple[str, str] | None:
    """The Patching state's top heads as a person reads them ("layer 2 · head 1 (0.91), ...") and how they were
    found: exactly, when a finished job of its pair, tokens and scope has them, else by the estimate ("" when no
    head restores any of it). None when the pair has nothing to restore."""
    est = pair_estimate(p.model, p.clean, p.corrupt, p.answer, p.wrong)
    if est is None:
        return None
    done = finished(patch_key(PatchRequest.of(p, est.answer, est.wrong)))
    exact = done.result.exact.heads if done is not None else None
    usable = exact is not None and np.isfinite(exact).any()
    shares, how = (exact, "patched exactly") if usable else (est.heads, "by the estimate")
    top = named(shares, TOGETHER)
    return ", ".join(f"layer {la + 1} · head {h + 1} ({v:.2f})" for la, h, v in top), how


def patch_key(r: PatchRequest) -> tuple:
    """What a patching job computes, as :func:`finished` looks it up."""
    what = (tuple(r.clean), tuple(r.corrupt), int(r.answer), int(r.wrong), r.scope, tuple(r.layers))
    return ("patch", r.model_id, *what)


def patch_plan(est: Estimate, n: int, scope: str, layers: tuple[int, ...]) -> list[tuple[str, int, int]]:
    """The patches a job makes, in order: the scope's heads by the estimate's |share|, largest first, then the stream
    rows of the chosen layers (every layer when ``layers`` is empty)."""
    L, H = est.heads.shape
    chosen = [la for la in range(L) if not layers or la in layers]
    plan: list[tuple[str, int, int]] = []
    if scope in ("both", "heads"):
        heads = [(la, h) for la in chosen for h in range(H)]
        heads.sort(key=lambda lh: -abs(float(est.heads[lh])))
        plan += [("head", la, h) for la, h in heads]
    if scope in ("both", "streams"):
        plan += [("stream", la, p) for la in chosen for p in range(n)]
    return plan


def plan_count(n_layers: int, n_heads: int, n: int, scope: str, layers: tuple[int, ...]) -> int:
    """How many patches :func:`patch_plan` makes."""
    chosen = len(layers) if layers else n_layers
    return chosen * ((n_heads if scope in ("both", "heads") else 0) + (n if scope in ("both", "streams") else 0))


def patch(r: PatchRequest) -> Job:
    """Patch exactly, in a thread, within the request's scope and layers (see :func:`patch_plan`), measured at the
    last position for its answer against its wrong token: the estimate's top heads first (the job's ``partial`` then
    holds them and the top heads patched together), then the rest; a running or finished job of the same key is
    shared."""
    model_id, clean, corrupt, answer, wrong, scope, layers = dataclasses.astuple(r)
    if scope not in SCOPES:
        raise AttentionError(f"patch {', '.join(SCOPES)}; not {str(scope)[:20]!r}", field="scope")
    key = patch_key(r)
    est = estimate(model_id, clean, corrupt, answer, wrong)
    plan = patch_plan(est, len(clean), scope, layers)
    heads = [job for job in plan if job[0] == "head"]
    first = heads[:TOP]
    m = models.get(model_id)

    def work(job: Job) -> object:
        made = 0

        def on_step(k: int, count: int) -> bool:
            job.step_to(made + k)
            return not job.cancel.is_set()

        def part(only: list) -> Sweep | None:
            s = sweep(m, list(clean), list(corrupt), -1, answer, wrong, on_step=on_step, lock=models.LOCK, only=only)
            return s if s.done else None

        top = part(first) if first else None
        if first and top is None:
            return None
        made = len(first)
        together = _together(m, clean, corrupt, answer, wrong, top) if top is not None else None
        exact = top
        if top is not None:
            job.partial = Refined(est, top, together)
        rest = plan[len(first) :]
        if rest:
            more = part(rest)
            if more is None:
                return None
            exact = more if top is None else _merged(top, more)
        return Refined(est, exact, together)

    differ = next((i for i, (a, b) in enumerate(zip(clean, corrupt, strict=True)) if a != b), 0)
    parts = [first, plan[len(first) :]] if first else [plan]
    costs = sweep_costs(m.config.n_layers, differ, len(clean) - 1, parts)  # the time left follows them
    if first and len(plan) > len(first):  # the top heads patched together run before the rest's first patch
        costs[len(first)] += run_cost(m.config.n_layers, len(clean))
    return _start("patch", max(len(plan), 1), work, key, tuple(costs))


def _together(m: object, clean: tuple, corrupt: tuple, answer: int, wrong: int, top: Sweep) -> tuple | None:
    """The TOGETHER heads with the largest exact single shares, patched together: (their pairs, the share)."""
    heads = np.nan_to_num(top.heads, nan=-np.inf)
    order = [divmod(int(k), heads.shape[1]) for k in np.argsort(-heads, axis=None)[:TOGETHER]]
    pairs = tuple((int(la), int(h)) for la, h in order if np.isfinite(heads[la, h]))
    if len(pairs) < 2:
        return None
    with models.LOCK:
        both, a, b = patch_heads(m, list(clean), list(corrupt), pairs), m.run(list(clean)), m.run(list(corrupt))
    return pairs, restored(both, a, b, top.position, answer, wrong)


def _merged(a: Sweep, b: Sweep) -> Sweep:
    """Two limited sweeps of the same pair as one: each cell from whichever made it."""
    heads = np.where(np.isnan(a.heads), b.heads, a.heads)
    streams = np.where(np.isnan(a.streams), b.streams, a.streams)
    return dataclasses.replace(b, heads=heads, streams=streams)


# The KV cache page: one study of a text (every eviction policy at every budget of the curve, the sink's share) and
# the model's retrieval heads on the needle case, in one job per (model, text); a budget off the curve, one more


@dataclass(frozen=True)
class KvStudy:
    """A KV cache job's result: ``study`` the text's (:class:`attention.model.eviction.Study`); ``retrieval`` the
    model's retrieval scores (L, H) and which answer tokens it copied (k,) on the needle case, None for a model
    without a tokenizer (no needle sentence to put in a text)."""

    study: eviction.Study
    retrieval: Needle | None


@dataclass(frozen=True)
class Needle:
    """A model's retrieval heads on the needle case: ``scores`` (L, H), ``copied`` which answer tokens its top-1
    predicted (k,), ``n`` the case's tokens, ``back`` how far back the needle stands from its copy (tokens)."""

    scores: np.ndarray  # (L, H)
    copied: np.ndarray  # (k,)
    n: int
    back: int


KV_TOKENS = 2048  # the KV cache page's text is cut off here (no n × n is kept: the eviction engine runs in blocks)
NEEDLE_CTX = 512  # the least context a model needs for the needle case (a haystack of 412 tokens around it)
_RETRIEVAL = TraceCache(max_bytes=0, max_entries=8, ttl=3600, measure=nothing)  # by model: its needle case's scores


def kv_key(model_id: str, ids: tuple[int, ...], budget: int | None = None) -> tuple:
    """What a KV cache job computes, as :func:`finished` looks it up: the study of a text, or one more budget."""
    return ("kvcache", model_id, tuple(ids)) if budget is None else ("kvbudget", model_id, tuple(ids), int(budget))


def kv_study(model_id: str, ids: tuple[int, ...], needle: bool) -> Job:
    """Study the text ``ids`` on the model in a thread (:func:`attention.model.eviction.study`, a step a layer),
    then its retrieval heads when ``needle`` (kept by model: a second text does not measure them again); a running
    or finished job of the same text is shared."""
    m = models.get(model_id)
    L = m.config.n_layers
    needle = needle and m.config.n_ctx >= NEEDLE_CTX  # a short context holds no haystack

    def work(job: Job) -> KvStudy | None:
        on_layer = _layer_counter(job, m)
        try:
            made = eviction.study(m, list(ids), on_layer=on_layer)
            found = _RETRIEVAL.get(model_id, lambda: _retrieval(m, on_layer)) if needle else None
        except eviction.Stopped:
            return None
        job.step_to(job.total)
        return KvStudy(made, found)

    return _start("kvcache", L * (2 if needle else 1), work, kv_key(model_id, ids))


def _layer_counter(job: Job, m: object) -> Callable[[int], bool]:
    """A KV cache job's step a layer: counted as the other jobs count theirs (:meth:`Job.step_to`, so its time left
    is measured from its pace), False once cancelled. The model's layer weights are made first under the lock every
    run takes (they are made once and shared: the study reads them outside it)."""
    with models.LOCK:
        for layer in range(m.config.n_layers):
            m.layer_weights(layer)

    def on_layer(_: int) -> bool:
        job.step_to(job.done + 1)
        return not job.cancel.is_set()

    return on_layer


def _retrieval(m: object, on_layer: Callable[[int], bool]) -> Needle:
    """The model's retrieval scores and copied answer tokens on the needle case, made read-only."""
    ids, needle, answer = eviction.needle_case(m, min(eviction.HAYSTACK, KV_TOKENS - 100, m.config.n_ctx - 100))
    scores, copied = eviction.retrieval_scores(m, ids, needle, answer, on_layer=on_layer)
    scores.flags.writeable = copied.flags.writeable = False
    return Needle(scores, copied, len(ids), answer[0] - needle[0])


def kv_budget(model_id: str, ids: tuple[int, ...], budget: int) -> Job:
    """Every policy at one more ``budget`` on the text (a budget off the curve), in a thread, a step a layer."""
    m = models.get(model_id)

    def work(job: Job) -> eviction.Study | None:
        try:
            return eviction.study(m, list(ids), budgets=(budget,), on_layer=_layer_counter(job, m))
        except eviction.Stopped:
            return None

    return _start("kvcache", m.config.n_layers, work, kv_key(model_id, ids, budget))
