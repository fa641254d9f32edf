"""The velocity family's recipe on a robot that is not ours (robolearn.tasks.velocity):
the control rate it documents, and the errors a user meets first."""

from __future__ import annotations

from pathlib import Path

import mujoco
import pytest
import torch
from robolearn.tasks.velocity import velocity_env_cfg

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.scene import robot_scene

USER_ROBOT = Path(__file__).parents[1] / "assets" / "user_quadruped" / "robot.xml"


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


def test_the_recipe_randomizes_the_friction_of_the_robots_feet_whatever_their_names():
    """Menagerie's Go1: its feet are the collision spheres FR, FL, RR, RL on the calves,
    and go1.xml has no floor. Before: the recipe's friction randomized geoms named
    ``.*_foot``, and the env was refused with "no geom matches '.*_foot'" (which term's, it
    did not say)."""
    scene = robot_scene("menagerie:unitree_go1/go1.xml", feet="[FR][LR]", num_envs=2)
    cfg = velocity_env_cfg(scene, base_body="trunk")
    cfg.sim.engine = "cpu"
    assert cfg.events["friction"].params == {"friction_range": (0.6, 1.25), "feet": True}
    env = ManagerBasedRLEnv(cfg)
    model = env.scene.model
    friction = env.scene.engine.model_field("geom_friction")[:, :, 0]
    nominal = torch.as_tensor(model.geom_friction[:, 0], dtype=friction.dtype)
    drawn = (friction != nominal).any(0).nonzero().flatten().tolist()
    assert [model.geom(g).name for g in drawn] == ["FR", "FL", "RR", "RL"]
    assert bool(((friction[:, drawn] >= 0.6) & (friction[:, drawn] <= 1.25)).all())
    # the recipe laid a floor where the robot's file has none
    assert cfg.scene.ground and model.geom("ground").type == mujoco.mjtGeom.mjGEOM_PLANE
