"""The cost of the world: quadruped_walk_rough against quadruped_walk, side by side.

For each env count, interleaved rounds of: the flat task's and the rough task's
``ManagerBasedRLEnv.step`` (every manager, the same fixed random actions, resets as in
training) and their bare engines (controls written, ``decimation`` substeps: the physics
alone, where terrain contacts cost). Inside the rough task's step, the height scan's own
time is measured by wrapping its term. Reports env steps/s, the rough/flat ratios of the
env step and of the physics, and the scan's share of the rough env step (medians over
rounds).

    python benchmarks/terrain_cost.py [--envs 1024 4096] [--rounds 3] [--seconds 8]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from manager_overhead import bare_engine as physics

from robolearn.wrappers import make_env

FLAT, ROUGH = "quadruped_walk", "quadruped_walk_rough"


def env_step(task: str, num_envs: int, seconds: float) -> tuple[float, float]:
    """(env steps/s, share of the step spent in the height scan term, 0 without one)."""
    env = make_env(task, num_envs=num_envs, engine="cpu")
    spent = [0.0]
    for group in env.observation_manager._terms.values():
        for i, (name, tcfg, fn) in enumerate(group.terms):
            if name == "height_scan":

                def timed(*args, _fn=fn, **kw):
                    t0 = time.perf_counter()
                    out = _fn(*args, **kw)
                    spent[0] += time.perf_counter() - t0
                    return out

                group.terms[i] = (name, tcfg, timed)
    gen = torch.Generator().manual_seed(0)
    action = 0.2 * torch.randn(num_envs, env.num_actions, generator=gen)
    for _ in range(10):  # past the first resets
        env.step(action)
    spent[0] = 0.0
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        env.step(action)
        steps += 1
    return steps * num_envs / elapsed, spent[0] / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    print(
        "| envs | flat env steps/s | rough env steps/s | rough/flat env | flat physics "
        "| rough physics | rough/flat physics | scan share of rough step |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.envs:
        rows = []
        for _ in range(args.rounds):
            flat, _ = env_step(FLAT, n, args.seconds)
            rough, scan = env_step(ROUGH, n, args.seconds)
            flat_phys = physics(FLAT, n, args.seconds)
            rough_phys = physics(ROUGH, n, args.seconds)
            rows.append((flat, rough, flat_phys, rough_phys, scan))
        med = [statistics.median(col) for col in zip(*rows, strict=True)]
        env_ratio = statistics.median(r[1] / r[0] for r in rows)
        phys_ratio = statistics.median(r[3] / r[2] for r in rows)
        print(
            f"| {n} | {med[0]:,.0f} | {med[1]:,.0f} | {env_ratio:.2f} | {med[2]:,.0f} "
            f"| {med[3]:,.0f} | {phys_ratio:.2f} | {100 * med[4]:.1f}% |",
            flush=True,
        )


if __name__ == "__main__":
    main()
