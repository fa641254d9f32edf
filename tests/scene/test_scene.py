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
