"""Env steps/s of panda_lift (joint actions) and panda_lift_ik (differential IK) side by side,
and the IK action's share of the IK task's env step.

Random actions in the training env (cpu engine unless ``--engine``), the two tasks
interleaved round by round so that load on a shared machine falls on both alike; the
IK share is the time spent in the IK term's ``process_actions`` and ``apply_actions``
(the Jacobian from the joint bodies' poses, the damped least-squares solve, the clamp) over the
step's, measured inside the same steps.

    python benchmarks/manipulation_step.py --num_envs 1024 4096
"""

from __future__ import annotations

import argparse
import time

import torch

from robolearn.env import ManagerBasedRLEnv
from robolearn.registry import get_task, load_tasks


def make(task: str, num_envs: int, engine: str) -> ManagerBasedRLEnv:
    cfg = get_task(task).make_env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = engine
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    return env


class Stopwatch:
    """Seconds spent in the wrapped methods of one object."""

    def __init__(self, obj, names: tuple[str, ...]) -> None:
        self.seconds = 0.0
        for name in names:
            inner = getattr(obj, name)

            def timed(*args, _inner=inner, **kwargs):
                start = time.perf_counter()
                try:
                    return _inner(*args, **kwargs)
                finally:
                    self.seconds += time.perf_counter() - start

            setattr(obj, name, timed)


def steps(env: ManagerBasedRLEnv, n: int) -> float:
    """Seconds for ``n`` env steps of uniform random actions in [-1, 1]."""
    dim = env.action_manager.total_action_dim
    actions = [torch.rand(env.num_envs, dim, device=env.device) * 2 - 1 for _ in range(n)]
    start = time.perf_counter()
    for a in actions:
        env.step(a)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_envs", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--engine", default="cpu")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20, help="env steps per round")
    args = parser.parse_args()
    load_tasks()
    print("| envs | panda_lift steps/s | panda_lift_ik steps/s | ratio | IK share of the step |")
    print("|---:|---:|---:|---:|---:|")
    for n in args.num_envs:
        joint, ik = make("panda_lift", n, args.engine), make("panda_lift_ik", n, args.engine)
        watch = Stopwatch(ik.action_manager.terms["arm"], ("process_actions", "apply_actions"))
        steps(joint, 5), steps(ik, 5)  # warm-up
        watch.seconds = 0.0
        t_joint = t_ik = 0.0
        for _ in range(args.rounds):
            t_joint += steps(joint, args.steps)
            t_ik += steps(ik, args.steps)
        total = args.rounds * args.steps * n
        print(
            f"| {n} | {total / t_joint:,.0f} | {total / t_ik:,.0f} | {t_joint / t_ik:.2f} | "
            f"{watch.seconds / t_ik:.1%} |",
            flush=True,
        )
        del joint, ik


if __name__ == "__main__":
    main()
