"""Actuators from the robot config: a torque-motor MJCF (as vendors ship theirs) driven by
MuJoCo's own PD loop with the config's gains, limits and armature."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import torch

from robolearn.config import load_config, save_config
from robolearn.errors import RobolearnError
from robolearn.scene import ImplicitPDCfg, Scene, SceneCfg, SimCfg, pd_gains, reflected_inertia

# Two hinges as a vendor writes them: torque motors with a gear, a keyframe with controls;
# the second joint has no actuator at all. No gravity, no contacts: only the PD loop acts.
ARM = """
<mujoco>
  <compiler angle="degree"/>
  <option gravity="0 0 0" timestep="0.001"/>
  <worldbody>
    <body name="upper">
      <joint name="shoulder" type="hinge" axis="0 1 0" range="-90 90"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.5" contype="0"/>
      <body name="lower" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.3" contype="0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="shoulder_motor" joint="shoulder" gear="6" ctrlrange="-1 1"/>
  </actuator>
  <keyframe>
    <key name="home" qpos="0.4 -0.2" ctrl="0.7"/>
  </keyframe>
</mujoco>
"""


def arm_scene(tmp_path, **actuators: ImplicitPDCfg) -> Scene:
    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    cfg = SceneCfg(model=str(path), num_envs=1, keyframe="home", actuators=actuators)
    return Scene(cfg, SimCfg(engine="cpu"))


def test_a_torque_motor_becomes_mujocos_pd_loop_and_a_bare_joint_gets_one(tmp_path):
    scene = arm_scene(
        tmp_path,
        arm=ImplicitPDCfg(
            joints=("shoulder", "elbow"),
            stiffness={"shoulder": 40.0, "elbow": 20.0},
            damping=2.0,
            effort_limit=5.0,
            armature=0.02,
        ),
    )
    m = scene.model
    # the MJCF's actuator keeps its name and place; the bare joint's comes after it
    assert [m.actuator(a).name for a in range(m.nu)] == ["shoulder_motor", "elbow"]
    np.testing.assert_allclose(m.actuator_gear[:, 0], [1.0, 1.0])
    np.testing.assert_allclose(m.actuator_gainprm[:, 0], [40.0, 20.0])
    np.testing.assert_allclose(m.actuator_biasprm[:, :3], [[0, -40, -2], [0, -20, -2]])
    np.testing.assert_allclose(m.actuator_forcerange, [[-5, 5], [-5, 5]])
    np.testing.assert_allclose(m.dof_armature, [0.02, 0.02])
    # targets are joint positions (radians, though the MJCF's ranges are in degrees): the
    # limited joint bounds its target, the other none
    np.testing.assert_allclose(m.actuator_ctrlrange[0], [-math.pi / 2, math.pi / 2])
    assert m.actuator_ctrllimited.tolist() == [1, 0]
    # the keyframe holds its pose: each new target is the key's joint position
    np.testing.assert_allclose(scene.default_ctrl.numpy(), [0.4, -0.2])


def test_the_gains_give_the_joint_the_natural_frequency_asked_for(tmp_path):
    """kp and kd from pd_gains over the joint's inertia make MuJoCo's joint ring at that
    frequency: the first overshoot comes half a damped period after a step of the target."""
    probe = arm_scene(tmp_path, arm=ImplicitPDCfg(joints="shoulder", stiffness=1.0))
    data = mujoco.MjData(probe.model)
    data.qpos[:] = 0.0
    mujoco.mj_forward(probe.model, data)
    full = np.zeros((probe.model.nv, probe.model.nv))
    mujoco.mj_fullM(probe.model, data, full)
    # the elbow held straight by its own stiff loop: the shoulder swings both links as one,
    # whose inertia about it is the mass matrix's first entry
    inertia = float(full[0, 0])
    kp, kd = pd_gains(inertia, natural_frequency_hz=2.0, damping_ratio=0.1)
    stiff, stiff_kd = pd_gains(float(full[1, 1]), natural_frequency_hz=40.0, damping_ratio=1.0)
    scene = arm_scene(
        tmp_path,
        shoulder=ImplicitPDCfg(joints="shoulder", stiffness=kp, damping=kd),
        elbow=ImplicitPDCfg(joints="elbow", stiffness=stiff, damping=stiff_kd),
    )
    engine = scene.engine
    engine.reset(qpos=torch.zeros(1, 2, dtype=engine.dtype))
    scene.write_ctrl(slice(0, 2), torch.tensor([[0.3, 0.0]]))
    angles = []
    for _ in range(400):  # 0.4 s of 1 ms steps
        scene.step(1)
        angles.append(float(engine.qpos[0, 0]))
    omega = 2 * math.pi * 2.0
    damped_half_period = math.pi / (omega * math.sqrt(1 - 0.1**2))
    peak = int(np.argmax(angles)) + 1
    assert peak * 1e-3 == pytest.approx(damped_half_period, rel=0.05)
    # and it overshoots by the damping ratio's amount, exp(-pi zeta / sqrt(1 - zeta^2))
    overshoot = max(angles) / 0.3 - 1
    assert overshoot == pytest.approx(math.exp(-math.pi * 0.1 / math.sqrt(0.99)), abs=0.06)


def test_the_effort_limit_caps_the_torque(tmp_path):
    scene = arm_scene(
        tmp_path, arm=ImplicitPDCfg(joints="shoulder", stiffness=500.0, effort_limit=3.0)
    )
    scene.write_ctrl(slice(0, 1), torch.tensor([[1.4]]))  # a full radian away: 500 N m asked
    scene.step(1)
    assert float(scene.engine.actuator_force[0, 0]) == pytest.approx(3.0)


def test_actuator_configs_survive_a_run_folder(tmp_path):
    cfg = SceneCfg(
        model="quadruped/scene.xml",
        actuators={"legs": ImplicitPDCfg(joints=".*", stiffness={".*_hip": 30.0, ".*": 25.0})},
    )
    save_config(cfg, tmp_path / "scene.yaml")
    back = load_config(tmp_path / "scene.yaml")
    assert back.actuators == cfg.actuators


@pytest.mark.parametrize(
    ("actuators", "fragment"),
    [
        ({"a": ImplicitPDCfg(joints="wrist")}, "scene.actuators.a.joints ['wrist'] match no"),
        (
            {"a": ImplicitPDCfg(joints=".*"), "b": ImplicitPDCfg(joints="elbow")},
            "scene.actuators.b: joint 'elbow' is driven by scene.actuators.a already",
        ),
        ({"a": ImplicitPDCfg(stiffness=-1.0)}, "scene.actuators.a.stiffness must be"),
        ({"a": ImplicitPDCfg(armature=float("nan"))}, "scene.actuators.a.armature must be"),
        (
            {"a": ImplicitPDCfg(stiffness={"shoulder": 1.0})},
            "scene.actuators.a.stiffness: no pattern of ['shoulder'] matches joint 'elbow'",
        ),
        ({"a": ImplicitPDCfg(joints="(")}, "scene.actuators.a.joints: invalid regex"),
    ],
)
def test_bad_actuator_configs_are_one_line_errors(tmp_path, actuators, fragment):
    with pytest.raises(RobolearnError) as err:
        arm_scene(tmp_path, **actuators)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_reflected_inertia_and_gains_from_motor_facts():
    # one stage: the rotor's inertia times the ratio squared
    assert reflected_inertia(1.0e-5, 10.0) == pytest.approx(1.0e-3)
    # two stages: the rotor through both, the first stage's gears through the second
    assert reflected_inertia((1.0e-5, 2.0e-5), (4.0, 5.0)) == pytest.approx(
        1.0e-5 * 20.0**2 + 2.0e-5 * 5.0**2
    )
    kp, kd = pd_gains(0.01, natural_frequency_hz=10.0, damping_ratio=2.0)
    omega = 2 * math.pi * 10.0
    assert (kp, kd) == pytest.approx((0.01 * omega**2, 2 * 2.0 * 0.01 * omega))
    with pytest.raises(RobolearnError, match="one inertia per gear stage"):
        reflected_inertia((1e-5, 1e-5), 10.0)
    with pytest.raises(RobolearnError, match="pd_gains"):
        pd_gains(0.0, 10.0, 1.0)
