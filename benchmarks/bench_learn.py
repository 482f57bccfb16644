"""Training speed: 500 Adam steps on each document preset (goal < 1 s) and on n = 64 tokens, d = 64 (goal < 10 s).

Each case is run several times in one process (after a warm-up) and the median wall time is printed, with the
seconds per step and the final loss, so the goals are read off one table. Targets: previous token for the presets
(W_q and W_k learn; on 'I am Batman' X learns too, since the token 'am' is the zero vector), previous token with
sinusoidal positions at n = 64.

The same on the Learn page (``--page``): the wall time of the script run that a click on Train starts (AppTest, the
page's progress bar and live loss curve redrawn every 0.15 s, the result drawn after), and how many times the bar
moved, for 500 Adam steps on the_cat_sat and on a blank 64 × 64 × 64 state.

Run: ``python benchmarks/bench_learn.py [--page]`` (about half a minute, plus a minute with --page).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import attention  # noqa: E402
from attention import learn  # noqa: E402

DOCUMENTS = ("she_likes_coffee", "i_am_batman", "the_cat_sat", "the_cat_sat_on_the_mat", "random_seed_42")
STEPS = 500
REPEATS = 5


def timed(fn) -> tuple[float, learn.TrainResult]:
    fn()  # warm up
    times, result = [], None
    for _ in range(REPEATS):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), result  # type: ignore[return-value]


def main() -> None:
    print(f"numpy {np.__version__}; {STEPS} Adam steps (lr 0.05), median of {REPEATS} runs after a warm-up")
    header = f"{'case':<34} | {'n':>3} | {'d':>3} | {'seconds':>7} | {'ms/step':>7} | {'final loss':>10} | goal"
    print(header)
    print("-" * len(header))
    for pid in DOCUMENTS:
        p = attention.load_preset(pid)
        m = p.matrices()
        learned = ("W_q", "W_k", "X") if pid == "i_am_batman" else ("W_q", "W_k")
        sec, r = timed(
            lambda p=p, m=m, learned=learned: learn.train(
                p.tokens, m, p.options, "previous", learn=learned, steps=STEPS
            )
        )
        d = m["X"].shape[-1]
        goal = "ok (< 1 s)" if sec < 1 else "MISSED (< 1 s)"
        print(
            f"{pid:<34} | {len(p.tokens):>3} | {d:>3} | {sec:>7.3f} | {sec / STEPS * 1e3:>7.3f} | {r.loss:>10.2e} | "
            f"{goal}"
        )
    rs = np.random.RandomState(0)
    n = d = 64
    m = {"X": rs.randn(n, d) / np.sqrt(d), **{k: rs.randn(d, d) / np.sqrt(d) for k in ("W_q", "W_k", "W_v")}}
    tokens = [f"t{i}" for i in range(n)]
    opts = attention.Options(positions="sinusoidal")
    sec, r = timed(lambda: learn.train(tokens, m, opts, "previous", steps=STEPS))
    goal = "ok (< 10 s)" if sec < 10 else "MISSED (< 10 s)"
    print(
        f"{'random, sinusoidal positions':<34} | {n:>3} | {d:>3} | {sec:>7.3f} | {sec / STEPS * 1e3:>7.3f} | "
        f"{r.loss:>10.2e} | {goal}"
    )


def page() -> None:
    from unittest import mock

    from attention.ui.labpages import learn as learn_page
    from tests.helpers.apptest import journey, session

    print(f"\nLearn page, {STEPS} Adam steps: one click on Train (median of 3 AppTest runs)")
    header = f"{'state':<26} | {'seconds':>7} | {'bar moves':>9} | goal"
    print(header)
    print("-" * len(header))
    for label, query, goal in (
        ("the_cat_sat", {"preset": "the_cat_sat"}, 1.0),
        ("blank 64 × 64 × 64", {"preset": "blank", "size": "64x64x64"}, 10.0),
    ):
        times, moves = [], []
        for _ in range(3):
            at = journey("learn", query)
            at = at.number_input(key=f"learn.steps.{session(at).grids}").set_value(STEPS).run()
            real = learn_page.learnviews.loss_chart
            with mock.patch.object(learn_page.learnviews, "loss_chart", side_effect=real) as drawn:
                t = time.perf_counter()
                at = at.button(key="learn.train").click().run()
                times.append(time.perf_counter() - t)
            assert session(at).learned is not None and session(at).learned.result.steps_done == STEPS
            moves.append(drawn.call_count - 1)  # each move redraws the live curve; the result draws it once more
        sec = float(np.median(times))
        ok = f"ok (< {goal:g} s)" if sec < goal else f"MISSED (< {goal:g} s)"
        print(f"{label:<26} | {sec:>7.3f} | {int(np.median(moves)):>9} | {ok}")


if __name__ == "__main__":
    main()
    if "--page" in sys.argv:
        page()
