"""The velocity family's recipe on a robot that is not ours (robolearn.tasks.velocity):
the control rate it documents, and the errors a user meets first."""

from __future__ import annotations

from pathlib import Path

import pytest

from robolearn.errors import RobolearnError
from robolearn.scene import robot_scene
from robolearn.tasks.velocity import velocity_env_cfg

USER_ROBOT = Path(__file__).parent / "assets" / "user_quadruped" / "robot.xml"


def _with_timestep(tmp_path: Path, timestep: float) -> str:
    path = tmp_path / "robot.xml"
    path.write_text(USER_ROBOT.read_text().replace('timestep="0.004"', f'timestep="{timestep}"'))
    (tmp_path / "meshes").symlink_to(USER_ROBOT.parent / "meshes")
    return str(path)


@pytest.mark.parametrize("timestep, decimation", [(0.004, 5), (0.002, 10), (0.005, 4)])
def test_the_policy_runs_at_50_hz_on_the_models_own_timestep(
    tmp_path, capsys, timestep, decimation
):
    """Before: decimation 4 whatever the timestep, so 125 Hz on a 2 ms model."""
    model = _with_timestep(tmp_path, timestep)
    cfg = velocity_env_cfg(robot_scene(model, feet=".*_foot"), base_body="base")
    assert cfg.decimation == decimation
    assert cfg.decimation * timestep == pytest.approx(0.02)
    assert capsys.readouterr().err == ""


def test_a_timestep_that_does_not_divide_the_period_is_warned_about(tmp_path, capsys):
    model = _with_timestep(tmp_path, 0.003)
    cfg = velocity_env_cfg(robot_scene(model, feet=".*_foot"), base_body="base")
    assert cfg.decimation == 7
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("robolearn: warning: "), err
    assert "the policy runs at 47.6 Hz (7 steps of 0.003 s), not 50 Hz" in err[0]


def test_feet_that_match_nothing_list_the_bodies_and_geoms_they_could_have():
    with pytest.raises(RobolearnError) as err:
        robot_scene(str(USER_ROBOT), feet=".*_toe")
    message = str(err.value)
    assert message.startswith("feet '.*_toe' match no body and no geom of the model; bodies: ")
    assert "FL_calf" in message and "named geoms: " in message and "\n" not in message
    with pytest.raises(RobolearnError, match=r"the feet pattern '\(' is not a regular expr"):
        robot_scene(str(USER_ROBOT), feet="(")
