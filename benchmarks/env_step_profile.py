"""Where an env step's time goes outside the physics: ms per step, and the top torch ops.

Steps a task with fixed random actions (robots fall and reset, as early in training), times
the engine's step calls apart from the rest, then runs torch's profiler over a few steps
and lists the ops that cost most, grouped by input shape.

    python benchmarks/env_step_profile.py [--task humanoid_walk] [--envs 1024 4096] [--top 15]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.profiler import ProfilerActivity, profile

from robolearn.wrappers import make_env


def outside_engine(task: str, num_envs: int, steps: int, top: int) -> None:
    env = make_env(task, num_envs=num_envs, engine="cpu")
    gen = torch.Generator().manual_seed(0)
    action = 0.2 * torch.randn(num_envs, env.num_actions, generator=gen)
    for _ in range(20):
        env.step(action)
    with env.scene.engine.timed() as timer:
        start = time.perf_counter()
        for _ in range(steps):
            env.step(action)
        total = time.perf_counter() - start
    engine_time = timer.seconds["step"]
    outside = (total - engine_time) / steps * 1e3
    print(
        f"\n{task}, {num_envs} envs: {outside:.2f} ms per env step outside the engine, "
        f"engine share {engine_time / total:.3f}"
    )
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(20):
            env.step(action)
    ops = [e for e in prof.key_averages() if e.key.startswith("aten::")]
    print(
        f"{sum(e.count for e in ops) / 20:.0f} aten ops per step, "
        f"{sum(e.self_cpu_time_total for e in ops) / 20 / 1e3:.2f} ms of their own time"
    )
    rows = [e for e in prof.key_averages(group_by_input_shape=True) if e.key.startswith("aten::")]
    rows.sort(key=lambda e: -e.self_cpu_time_total)
    print("| op | calls/step | us/step | input shapes |\n|---|---:|---:|---|")
    for e in rows[:top]:
        shapes = str(e.input_shapes)[:60]
        print(f"| {e.key} | {e.count / 20:.1f} | {e.self_cpu_time_total / 20:.0f} | {shapes} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--envs", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for n in args.envs:
        outside_engine(args.task, n, args.steps, args.top)


if __name__ == "__main__":
    main()
