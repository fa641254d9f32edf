"""A viewer beside a training run: on CPU time the training leaves idle.

``nice 10`` alone still took a fifth of a 2-core machine's training throughput: each slice
the viewer got stalled one of MuJoCo's barrier-synchronised workers, and the other waited.
Linux's SCHED_IDLE class runs a thread only when a core has nothing else to run (the
training's workers waiting at a barrier, the learner's quieter moments). It is applied once
the viewer's envs are built, to every thread it has then (its simulation loop, the
renderer's: Mesa's rasterizer runs threads of its own) and those made after (the HTTP
server's, the window's): the start-up (imports, building the envs) keeps the normal class,
so that the viewer starts on a machine that has no idle time at all (other jobs beside the
training; the test suite beside two busy loops, where a viewer that was SCHED_IDLE from
its start did not start in 4 minutes).

On such a machine the viewer would get all but no time, and a watchdog gives it back the
normal class: a small process of its own (normal class; a thread would wait for the
interpreter's lock, which a starved SCHED_IDLE thread holds) reads the kernel's schedstat
of the viewer's threads once a second and lifts them all back to the normal class when,
over :data:`STARVED_S` seconds, they ran less than :data:`STARVED_RUN` of the time while
waiting for a core more than :data:`STARVED_WAIT` of it; they stay there, sharing the
cores as any process does. A viewer beside a healthy run waits little (3D client) or runs
much (rendered client), and one with nothing to do neither. Tried before: ``nice 19``
(beside two busy loops and a training run its share, 15 against 3 x 1024 weights, left the
viewer too slow to answer a request or a Ctrl-C within 2 minutes); watchdogs inside the
viewer's process, judging its simulation's rate (stuck on the interpreter's lock).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

STARVED_S = 15.0
"""The window (seconds) the watchdog judges: longer than a training run's update keeps
both cores busy (about 5 s at 4096 humanoids on 2 cores)."""
STARVED_RUN = 0.03
"""The share of the window the viewer's threads ran, together, under which they count as
starved (beside a healthy run: 5-40%)."""
STARVED_WAIT = 0.5
"""And the share of the window they waited for a core, together, over which they do."""


@contextlib.contextmanager
def yield_cpu() -> Iterator[None]:
    """Run every thread of this process as SCHED_IDLE inside the block (those made inside
    inherit it), with the watchdog of the module docstring. Where SCHED_IDLE is not
    available, the threads get ``nice 19``."""
    # the watchdog first, while this thread still has the normal class its child inherits
    args = [str(os.getpid()), str(STARVED_S), str(STARVED_RUN), str(STARVED_WAIT)]
    watchdog = subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, *args],
        stdin=subprocess.PIPE,  # it ends when this closes: when the block ends, or we do
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if not all([_set_idle(tid) for tid in _threads(os.getpid())]):
        for tid in _threads(os.getpid()):
            _set_nice_19(tid)
    try:
        yield
    finally:
        # a viewer closing (Ctrl-C) closes at once, not on the time a busy machine spares
        for tid in _threads(os.getpid()):
            _set_normal(tid)
        watchdog.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            watchdog.wait(timeout=5)


def _set_idle(tid: int) -> bool:
    try:
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        return False
    return True


def _set_nice_19(tid: int) -> None:
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, tid, 19)  # a thread id: that thread alone (Linux)


def _set_normal(tid: int) -> None:
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))


def _threads(pid: int) -> list[int]:
    """The ids of process ``pid``'s threads (Linux)."""
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


# The watchdog's program: only os, select and time, so that it starts in milliseconds.
_WATCHDOG = """
import os, select, sys, time
pid, window, run_share, wait_share = int(sys.argv[1]), *map(float, sys.argv[2:5])

def totals():
    run = wait = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        sys.exit(0)
    for tid in tids:
        try:
            fields = open(f"/proc/{pid}/task/{tid}/schedstat").read().split()
        except OSError:
            continue
        run, wait = run + int(fields[0]), wait + int(fields[1])
    return time.monotonic(), run / 1e9, wait / 1e9

seen = [totals()]
while not select.select([sys.stdin], [], [], 1.0)[0]:
    now = totals()
    seen = [s for s in seen if now[0] - s[0] <= window] + [now]
    span = now[0] - seen[0][0]
    if span < window - 1.0:
        continue
    ran, waited = now[1] - seen[0][1], now[2] - seen[0][2]
    if ran < run_share * span and waited > wait_share * span:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
            except OSError:
                pass
        sys.exit(0)
"""
