"""``robolearn list``: every registered task with its one-line description."""

from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction, help: str) -> None:
    """Add ``robolearn list`` to the subcommands."""
    p = sub.add_parser(
        "list",
        help=help,
        description="List every task robolearn can see, and where each comes from.",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: the tasks (name, description, source, gymnasium id) "
        "and the task sources that failed to load",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the tasks (text, or one JSON object); returns the exit status."""
    from robolearn.registry import HOW_TO_ADD, get_task, gym_id, load_failures, task_names

    tasks = [get_task(name) for name in task_names()]
    failures = load_failures()
    if args.json:
        report = {
            "tasks": [
                {
                    "name": spec.name,
                    "description": spec.description,
                    "source": spec.source,
                    "gym_id": gym_id(spec.name),
                }
                for spec in tasks
            ],
            "load_failures": [
                {"source": source, "error": error} for source, error in failures.items()
            ],
        }
        print(json.dumps(report), flush=True)
    else:
        width = max(len(spec.name) for spec in tasks)
        for spec in tasks:
            print(f"{spec.name:<{width}}  {spec.description}  [{spec.source}]")
        sys.stdout.flush()  # the notes below go to stderr, after the list
    for source, error in failures.items():
        print(f"robolearn: warning: {source} failed to load: {error}", file=sys.stderr)
    if not args.json:
        print(f"({HOW_TO_ADD})", file=sys.stderr)
    return 0
