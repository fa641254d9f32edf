"""How a robolearn process started by another (a sweep's Ray worker) ends with it.

A worker that is killed (by Ray, by ``kill -9``, by a lost node) cannot stop the training
process it started; left running, that process would hold its run folder's lock and the
trial's cores. The worker names itself in ``ROBOLEARN_PARENT_PID``, and the child asks the
kernel for SIGTERM when its parent thread ends (Linux's ``PR_SET_PDEATHSIG``): training
then saves a checkpoint and exits, as it does on any SIGTERM.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PARENT_ENV = "ROBOLEARN_PARENT_PID"
"""The pid of the process whose end should end this one with SIGTERM."""

_PR_SET_PDEATHSIG = 1


def end_with_parent() -> None:
    """Where ``ROBOLEARN_PARENT_PID`` is set: SIGTERM when the parent ends, or exit now if
    it has ended already (before the request was made). A no-op elsewhere and off Linux."""
    # this process's children (torchrun's ranks) have another parent: not theirs to check
    parent = os.environ.pop(PARENT_ENV, "")
    if not parent.isdigit() or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):  # the parent ended before the request
        print("robolearn: the process that started this one has ended", file=sys.stderr)
        raise SystemExit(1)
