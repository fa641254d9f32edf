"""``robolearn play``: run a trained policy: evaluate it, record a video."""

from __future__ import annotations

import argparse

from robolearn.cli.common import add_env_args, check_task, integer, options, positive_int
from robolearn.cli.view import add_viewer_args


def register(sub: argparse._SubParsersAction, help: str) -> None:
    p = sub.add_parser(
        "play",
        help=help,
        description=(
            "Run a policy in the task's play variant (no observation noise, no pushes): every "
            "env runs one whole episode and the metrics are printed; or, with --video alone, "
            "record the video's steps only."
        ),
    )
    add_env_args(p, num_envs_help="parallel envs (default: the play variant's; 256 with --eval)")
    p.add_argument(
        "--checkpoint",
        default=None,
        help="a checkpoint (.pt), a run folder (its newest checkpoint), an exported "
        "policy.onnx or TorchScript policy.pt (with its policy.json), 'latest' (default: the "
        "newest of --load_run, or of the latest run) or 'pretrained'",
    )
    p.add_argument("--load_run", help="run folder name (or regex) under --log_root")
    p.add_argument("--log_root", default="logs", help="folder that holds the run folders")
    p.add_argument("--seed", type=integer, help="seed of the env (default: the task's)")
    p.add_argument("--eval", action="store_true", help="evaluation: 256 envs unless --num_envs")
    p.add_argument("--json", action="store_true", help="print one JSON object of metrics")
    p.add_argument(
        "--video",
        action="store_true",
        help="write an mp4 of env 0 (offscreen): --video_length env steps of --video_envs envs, "
        "no evaluation (with --eval, of the evaluation's first steps)",
    )
    p.add_argument(
        "--video_length", type=positive_int, default=500, help="frames (env steps) with --video"
    )
    p.add_argument("--video_path", help="where to write the mp4 (default: <run>/videos/play/)")
    p.add_argument(
        "--video_envs",
        type=positive_int,
        default=1,
        help="envs in the video, tiled in a grid",
    )
    p.add_argument(
        "--viewer",
        default="none",
        choices=["none", "web", "native"],
        help="watch interactively instead of evaluating",
    )
    add_viewer_args(p)
    p.add_argument("overrides", nargs="*", metavar="OVERRIDE", help="env.<path>=<value>")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_task(args.task, args.checkpoint, args.log_root)
    if args.viewer != "none":
        from robolearn.viewer.launch import ViewOptions, view

        opts = options(ViewOptions, args, actions="policy", checkpoint=args.checkpoint or "latest")
        return view(opts, log=lambda line: print(line, flush=True))
    from robolearn.app.play import PlayOptions, play

    opts = options(PlayOptions, args)
    return play(opts, log=lambda line: print(line, flush=True))
