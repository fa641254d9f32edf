"""The performance suite: robolearn beside the bare engine and beside gymnasium, one run.

1. Our humanoid (humanoid_walk): the bare ``mujoco.batch`` loop (the ceiling), then
   ``robolearn bench`` on the cpu engine (physics, env, +inference, +training) at each env
   count, and on warp-cpu at a small count (MuJoCo Warp on warp's CPU device is a test path).
2. gymnasium's ``Humanoid-v5`` through ``gymnasium.make_vec`` in sync and async modes
   (random actions, its own resets), beside robolearn's cpu engine stepping gymnasium's own
   humanoid MJCF with random controls, both counted in physics steps/s (Humanoid-v5 takes 5
   physics steps per env step).

Prints markdown tables with ratios.

    python benchmarks/suite.py [--envs 1024 4096] [--seconds 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gymnasium as gym
import mujoco
import numpy as np
import torch
from mujoco import batch as mjbatch

from robolearn.app.bench import run_bench
from robolearn.sim import SimCfg, make_engine
from robolearn.threads import available_cores


def bare_batch(model: mujoco.MjModel, num_envs: int, nstep: int, seconds: float, ctrl_fn) -> float:
    """Physics steps/s of a plain mujoco.batch loop writing controls before every call."""
    batch = mjbatch.Batch(model, num_envs, available_cores())
    batch.reset()
    if model.nkey:
        batch.bind("qpos")[:] = model.key_qpos[0]
        batch.forward()
    ctrl = batch.bind("ctrl")
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        ctrl[:] = ctrl_fn()
        batch.step(nstep=nstep)
        calls += 1
    return calls * num_envs * nstep / elapsed


def gym_vector(mode: str, num_envs: int, seconds: float) -> float:
    env = gym.make_vec("Humanoid-v5", num_envs=num_envs, vectorization_mode=mode)
    env.reset(seed=0)
    env.action_space.seed(0)
    frame_skip = gym.make("Humanoid-v5").unwrapped.frame_skip
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        env.step(env.action_space.sample())
        calls += 1
    env.close()
    return calls * num_envs * frame_skip / elapsed


def robolearn_on_gym_model(num_envs: int, seconds: float) -> float:
    path = Path(gym.envs.mujoco.__file__).parent / "assets" / "humanoid.xml"
    engine = make_engine(path, num_envs, SimCfg(engine="cpu"))
    lo, hi = (torch.as_tensor(engine.model.actuator_ctrlrange[:, i]) for i in (0, 1))
    gen = torch.Generator().manual_seed(0)
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        engine.ctrl.copy_(
            lo
            + (hi - lo) * torch.rand(num_envs, engine.model.nu, generator=gen, dtype=torch.float64)
        )
        engine.step(5)
        calls += 1
    return calls * num_envs * 5 / elapsed


def bench_row(engine: str, n: int, bare: str, r: dict) -> str:
    """A markdown row of the humanoid table from a run_bench result."""
    ceiling = r["physics_steps_per_s"] / r["decimation"]
    cells = [
        engine,
        str(n),
        bare,
        f"{r['physics_steps_per_s']:,.0f}",
        f"{r['env_steps_per_s']:,.0f}",
        f"{r['env_steps_per_s_inference']:,.0f}",
        f"{r['env_steps_per_s_training']:,.0f}",
        f"{r['env_steps_per_s'] / ceiling:.2f}",
        f"{r['env_steps_per_s_training'] / ceiling:.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--warp_envs", type=int, default=64)
    parser.add_argument("--gym_envs", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    cores = available_cores()
    print(
        f"{cores} cores, mujoco {mujoco.__version__}, torch {torch.__version__}, "
        f"gymnasium {gym.__version__}"
    )

    from robolearn.app.configs import build_setup

    task_cfg = build_setup("humanoid_walk", []).env_cfg
    dt, decimation = task_cfg.sim.physics_dt, task_cfg.decimation
    print(
        f"\n### robolearn on its humanoid (humanoid_walk: physics dt {dt} s, "
        f"decimation {decimation})\n"
    )
    print(
        "| engine | envs | bare mujoco.batch loop (physics/s) | robolearn physics/s (in run) | "
        "env steps/s | +inference | +training | env / ceiling | training / ceiling |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    from robolearn.assets import asset_path

    from robolearn.sim import compile_model

    humanoid = compile_model(asset_path("humanoid/scene.xml"))
    humanoid.opt.timestep = dt or humanoid.opt.timestep  # the task's, not the asset's
    rng = np.random.default_rng(0)
    stand = humanoid.key("stand").ctrl
    for n in args.envs:

        def noisy_stand(n: int = n) -> np.ndarray:
            return stand + 0.1 * rng.standard_normal((n, humanoid.nu))

        bare = bare_batch(humanoid, n, decimation, args.seconds, noisy_stand)
        r = run_bench("humanoid_walk", n, "cpu", seconds=args.seconds, rounds=3)
        print(bench_row("cpu", n, f"{bare:,.0f}", r), flush=True)
    # The same robot at half the physics step and twice the substeps (humanoid_walk's
    # settings before it moved to 0.01 s): the managers and PPO cost the same per env step,
    # so their share depends on how much physics one env step holds.
    fine = ["env.sim.physics_dt=0.005", "env.decimation=4"]
    n = args.envs[0]
    r = run_bench("humanoid_walk", n, "cpu", seconds=args.seconds, rounds=3, overrides=fine)
    print(bench_row("cpu, dt 0.005 x 4", n, "-", r), flush=True)
    r = run_bench(
        "humanoid_walk",
        args.warp_envs,
        "warp-cpu",
        seconds=args.seconds,
        rounds=2,
        train_iterations=1,
    )
    print(bench_row("warp-cpu", args.warp_envs, "-", r), flush=True)

    print(
        "\n### gymnasium Humanoid-v5 beside robolearn's cpu engine, same MJCF (physics steps/s)\n"
    )
    print("| runner | envs | physics steps/s | env steps/s (5 physics each) |")
    print("|---|---:|---:|---:|")
    best = 0.0
    for mode in ("sync", "async"):
        for n in args.gym_envs:
            rate = gym_vector(mode, n, args.seconds)
            best = max(best, rate)
            print(
                f"| gymnasium make_vec {mode} | {n} | {rate:,.0f} | {rate / 5:,.0f} |", flush=True
            )
    for n in args.envs:
        rate = robolearn_on_gym_model(n, args.seconds)
        print(f"| robolearn cpu engine | {n} | {rate:,.0f} | {rate / 5:,.0f} |", flush=True)
        print(f"| ratio robolearn / best gymnasium | | {rate / best:.1f}x | |", flush=True)


if __name__ == "__main__":
    main()
