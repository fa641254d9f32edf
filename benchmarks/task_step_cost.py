"""Env steps/s of several tasks side by side in one process: each task's env built once,
then rounds of random-action steps taken in turn, best round per task (a shared machine's
noise hits every task alike).

    python benchmarks/task_step_cost.py go2_walk quadruped_walk --num_envs 512 \
        --set go2_walk:env.scene.model=/path/to/unitree_mujoco/unitree_robots/go2/go2.xml

A task given as LABEL=TASK runs under that label, so one task can run twice with other
overrides (``--set LABEL:...``).
"""

from __future__ import annotations

import argparse
import time

import torch

from robolearn.wrappers import make_env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="+")
    parser.add_argument("--num_envs", type=int, default=512)
    parser.add_argument("--engine", default="cpu")
    parser.add_argument("--steps", type=int, default=24, help="env steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], metavar="TASK:KEY=VALUE")
    args = parser.parse_args()
    labels = [t.partition("=")[0] for t in args.tasks]
    task_of = {t.partition("=")[0]: t.partition("=")[2] or t for t in args.tasks}
    overrides: dict[str, list[str]] = {label: [] for label in labels}
    for item in args.set:
        label, _, override = item.partition(":")
        overrides[label].append(override)
    envs = {
        label: make_env(
            task_of[label], num_envs=args.num_envs, engine=args.engine, overrides=overrides[label]
        )
        for label in labels
    }
    gen = torch.Generator().manual_seed(0)
    best = dict.fromkeys(envs, float("inf"))
    for env in envs.values():
        env.reset(seed=0)
    for _ in range(args.rounds):
        for task, env in envs.items():
            actions = 0.5 * torch.randn(args.num_envs, env.num_actions, generator=gen)
            start = time.perf_counter()
            for _ in range(args.steps):
                env.step(actions)
            best[task] = min(best[task], (time.perf_counter() - start) / args.steps)
    first = labels[-1]
    print(f"| task | env steps/s ({args.num_envs} envs, {args.engine}) | step time vs {first} |")
    print("|---|---:|---:|")
    for task in labels:
        print(f"| {task} | {args.num_envs / best[task]:,.0f} | {best[task] / best[first]:.2f}x |")


if __name__ == "__main__":
    main()
