"""The ``robolearn`` command line: thin argument parsing over the library.

Every subcommand lives in its own module, listed in :data:`COMMANDS`, whose ``register``
adds its arguments; only the module of the command given is imported, so that ``--help``
and a mistyped command answer at once. A :class:`~robolearn.errors.RobolearnError` ends
the command with its message on one line and exit status 2; nothing is left half-written.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import sys
from collections.abc import Iterable, Sequence

from robolearn import __version__
from robolearn.cli.common import split_off_overrides
from robolearn.errors import RobolearnError

EXIT_USAGE = 2
_DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)


class HelpFormatter(argparse.HelpFormatter):
    """Every flag's help ends in ``(default: X)`` when the flag has a default value.

    A flag without one (``None``, a switch that is off) says in its own words what
    happens when it is left out, e.g. ``(default: the task's)``.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        unstated = (
            not action.option_strings  # positionals: their help says what they are
            or "(default" in text
            or default is None
            or default is False
            or default == []
            or default is argparse.SUPPRESS
        )
        return text if unstated else f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2, like our own errors, and
    every flag's default is shown in --help."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        self.exit(EXIT_USAGE, f"robolearn: error: {message} (see '{self.prog} --help')\n")

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        """A subcommand's overrides are taken anywhere on its line (before, between or
        after its flags and positionals), as well as where argparse takes them."""
        takes_overrides = any(a.dest == "overrides" and not a.option_strings for a in self._actions)
        if not takes_overrides:
            return super().parse_known_args(args, namespace)
        valued = frozenset(flag for a in self._actions if a.nargs != 0 for flag in a.option_strings)
        words = list(sys.argv[1:] if args is None else args)
        overrides, rest = split_off_overrides(words, valued)
        namespace, extras = super().parse_known_args(rest, namespace)
        namespace.overrides = overrides + list(namespace.overrides or [])
        return namespace, extras


COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("train", "train a policy"),
    "play": ("play", "run a trained policy: metrics, video"),
    "view": ("view", "watch a task: native window or browser"),
    "export": ("export", "export a checkpoint to ONNX and TorchScript"),
    "bench": ("bench", "measure a task's throughput"),
    "list": ("list_tasks", "list the tasks"),
    "inspect": ("inspect_model", "what robolearn sees in an MJCF model"),
    "sweep": ("sweep", "many runs on Ray Tune: searches, seeds, ASHA, PBT; show results"),
    "new": ("new", "write a robot of yours (MJCF or URDF) into a package: config and tasks"),
    "doctor": ("doctor", "check a robot's model or a task's robot: PASS, WARN, FAIL"),
    "motion": (
        "motion",
        "motion clips: convert a retargeted CSV, show, record from a policy, check",
    ),
}
"""Each subcommand's module under robolearn.cli and its line in ``robolearn --help``. The
module's ``register(subparsers, help)`` adds the subcommand's parser."""


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The parser: the subcommands in ``commands`` (every one when None) with their
    arguments, their modules imported; the others by name and help line only."""
    parser = _Parser(
        prog="robolearn",
        description="Train robot skills with RL over thousands of parallel MuJoCo simulations.",
    )
    parser.add_argument("--version", action="version", version=f"robolearn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    full = set(COMMANDS if commands is None else commands)
    for name, (module, help) in COMMANDS.items():
        if name in full:
            importlib.import_module(f"{__name__}.{module}").register(sub, help)
        else:
            sub.add_parser(name, help=help)
    for command in sub.choices.values():
        command.add_argument(
            "--import",
            dest="imports",
            action="append",
            default=[],
            metavar="MODULE",
            help="import a module that registers tasks (repeatable), e.g. my_pkg.tasks",
        )
    return parser


def _command_in(argv: Sequence[str]) -> list[str]:
    """The subcommand ``argv`` names (as a list: none for ``--help`` or a mistyped one).
    The top-level options take no value, so the first word not an option is the command."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return [first] if first in COMMANDS else []


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``robolearn`` console script; returns the exit status."""
    from robolearn.process import end_with_parent

    end_with_parent()  # a sweep's trial: ends with the Ray worker that started it
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_in(argv))
    args = parser.parse_args(argv)
    args.argv = argv
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        if args.imports:
            from robolearn.registry import import_tasks

            import_tasks(args.imports)
        return int(args.run(args) or 0)
    except RobolearnError as exc:
        print(f"robolearn: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        if exc.errno in _DISK_ERRORS:
            # a full or read-only disk: what was saved before is intact (atomic writes)
            where = f" writing {exc.filename}" if exc.filename else ""
            print(f"robolearn: error{where}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
        if exc.filename is None:  # not about a path the user gave: a real failure
            raise
        # an output folder that cannot be created or written, a file that cannot be read
        reason = exc.strerror or exc
        print(f"robolearn: error: cannot use {exc.filename}: {reason}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("robolearn: interrupted", file=sys.stderr)
        return 130
