"""Arguments shared by subcommands."""

from __future__ import annotations

import argparse
import dataclasses
import re
from typing import Any, TypeVar

T = TypeVar("T")

ENGINE_CHOICES = ("auto", "cpu", "cuda", "warp-cpu", "newton", "newton-cpu")
"""robolearn.sim.ENGINES, restated so that parsing the command line does not import the
engines (torch, MuJoCo); a test checks that the two agree."""


OVERRIDE_RE = re.compile(r"^(env|agent)\.[^=]+=")
"""A word of the command line that is an override (``env.<path>=<value>``,
``agent.<path>=<value>``), wherever it stands."""


def split_off_overrides(
    words: list[str], valued: frozenset[str] = frozenset()
) -> tuple[list[str], list[str]]:
    """``words`` as (the overrides, the rest), each in its order. argparse takes a
    subcommand's ``OVERRIDE...`` positionals only as one run of words after its other
    positionals; taken out first, they may stand anywhere (words after ``--`` stay). The
    word after a flag in ``valued`` (flags that take a value) is that flag's value, even
    when shaped like an override (``--run_name env.a=1``)."""
    end = words.index("--") if "--" in words else len(words)
    overrides: list[str] = []
    rest: list[str] = []
    value_next = False
    for word in words[:end]:
        if OVERRIDE_RE.match(word) and not value_next:
            overrides.append(word)
        else:
            rest.append(word)
        value_next = word in valued
    return overrides, rest + words[end:]


def check_task(task: str | None, checkpoint: str | None = None, log_root: str = "") -> None:
    """Look ``task`` up before the command imports torch and MuJoCo (seconds), so that a
    mistyped name answers at once: the registry names every task without importing it.
    With ``log_root``, a task that the policy's run recorded an ``--import`` for (the run of
    ``checkpoint``, or the task's newest under ``log_root``) is imported first, as the
    command itself would."""
    if task is None:
        return
    from robolearn.registry import get_task

    if log_root:
        from robolearn.app.runs import import_for_policy

        import_for_policy(task, checkpoint, log_root)
    get_task(task)


def options(cls: type[T], args: argparse.Namespace, **given: Any) -> T:
    """The options dataclass ``cls`` filled from the parsed arguments of the same names;
    ``given`` sets the fields that do not come from a flag of that name."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values = {k: v for k, v in vars(args).items() if k in names and k not in given}
    return cls(**values, **given)


def _integer(text: str, low: int | None, high: int | None, what: str, out_of_range: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"{out_of_range}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (an argparse type)."""
    return _integer(text, 1, None, "an integer", "must be >= 1")


def positive_float(text: str) -> float:
    """A number > 0, never NaN (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def integer(text: str) -> int:
    """An integer (an argparse type); the library checks its range (``--num_envs``,
    ``--seed``, ``--max_iterations``) with a one-line error."""
    return _integer(text, None, None, "an integer", "")


def port(text: str) -> int:
    """A TCP port, 0 to 65535 (an argparse type)."""
    return _integer(text, 0, 65535, "a port number", "a port is 0 to 65535")


def add_env_args(
    p: argparse.ArgumentParser, num_envs_help: str | None = None, task_required: bool = True
) -> None:
    """--task, --num_envs, --device, --engine."""
    p.add_argument(
        "--task",
        required=task_required,
        help="task name (robolearn list)"
        if task_required
        else "task name (robolearn list); required unless --from names a run",
    )
    p.add_argument(
        "--num_envs",
        type=integer,
        help=num_envs_help or "parallel envs (default: the task's)",
    )
    p.add_argument(
        "--device",
        default="auto",
        help="auto, cpu, cuda or cuda:N: where physics and policy run, always one device",
    )
    p.add_argument(
        "--engine",
        choices=ENGINE_CHOICES,
        help="physics engine (default: the one --device implies)",
    )
