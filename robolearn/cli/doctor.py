"""``robolearn doctor MODEL_OR_TASK``: a robot's checks, one line each (PASS, WARN, FAIL)."""

from __future__ import annotations

import argparse
import json

from robolearn.cli.new import KINDS_HELP


def register(sub: argparse._SubParsersAction, help: str) -> None:
    """Add ``robolearn doctor`` to the subcommands."""
    p = sub.add_parser(
        "doctor",
        help=help,
        description=(
            "Check a robot before training it: a model (MJCF, URDF or menagerie: name) as "
            "`robolearn new robot` would make it, or a registered task's robot as the task "
            "trains it. One line per check: PASS, WARN or FAIL and what to change. Exit "
            "status 0 when nothing fails, 2 otherwise."
        ),
    )
    p.add_argument("target", metavar="MODEL_OR_TASK", help="a model file, menagerie: name, or task")
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="KEY=VALUE",
        help="a task's config overrides, as train takes them (env.sim.physics_dt=0.01)",
    )
    p.add_argument("--kind", choices=("auto", "legged", "arm"), default="auto", help=KINDS_HELP)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the checks; 2 when one fails."""
    from pathlib import Path

    from robolearn.app.doctor import FAIL, check_model, check_task
    from robolearn.registry import task_names

    target = args.target
    is_task = target in task_names() and not Path(target).exists()
    if args.overrides and not is_task:
        from robolearn.errors import RobolearnError

        raise RobolearnError(
            f"overrides ({' '.join(args.overrides)}) apply to a task, and {target} is a model"
        )
    checks = check_task(target, args.overrides) if is_task else check_model(target, args.kind)
    failed = any(c.status == FAIL for c in checks)
    if args.json:
        rows = [{"status": c.status, "check": c.name, "text": c.text} for c in checks]
        print(json.dumps({"target": target, "task": is_task, "checks": rows, "ok": not failed}))
    else:
        print(f"robolearn doctor {'task' if is_task else 'model'} {target}")
        for check in checks:
            print(check.line())
    return 2 if failed else 0
