"""The Unitree G1 side by side with mjlab on this CPU: env steps/s with random actions and
in training, robolearn's g1_walk against mjlab's Mjlab-Velocity-Flat-Unitree-G1.

mjlab pins its own MuJoCo, so it runs from a virtual environment of its own
(``--mjlab_python``; made with ``python -m venv V && V/bin/pip install torch==2.13.0
mjlab==1.6.0``). Both stacks run from one driver, in turn:

* **Random actions.** One worker process per side (``peer_step_worker.py``) builds its env
  once; the driver then asks each for a round of steps in turn, best round per side, so a
  shared machine's noise hits both alike. Each round also reports the CPU seconds the
  worker used: the cores each stack kept busy.
* **Training.** Each side's own train command for a few PPO iterations, alternated, the
  median iteration's env steps/s after the first (robolearn's ``progress.jsonl``, mjlab's
  "Steps per second" line). The agents are each task's own (mjlab: 512-256-128 MLPs;
  g1_walk: humanoid_walk's recipe).

mjlab's G1 steps its physics at 200 Hz (4 per env step); g1_walk at 100 Hz (2 per env
step). The side ``g1_walk@200Hz`` runs g1_walk at mjlab's rate, so that the per-physics-step
comparison is the like one.

    python benchmarks/peer_mjlab_g1.py --mjlab_python /tmp/mjvenv/bin/python \
        --num_envs 256 1024 --rounds 3 --train_iterations 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MJLAB_TASK = "Mjlab-Velocity-Flat-Unitree-G1"
AT_200_HZ = ["env.sim.physics_dt=0.005", "env.decimation=4"]


@dataclass(frozen=True)
class Side:
    label: str
    stack: str  # "robolearn" or "mjlab"
    task: str
    physics_per_step: int
    overrides: tuple[str, ...] = ()


SIDES = (
    Side("mjlab", "mjlab", MJLAB_TASK, 4),
    Side("g1_walk", "robolearn", "g1_walk", 2),
    Side("g1_walk@200Hz", "robolearn", "g1_walk", 4, tuple(AT_200_HZ)),
)


def python_for(side: Side, mjlab_python: str) -> str:
    return mjlab_python if side.stack == "mjlab" else sys.executable


ROUND = re.compile(r"\d+ [0-9.]+ [0-9.]+")
"""A worker's answer to a round: env steps, wall seconds, CPU seconds."""


def reply(proc: subprocess.Popen, wanted) -> str | None:
    """The worker's next output line that ``wanted`` accepts (None at its end): mjlab's
    env prints tables of its managers on the same stream."""
    for line in proc.stdout:
        if wanted(line.strip()):
            return line.strip()
    return None


def random_actions(sides, num_envs: int, rounds: int, steps: int, mjlab_python: str):
    """Best round's env steps/s and the cores busy in it, per side."""
    workers = {}
    for side in sides:
        cmd = [python_for(side, mjlab_python), str(HERE / "peer_step_worker.py")]
        cmd += ["--side", side.stack, "--num_envs", str(num_envs), "--steps", str(steps)]
        cmd += ["--task", side.task]
        for override in side.overrides:
            cmd += ["--set", override]
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        workers[side.label] = proc
    for label, proc in workers.items():
        # waits for the build (mjlab's kernels compile once); mjlab prints its managers first
        if reply(proc, lambda line: line == "ready") is None:
            raise SystemExit(f"{label}: the worker did not start (rerun it by hand to see why)")
    best: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        for label, proc in workers.items():
            proc.stdin.write("go\n")
            proc.stdin.flush()
            env_steps, wall, cpu = map(float, reply(proc, ROUND.fullmatch).split())
            rate = env_steps / wall
            if label not in best or rate > best[label][0]:
                best[label] = (rate, cpu / wall)
    for proc in workers.values():
        proc.stdin.close()
        proc.wait()
    return best


def train_robolearn(side: Side, num_envs: int, iterations: int) -> list[float]:
    with tempfile.TemporaryDirectory() as root:
        cmd = [sys.executable, "-m", "robolearn", "train", "--task", side.task]
        cmd += ["--num_envs", str(num_envs), "--max_iterations", str(iterations)]
        cmd += ["--log_root", root, "agent.save_interval=100000", *side.overrides]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        (progress,) = Path(root).glob("*/*/progress.jsonl")
        rows = [json.loads(line) for line in progress.read_text().splitlines()]
        return [row["Perf/env_steps_per_s"] for row in rows]


def train_mjlab(side: Side, num_envs: int, iterations: int, mjlab_python: str) -> list[float]:
    with tempfile.TemporaryDirectory() as root:
        cmd = [mjlab_python, "-m", "mjlab.scripts.train", side.task]
        cmd += ["--env.scene.num-envs", str(num_envs), "--agent.max-iterations", str(iterations)]
        cmd += ["--agent.logger", "tensorboard", "--agent.save-interval", "100000"]
        cmd += ["--log-root", root]
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # mjlab's way of asking for the CPU
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
        return [float(v) for v in re.findall(r"Steps per second:\s*([0-9.]+)", out)]


def training(sides, num_envs: int, iterations: int, repeats: int, mjlab_python: str):
    """Median env steps/s over each side's iterations after its first, all repeats."""
    rates: dict[str, list[float]] = {side.label: [] for side in sides}
    for _ in range(repeats):
        for side in sides:
            if side.stack == "mjlab":
                per_iteration = train_mjlab(side, num_envs, iterations, mjlab_python)
            else:
                per_iteration = train_robolearn(side, num_envs, iterations)
            if len(per_iteration) != iterations:
                ran = len(per_iteration)
                raise SystemExit(f"{side.label}: {ran} of {iterations} iterations ran")
            rates[side.label] += per_iteration[1:]
    return {label: statistics.median(values) for label, values in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mjlab_python", required=True, help="python of a venv with mjlab")
    parser.add_argument("--num_envs", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="env steps per random round")
    parser.add_argument("--train_iterations", type=int, default=3)
    parser.add_argument("--train_repeats", type=int, default=1)
    parser.add_argument("--skip_training", action="store_true")
    args = parser.parse_args()
    head = "| envs | side | physics per env step | random: env steps/s | cores busy |"
    head += " physics steps/s | training: env steps/s |"
    print(head)
    print("|---:|---|---:|---:|---:|---:|---:|")
    for num_envs in args.num_envs:
        rand = random_actions(SIDES, num_envs, args.rounds, args.steps, args.mjlab_python)
        train = {}
        if not args.skip_training:
            train = training(
                SIDES, num_envs, args.train_iterations, args.train_repeats, args.mjlab_python
            )
        for side in SIDES:
            rate, cores = rand[side.label]
            trained = f"{train[side.label]:,.0f}" if side.label in train else "-"
            print(
                f"| {num_envs} | {side.label} | {side.physics_per_step} | {rate:,.0f} | "
                f"{cores:.2f} | {rate * side.physics_per_step:,.0f} | {trained} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
