"""The floating base is whichever body holds the named free joint, wherever that joint is
in the model: a scene may hold a fixed arm before the robot, or free props."""

from __future__ import annotations

import pytest
import torch

from robolearn.errors import RobolearnError
from robolearn.scene import EntityCfg, Scene, SceneCfg, SimCfg

MJCF = """
<mujoco>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="arm" pos="0 0 1"><joint name="shoulder" type="hinge"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/></body>
    <body name="robot" pos="1 2 0.5"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
  </worldbody>
</mujoco>
"""


def test_the_root_is_the_named_bodys_own_free_joint(tmp_path):
    model = tmp_path / "scene.xml"
    model.write_text(MJCF)
    scene = Scene(
        SceneCfg(num_envs=2, entities={"robot": EntityCfg(model=str(model), root_body="robot")}),
        SimCfg(engine="cpu"),
    )
    assert (scene.root_qpos_adr, scene.root_dof_adr) == (1, 1)  # after the arm's hinge
    assert torch.allclose(scene.root_pos_w, torch.tensor([[1.0, 2.0, 0.5]] * 2))
    assert torch.allclose(scene.root_quat_w, torch.tensor([[1.0, 0.0, 0.0, 0.0]] * 2))
    assert scene.joint_names == ["shoulder"]
    with pytest.raises(RobolearnError, match=r"scene\.root_body 'arm' has no free joint"):
        Scene(
            SceneCfg(num_envs=2, entities={"robot": EntityCfg(model=str(model), root_body="arm")}),
            SimCfg(engine="cpu"),
        )


def _quadruped(
    ground: bool = False, others: dict[str, EntityCfg] | None = None, **sim: object
) -> Scene:
    """Our quadruped from its bare robot file (no floor), on one env."""
    robot = EntityCfg(model="quadruped/quadruped.xml", keyframe="stand", root_body="trunk")
    cfg = SceneCfg(num_envs=1, entities={"robot": robot, **(others or {})}, ground=ground)
    return Scene(cfg, SimCfg(engine="cpu", **sim))


def test_a_floating_robot_needs_something_to_stand_on():
    """Before: built without a word, and training ran to its end with every episode
    falling through nothing, ended by the base contact."""
    with pytest.raises(RobolearnError) as err:
        _quadruped()
    assert str(err.value) == (
        "the robot floats (a free joint) but the world of quadruped/quadruped.xml has nothing "
        "to stand on (no plane, height field or box fixed to the world that it collides "
        "with): set env.scene.ground=true (SceneCfg.ground lays a plane where the world has "
        "none)"
    )
    assert _quadruped(ground=True).model.geom("ground").bodyid == 0
    # a box fixed to the world is somewhere to stand too; in no gravity nothing falls
    _quadruped(others={"table": EntityCfg(box=(1.0, 1.0, 0.1), free=False, pos=(0, 0, -0.1))})
    _quadruped(gravity=(0.0, 0.0, 0.0))
