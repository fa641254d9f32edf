"""What PPO's update costs per iteration under each learning-speed setting, side by side.

Builds the task's env and rsl-rl runner once per setting (the real ``Runner``, the task's
agent config plus the setting's overrides), collects one rollout, then times the update
(``alg.update()``) over that same stored rollout ``--repeats`` times, settings interleaved
round by round so that a busy machine slows them alike. Prints seconds per update (median)
and the ratio to the first setting.

    python benchmarks/update_cost.py --task humanoid_walk --num_envs 1024
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from robolearn.app.configs import build_setup
from robolearn.env import ManagerBasedRLEnv
from robolearn.rl.runner import Runner
from robolearn.wrappers.rsl_rl import RslRlVecEnv

ALG = "agent.algorithm"
PLAIN = ["agent.algorithm.symmetry.use_data_augmentation=false"]
SYM = ["agent.algorithm.symmetry.use_data_augmentation=true"]
FP32 = ["agent.algorithm.use_mixed_precision=false"]
BF16 = ["agent.algorithm.use_mixed_precision=true"]
RSL_RL_MIRROR_LOSS = "rsl-rl's mirror loss"
"""Not an override: restores rsl-rl's own ``Symmetry.compute_loss`` (a second actor pass per
mini-batch) in place of the runner's, which reuses the update's pass."""
COMPILED = ["agent.policy.compile=true"]
"""The MLPs compiled (``Runner.compile_networks``), by one untimed update before the timed
ones."""

# Every setting spells out symmetry and precision, whatever the task's defaults are.
SETTINGS = {
    "plain (fp32, no symmetry)": PLAIN + FP32,
    "bf16 autocast": PLAIN + BF16,
    "symmetry augmentation (fp32)": SYM + FP32,
    "symmetry augmentation + bf16": SYM + BF16,
    "symmetry augmentation + bf16, rsl-rl's second actor pass": SYM + BF16 + [RSL_RL_MIRROR_LOSS],
    "symmetry augmentation + bf16, 3 epochs": SYM + BF16 + [f"{ALG}.num_learning_epochs=3"],
    "symmetry augmentation + bf16, 2 mini-batches": SYM + BF16 + [f"{ALG}.num_mini_batches=2"],
    "symmetry augmentation + bf16, MLPs compiled": SYM + BF16 + COMPILED,
    "symmetry augmentation + bf16, ReLU": SYM + BF16 + ["agent.policy.activation=relu"],
}


def build(task: str, num_envs: int, overrides: list[str]) -> Runner:
    rsl_rl_mirror_loss = RSL_RL_MIRROR_LOSS in overrides
    overrides = [o for o in overrides if o != RSL_RL_MIRROR_LOSS]
    setup = build_setup(task, overrides, num_envs=num_envs, engine="cpu")
    env = ManagerBasedRLEnv(setup.env_cfg)
    agent = setup.agent_cfg.to_rsl_rl("cpu")
    agent["save_interval"] = 10**9
    runner = Runner(RslRlVecEnv(env), agent, device="cpu")
    if rsl_rl_mirror_loss:
        del runner.alg.symmetry.compute_loss  # the class's own method shows through again
    obs = runner.env.get_observations()
    runner.alg.train_mode()
    with torch.inference_mode():
        for _ in range(runner.cfg["num_steps_per_env"]):
            actions = runner.alg.act(obs)
            obs, rewards, dones, extras = runner.env.step(actions)
            runner.alg.process_env_step(obs, rewards, dones, extras)
        runner.alg.compute_returns(obs)
    torch.set_num_threads(runner._update_threads)
    if setup.agent_cfg.policy.compile:
        runner.compile_networks()
        start = time.perf_counter()
        time_update(runner)
        print(f"compiling the MLPs: the first update took {time.perf_counter() - start:.1f} s")
    return runner


def time_update(runner: Runner) -> float:
    """One update over the stored rollout (the update only reads it, then rewinds the
    storage's write cursor: set it back); the optimizer's state moves on."""
    start = time.perf_counter()
    runner.alg.update()
    seconds = time.perf_counter() - start
    runner.alg.storage.step = runner.cfg["num_steps_per_env"]
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--num_envs", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    runners = {name: build(args.task, args.num_envs, o) for name, o in SETTINGS.items()}
    times: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for _ in range(args.repeats):
        for name, runner in runners.items():
            times[name].append(time_update(runner))
    base = statistics.median(times[next(iter(SETTINGS))])
    print(f"{args.task}, {args.num_envs} envs, {args.repeats} updates each, interleaved")
    print("| setting | s per update (median) | vs plain |")
    print("|---|---:|---:|")
    for name, t in times.items():
        med = statistics.median(t)
        print(f"| {name} | {med:.3f} | {med / base:.2f} |")


if __name__ == "__main__":
    main()
