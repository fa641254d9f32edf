"""``robolearn train``: train a task with rsl-rl's PPO."""

from __future__ import annotations

import argparse

from robolearn.cli.common import (
    add_env_args,
    check_task,
    integer,
    options,
    positive_float,
    positive_int,
)


def register(sub: argparse._SubParsersAction, help: str) -> None:
    """Add ``robolearn train`` to the subcommands."""
    p = sub.add_parser(
        "train",
        help=help,
        description=(
            "Train a task (with PPO unless --algo says). Writes "
            "logs/<experiment_name>/<time>_<run_name>/ with the resolved configs, "
            "checkpoints, TensorBoard scalars and progress.jsonl. Ctrl-C or SIGTERM saves "
            "a checkpoint and exits; --resume continues it."
        ),
        epilog="overrides: env.<path>=<value> or agent.<path>=<value>, e.g. "
        "env.rewards.track_lin_vel_xy.weight=2.0 agent.algorithm.learning_rate=3e-4",
    )
    add_env_args(
        p,
        num_envs_help="parallel envs (default: the task's, or the --from run's)",
        task_required=False,
    )
    _add_start_args(p)
    _add_output_args(p)
    _add_distributed_args(p)
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="env.<path>=<value> or agent.<path>=<value>",
    )
    p.set_defaults(run=run)


def _add_start_args(p: argparse.ArgumentParser) -> None:
    """What the run starts from: --from, --seed, --max_iterations, --resume and what it
    continues."""
    p.add_argument(
        "--from",
        dest="from_run",
        metavar="RUN_DIR",
        help="start a new run with the configs of the run in RUN_DIR (its params/); "
        "flags and overrides given here apply on top",
    )
    p.add_argument(
        "--seed",
        type=integer,
        help="seed of the env and the policy (default: the task's, or the --from run's)",
    )
    p.add_argument(
        "--max_iterations",
        type=integer,
        help="learning iterations in total, resumed ones included (default: the task's, or "
        "the --from run's)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue a run: the latest of the task, or --load_run's",
    )
    p.add_argument(
        "--load_run",
        help="run folder name (or regex, or path) to resume (default: the newest with a "
        "checkpoint)",
    )
    p.add_argument(
        "--checkpoint",
        help="with --resume: the checkpoint of that run to continue (default: latest); with "
        "--from: a checkpoint of that run (name or path) whose learner state, iterations "
        "included, the new run continues with its own configs and folder (a fork)",
    )
    p.add_argument(
        "--algo",
        help="the learner: ppo (rsl-rl's PPO), shac (backpropagates the task's rewards "
        "through Newton's differentiable physics, docs/differentiable.md), td3 or sac "
        "(off-policy from a replay buffer, docs/offpolicy.md); default: the resumed or "
        "--from run's, else ppo",
    )


def _add_output_args(p: argparse.ArgumentParser) -> None:
    """Where the run writes and what: the run folder, the logger, videos."""
    p.add_argument("--run_name", default="", help="suffix of the run folder name (default: none)")
    p.add_argument(
        "--logger",
        choices=["tensorboard", "wandb"],
        help="where scalars go besides progress.jsonl; wandb runs offline unless WANDB_MODE "
        "is set (default: agent.logger, tensorboard unless overridden)",
    )
    p.add_argument("--video", action="store_true", help="record clips of env 0 while training")
    p.add_argument(
        "--video_length", type=positive_int, default=200, help="env steps per clip with --video"
    )
    p.add_argument(
        "--video_interval",
        type=positive_int,
        default=2000,
        help="env steps between clip starts with --video",
    )
    p.add_argument(
        "--headless",
        action="store_true",
        help="accepted for Isaac Lab users; robolearn never opens a window while training",
    )
    p.add_argument("--log_root", default="logs", help="folder that holds the run folders")


def _add_distributed_args(p: argparse.ArgumentParser) -> None:
    """Training on several processes: --distributed, --nproc, --dist_timeout."""
    p.add_argument(
        "--distributed",
        action="store_true",
        help="one rank of a torchrun job: NCCL on GPUs, gloo on CPUs",
    )
    p.add_argument(
        "--nproc",
        type=positive_int,
        help="start K ranks on this machine with torchrun, implying --distributed (default: "
        "one process, no torchrun)",
    )
    p.add_argument(
        "--dist_timeout",
        type=positive_float,
        default=300.0,
        help="seconds a rank may wait for the others before the job fails",
    )


def run(args: argparse.Namespace) -> int:
    """Train (or start ``--nproc`` ranks that do); returns the exit status. The library
    checks the flags (robolearn.app.train)."""
    if args.from_run is None:  # else the task is the --from run's
        check_task(args.task)
    if args.nproc and args.algo is not None:
        from robolearn.errors import RobolearnError
        from robolearn.rl.learner import algorithm

        algo = algorithm(args.algo)
        if not algo.takes_ranks:
            raise RobolearnError(algo.refusal("--nproc"))
    from robolearn.app.train import TrainOptions, check, train

    if args.nproc:
        from robolearn.app.launch import launch_local

        check(options(TrainOptions, args, distributed=True))  # one line, not one per rank
        return launch_local(args.nproc, args.argv)

    opts = options(TrainOptions, args)
    return train(opts, log=lambda line: print(line, flush=True))
