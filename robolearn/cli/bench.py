"""``robolearn bench``: physics, env, inference and training throughput side by side."""

from __future__ import annotations

import argparse
import json

from robolearn.cli.common import ENGINE_CHOICES, positive_float, positive_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="measure a task's throughput",
        description=(
            "Measure, in one run: bare physics steps/s, env steps/s with all managers, with "
            "policy inference, and with training, the overhead over the bare engine, and "
            "peak memory."
        ),
    )
    p.add_argument("--task", required=True)
    p.add_argument("--num_envs", type=positive_int)
    p.add_argument("--engine", default="auto", choices=ENGINE_CHOICES)
    p.add_argument("--seconds", type=positive_float, default=3.0, help="per timed phase and round")
    p.add_argument("--rounds", type=positive_int, default=3)
    p.add_argument("--train_iterations", type=positive_int, default=3)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("overrides", nargs="*", metavar="OVERRIDE")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from robolearn.rl.bench import format_report, run_bench

    result = run_bench(
        args.task,
        args.num_envs,
        args.engine,
        seconds=args.seconds,
        rounds=args.rounds,
        train_iterations=args.train_iterations,
        overrides=args.overrides,
    )
    print(json.dumps(result) if args.json else format_report(result), flush=True)
    return 0
