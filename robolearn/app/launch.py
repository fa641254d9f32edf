"""``robolearn train --nproc K``: torchrun on this machine, one rank per process."""

from __future__ import annotations

import signal
import subprocess
import sys

from robolearn.errors import RobolearnError


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
    """Run ``robolearn <argv> --distributed`` as ``nproc`` ranks under torchrun; return its
    exit status. SIGINT and SIGTERM are passed on to torchrun, which passes them to every
    rank (rank 0 then saves a checkpoint)."""
    if "--distributed" in argv:
        raise RobolearnError("use --nproc K or --distributed (under your own torchrun), not both")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={nproc}",
        "-m",
        "robolearn",
        *without_nproc(argv),
        "--distributed",
    ]
    child = subprocess.Popen(cmd)

    def forward(signum, _frame):
        child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return child.wait()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
