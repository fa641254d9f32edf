"""The ray caster's share of the env step: quadruped_walk_rough with its height scan read
from the height field and from a 187-ray grid ray caster, quadruped_walk_rough_obstacles
(the same rays, six mocap boxes per env on the terrain), and quadruped_walk (flat ground)
with a 64 x 48 depth pinhole on its trunk, side by side.

Random actions in the training env (cpu engine unless ``--engine``), the variants
interleaved round by round so that load on a shared machine falls on all alike. A ray
caster's share is the time spent in its cast (:meth:`RayCaster._update`: the rays'
frames, MuJoCo's ray casts, the casts again past the robot's own bodies) over its
variant's step, measured inside the same steps.

    python benchmarks/ray_caster_share.py --num_envs 1024

A depth pinhole over the rough terrain's height field is far slower on cpu (its shallow
rays cross many of the field's cells): ``--rough_depth_envs 64`` times one reading of it.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch
from manipulation_step import Stopwatch, steps

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnv
from robolearn.managers import ObservationTermCfg
from robolearn.registry import get_task, load_tasks
from robolearn.scene import GridPattern, PinholePattern, RayCasterCfg

VARIANTS = ("height field", "187 rays", "187 rays, 6 boxes", "flat, 64x48 depth")

# a depth camera on the trunk, 10 degrees down, seeing 5 m
DEPTH = RayCasterCfg(
    pattern=PinholePattern(64, 48), offset=(0.25, 0.0, 0.0), rot=(0.996, 0.0, 0.087, 0.0),
    alignment="full", max_distance=5.0,
)  # fmt: skip


def make(variant: str, num_envs: int, engine: str) -> ManagerBasedRLEnv:
    task = "quadruped_walk" if "flat" in variant else "quadruped_walk_rough"
    if "boxes" in variant:
        task = "quadruped_walk_rough_obstacles"  # its own scan: the same 187 rays
    cfg = get_task(task).make_env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = engine
    if variant == "187 rays":
        cfg.scene.sensors = {"scan": RayCasterCfg(pattern=GridPattern((1.6, 1.0), 0.1))}
        for group in cfg.observations.values():
            field = group.terms["height_scan"]
            group.terms["height_scan"] = dataclasses.replace(
                field, params={**field.params, "sensor": "scan"}
            )
    elif "depth" in variant:
        cfg.scene.sensors = {"depth": DEPTH}
        cfg.observations["policy"].terms["depth"] = ObservationTermCfg(
            mdp.ray_distances, params={"sensor": "depth"}
        )
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    return env


def rough_depth_read(num_envs: int, engine: str) -> float:
    """Seconds for one reading of the depth pinhole over the rough terrain."""
    cfg = get_task("quadruped_walk_rough").make_env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = engine
    cfg.scene.sensors = {"depth": DEPTH}
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    depth = env.scene.sensors["depth"]
    depth.invalidate(torch.ones(num_envs, dtype=torch.bool, device=env.device))
    start = time.perf_counter()
    depth.read()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_envs", type=int, default=1024)
    parser.add_argument("--engine", default="cpu")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10, help="env steps per round")
    parser.add_argument("--rough_depth_envs", type=int, default=0)
    args = parser.parse_args()
    load_tasks()
    if args.rough_depth_envs:
        n = args.rough_depth_envs
        seconds = rough_depth_read(n, args.engine)
        rays = n * DEPTH.pattern.width * DEPTH.pattern.height
        print(f"rough terrain, {n} envs: one 64x48 depth reading {seconds:.2f} s, "
              f"{seconds / rays * 1e6:.1f} us per ray")  # fmt: skip
        return
    envs = {v: make(v, args.num_envs, args.engine) for v in VARIANTS}
    watches = {
        v: {name: Stopwatch(s, ("_update",)) for name, s in env.scene.sensors.items()}
        for v, env in envs.items()
    }
    for env in envs.values():
        steps(env, 3)  # warm-up
    for per_sensor in watches.values():
        for watch in per_sensor.values():
            watch.seconds = 0.0
    seconds = dict.fromkeys(VARIANTS, 0.0)
    for _ in range(args.rounds):
        for v, env in envs.items():
            seconds[v] += steps(env, args.steps)
    total = args.rounds * args.steps * args.num_envs
    base = seconds["height field"]
    print(f"{args.num_envs} envs, {args.engine}, {args.rounds} rounds of {args.steps} steps")
    print("| variant | env steps/s | step time vs height field | scan share | depth share |")
    print("|---|---:|---:|---:|---:|")
    for v in VARIANTS:
        share = {n: w.seconds / seconds[v] for n, w in watches[v].items()}
        print(
            f"| {v} | {total / seconds[v]:,.0f} | {seconds[v] / base:.2f}x | "
            f"{share.get('scan', 0.0):.1%} | {share.get('depth', 0.0):.1%} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
