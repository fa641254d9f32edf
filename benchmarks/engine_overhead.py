"""Physics steps/s of robolearn's cpu engine beside a bare ``mujoco.batch.Batch`` loop.

Both run the robolearn humanoid on flat ground at humanoid_walk's physics step and
decimation (read from the task), writing new controls before every update, on the same
threads.
"bare" binds the same fields robolearn's engine binds (what an RL loop reads), so the ratio
is the cost of our layer: torch views, the divergence check and the Python around them.
Runs are interleaved (bare, ours, bare, ours, ...) and the median ratio is reported, so that
drift in a shared machine's speed cancels.

    python benchmarks/engine_overhead.py [--envs 256 1024 4096] [--seconds 3] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import mujoco
import numpy as np
import torch
from mujoco import batch as mjbatch
from robolearn.assets import asset_path

from robolearn.app.configs import build_setup
from robolearn.sim import SimCfg, compile_model, make_engine
from robolearn.sim.engine import FIELDS  # the fields robolearn's engines bind
from robolearn.threads import available_cores


def controls(model: mujoco.MjModel, num_envs: int) -> np.ndarray:
    """Standing targets plus small fixed noise, so the robots move but stay up a while."""
    rng = np.random.default_rng(0)
    return model.key("stand").ctrl + 0.05 * rng.standard_normal((num_envs, model.nu))


def bare_loop(model: mujoco.MjModel, num_envs: int, decimation: int, seconds: float) -> float:
    batch = mjbatch.Batch(model, num_envs, available_cores())
    for f in FIELDS:
        batch.bind(f)
    batch.reset()
    batch.bind("qpos")[:] = model.key("stand").qpos
    batch.forward()
    ctrl, u = batch.bind("ctrl"), controls(model, num_envs)
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        ctrl[:] = u
        batch.step(nstep=decimation)
        steps += 1
    return steps * decimation * num_envs / elapsed


def robolearn_loop(model: mujoco.MjModel, num_envs: int, decimation: int, seconds: float) -> float:
    engine = make_engine(model, num_envs, SimCfg(engine="cpu"))
    engine.reset(qpos=torch.as_tensor(model.key("stand").qpos))
    u = torch.as_tensor(controls(model, num_envs))
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        engine.ctrl.copy_(u)
        engine.step(decimation)
        engine.diverged()
        steps += 1
    return steps * decimation * num_envs / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--seconds", type=float, default=3.0, help="per timed run")
    parser.add_argument("--rounds", type=int, default=5, help="bare/ours pairs per size")
    args = parser.parse_args()
    task = build_setup("humanoid_walk", []).env_cfg
    decimation = task.decimation
    model = compile_model(asset_path("humanoid/scene.xml"))
    model.opt.timestep = task.sim.physics_dt or model.opt.timestep
    print(
        f"humanoid nq={model.nq} nv={model.nv} nu={model.nu}, dt {model.opt.timestep}, "
        f"decimation {decimation}, "
        f"{available_cores()} threads, mujoco {mujoco.__version__}, torch {torch.__version__}"
    )
    print(
        "| envs | bare mujoco.batch (physics steps/s) | robolearn cpu (physics steps/s) "
        "| robolearn / bare (median of pairs) | overhead |"
    )
    print("|---:|---:|---:|---:|---:|")
    for n in args.envs:
        bare, ours, ratios = [], [], []
        for _ in range(args.rounds):
            bare.append(bare_loop(model, n, decimation, args.seconds))
            ours.append(robolearn_loop(model, n, decimation, args.seconds))
            ratios.append(ours[-1] / bare[-1])
        ratio = statistics.median(ratios)
        print(
            f"| {n} | {statistics.median(bare):,.0f} | {statistics.median(ours):,.0f} "
            f"| {ratio:.3f} | {100 * (1 - ratio):.1f}% |",
            flush=True,
        )


if __name__ == "__main__":
    main()
