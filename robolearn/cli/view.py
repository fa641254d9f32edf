"""``robolearn view``: watch a task in a native window or a browser."""

from __future__ import annotations

import argparse

from robolearn.cli.common import (
    add_env_args,
    check_task,
    options,
    port,
    positive_float,
    positive_int,
)


def register(sub: argparse._SubParsersAction, help: str) -> None:
    """Add ``robolearn view`` to the subcommands."""
    p = sub.add_parser(
        "view",
        help=help,
        description=(
            "Run a task and watch it: --viewer web (default) serves a page on localhost, "
            "--viewer native opens MuJoCo's window. Actions: zero, random, a policy "
            "(--checkpoint), or --follow a training run, reloading each new checkpoint."
        ),
    )
    add_env_args(p, num_envs_help="parallel envs (default: 16; 4 when following training)")
    p.add_argument(
        "--viewer",
        default="web",
        choices=["web", "native"],
        help="web: a page served on --host:--port; native: MuJoCo's window (needs a display)",
    )
    add_viewer_args(p)
    p.add_argument(
        "--actions",
        default="zero",
        choices=["zero", "random", "policy"],
        help="what drives the robots: zero actions, uniform random ones, or a policy "
        "(--checkpoint)",
    )
    p.add_argument("--checkpoint", help="a .pt path, 'latest' or 'pretrained' (implies policy)")
    p.add_argument("--load_run", help="run folder name (or regex) under --log_root")
    p.add_argument("--log_root", default="logs", help="folder that holds the run folders")
    p.add_argument(
        "--follow",
        nargs="?",
        const="latest",
        metavar="RUN",
        help="follow a training run (default: the latest), reloading new checkpoints",
    )
    p.add_argument("overrides", nargs="*", metavar="OVERRIDE", help="env.<path>=<value>")
    p.set_defaults(run=run)


def add_viewer_args(p: argparse.ArgumentParser) -> None:
    """--host, --port, --max_steps, --max_seconds: what a viewer takes."""
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="web viewer address: this machine only; 0.0.0.0 exposes it to the network",
    )
    p.add_argument("--port", type=port, default=8765, help="web viewer port; 0 takes any free one")
    p.add_argument("--max_steps", type=positive_int, help="stop after this many env steps")
    p.add_argument("--max_seconds", type=positive_float, help="stop after this many seconds")


def run(args: argparse.Namespace) -> int:
    """Run the viewer; returns the exit status."""
    check_task(args.task, args.checkpoint, args.log_root)
    from robolearn.viewer.launch import ViewOptions, view

    opts = options(ViewOptions, args)
    return view(opts, log=lambda line: print(line, flush=True))
