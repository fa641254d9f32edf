"""Torch ops per env step, plain against fused: the measure of launches that carries over to
a GPU, taken on the CPU.

Steps a task on the cpu engine with fixed random actions (robots fall and reset, as early
in training) three ways side by side, from the same seed:

- ``plain``: the plain step as the cpu engine runs it (masks read on the host; a reset's
  work only in a step where an episode ended, by index over those envs);
- ``plain_masked``: the plain step as a GPU runs it (every env's rows, no host decision);
- ``fused``: the fused step (``fused_step=on``, :mod:`robolearn.managers.fused`).

and counts, with torch's profiler over ``--steps`` env steps, the top-level ops per step:
every ``aten::`` op with no op above it, plus each kernel that Inductor generated (its C++
kernels are made visible to the profiler for this count), so a fused region counts as the
kernels it runs, not as one call. Also: ms per env step of each (time.perf_counter over the
same steps; the machine is shared, so read the ratios), the first fused steps' compile time,
and the largest difference of the fused step's observations and rewards from the masked
plain step's.

    python benchmarks/step_ops.py [--tasks humanoid_walk g1_walk quadruped_walk_rough]
        [--num_envs 64] [--steps 50] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch._inductor.config as inductor_config
from torch.profiler import ProfilerActivity, profile

from robolearn.env import ManagerBasedRLEnv
from robolearn.registry import get_task

inductor_config.cpp.enable_kernel_profile = True


def _env(task: str, num_envs: int, fused: str) -> ManagerBasedRLEnv:
    cfg = get_task(task).make_env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.fused_step = fused
    return ManagerBasedRLEnv(cfg)


def _is_op(name: str) -> bool:
    return name.startswith(("aten::", "cpp_fused"))


def top_level_ops(env: ManagerBasedRLEnv, actions: list[torch.Tensor]) -> float:
    """Top-level ops (and Inductor kernels) per env step over ``actions``."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for action in actions:
            env.step(action)
    count = 0
    for event in prof.events():
        if not _is_op(event.name):
            continue
        parent = event.cpu_parent
        while parent is not None and not _is_op(parent.name):
            parent = parent.cpu_parent
        count += parent is None
    return count / len(actions)


def measure(task: str, num_envs: int, steps: int) -> dict:
    envs = {
        "plain": _env(task, num_envs, "off"),
        "plain_masked": _env(task, num_envs, "off"),
        "fused": _env(task, num_envs, "on"),
    }
    envs["plain_masked"].host_masks = False
    gen = torch.Generator().manual_seed(0)
    num_actions = envs["plain"].num_actions
    warm = [0.3 * torch.randn(num_envs, num_actions, generator=gen) for _ in range(20)]
    timed = [0.3 * torch.randn(num_envs, num_actions, generator=gen) for _ in range(steps)]
    result: dict = {"task": task, "num_envs": num_envs, "steps": steps}
    worst_obs = worst_reward = 0.0
    start = time.perf_counter()
    for i, action in enumerate(warm):
        outs = {}
        for name, env in envs.items():
            torch.manual_seed(i)
            outs[name] = env.step(action)
        if i == 1:
            result["fused_compile_s"] = round(time.perf_counter() - start, 1)
        masked, fused = outs["plain_masked"], outs["fused"]
        for group in masked[0]:
            diff = (masked[0][group] - fused[0][group]).abs().max().item()
            worst_obs = max(worst_obs, diff)
        worst_reward = max(worst_reward, (masked[1] - fused[1]).abs().max().item())
    result["fused_max_obs_diff"] = worst_obs
    result["fused_max_reward_diff"] = worst_reward
    for name, env in envs.items():
        result[f"{name}_ops_per_step"] = round(top_level_ops(env, timed), 1)
    for name, env in envs.items():
        t0 = time.perf_counter()
        for action in timed:
            env.step(action)
        result[f"{name}_ms_per_step"] = round((time.perf_counter() - t0) / steps * 1e3, 3)
    result["fused_ops_vs_plain"] = round(
        result["fused_ops_per_step"] / result["plain_ops_per_step"], 3
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks", nargs="+", default=["humanoid_walk", "g1_walk", "quadruped_walk_rough"]
    )
    parser.add_argument("--num_envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="one JSON line per task")
    args = parser.parse_args()
    if not args.json:
        print(
            "| task | ops/step plain | plain masked | fused | fused/plain | ms plain | "
            "ms masked | ms fused | compile s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        )
    for task in args.tasks:
        r = measure(task, args.num_envs, args.steps)
        if args.json:
            print(json.dumps(r), flush=True)
            continue
        print(
            f"| {task} | {r['plain_ops_per_step']} | {r['plain_masked_ops_per_step']} | "
            f"{r['fused_ops_per_step']} | {r['fused_ops_vs_plain']} | "
            f"{r['plain_ms_per_step']} | {r['plain_masked_ms_per_step']} | "
            f"{r['fused_ms_per_step']} | {r['fused_compile_s']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
