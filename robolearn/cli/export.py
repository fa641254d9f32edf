"""``robolearn export``: ONNX and TorchScript policies with the normalizer folded in."""

from __future__ import annotations

import argparse

from robolearn.cli.common import check_task


def register(sub: argparse._SubParsersAction, help: str) -> None:
    """Add ``robolearn export`` to the subcommands."""
    p = sub.add_parser(
        "export",
        help=help,
        description=(
            "Write policy.onnx, policy.pt and policy.json next to the checkpoint (exported/), "
            "check ONNX against torch, and time one-observation inference on this CPU."
        ),
    )
    p.add_argument(
        "--checkpoint",
        required=True,
        help="path of a model_<iteration>.pt, a run folder (its newest checkpoint), or "
        "'pretrained' (with --task)",
    )
    p.add_argument("--task", help="the task (default: the one the checkpoint names)")
    p.add_argument(
        "--output",
        help="output folder (default: <checkpoint folder>/exported; for a pretrained "
        "checkpoint <log_root>/<task>/pretrained/exported)",
    )
    p.add_argument("--log_root", default="logs", help="where outputs of pretrained go")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="env.<path>=<value> on top of the checkpoint's own (e.g. env.scene.model=PATH "
        "where the robot's model is on this machine)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Export the checkpoint; returns the exit status."""
    check_task(args.task, args.checkpoint, args.log_root)
    from robolearn.app.export import export

    return export(
        args.checkpoint,
        args.task,
        args.output,
        as_json=args.json,
        log_root=args.log_root,
        overrides=args.overrides,
    )
