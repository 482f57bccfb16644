"""One view of a background job's progress (:mod:`attention.ui.core.jobs`): its bar, the time gone and the time
left, and Cancel while it runs; what a cancelled or failed job left. The pages that run jobs (Patching's sweep, the
KV cache page's study) each say what a step is and give their Cancel; the rest is here."""

from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st

from ..core import jobs
from ..core.text import esc


def duration(seconds: float) -> str:
    """A time as a person reads it: "8 s", "2 min 05 s"."""
    s = int(round(seconds))
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


def job_progress(
    job_id: str | None,
    key: tuple,
    polling: bool,
    steps: tuple[str, str],
    cancel: tuple[str, Callable[[], None]],
    *,
    after_cancel: str = "",
    while_running: Callable[[jobs.Job], None] | None = None,
) -> None:
    """The job ``job_id`` if it is the one for ``key``: running, a bar "Patch 40 of 270 · 3.1 s · about 18 s left"
    (``steps``: a step's name and its plural) and Cancel (``cancel``: its widget key and callback), then
    ``while_running(job)`` (what it made so far); cancelled, how far it got (and ``after_cancel``); failed, its
    message. ``polling`` (the caller redraws it on a timer): once the job has ended, the whole page runs again."""
    job = jobs.get(job_id)
    if job is None or job.key != key:
        return
    if polling and job.state != "running":
        st.rerun()  # it ended: the whole page again, without the timer, with what it made
    seconds = job.seconds if job.state != "running" else time.perf_counter() - job.started
    one, many = steps
    if job.state == "running":
        left = job.seconds_left
        more = "estimating the time left" if left is None else f"about {duration(left)} left"
        text = f"{one.capitalize()} {job.done:,} of {job.total:,} · {seconds:.1f} s · {more}"
        st.progress(min(job.done / job.total, 1.0), text=text)
        st.button("Cancel", key=cancel[0], on_click=cancel[1])
        if while_running is not None:
            while_running(job)
    elif job.state == "cancelled":
        st.info(
            f"Cancelled after {job.done:,} of {job.total:,} {many} ({seconds:.1f} s); nothing of it was kept"
            + (f" {after_cancel}" if after_cancel else ".")
        )
    elif job.state == "failed":
        st.error(esc(job.message, 400) + ". Nothing was kept.")
