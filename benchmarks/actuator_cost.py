"""What each actuator model costs per env step, against the MJCF's own position actuators.

    python benchmarks/actuator_cost.py [num_envs ...] [--engine cpu] [--steps 40]
    python benchmarks/actuator_cost.py 1024 4096 --physics --ways implicit,delay --rounds 12

Steps ``quadruped_walk``'s env (cpu engine, random actions, robots falling and resetting as
early in training) with its joints driven seven ways, in alternation, and prints one JSON
line per way and size: env steps/s and the ratio to the MJCF's actuators. The gains are the
MJCF's own (kp 30/35/40 N m/rad at hip/thigh/calf, kv 0.8/0.8/1.0, 25/25/35 N m), so every
way drives the same robot:

* ``mjcf``: the MJCF's ``<position>`` actuators;
* ``implicit``: ``ImplicitPDCfg`` (the same MuJoCo loop, written from the config);
* ``ideal_pd``: ``IdealPDCfg``, the PD law in torch at every physics step;
* ``dc_motor``: ``DCMotorCfg``, the same with a torque-speed line (stall 1.25x the limit,
  30 rad/s, 20 at the calf);
* ``delay``: ``ImplicitPDCfg`` with a delay of 0-2 physics steps (MuJoCo runs it);
* ``dc_delay``: ``DCMotorCfg`` with that delay (robolearn's ring of targets);
* ``net``: ``ActuatorNetCfg``, a learned net of 3 x 32 softsign units over a history of 3
  (untrained weights: the cost does not depend on them; it does not stand the robot).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from robolearn.actuators.network import save_actuator_net
from robolearn.env import ManagerBasedRLEnv
from robolearn.registry import get_task
from robolearn.scene import ActuatorNetCfg, DCMotorCfg, IdealPDCfg, ImplicitPDCfg

GAINS = {
    "joints": ".*",
    "stiffness": {".*_hip": 30.0, ".*_thigh": 35.0, ".*_calf": 40.0},
    "damping": {".*_calf": 1.0, ".*": 0.8},
    "effort_limit": {".*_calf": 35.0, ".*": 25.0},
}
LINE = {
    "saturation_effort": {".*_calf": 43.75, ".*": 31.25},
    "velocity_limit": {".*_calf": 20.0, ".*": 30.0},
}
NET = str(Path(tempfile.gettempdir()) / "robolearn_actuator_cost_net.pt")
WAYS = {
    "mjcf": None,
    "implicit": ImplicitPDCfg(**GAINS),
    "ideal_pd": IdealPDCfg(**GAINS),
    "dc_motor": DCMotorCfg(**GAINS, **LINE),
    "delay": ImplicitPDCfg(**GAINS, delay=(0, 2)),
    "dc_delay": DCMotorCfg(**GAINS, **LINE, delay=(0, 2)),
    "net": ActuatorNetCfg(joints=".*", network_file=NET, history=3, effort_limit=25.0),
}


def write_net() -> None:
    """The ``net`` way's file: fitted nets have this shape (scripts/fit_actuator_net.py)."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(6, 32), torch.nn.Softsign(), torch.nn.Linear(32, 32),
              torch.nn.Softsign(), torch.nn.Linear(32, 32), torch.nn.Softsign(),
              torch.nn.Linear(32, 1)]  # fmt: skip
    save_actuator_net(torch.nn.Sequential(*layers), NET, history=3)


def steps_per_second(way: str, num_envs: int, engine: str, steps: int) -> float:
    cfg = get_task("quadruped_walk").env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = engine
    if WAYS[way] is not None:
        cfg.scene.robot.actuators = {"legs": WAYS[way]}
    env = ManagerBasedRLEnv(cfg)
    gen = torch.Generator().manual_seed(0)
    actions = [torch.randn(num_envs, env.num_actions, generator=gen) for _ in range(steps)]
    for a in actions[:5]:
        env.step(a)
    start = time.perf_counter()
    for a in actions:
        env.step(a)
    return steps * num_envs / (time.perf_counter() - start)


def physics_seconds(way: str, num_envs: int, engine: str, steps: int) -> float:
    """Seconds for ``steps`` decimations of the scene alone (no managers, no actions): what
    a way costs inside the physics step, where the env step's noise hides it."""
    from robolearn.scene import Scene

    cfg = get_task("quadruped_walk").env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = engine
    if WAYS[way] is not None:
        cfg.scene.robot.actuators = {"legs": WAYS[way]}
    scene = Scene(cfg.scene, cfg.sim)
    everyone = torch.ones(num_envs, dtype=torch.bool, device=scene.device)
    scene.reset_to_default(everyone)
    scene.forward(everyone)
    scene.step(cfg.decimation)
    start = time.perf_counter()
    for _ in range(steps):
        scene.step(cfg.decimation)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("num_envs", type=int, nargs="*", default=[1024, 4096])
    parser.add_argument("--engine", default="cpu")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ways", default=",".join(WAYS), help="comma-separated, mjcf first")
    parser.add_argument(
        "--physics", action="store_true", help="time the scene's step alone (median of rounds)"
    )
    args = parser.parse_args()
    ways = args.ways.split(",")
    write_net()
    if args.physics:
        for n in args.num_envs:
            seconds: dict[str, list[float]] = {w: [] for w in ways}
            for _ in range(args.rounds):
                for way in ways:
                    seconds[way].append(physics_seconds(way, n, args.engine, args.steps))
            base = statistics.median(seconds[ways[0]])
            for way, values in seconds.items():
                median = statistics.median(values)
                row = {"num_envs": n, "engine": args.engine, "way": way, "seconds": median}
                print(json.dumps(row | {f"vs_{ways[0]}": round(median / base, 3)}), flush=True)
        return
    for n in args.num_envs:
        rates: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(args.rounds):  # alternate, so that load on the machine hits all
            for way in ways:
                rates[way].append(steps_per_second(way, n, args.engine, args.steps))
        base = max(rates["mjcf"])
        for way, values in rates.items():
            best = max(values)
            row = {"num_envs": n, "engine": args.engine, "way": way, "env_steps_per_s": best}
            print(json.dumps(row | {"vs_mjcf": round(best / base, 3)}), flush=True)


if __name__ == "__main__":
    main()
