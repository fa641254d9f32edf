"""Sim-to-sim across engines: the shipped policies evaluated on the cpu engine and on each of
Newton's solvers, one ``robolearn play --eval --json`` per row, printed as a markdown table.

    python benchmarks/newton_sim2sim.py --num_envs 16
    python benchmarks/newton_sim2sim.py --tasks humanoid_walk --solvers mujoco featherstone

Every env runs one whole episode of the task's play variant (no noise, no pushes) from the
same seed on every engine. A fall is a failure termination (base contact or too low);
"diverged" the share of episodes whose physics diverged (NaN or beyond sim.max_speed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

SOLVERS = ("mujoco", "featherstone", "xpbd", "semi_implicit")


def evaluate(task: str, num_envs: int, engine: str, solver: str | None) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "robolearn",
        "play",
        "--task",
        task,
        "--checkpoint",
        "pretrained",
        "--eval",
        "--num_envs",
        str(num_envs),
        "--engine",
        engine,
        "--json",
    ]
    if solver:
        cmd.append(f"env.sim.newton.solver={solver}")
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ})
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - start
    # Newton's collision kernels print this when its contact buffer is full (contacts lost)
    result["overflows"] = out.stdout.count("Contact buffer overflowed")
    return result


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def row(task: str, label: str, r: dict) -> str:
    if "error" in r:
        return f"| {task} | {label} | {r['error']} | | | | | | | |"
    failures = r["terminations"]["failures"]
    falls = sum(failures.get(k) or 0.0 for k in ("base_contact", "base_too_low"))
    cells = [
        str(r["episodes"]),
        _num(r["mean_return"], ".1f"),
        _num(falls, ".0%"),
        _num(failures.get("nonfinite") or 0.0, ".0%"),
        _num(r.get("base_velocity/lin_vel_error"), ".3f"),
        _num(r.get("base_velocity/ang_vel_error"), ".3f"),
        _num(r["mean_episode_length_s"], ".1f"),
        _num(r["wall_s"], ".0f"),
    ]
    if r["overflows"]:
        cells.append(f"contact buffer full {r['overflows']} times")
    return f"| {task} | {label} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["humanoid_walk", "quadruped_walk_rough"])
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS)
    parser.add_argument("--num_envs", type=int, default=16)
    args = parser.parse_args()
    print(
        "| task | engine | episodes | mean return | falls | diverged | linear error (m/s) | "
        "yaw-rate error (rad/s) | episode (s) | wall (s) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for task in args.tasks:
        print(row(task, "cpu", evaluate(task, args.num_envs, "cpu", None)), flush=True)
        for solver in args.solvers:
            result = evaluate(task, args.num_envs, "newton-cpu", solver)
            print(row(task, f"newton-cpu, {solver}", result), flush=True)


if __name__ == "__main__":
    main()
