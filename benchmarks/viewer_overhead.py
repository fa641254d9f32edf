"""Training throughput with no viewer, and with a web viewer following the run.

The training loop has no viewer hooks, so with no viewer attached its throughput is what
training_throughput.py reports. This measures what attaching ``robolearn view --follow``
(its own 4 envs, rendering, at nice 10) costs training on this machine, side by side:
alone, with the viewer, alone again.

    python benchmarks/viewer_overhead.py [--task humanoid_walk] [--num_envs 1024]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from train_command import train_command


def train(task: str, num_envs: int, iterations: int, root: Path, name: str, viewer: bool) -> float:
    cmd = train_command(
        task, num_envs, iterations, root, "--run_name", name, "agent.save_interval=1"
    )
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    watcher = None
    if viewer:
        while not list(root.glob(f"{task}/*_{name}/model_*.pt")):
            time.sleep(0.2)
        watcher = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "robolearn",
                "view",
                "--task",
                task,
                "--follow",
                name,
                "--log_root",
                str(root),
                "--port",
                "0",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    proc.wait()
    if watcher is not None:
        watcher.terminate()
        watcher.wait()
    (progress,) = root.glob(f"{task}/*_{name}/progress.jsonl")
    rows = [json.loads(x) for x in progress.read_text().splitlines()][2:]  # skip warm-up
    return statistics.median(r["Perf/env_steps_per_s"] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--num_envs", type=int, default=1024)
    parser.add_argument("--iterations", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        results = [
            ("no viewer", train(args.task, args.num_envs, args.iterations, root, "a", False)),
            (
                "web viewer following (nice 10)",
                train(args.task, args.num_envs, args.iterations, root, "b", True),
            ),
            (
                "no viewer, again",
                train(args.task, args.num_envs, args.iterations, root, "c", False),
            ),
        ]
    base = statistics.mean([results[0][1], results[2][1]])
    print(f"{args.task}, {args.num_envs} envs, cpu engine, training env steps/s (median)")
    print("| training | env steps/s | vs no viewer |")
    print("|---|---:|---:|")
    for label, fps in results:
        print(f"| {label} | {fps:,.0f} | {fps / base:.2f} |")


if __name__ == "__main__":
    main()
