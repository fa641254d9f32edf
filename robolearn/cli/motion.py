"""``robolearn motion``: convert, show, record and check motion clips."""

from __future__ import annotations

import argparse

from robolearn.cli.common import integer, positive_float, positive_int


def register(sub: argparse._SubParsersAction, help: str) -> None:
    """Add ``robolearn motion`` and its subcommands."""
    p = sub.add_parser(
        "motion",
        help=help,
        description=(
            "Motion clips for the tracking tasks (robolearn's npz: root pose, joint angles "
            "by name, a frame rate). See docs/motion.md."
        ),
    )
    actions = p.add_subparsers(
        dest="motion_command",
        metavar="ACTION",
        required=True,
        help="convert, play, record or info (each has its own --help)",
    )
    overrides = {
        "nargs": "*",
        "metavar": "OVERRIDE",
        "help": "env.<path>=<value> for the task's robot (e.g. env.scene.model=PATH)",
    }

    c = actions.add_parser(
        "convert",
        help="a retargeted CSV (root xyz, root quaternion, joint angles per row) to npz",
    )
    c.add_argument("source", help="the CSV file")
    c.add_argument("out", help="the npz to write")
    c.add_argument("--task", required=True, help="a task whose robot the clip is for")
    c.add_argument("--fps", type=positive_float, default=30.0, help="the CSV's frame rate")
    c.add_argument(
        "--quat_order",
        choices=["xyzw", "wxyz"],
        default="xyzw",
        help="the order of the root quaternion's columns in the CSV",
    )
    c.add_argument("overrides", **overrides)
    c.set_defaults(run=_convert)

    v = actions.add_parser("play", help="show a clip on the task's robot as a video")
    v.add_argument("clip", help="the clip (npz)")
    v.add_argument("--task", required=True, help="a task whose robot plays the clip")
    v.add_argument("--video", required=True, metavar="OUT.mp4", help="the video to write")
    v.add_argument("--width", type=positive_int, default=640, help="video width (pixels)")
    v.add_argument("--height", type=positive_int, default=480, help="video height (pixels)")
    v.add_argument("overrides", **overrides)
    v.set_defaults(run=_play)

    r = actions.add_parser("record", help="record a clip from a policy playing its task")
    r.add_argument("out", help="the npz to write")
    r.add_argument("--task", required=True, help="the policy's task")
    r.add_argument(
        "--checkpoint",
        help="a checkpoint file, run folder, or 'pretrained' (default: the newest of "
        "--load_run, or of the latest run)",
    )
    r.add_argument("--load_run", help="run folder name (or regex) under --log_root")
    r.add_argument("--log_root", default="logs", help="folder that holds the run folders")
    r.add_argument("--seconds", type=positive_float, default=10.0, help="clip length")
    r.add_argument("--env_id", type=integer, default=0, help="the env recorded")
    r.add_argument("--seed", type=integer, help="the env's seed (default: the task's)")
    r.add_argument("overrides", **overrides)
    r.set_defaults(run=_record)

    i = actions.add_parser("info", help="what a clip holds; with --task, its plausibility")
    i.add_argument("clip", help="the clip (npz)")
    i.add_argument("--task", help="check the clip on this task's robot")
    i.add_argument("overrides", **overrides)
    i.set_defaults(run=_info)


def _convert(args: argparse.Namespace) -> int:
    from robolearn.app.motion import convert

    convert(args.source, args.out, args.task, args.fps, args.quat_order, args.overrides)
    return 0


def _play(args: argparse.Namespace) -> int:
    from robolearn.app.motion import PlayClipOptions, play_clip

    play_clip(
        PlayClipOptions(args.clip, args.task, args.video, args.width, args.height, args.overrides)
    )
    return 0


def _record(args: argparse.Namespace) -> int:
    from robolearn.app.motion import RecordOptions, record

    record(
        RecordOptions(
            task=args.task,
            out=args.out,
            checkpoint=args.checkpoint,
            load_run=args.load_run,
            log_root=args.log_root,
            seconds=args.seconds,
            env_id=args.env_id,
            seed=args.seed,
            overrides=args.overrides,
        )
    )
    return 0


def _info(args: argparse.Namespace) -> int:
    from robolearn.app.motion import info

    return info(args.clip, args.task, args.overrides)
