"""Work in background threads of this server, polled by a page: live training and patching sweeps; Cancel.

A :class:`Job` runs one piece of work step by step in a thread: it counts the steps made (``done`` of ``total``),
stops at the next step once cancelled, and when it ends holds its ``result``. At most :data:`RUNNING_MAX` jobs of
one kind run at once in this process, so a crowd of learners cannot stall the server; the last :data:`KEPT` jobs
are remembered, so a page polls a job by its id and a finished result is shown again without being recomputed.

- :func:`train`: :func:`attention.model.induction.recipe_model` trained on the recipe's batches for ``steps`` steps
  (the learning rate held for ``hold`` steps, then falling), every step's loss recorded as it goes; its result is the
  trained model, held (:func:`attention.ui.core.models.hold`, kind "trained"), by id.
- :func:`patch`: :func:`attention.model.sweep` of a clean and a corrupted text on a model; its result is the
  :class:`~attention.model.Sweep`. A running or finished sweep of the same model, texts and tokens is shared by the
  sessions that ask for it (one counted watcher each: a session's Cancel stops it only when no other waits on it).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import AttentionError
from ...model import induction, sweep
from ...model import train as train_model
from . import models

_LOG = logging.getLogger(__name__)
RUNNING_MAX = 2  # jobs of one kind running at once in this process
KEPT = 32  # jobs remembered (the oldest finished ones are let go)
BUSY = {  # what a refused start says, by kind
    "train": "this server is already training {running} models (at most {most} at once)",
    "patch": "this server is already patching {running} pairs of texts (at most {most} at once)",
}
_JOBS: OrderedDict[str, Job] = OrderedDict()
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


def _start(kind: str, total: int, work: Callable[[Job], object], key: tuple = ()) -> Job:
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
        job = Job(uuid.uuid4().hex, kind, total, key)
        _JOBS[job.id] = job
        while len(_JOBS) > KEPT and (old := next((k for k, j in _JOBS.items() if j.state != "running"), None)):
            del _JOBS[old]
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
            f"the {'training' if job.kind == 'train' else 'patching'} failed on the server (the error is logged)",
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
            job.done = step
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


def patch_key(model_id: str, clean: tuple[int, ...], corrupt: tuple[int, ...], answer: int, wrong: int) -> tuple:
    """What a patching job computes, as :func:`finished` looks it up."""
    return ("patch", model_id, tuple(clean), tuple(corrupt), int(answer), int(wrong))


def patch(model_id: str, clean: tuple[int, ...], corrupt: tuple[int, ...], answer: int, wrong: int) -> Job:
    """Patch every head and every stream row of ``clean`` into ``corrupt`` on the model, in a thread, measured at the
    last position for ``answer`` against ``wrong``; a running or finished job of the same key is
    shared (:func:`_start`)."""
    key = patch_key(model_id, clean, corrupt, answer, wrong)
    m = models.get(model_id)
    c = m.config
    total = c.n_layers * (c.n_heads + len(clean))

    def work(job: Job) -> object:
        def on_step(k: int, count: int) -> bool:
            job.done = k
            return not job.cancel.is_set()

        s = sweep(m, list(clean), list(corrupt), -1, answer, wrong, on_step=on_step, lock=models.LOCK)
        return s if s.done else None

    return _start("patch", total, work, key)
