"""``robolearn new robot MODEL``: a robot config and its walking task from any MJCF or URDF."""

from __future__ import annotations

import argparse
from pathlib import Path

KINDS_HELP = (
    "legged: a free joint is added where the model has none (a URDF); arm: a fixed arm; "
    "auto: legged when the model floats, or is a URDF"
)


def register(sub: argparse._SubParsersAction, help: str) -> None:
    """Add ``robolearn new`` (and its one kind, ``robot``) to the subcommands."""
    p = sub.add_parser("new", help=help, description="Write a new robot into a package of yours.")
    kinds = p.add_subparsers(
        dest="what", metavar="WHAT", required=True, help="what to write: robot"
    )
    r = kinds.add_parser(
        "robot",
        help="a robot config and a walking task from an MJCF or URDF",
        description=(
            "Read a robot's MJCF or URDF and write a robot config (<name>.py) and its walking "
            "tasks (<name>_walk.py: <name>_walk, <name>_walk_rough), or an arm's reach task "
            "(<name>_reach.py), into a package of yours. "
            "What it derives (drives, default pose, feet, floor, mirror map, physics step) is "
            "printed and written beside each value. Nothing is written into robolearn, and "
            "no file is overwritten."
        ),
        formatter_class=p.formatter_class,
    )
    r.add_argument(
        "model",
        help="the robot's MJCF or URDF file, or a Menagerie name (menagerie:unitree_go1/go1)",
    )
    r.add_argument("--name", help="the robot's module name (default: the file's stem)")
    r.add_argument(
        "--kind",
        choices=("auto", "legged", "arm"),
        default="auto",
        help=KINDS_HELP,
    )
    r.add_argument(
        "--out",
        type=Path,
        default=Path("my_robots"),
        help="the package folder to write into (made if missing)",
    )
    r.set_defaults(run=run)
    r.add_argument("--import", dest="imports", action="append", default=[], help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    """Derive, write, and print what was derived and how to train it."""
    from robolearn.app.new_robot import new_robot

    written = new_robot(args.model, args.out, args.name, args.kind)
    robot = written.robot
    kind = {2: "a biped", 4: "a quadruped"}.get(len(robot.feet), f"{len(robot.feet)} feet")
    if robot.kind == "arm":
        kind = f"an arm, tool {robot.tool_body}"
    print(f"{written.name}: {kind}, base {robot.root_body or robot.base_body}")
    for topic, line in robot.why.items():
        print(f"  {topic}: {line}")
    for path in written.files:
        print(f"wrote {path} ({sum(1 for _ in path.open())} lines)")
    print(f"train: robolearn train --import {written.import_arg} --task {written.tasks[0]}")
    print(f"check: robolearn doctor --import {written.import_arg} {written.tasks[0]}")
    return 0
