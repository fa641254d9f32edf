"""Env steps/s through each learner's wrapper beside rsl-rl's adapter, in one run.

Every wrapper gets its own env of the same task and size (cpu engine) and the same fixed
random actions around the default pose (so robots fall and reset as in training), as the
learner hands them over: torch tensors for rsl-rl, skrl and the env itself, numpy arrays
for gymnasium and Stable-Baselines3 (whose wrappers also return numpy, and compute the
final observations of the envs that finished). Runs are interleaved in short rounds, in
a rotated order; the table gives the median rate of each, the median of its per-round
ratio to rsl-rl, and the time per step spent outside the physics (the engine's own
substeps, resets and forward passes left out): the cost of the managers plus the wrapper,
which a busy machine disturbs less than the rate.

    python benchmarks/wrapper_throughput.py [--task quadruped_walk] [--envs 1024]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from robolearn.wrappers import make_env
from robolearn.wrappers.gymnasium import GymVectorEnv
from robolearn.wrappers.rsl_rl import RslRlVecEnv


def build(task: str, num_envs: int) -> dict[str, tuple[Callable, object, object]]:
    """Each contender's step function, the action it takes and its env."""
    from robolearn.wrappers.sb3 import Sb3VecEnv
    from robolearn.wrappers.skrl import SkrlVecEnv

    def env() -> object:
        return make_env(task, num_envs=num_envs, engine="cpu")

    base = env()
    gen = torch.Generator().manual_seed(0)
    action = 0.2 * torch.randn(num_envs, base.num_actions, generator=gen)
    as_numpy = action.numpy().astype(np.float32)
    rsl = RslRlVecEnv(env())
    gymnasium = GymVectorEnv(env())
    gymnasium.reset(seed=0)
    sb3 = Sb3VecEnv(env())
    sb3.reset()
    skrl = SkrlVecEnv(env())
    skrl.reset()
    return {
        "ManagerBasedRLEnv.step (no adapter)": (base.step, action, base),
        "rsl-rl (RslRlVecEnv)": (rsl.step, action, rsl.env),
        "gymnasium (GymVectorEnv)": (gymnasium.step, as_numpy, gymnasium.env),
        "Stable-Baselines3 (Sb3VecEnv)": (sb3.step, as_numpy, sb3.env),
        "skrl (SkrlVecEnv)": (skrl.step, action, skrl.env),
    }


def rate(step: Callable, action: object, env, seconds: float) -> tuple[float, float]:
    """(env steps/s, seconds per step outside the physics) of ``step(action)`` over
    ``seconds``, after one untimed step."""
    step(action)
    with env.scene.engine.timed() as timer:
        steps, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            step(action)
            steps += 1
    physics = timer.total()
    return steps * env.num_envs / elapsed, (elapsed - physics) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="quadruped_walk")
    parser.add_argument("--envs", type=int, default=1024)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    print(
        f"task {args.task}, {args.envs} envs, cpu engine, torch {torch.__version__}, "
        f"{torch.get_num_threads()} torch threads, {args.rounds} rounds of {args.seconds} s"
    )
    contenders = build(args.task, args.envs)
    names = list(contenders)
    rates: dict[str, list[float]] = {name: [] for name in names}
    outside: dict[str, list[float]] = {name: [] for name in names}
    for k in range(args.rounds):
        # rotate the order, so that no contender always runs at the same point of a round
        for name in names[k % len(names) :] + names[: k % len(names)]:
            step, action, env = contenders[name]
            steps_per_s, extra = rate(step, action, env, args.seconds)
            rates[name].append(steps_per_s)
            outside[name].append(extra)
    reference = rates["rsl-rl (RslRlVecEnv)"]
    print(
        "| through | env steps/s | / rsl-rl (median of rounds) | ms per step | "
        "ms per step outside the physics |"
    )
    print("|---|---:|---:|---:|---:|")
    for name in names:
        values = rates[name]
        ratio = statistics.median(v / r for v, r in zip(values, reference, strict=True))
        median = statistics.median(values)
        print(
            f"| {name} | {median:,.0f} | {ratio:.3f} | {1000 * args.envs / median:.1f} "
            f"| {1000 * statistics.median(outside[name]):.1f} |"
        )


if __name__ == "__main__":
    main()
