"""Models trained live from the shipped model's recipe, each in a background thread of this server, polled by a page.

A job trains :func:`attention.model.induction.recipe_model` on the recipe's batches for ``steps`` steps (the learning
rate held for ``hold`` steps, then falling), records every step's loss as it goes, stops at the next step once
cancelled, and when it ends holds the trained model (:func:`attention.ui.core.models.hold`, kind "trained"). At most
:data:`RUNNING_MAX` jobs run at once in this process, so a crowd of learners cannot stall the server.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

from ...errors import AttentionError
from ...model import induction, train
from . import models

_LOG = logging.getLogger(__name__)
RUNNING_MAX = 2  # jobs training at once in this process
KEPT = 32  # jobs remembered (the oldest finished ones are let go)
_JOBS: OrderedDict[str, Job] = OrderedDict()
_LOCK = threading.Lock()


@dataclass(eq=False)
class Job:
    """One live training run: ``losses`` grows by one per step (the loss before that step's update, as
    :func:`attention.model.train` counts); ``state`` is "running", "done", "cancelled" or "failed"."""

    id: str
    steps: int
    hold: int
    losses: list[float] = field(default_factory=list)
    state: str = "running"
    model_id: str | None = None
    message: str = ""
    seconds: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    cancel: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)


def start(steps: int, hold: int) -> Job:
    """Start training in a thread; an AttentionError (nothing started) when :data:`RUNNING_MAX` jobs already run."""
    with _LOCK:
        running = sum(job.state == "running" for job in _JOBS.values())
        if running >= RUNNING_MAX:
            raise AttentionError(
                f"this server is already training {running} models (at most {RUNNING_MAX} at once); "
                "try again in a few seconds",
                field="train",
            )
        job = Job(uuid.uuid4().hex, steps, hold)
        _JOBS[job.id] = job
        while len(_JOBS) > KEPT and (old := next((k for k, j in _JOBS.items() if j.state != "running"), None)):
            del _JOBS[old]
    threading.Thread(target=_run, args=(job,), name=f"train-{job.id[:8]}", daemon=True).start()
    return job


def get(job_id: str | None) -> Job | None:
    """The job with this id, if this process still remembers it."""
    with _LOCK:
        return _JOBS.get(job_id) if job_id else None


def cancel(job_id: str | None) -> None:
    """Ask a job to stop at its next step (it keeps the losses so far; no model is held)."""
    job = get(job_id)
    if job is not None:
        job.cancel.set()


def wait(job_id: str, timeout: float = 60.0) -> Job:
    """The job once it has ended (for scripts and tests); a TimeoutError if it runs longer than ``timeout`` s."""
    job = get(job_id)
    if job is None:
        raise KeyError(job_id)
    if not job.finished.wait(timeout):
        raise TimeoutError(f"training job {job_id} still running after {timeout} s")
    return job


def _run(job: Job) -> None:
    def on_step(step: int, loss: float) -> bool:
        job.losses.append(loss)
        return not job.cancel.is_set()

    try:
        result = train(
            induction.recipe_model("trained here"),
            induction.recipe_batch,
            job.steps,
            lr=functools.partial(induction.learning_rate, steps=job.steps, hold=job.hold),
            on_step=on_step,
        )
        if result.cancelled:
            job.state = "cancelled"
        else:
            job.model_id = models.hold(result.model, "trained")
            job.state = "done"
    except AttentionError as e:
        job.message, job.state = str(e), "failed"
    except Exception:  # a bug: logged, and the page says training failed rather than waiting forever
        _LOG.exception("training job %s failed", job.id)
        job.message, job.state = "training failed on the server (the error is logged)", "failed"
    finally:
        job.seconds = time.perf_counter() - job.started
        job.finished.set()
