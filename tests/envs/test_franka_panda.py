"""The Panda's robot config on Menagerie's file: the arm's drives from Franka's limits, the
gripper's tendon actuator kept and open, and the arm holding its home pose."""

from __future__ import annotations

import pytest
import torch
from robolearn.envs import franka_panda

from robolearn.errors import RobolearnError
from robolearn.scene import Scene, SceneCfg, SimCfg


def test_the_panda_holds_its_home_pose_on_the_configs_drives(menagerie_root):
    cfg = SceneCfg(num_envs=2, entities={"robot": franka_panda.panda_robot()}, ground=True)
    scene = Scene(cfg, SimCfg(engine="cpu"))
    m = scene.model
    assert m.nu == 8  # the 7 arm loops and the gripper's tendon actuator
    shoulder, wrist = m.actuator("actuator1").id, m.actuator("actuator5").id
    assert m.actuator_forcerange[shoulder].tolist() == pytest.approx([-87.0, 87.0])
    assert m.actuator_forcerange[wrist].tolist() == pytest.approx([-12.0, 12.0])
    assert m.actuator_gainprm[shoulder, 0] == pytest.approx(1500.0)
    assert m.body_gravcomp[m.body("link4").id] == 1.0
    assert m.dof_armature[m.joint("joint7").dofadr[0]] == pytest.approx(0.1)
    names = scene.joint_names
    start = scene.default_joint_pos[0].clone()
    assert start[names.index("joint4")] == pytest.approx(-1.57079)
    assert scene.default_ctrl[m.actuator(franka_panda.GRIPPER).id] == franka_panda.GRIPPER_OPEN
    scene.reset_to_default(torch.ones(scene.num_envs, dtype=torch.bool))
    scene.write_ctrl(slice(None), scene.default_ctrl.expand(scene.num_envs, -1))
    scene.prepare(1)
    for _ in range(round(1.0 / m.opt.timestep)):
        scene.step(1)
    pos = scene.joint_pos[0]
    arm = [names.index(j) for j in franka_panda.ARM]
    # its weight compensated, it holds the pose; the fingers stay open
    assert (pos[arm] - start[arm]).abs().max() < 0.02, pos[arm] - start[arm]
    assert pos[names.index("finger_joint1")] > 0.035


def test_a_reset_control_naming_no_actuator_is_refused(menagerie_root):
    cfg = SceneCfg(num_envs=1, entities={"robot": franka_panda.panda_robot()}, ground=True)
    cfg.robot.init_state.ctrl = {"gripper": 255.0}
    with pytest.raises(RobolearnError, match=r"'gripper' matches no actuator.*actuator8"):
        Scene(cfg, SimCfg(engine="cpu"))
