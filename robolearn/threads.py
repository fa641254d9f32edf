"""How many threads torch uses, and when: one policy for the env step, the rollout and the
PPO update on the CPU.

* **While MuJoCo steps, torch runs on one thread.** The batch engine keeps every core busy
  during the physics; torch's OpenMP threads, which spin for a while after each parallel op,
  would take those cores between the many small tensor ops of the managers (measured:
  25-30% of a humanoid step outside the engine with 2 torch threads, 11% with 1;
  ``python benchmarks/manager_overhead.py`` at commit 7431b2b and its parent).
* **The PPO update gets the cores when its matrices are large enough to share.** Splitting
  a small layer between threads costs more in waiting than it saves: cartpole's 2x32 MLP
  updates as fast on one thread as on two on an idle machine, and much faster beside other
  processes, while humanoid_walk's 3x128 MLP keeps every core (BENCHMARKS.md, "Training on
  a busy machine").
* **OpenMP threads spin only briefly before they sleep** (``GOMP_SPINCOUNT``, set when
  robolearn is imported, see :mod:`robolearn`), so a thread descheduled by another process
  does not leave the others burning the cores it needs.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator, Sequence

import torch

SMALL_LAYER_WORK = 2**24
"""Multiply-adds of the largest layer of one mini-batch below which the update runs on one
thread (cartpole: 4,096 x 32 x 32 = 4.2M; humanoid_walk at 1024 envs: 6,144 x 128 x 128 =
101M)."""


THREADS_ENV = "ROBOLEARN_THREADS"
"""An environment variable that caps the cores a robolearn process uses (the physics'
threads, torch's where robolearn sets them): a sweep's trial sets it to the CPUs Ray gave
the trial, so that trials side by side never oversubscribe the machine."""


def available_cores() -> int:
    """Cores this process may run on (its affinity mask, not the machine's count), at most
    ``ROBOLEARN_THREADS`` where that is set."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    cap = os.environ.get(THREADS_ENV, "")
    return max(1, min(cores, int(cap))) if cap.isdigit() else cores


@contextlib.contextmanager
def threads_for(device: torch.device | str, count: int) -> Iterator[None]:
    """torch on ``count`` threads inside the block when ``device`` is the CPU; the caller's
    setting is restored on exit. A no-op on a GPU."""
    threads = torch.get_num_threads()
    if torch.device(device).type != "cpu" or threads == count:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def single_threaded(device: torch.device | str = "cpu") -> contextlib.AbstractContextManager:
    """torch on one thread inside the block on the CPU (while MuJoCo holds the cores)."""
    return threads_for(device, 1)


def update_threads(cores: int, batch_rows: int, layer_widths: Sequence[int]) -> int:
    """Threads for a PPO update of MLPs with ``layer_widths`` on mini-batches of
    ``batch_rows`` samples: ``cores``, or 1 when the largest layer is too small to share."""
    widths = list(layer_widths)
    if not widths:
        return 1
    largest = max((a * b for a, b in itertools.pairwise(widths)), default=widths[0] ** 2)
    return cores if batch_rows * largest >= SMALL_LAYER_WORK else 1
