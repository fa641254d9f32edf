"""``robolearn list``: every registered task with its one-line description."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "list",
        help="list the tasks",
        description="List every task robolearn can see, and where each comes from.",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from robolearn.registry import HOW_TO_ADD, get_task, load_failures, task_names

    names = task_names()
    width = max(len(n) for n in names)
    for name in names:
        spec = get_task(name)
        print(f"{name:<{width}}  {spec.description}  [{spec.source}]")
    sys.stdout.flush()  # the notes below go to stderr, after the list
    for source, error in load_failures().items():
        print(f"robolearn: warning: {source} failed to load: {error}", file=sys.stderr)
    print(f"({HOW_TO_ADD})", file=sys.stderr)
    return 0
