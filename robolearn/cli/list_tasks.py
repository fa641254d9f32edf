"""``robolearn list``: every registered task with its one-line description."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list the tasks", description="List every registered task.")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from robolearn.registry import get_task, task_names

    names = task_names()
    width = max(len(n) for n in names)
    for name in names:
        print(f"{name:<{width}}  {get_task(name).description}")
    return 0
