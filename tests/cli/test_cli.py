"""The command line's own details: help on every flag, defaults shown, list --json."""

from __future__ import annotations

import argparse
import json
import re

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
    top = {"train", "play", "view", "export", "bench", "list", "inspect", "motion"}
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
