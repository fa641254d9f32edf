"""The viewer's live state: commands validated on submit, the loop never ended by one."""

from __future__ import annotations

import math
import re
import time

import pytest

from .helpers import (
    BAD_COMMANDS,
    strict_json,
)


class FakeEnv:
    """Just what ViewerSession touches; enough to drive its loop without physics (and
    without the telemetry, which reads the managers)."""

    num_envs, num_actions, step_dt = 2, 2, 0.001
    device = "cpu"

    def __init__(self) -> None:
        self.steps = 0
        self.resets: list = []

    def step(self, actions) -> None:
        self.steps += 1

    def reset(self) -> None:
        raise RuntimeError("reset exploded")

    def reset_envs(self, ids) -> None:
        self.resets.append(ids.tolist())


def test_session_validates_commands_on_submit():
    from robolearn.viewer.live_state import (
        SPEEDS,
        ActionSource,
        InvalidCommandError,
        ViewerSession,
        validate_command,
    )

    session = ViewerSession(FakeEnv(), ActionSource(), telemetry=False)
    for body, fragment in BAD_COMMANDS:
        try:
            command = strict_json(body)
        except (ValueError, RecursionError):
            continue  # not JSON: the web viewer's parser answers these
        with pytest.raises(InvalidCommandError, match=re.escape(fragment)):
            session.submit(command)
    assert session._commands.empty()
    for speed in (*SPEEDS, 0.3, 3, 8.0):
        assert validate_command({"action": "speed", "value": speed}, 2)["value"] == float(speed)
    assert validate_command({"action": "env", "value": 1}, 2) == {"action": "env", "value": 1}
    assert validate_command({"action": "camera", "value": False}, 2)["value"] is False
    assert validate_command({"action": "step"}, 2) == {"action": "step", "value": None}
    with pytest.raises(InvalidCommandError, match="0 to 2"):
        validate_command({"action": "env", "value": 3}, 3)
    with pytest.raises(InvalidCommandError, match="did you mean 'reset'"):
        validate_command({"action": "rset"}, 2)


def test_session_loop_survives_a_failing_command(capsys):
    from robolearn.viewer.live_state import ActionSource, ViewerSession

    env = FakeEnv()
    session = ViewerSession(env, ActionSource(), telemetry=False)
    # straight onto the queue, past submit's checks: what the loop must survive regardless
    for bad in (
        {"action": "speed", "value": "abc"},
        {"action": "env", "value": None},
        {"action": "speed", "value": math.nan},
        {"action": "nonsense"},
        {"action": "reset_all"},  # the env raises
    ):
        session._commands.put(bad)
    session._commands.put({"action": "env", "value": 1})
    session._commands.put({"action": "reset"})
    session.tick()
    assert session.env_id == 1 and env.resets == [[1]]
    assert session.speed == 1.0 and math.isfinite(session.speed)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 5, lines
    assert all(ln.startswith("robolearn viewer: ignored command") for ln in lines), lines
    assert "reset exploded" in lines[-1]
    # and it carries on stepping, once its next step is due (later on a busy machine)
    deadline = time.monotonic() + 30
    while not session.tick():
        assert time.monotonic() < deadline, "the loop took no step after the failed command"
        time.sleep(0.005)
    assert env.steps > 0
