"""Env steps/s of a task with all its managers beside the bare engine, in one run.

For each env count: the bare cpu engine on the task's own model, writing controls and
stepping ``decimation`` substeps (the ceiling), then ``ManagerBasedRLEnv.step`` with every
manager of the task (actions, observations, rewards, terminations, resets, events,
commands). Both get the same fixed random actions around the default pose, so robots fall
and reset in the managed run as they do in training. Runs are interleaved and the median of
the pairwise ratios is reported.

    python benchmarks/manager_overhead.py [--task humanoid_walk] [--envs 1024 4096]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from robolearn.registry import get_task
from robolearn.scene.scene import Scene
from robolearn.wrappers import make_env


def bare_engine(task: str, num_envs: int, seconds: float) -> float:
    """Env steps/s of the task's bare cpu engine (its model, terrain included): controls
    written and ``decimation`` substeps, the robots at their spawn points."""
    cfg = get_task(task).env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = "cpu"
    scene = Scene(cfg.scene, cfg.sim)
    engine = scene.engine
    engine.reset(qpos=scene.default_qpos_at_origins(torch.arange(num_envs)))
    gen = torch.Generator().manual_seed(0)
    u = scene.default_ctrl + 0.1 * torch.randn(
        num_envs, engine.model.nu, generator=gen, dtype=engine.dtype
    )
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        engine.ctrl.copy_(u)
        engine.step(cfg.decimation)
        steps += 1
    return steps * num_envs / elapsed


def managed_env(task: str, num_envs: int, seconds: float) -> tuple[float, float]:
    """(env steps/s, share of the step's time spent inside the engine)."""
    env = make_env(task, num_envs=num_envs, engine="cpu")
    gen = torch.Generator().manual_seed(0)
    action = 0.2 * torch.randn(num_envs, env.num_actions, generator=gen)
    # Everything the engine does (substeps, resets, forward, divergence check) is physics;
    # the rest is ours.
    with env.scene.engine.timed() as timer:
        steps, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            env.step(action)
            steps += 1
    engine_time = timer.total()
    return steps * num_envs / elapsed, engine_time / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--envs", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    decimation = get_task(args.task).env_cfg().decimation
    print(
        f"task {args.task}, decimation {decimation}, cpu engine, torch {torch.__version__}, "
        f"{torch.get_num_threads()} torch threads"
    )
    print(
        "| envs | bare engine (env steps/s) | all managers (env steps/s) | managed / bare "
        "(median of pairs) | time outside the engine in the managed run |"
    )
    print("|---:|---:|---:|---:|---:|")
    for n in args.envs:
        bare, managed, ratios, engine_share = [], [], [], []
        for _ in range(args.rounds):
            bare.append(bare_engine(args.task, n, args.seconds))
            rate, share = managed_env(args.task, n, args.seconds)
            managed.append(rate)
            engine_share.append(share)
            ratios.append(rate / bare[-1])
        r = statistics.median(ratios)
        outside = 100 * (1 - statistics.median(engine_share))
        print(
            f"| {n} | {statistics.median(bare):,.0f} | {statistics.median(managed):,.0f} "
            f"| {r:.3f} | {outside:.1f}% |",
            flush=True,
        )


if __name__ == "__main__":
    main()
