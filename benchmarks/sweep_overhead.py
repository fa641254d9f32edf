"""Ray's cost per trial: a sweep of short cartpole trials against the same runs done one
after another with ``robolearn train``, on this machine.

    python benchmarks/sweep_overhead.py --trials 8 --max_iterations 20 --rounds 2

Each round runs, one after the other (the machine is shared: compare within a round):

* ``sweep``: ``robolearn sweep`` of ``--trials`` configurations (a grid over the entropy
  coefficient), Ray started inside the command with ``--num_cpus`` cores, each trial on
  ``--cpus_per_trial`` of them, the metric read from progress.jsonl (no evaluation);
* ``sequential``: the same configurations, one ``robolearn train`` process at a time on
  every core.

For each it prints one JSON line: the wall time of the whole, the training time inside the
runs (the sum of their progress.jsonl ``wall_time``), and what is left per trial (process
starts, Ray's start-up, reporting, waiting): (wall - training / parallel) / trials, where
parallel is the trials Ray ran at once.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def entropy_values(count: int) -> list[str]:
    return [f"{0.001 * (i + 1):.3g}" for i in range(count)]


def training_seconds(root: Path) -> tuple[float, int]:
    """(the sum of the runs' training wall time, the number of runs) under ``root``."""
    total, runs = 0.0, 0
    for progress in root.rglob("progress.jsonl"):
        lines = progress.read_text().splitlines()
        if lines:
            total += json.loads(lines[-1])["wall_time"]
            runs += 1
    return total, runs


def run_sweep(args, out: Path) -> dict:
    values = ",".join(entropy_values(args.trials))
    command = [
        sys.executable, "-m", "robolearn", "sweep", "--task", "cartpole_balance",
        "--grid", f"agent.algorithm.entropy_coef={values}", "--metric", "Train/mean_reward",
        "--max_iterations", str(args.max_iterations), "--num_cpus", str(args.num_cpus),
        "--cpus_per_trial", str(args.cpus_per_trial), "--out", str(out),
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    wall = time.perf_counter() - start
    training, runs = training_seconds(out / "trials")
    parallel = max(1, int(args.num_cpus // args.cpus_per_trial))
    return summary("sweep", wall, training, runs, min(parallel, args.trials))


def run_sequential(args, root: Path) -> dict:
    start = time.perf_counter()
    for value in entropy_values(args.trials):
        command = [
            sys.executable, "-m", "robolearn", "train", "--task", "cartpole_balance",
            "--max_iterations", str(args.max_iterations), "--log_root", str(root),
            f"agent.algorithm.entropy_coef={value}",
        ]  # fmt: skip
        subprocess.run(command, check=True, capture_output=True)
    wall = time.perf_counter() - start
    training, runs = training_seconds(root)
    return summary("sequential", wall, training, runs, 1)


def summary(mode: str, wall: float, training: float, runs: int, parallel: int) -> dict:
    return {
        "mode": mode,
        "runs": runs,
        "wall_s": round(wall, 2),
        "training_s": round(training, 2),
        "at_once": parallel,
        "other_s_per_trial": round((wall - training / parallel) / max(runs, 1), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--max_iterations", type=int, default=20)
    parser.add_argument("--num_cpus", type=int, default=2)
    parser.add_argument("--cpus_per_trial", type=float, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for round_ in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            for result in (
                run_sweep(args, Path(tmp) / "sweep"),
                run_sequential(args, Path(tmp) / "sequential"),
            ):
                print(json.dumps({"round": round_, **result}), flush=True)


if __name__ == "__main__":
    main()
