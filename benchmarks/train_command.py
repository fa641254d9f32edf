"""The ``robolearn train`` command line the throughput benchmarks run (cpu engine)."""

from __future__ import annotations

import sys
from pathlib import Path


def train_command(
    task: str, num_envs: int, iterations: int, log_root: str | Path, *extra: str
) -> list[str]:
    """``python -m robolearn train`` for ``task`` on the cpu engine, runs under ``log_root``."""
    return [
        sys.executable,
        "-m",
        "robolearn",
        "train",
        "--task",
        task,
        "--num_envs",
        str(num_envs),
        "--max_iterations",
        str(iterations),
        "--engine",
        "cpu",
        "--log_root",
        str(log_root),
        *extra,
    ]
