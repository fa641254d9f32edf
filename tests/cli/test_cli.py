"""The command line's own details: help on every flag, defaults shown, list --json."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import textwrap

import pytest
from cli_helpers import one_line_error, robolearn, robolearn_in_process, run_train

from robolearn.cli import build_parser


def subcommands(
    parser: argparse.ArgumentParser | None = None,
) -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser by name, nested ones as ``motion convert``."""
    parser = parser or build_parser()
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = sub
                found |= {f"{name} {k}": v for k, v in subcommands(sub).items()}
    return found


def flags(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Every argument a user types (positionals included), --help and --version aside."""
    skip = (argparse._HelpAction, argparse._VersionAction)
    return [a for a in parser._actions if not isinstance(a, skip)]


def test_the_subcommands_are_all_checked():
    top = {"train", "play", "view", "export", "bench", "list", "inspect", "motion", "sweep"}
    top |= {"new", "new robot", "doctor"}
    motion = {f"motion {a}" for a in ("convert", "play", "record", "info")}
    assert set(subcommands()) == top | motion


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_flag_has_help_and_shows_its_default(command):
    parser = subcommands()[command]
    formatter = parser._get_formatter()
    for action in flags(parser):
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help.strip(), f"{command} {name} has no help text"
        shown = formatter._expand_help(action)  # the text --help prints for it
        # one form for defaults everywhere: "(default: X)", never "(default X)"
        assert not re.search(r"\(default [^:]", shown), f"{command} {name}: {shown!r}"
        stated = action.default not in (None, False, [], argparse.SUPPRESS)
        if action.option_strings and stated:
            # a help that states its default in words keeps them; the others get the value
            own_words = "(default" in action.help
            expected = "(default: " if own_words else f"(default: {action.default})"
            assert expected in shown, f"{command} {name} hides its default: {shown!r}"
    # and argparse renders it all (a stray % in a help text would raise here)
    parser.format_help()


def test_a_flag_with_a_value_default_prints_it_in_help():
    out = run_train("--help")
    text = " ".join(out.stdout.split())
    assert "--video_length VIDEO_LENGTH env steps per clip with --video (default: 200)" in text
    assert "(default: auto)" in text and "(default: logs)" in text
    assert "--from RUN_DIR" in text


def test_list_json_is_machine_readable():
    out = robolearn("list", "--json")
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.strip().splitlines()  # one JSON object, nothing else on stdout
    report = json.loads(line)
    tasks = {t["name"]: t for t in report["tasks"]}
    assert {"cartpole_balance", "humanoid_walk", "quadruped_walk"} <= set(tasks)
    cartpole = tasks["cartpole_balance"]
    assert cartpole["source"] == "robolearn"
    assert cartpole["gym_id"] == "robolearn/cartpole_balance-v0"
    assert "pole" in cartpole["description"]
    assert report["load_failures"] == []
    # the same tasks, descriptions and sources as the text listing
    text = robolearn("list").stdout.splitlines()
    assert len(text) == len(report["tasks"])
    for line, task in zip(text, report["tasks"], strict=True):
        assert line.split()[0] == task["name"]
        assert task["description"] in line and line.endswith(f"[{task['source']}]")


def test_train_takes_overrides_in_several_places_on_the_line(capsys):
    # before the flags, between them and after: all reach the configs (the first one names
    # a field there is not, and its error says so), none is an unrecognized argument
    out = robolearn_in_process(
        capsys, "train", "env.no_such_field=1", "--task", "humanoid_walk", "agent.seed=3",
        "--max_iterations", "1", "agent.algorithm.learning_rate=3e-4",
    )  # fmt: skip
    one_line_error(out, "unknown config path 'env.no_such_field'")


def test_a_flags_value_shaped_like_an_override_stays_the_flags(capsys):
    """The word after a flag that takes a value is that value (argparse's reading), not an
    override: here a run name, which the run-name check then refuses by name."""
    out = robolearn_in_process(
        capsys,
        "train",
        "--task",
        "cartpole_balance",
        "--run_name",
        "env.x=1",
        "agent.save_interval=5",
    )
    one_line_error(out, "run name 'env.x=1' may only hold letters, digits")
    assert "unknown config path" not in out.stderr and "expected one argument" not in out.stderr


FIRST_COMMANDS = textwrap.dedent(
    """
    import json, sys
    from robolearn.cli import main

    heavy = ("torch", "mujoco", "warp", "rsl_rl")
    report = {}
    for argv in (["--help"], ["trian"], ["list"], ["train", "--task", "nosuch"],
                 ["play", "--task", "humanoid_wlak"]):
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse: --help, a mistyped command
            status = exc.code
        report[" ".join(argv)] = [status, [m for m in heavy if m in sys.modules]]
    print(json.dumps(report))
    """
)


def test_help_a_typo_list_and_an_unknown_task_answer_without_torch():
    """The first commands a user types answer at once: none imports torch, MuJoCo, warp or
    rsl-rl (before: ``list`` and ``train --task nosuch`` imported all of them, 4-7 s on 2
    cores, to print a list or a one-line error). One interpreter runs them in turn."""
    out = subprocess.run(
        [sys.executable, "-c", FIRST_COMMANDS], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report == {
        "--help": [0, []],
        "trian": [2, []],
        "list": [0, []],
        "train --task nosuch": [2, []],
        "play --task humanoid_wlak": [2, []],
    }
    errors = [line for line in out.stderr.splitlines() if line.startswith("robolearn: error")]
    assert "invalid choice: 'trian'" in errors[0]
    assert "unknown task 'nosuch'" in errors[1]
    assert "did you mean 'humanoid_walk'" in errors[2]
