"""Physics and env steps/s of a task on the Newton engine's solvers beside the cpu and
warp-cpu engines, side by side in one process, round-robin (this machine is shared: the
ratios are what to read).

    python benchmarks/newton_speed.py --task humanoid_walk --num_envs 256 1024
    python benchmarks/newton_speed.py --num_envs 4096 --engines cuda newton/mujoco  # a GPU

For each env count every engine is built once; then ``--rounds`` rounds step each in turn
for ``--seconds`` (at least ``--min_steps`` calls) twice: the bare engine (``step`` of the
task's ``decimation`` physics steps, no resets, no managers: physics steps/s), then the
env with random actions in [-1, 1] (resets and all managers included: env steps/s).
Medians over the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from robolearn.app.configs import build_setup
from robolearn.env import ManagerBasedRLEnv
from robolearn.threads import single_threaded

#: engine or engine/solver, the first the baseline of the ratios
ENGINES = (
    "cpu",
    "warp-cpu",
    "newton-cpu/mujoco",
    "newton-cpu/featherstone",
    "newton-cpu/xpbd",
    "newton-cpu/semi_implicit",
)


def make_env(task: str, num_envs: int, engine: str, solver: str | None) -> ManagerBasedRLEnv:
    overrides = [f"env.sim.newton.solver={solver}"] if solver else []
    setup = build_setup(task, overrides, num_envs=num_envs, engine=engine)
    env = ManagerBasedRLEnv(setup.env_cfg)
    env.reset()
    env.step(
        torch.zeros(env.num_envs, env.action_manager.total_action_dim, device=env.device)
    )  # compile, capture
    return env


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def window(env: ManagerBasedRLEnv, seconds: float, min_steps: int) -> tuple[float, float]:
    """(physics steps/s, env steps/s) over one window: the bare engine stepping ``decimation``
    physics steps per call, then the env stepping with random actions; the device (on
    CUDA) synchronised at each window's ends."""
    n, dec, engine = env.num_envs, env.cfg.decimation, env.scene.engine
    rates = []
    for bare in (True, False):
        steps = 0
        _sync(env.device)
        start = time.perf_counter()
        while steps < min_steps or time.perf_counter() - start < seconds:
            if bare:
                engine.step(dec)
            else:
                env.step(
                    torch.rand(n, env.action_manager.total_action_dim, device=env.device) * 2 - 1
                )
            steps += 1
        _sync(env.device)
        rates.append(steps * n * (dec if bare else 1) / (time.perf_counter() - start))
    return rates[0], rates[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--num_envs", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--min_steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--engines", nargs="+", default=list(ENGINES), help="engine or engine/solver; first: 1.0"
    )
    args = parser.parse_args()
    base_name = args.engines[0].replace("/", ", ")
    print(
        f"| envs | engine | physics steps/s | env steps/s | physics vs {base_name} "
        f"| env vs {base_name} |"
    )
    print("|---:|---|---:|---:|---:|---:|")
    for n in args.num_envs:
        keys = [tuple(e.split("/")) if "/" in e else (e, None) for e in args.engines]
        envs = {k: make_env(args.task, n, *k) for k in keys}
        rates: dict[tuple, list[tuple[float, float]]] = {k: [] for k in envs}
        with single_threaded(next(iter(envs.values())).device):
            for _ in range(args.rounds):
                for key, env in envs.items():
                    rates[key].append(window(env, args.seconds, args.min_steps))
        medians = {
            k: (statistics.median(p for p, _ in v), statistics.median(e for _, e in v))
            for k, v in rates.items()
        }
        base = medians[keys[0]]
        for (engine, solver), (physics, env_rate) in medians.items():
            label = engine if solver is None else f"{engine}, {solver}"
            print(
                f"| {n} | {label} | {physics:,.0f} | {env_rate:,.0f} | "
                f"{physics / base[0]:.3f} | {env_rate / base[1]:.3f} |",
                flush=True,
            )
        del envs


if __name__ == "__main__":
    main()
