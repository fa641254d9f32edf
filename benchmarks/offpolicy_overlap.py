"""What overlapping collection with the updates gains the off-policy learners on this
machine: the iteration's time in each mode against collection plus learning.

    python benchmarks/offpolicy_overlap.py --task humanoid_walk --num_envs 1024 --rounds 3

For each mode, an ``OffPolicyLearner`` on the task's env (its own off-policy recipe plus
the overrides given, bf16 where the CPU has it) is warmed up (its buffer filled past
``learning_starts``), then timed over ``--iterations`` iterations, the modes interleaved
round by round (the machine is shared: compare within a round). Modes:

* ``sync``: each env step, then its updates, in one thread (the default);
* ``overlap/L``: a collector thread steps the envs while the updates run on L torch threads
  (``agent.offpolicy.overlap=true agent.offpolicy.learner_threads=L``).

Prints one JSON line per mode and round: seconds per iteration, and for ``sync`` the
seconds collecting and updating within it.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from robolearn.app.configs import build_setup
from robolearn.env import ManagerBasedRLEnv
from robolearn.rl.offpolicy.learner import OffPolicyLearner
from robolearn.threads import available_cores


def measure(args, overrides: list[str]) -> dict:
    setup = build_setup(args.task, overrides, num_envs=args.num_envs, engine="cpu", seed=1)
    env = ManagerBasedRLEnv(setup.env_cfg)
    env.reset()
    agent = setup.agent_cfg
    cfg = agent.offpolicy
    learner = OffPolicyLearner.for_agent(env, agent, "td3")
    steps = agent.num_steps_per_env
    try:
        learner.learn_iteration(max(steps, cfg.learning_starts + 2))  # warm up
        collect = update = 0.0
        tick = time.perf_counter()
        for _ in range(args.iterations):
            figures = learner.learn_iteration(steps)
            collect += figures["collect_s"]
            update += figures["update_s"]
        seconds = time.perf_counter() - tick
    finally:
        learner.close()
    n = args.iterations
    return {
        "s_per_iteration": seconds / n,
        "collect_s": collect / n,
        "update_s": update / n,
        "env_steps_per_s": steps * env.num_envs * n / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--num_envs", type=int, default=1024)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--learner_threads",
        default="1",
        help="comma-separated torch thread counts of the overlap modes",
    )
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    modes = {"sync": []}
    for threads in args.learner_threads.split(","):
        modes[f"overlap/{threads}"] = [
            "agent.offpolicy.overlap=true",
            f"agent.offpolicy.learner_threads={threads}",
        ]
    print(json.dumps({"cores": available_cores(), "torch_threads": torch.get_num_threads()}))
    for round_ in range(args.rounds):
        for mode, extra in modes.items():
            row = measure(args, [*args.overrides, *extra])
            print(json.dumps({"round": round_, "mode": mode, **row}), flush=True)


if __name__ == "__main__":
    main()
