"""``robolearn bench``: physics, env, inference and training throughput side by side."""

from __future__ import annotations

import argparse
import json

from robolearn.cli.common import add_env_args, check_task, positive_float, positive_int


def register(sub: argparse._SubParsersAction, help: str) -> None:
    """Add ``robolearn bench`` to the subcommands."""
    p = sub.add_parser(
        "bench",
        help=help,
        description=(
            "Measure, in one run: bare physics steps/s, env steps/s with all managers, with "
            "policy inference, and with training, the overhead over the bare engine, and "
            "peak memory (on CUDA: torch's and MuJoCo Warp's GPU memory too). On CUDA the "
            "times are of the GPU's work: CUDA events inside each timed window, the device "
            "synchronised at its ends. --device and --engine choose where it runs, as for "
            "train."
        ),
    )
    add_env_args(p)
    p.add_argument(
        "--seconds",
        type=positive_float,
        default=3.0,
        help="seconds of each timed env phase, in each round",
    )
    p.add_argument(
        "--rounds",
        type=positive_int,
        default=3,
        help="rounds of the env phases; the report gives their medians",
    )
    p.add_argument(
        "--train_iterations",
        type=positive_int,
        default=3,
        help="timed PPO iterations (after one untimed warm-up); the report gives their median",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="env.<path>=<value> or agent.<path>=<value>, as for train",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Measure the task and print the report; returns the exit status."""
    check_task(args.task)
    from robolearn.app.bench import format_report, run_bench

    result = run_bench(
        args.task,
        args.num_envs,
        args.engine,
        seconds=args.seconds,
        rounds=args.rounds,
        train_iterations=args.train_iterations,
        overrides=args.overrides,
        device=args.device,
    )
    print(json.dumps(result) if args.json else format_report(result), flush=True)
    return 0
