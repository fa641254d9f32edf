"""Training on a busy machine: how much slower the rollout and the PPO update get when other
processes compete for the cores, under OpenMP's default wait policy and under robolearn's.

Each configuration runs in a fresh process (OpenMP reads its wait policy once, when torch
loads it): the task's training loop for ``--iterations`` iterations, timing each
iteration's collection (env steps + policy) and learning (``alg.update``), the first
iteration left out. "loaded" runs the same beside ``--busy`` busy-loop processes. With B
busy processes on C cores, a fair scheduler leaves this process about C / (C + B) of the
machine when it wants all of it, so a loaded/idle time ratio near (C + B) / C is the best
a program can do; far above it means threads wait on each other instead of working.

    python benchmarks/threads_under_load.py [--task humanoid_walk] [--num_envs 1024]
        [--iterations 4] [--busy 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
if sys.argv[4] != "robolearn":
    import torch  # loaded before robolearn: OpenMP keeps the environment's settings
import robolearn  # sets robolearn's OpenMP settings if torch is not loaded yet, as the CLI does
import torch
from robolearn.wrappers.rsl_rl import RslRlVecEnv
from robolearn.env import ManagerBasedRLEnv
from robolearn.rl.runner import Runner
from robolearn.app.configs import build_setup

task, num_envs, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
setup = build_setup(task, [], num_envs=num_envs, engine="cpu")
env = ManagerBasedRLEnv(setup.env_cfg)
agent = setup.agent_cfg.to_rsl_rl()
agent["save_interval"] = 10**9
runner = Runner(RslRlVecEnv(env), agent, device="cpu")
update, learn_s = runner.alg.update, []

def timed_update():
    threads.append(torch.get_num_threads())
    t = time.perf_counter()
    out = update()
    learn_s.append(time.perf_counter() - t)
    return out

threads = []
runner.alg.update = timed_update
total_s = []
for i in range(iterations):
    t = time.perf_counter()
    runner.learn(i + 1, log=lambda _line: None, init_at_random_ep_len=False)
    total_s.append(time.perf_counter() - t)
collect_s = [t - u for t, u in zip(total_s, learn_s)]
print(json.dumps({"collect": collect_s[1:], "learn": learn_s[1:],
                  "threads": threads[-1]}))
"""

# label -> the OpenMP environment of the child; None: what importing robolearn sets
POLICIES: dict[str, dict[str, str] | None] = {
    "OpenMP's default": {},
    "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
    "robolearn's (GOMP_SPINCOUNT=10000)": None,
}


def run_child(task: str, num_envs: int, iterations: int, policy: dict[str, str] | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(policy or {})
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            task,
            str(num_envs),
            str(iterations),
            "robolearn" if policy is None else "given",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def busy_loops(count: int) -> list[subprocess.Popen]:
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    time.sleep(1.0)  # let the scheduler see them as running
    return procs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--num_envs", type=int, default=1024)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--busy", type=int, default=2, help="competing busy-loop processes")
    parser.add_argument("--rounds", type=int, default=2, help="idle/loaded pairs per policy")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    fair = (cores + args.busy) / cores
    print(
        f"{args.task}, {args.num_envs} envs, cpu engine, {cores} cores; loaded = beside "
        f"{args.busy} busy-loop processes (fair slowdown ~{fair:.1f}x); medians over "
        f"{args.rounds} x {args.iterations - 1} iterations"
    )
    print(
        "| wait policy | update threads | learning s/it idle | loaded | loaded/idle "
        "| collection s/it idle | loaded | loaded/idle |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, policy in POLICIES.items():
        idle: dict[str, list[float]] = {"collect": [], "learn": []}
        loaded: dict[str, list[float]] = {"collect": [], "learn": []}
        for _ in range(args.rounds):  # interleaved, so drifts of the machine hit both
            r = run_child(args.task, args.num_envs, args.iterations, policy)
            for k in idle:
                idle[k] += r[k]
            procs = busy_loops(args.busy)
            try:
                r = run_child(args.task, args.num_envs, args.iterations, policy)
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
            for k in loaded:
                loaded[k] += r[k]
        med = {k: (statistics.median(idle[k]), statistics.median(loaded[k])) for k in idle}
        (li, ll), (ci, cl) = med["learn"], med["collect"]
        print(
            f"| {label} | {r['threads']} | {li:.2f} | {ll:.2f} | {ll / li:.1f}x "
            f"| {ci:.2f} | {cl:.2f} | {cl / ci:.1f}x |",
            flush=True,
        )


if __name__ == "__main__":
    main()
