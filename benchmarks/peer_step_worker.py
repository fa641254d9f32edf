"""One side of ``peer_mjlab_g1.py``: builds one env, then takes a round of random-action
steps each time the driver writes a line, answering ``<steps> <wall s> <cpu s>``.

Runs under robolearn's Python (``--side robolearn``) or under a virtual environment with
mjlab installed (``--side mjlab``), so both stacks' envs stay built between rounds and the
rounds interleave. The CPU seconds (this process's, all threads) over the wall seconds say
how many cores a side kept busy.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch


def robolearn_env(task: str, num_envs: int, overrides: list[str]):
    from robolearn.wrappers import make_env

    env = make_env(task, num_envs=num_envs, engine="cpu", overrides=overrides)
    env.reset(seed=0)
    return env, env.num_actions


def mjlab_env(task: str, num_envs: int, overrides: list[str]):
    if overrides:
        raise SystemExit("peer_step_worker: --set is for the robolearn side")
    import mjlab.tasks  # noqa: F401  (registers the tasks)
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.tasks.registry import load_env_cfg

    cfg = load_env_cfg(task)
    cfg.scene.num_envs = num_envs
    env = ManagerBasedRlEnv(cfg=cfg, device="cpu")
    env.reset()
    return env, env.action_manager.total_action_dim


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=("robolearn", "mjlab"), required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--num_envs", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True, help="env steps per round")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    build = robolearn_env if args.side == "robolearn" else mjlab_env
    env, num_actions = build(args.task, args.num_envs, args.set)
    gen = torch.Generator().manual_seed(0)
    actions = [0.5 * torch.randn(args.num_envs, num_actions, generator=gen) for _ in range(8)]
    env.step(actions[0])  # the first step of a fresh env may still load or compile
    print("ready", flush=True)
    for _ in sys.stdin:
        cpu, wall = time.process_time(), time.perf_counter()
        for i in range(args.steps):
            env.step(actions[i % len(actions)])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"{args.steps * args.num_envs} {wall:.6f} {cpu:.6f}", flush=True)


if __name__ == "__main__":
    main()
