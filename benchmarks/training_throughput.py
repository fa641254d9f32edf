"""End-to-end training throughput: env steps/s of ``robolearn train``, learning included.

Runs the real training command for a few iterations per env count in a temporary log folder
and reads its progress.jsonl: the median over iterations (the first is left out: it pays
for warm-up) of env steps/s, with the split between collecting (env steps + policy
inference) and learning (the PPO update).

    python benchmarks/training_throughput.py [--task T] [--envs 1024 4096] [--iterations 6]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

from train_command import train_command


def run(task: str, num_envs: int, iterations: int, nproc: int = 1) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as root:
        cmd = train_command(task, num_envs, iterations, root, "--seed", "0")
        if nproc > 1:
            cmd += ["--nproc", str(nproc)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        (progress,) = Path(root).glob("*/*/progress.jsonl")
        rows = [json.loads(line) for line in progress.read_text().splitlines()][1:]
    med = lambda key: statistics.median(r[key] for r in rows)  # noqa: E731
    return {
        "fps": med("Perf/env_steps_per_s"),
        "collect": med("Perf/collection_time"),
        "learn": med("Perf/learning_time"),
        "batch": num_envs * 24 * nproc,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--envs", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument(
        "--ranks",
        type=int,
        nargs="*",
        default=[],
        help="instead: total --envs split over 1, 2, ... ranks (torchrun, gloo)",
    )
    args = parser.parse_args()
    if args.ranks:
        total = args.envs[0]
        print(f"task {args.task}, {total} envs in total, cpu engine, gloo ranks on this machine")
        print("| ranks | envs per rank | env steps/s with training (all ranks) | learning share |")
        print("|---:|---:|---:|---:|")
        for k in args.ranks:
            r = run(args.task, total // k, args.iterations, nproc=k)
            share = r["learn"] / (r["collect"] + r["learn"])
            print(f"| {k} | {total // k} | {r['fps']:,.0f} | {100 * share:.0f}% |", flush=True)
        return
    print(f"task {args.task}, cpu engine, {args.iterations - 1} timed iterations each")
    print("| envs | env steps/s with training | collection s/it | learning s/it | learning share |")
    print("|---:|---:|---:|---:|---:|")
    for n in args.envs:
        r = run(args.task, n, args.iterations)
        share = r["learn"] / (r["collect"] + r["learn"])
        print(
            f"| {n} | {r['fps']:,.0f} | {r['collect']:.2f} | {r['learn']:.2f} "
            f"| {100 * share:.0f}% |",
            flush=True,
        )


if __name__ == "__main__":
    main()
