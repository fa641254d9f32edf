"""``robolearn train --nproc K``: torchrun on this machine, one rank per process.

torchrun's agent runs in this process (as the ``torchrun`` command would run it), so that a
rank that dies is one line naming it rather than torchrun's traceback and failure report.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import TYPE_CHECKING

from robolearn.errors import RobolearnError

if TYPE_CHECKING:
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

EXIT_USAGE = 2
"""A rank's exit status after it printed a user's mistake (a RobolearnError) as one line."""


def without_nproc(argv: list[str]) -> list[str]:
    """The command line minus ``--nproc K`` (or ``--nproc=K``)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--nproc":
            skip = True
        elif not arg.startswith("--nproc="):
            out.append(arg)
    return out


def launch_local(nproc: int, argv: list[str]) -> int:
    """Run ``robolearn <argv> --distributed`` as ``nproc`` ranks under torchrun's agent;
    return the job's exit status. The ranks print to this process's stdout and stderr.

    SIGINT and SIGTERM make the agent pass them to every rank (rank 0 then saves a
    checkpoint) and wait for them; the status is then 128 + the signal's number. A rank that
    dies ends the job: the agent stops the others, and one line names the rank and how it
    ended (:func:`failure_line`); status 1, or 2 where the rank printed a user's mistake."""
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    if "--distributed" in argv:
        raise RobolearnError("use --nproc K or --distributed (under your own torchrun), not both")
    args = torchrun.parse_args(
        [
            "--standalone",
            f"--nproc_per_node={nproc}",
            "-m",
            "robolearn",
            *without_nproc(argv),
            "--distributed",
        ]
    )
    # torchrun's own choice for several ranks on one machine, without its banner about it
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    logging.disable(logging.CRITICAL)  # the agent's log lines; the ranks log in their own
    try:
        torchrun.run(args)
    except ChildFailedError as exc:
        line = failure_line(exc)
        if line is None:
            return EXIT_USAGE
        print(f"robolearn: error: {line}", file=sys.stderr, flush=True)
        return 1
    except SignalException as exc:
        return 128 + int(exc.sigval)
    finally:
        logging.disable(logging.NOTSET)
    return 0


def failure_line(exc: ChildFailedError) -> str | None:
    """How a torchrun job failed, in one line: the rank that failed first, its pid, and its
    exit status or the signal that killed it. None where that rank exited with status 2: it
    printed a user's mistake itself, in one line."""
    rank, failure = exc.get_first_failure()
    if failure.exitcode == EXIT_USAGE:
        return None
    if failure.exitcode < 0:
        how = f"was killed by {failure.signal_name()}"
        if -failure.exitcode == signal.SIGKILL:
            how += " (out of memory, or kill -9)"
    else:
        how = f"exited with status {failure.exitcode}"
    return f"rank {rank} (pid {failure.pid}) {how}; the job stopped its other ranks"
