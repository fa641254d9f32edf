"""What each actuator model costs per env step, against the MJCF's own position actuators.

    python benchmarks/actuator_cost.py [num_envs ...] [--engine cpu] [--steps 40]

Steps ``quadruped_walk``'s env (cpu engine, random actions, robots falling and resetting as
early in training) with its joints driven five ways, in alternation, and prints one JSON
line per way and size: env steps/s and the ratio to the MJCF's actuators. The gains are the
MJCF's own (hips 30, thighs and calves 35 N m/rad, kv 0.8, 25 N m), so every way drives
the same robot:

* ``mjcf``: the MJCF's ``<position>`` actuators;
* ``implicit``: ``ImplicitPDCfg`` (the same MuJoCo loop, written from the config);
* ``ideal_pd``: ``IdealPDCfg``, the PD law in torch at every physics step;
* ``dc_motor``: ``DCMotorCfg``, the same with a torque-speed line (stall 30 N m, 30 rad/s);
* ``delay``: ``ImplicitPDCfg`` with a delay of 0-2 physics steps.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from robolearn.env import ManagerBasedRLEnv
from robolearn.registry import get_task
from robolearn.scene import DCMotorCfg, IdealPDCfg, ImplicitPDCfg

GAINS = {
    "joints": ".*",
    "stiffness": {".*_hip": 30.0, ".*": 35.0},
    "damping": 0.8,
    "effort_limit": 25.0,
}
WAYS = {
    "mjcf": None,
    "implicit": ImplicitPDCfg(**GAINS),
    "ideal_pd": IdealPDCfg(**GAINS),
    "dc_motor": DCMotorCfg(**GAINS, saturation_effort=30.0, velocity_limit=30.0),
    "delay": ImplicitPDCfg(**GAINS, delay=(0, 2)),
}


def steps_per_second(way: str, num_envs: int, engine: str, steps: int) -> float:
    cfg = get_task("quadruped_walk").env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = engine
    if WAYS[way] is not None:
        cfg.scene.actuators = {"legs": WAYS[way]}
    env = ManagerBasedRLEnv(cfg)
    gen = torch.Generator().manual_seed(0)
    actions = [torch.randn(num_envs, env.num_actions, generator=gen) for _ in range(steps)]
    for a in actions[:5]:
        env.step(a)
    start = time.perf_counter()
    for a in actions:
        env.step(a)
    return steps * num_envs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("num_envs", type=int, nargs="*", default=[1024, 4096])
    parser.add_argument("--engine", default="cpu")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for n in args.num_envs:
        rates: dict[str, list[float]] = {w: [] for w in WAYS}
        for _ in range(args.rounds):  # alternate, so that load on the machine hits all
            for way in WAYS:
                rates[way].append(steps_per_second(way, n, args.engine, args.steps))
        base = max(rates["mjcf"])
        for way, values in rates.items():
            best = max(values)
            row = {"num_envs": n, "engine": args.engine, "way": way, "env_steps_per_s": best}
            print(json.dumps(row | {"vs_mjcf": round(best / base, 3)}), flush=True)


if __name__ == "__main__":
    main()
