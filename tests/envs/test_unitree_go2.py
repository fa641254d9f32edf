"""The Go2's robot config on Unitree's own model (torque motors) and on a position-actuator
model of the same robot: the config's motors, pose and feet, whichever file it runs on."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch
from cli_helpers import (
    VENDOR_GO2,
    one_line_error,
    play_eval,
    robolearn_in_process,
    run_train,
    walks,
)
from robolearn.envs import unitree_go2
from robolearn.tasks.velocity import go2_walk

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.scene import InitStateCfg
from robolearn.scene.init_state import add_init_keyframe
from robolearn.scene.mirror import joint_mirror

pytestmark = pytest.mark.skipif(not VENDOR_GO2.exists(), reason="Unitree's go2.xml is not here")


def position_actuator_go2(tmp_path: Path) -> Path:
    """Unitree's Go2 with its torque motors swapped for position actuators of other gains,
    as Menagerie's file drives it (Menagerie's Go2 is in neither test package)."""
    spec = mujoco.MjSpec.from_file(str(VENDOR_GO2))
    spec.meshdir = str(VENDOR_GO2.parent / spec.meshdir)
    for actuator in list(spec.actuators):
        joint = actuator.target
        spec.delete(actuator)
        spec.add_actuator(
            name=joint, target=joint, trntype=mujoco.mjtTrn.mjTRN_JOINT
        ).set_to_position(kp=80.0, kv=3.0)
    path = tmp_path / "go2_position.xml"
    path.write_text(spec.to_xml())
    return path


def go2_env(model: Path, num_envs: int = 4) -> ManagerBasedRLEnv:
    cfg = go2_walk.play_env_cfg()
    cfg.scene.robot.model = str(model)
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = "cpu"
    cfg.events = {}  # the same robot in every env, starting from the config's pose
    return ManagerBasedRLEnv(cfg)


def standing(env: ManagerBasedRLEnv, steps: int) -> torch.Tensor:
    """The trunk's height over ``steps`` policy steps of holding the default pose."""
    env.reset(seed=0)
    heights = []
    for _ in range(steps):
        _, _, terminated, _, _ = env.step(
            torch.zeros(env.num_envs, env.action_manager.total_action_dim)
        )
        assert not terminated.any()
        heights.append(env.scene.root_height.clone())
    return torch.stack(heights)


def test_the_config_drives_unitrees_torque_motors_with_its_own_and_the_go2_stands():
    env = go2_env(VENDOR_GO2)
    m = env.scene.model
    hip, knee = m.actuator("FL_thigh").id, m.actuator("FL_calf").id
    # the MJCF's motors became the config's position loops, with its gains, limits, armature
    assert m.actuator_gainprm[hip, 0] == pytest.approx(unitree_go2.HIP_KP)
    assert m.actuator_biasprm[knee, 2] == pytest.approx(-unitree_go2.KNEE_KD)
    assert m.actuator_forcerange[knee].tolist() == pytest.approx([-45.43, 45.43])
    assert m.dof_armature[m.joint("FL_calf_joint").dofadr[0]] == pytest.approx(
        unitree_go2.KNEE_ARMATURE
    )
    names = env.scene.joint_names
    pose = dict(zip(names, env.scene.default_joint_pos[0].tolist(), strict=True))
    assert pose["FL_thigh_joint"] == pytest.approx(0.9)
    assert pose["RR_calf_joint"] == pytest.approx(-1.8)
    assert (pose["FL_hip_joint"], pose["FR_hip_joint"]) == pytest.approx((-0.1, 0.1))
    heights = standing(env, 50)  # 1 s
    assert heights[-1].min() > 0.2, heights[-1]
    # its MJCF has no floor: the scene laid one, and the four feet stand on it
    assert env.scene.feet_force_norm.gt(1.0).all()
    # the config's mirror map is the one in the file's geometry
    scene = env.scene
    found = joint_mirror(scene.model, scene.root_body_id, scene._joint_mj_ids, names)
    assert scene.joint_mirror() == found
    # the task's solver, not the file's elliptic cone at impratio 100 and 100 iterations
    assert int(m.opt.cone) == int(mujoco.mjtCone.mjCONE_PYRAMIDAL)
    assert (m.opt.impratio, m.opt.iterations, m.opt.ls_iterations) == (1.0, 10, 20)


def test_the_same_config_gives_the_same_robot_on_a_position_actuator_model(tmp_path):
    vendor = standing(go2_env(VENDOR_GO2), 25)
    position = standing(go2_env(position_actuator_go2(tmp_path)), 25)
    # the MJCF's own gains (kp 80) are gone: both files run the config's motors
    torch.testing.assert_close(position, vendor, atol=1e-4, rtol=0)


def test_a_model_without_the_go2s_joints_is_refused_naming_them(capsys):
    result = robolearn_in_process(
        capsys, "train", "--task", "go2_walk", "env.scene.model=quadruped/scene.xml"
    )
    one_line_error(result, "lacks 12 of the robot config's 12 joints: FL_hip_joint, FL_thigh_joint")


def test_menageries_go2_not_under_the_local_root_is_one_line(capsys, menagerie_root):
    result = robolearn_in_process(capsys, "train", "--task", "go2_walk", "--max_iterations", "1")
    one_line_error(result, "unitree_go2")


def test_a_pose_naming_no_joint_or_outside_a_range_is_refused():
    spec = mujoco.MjSpec.from_file(str(VENDOR_GO2))
    with pytest.raises(RobolearnError, match=r"'\.\*_knee_joint' match no joint"):
        add_init_keyframe(spec, InitStateCfg(joint_pos={".*_knee_joint": -1.0}), "init")
    with pytest.raises(RobolearnError, match=r"FL_calf_joint = 0 is outside the joint's range"):
        add_init_keyframe(spec, InitStateCfg(joint_pos={"FL_calf_joint": 0.0}), "init")


# slow: every-task tests build and step go2_walk on this file, and the pretrained
# policy plays on it in tests/app/test_sim2sim.py
@pytest.mark.slow
def test_go2_walk_trains_and_plays_on_unitrees_file(tmp_path):
    model = f"env.scene.model={VENDOR_GO2}"
    run_train(
        "--task",
        "go2_walk",
        "--num_envs",
        "32",
        "--max_iterations",
        "2",
        "--log_root",
        tmp_path,
        model,
        "--engine",
        "cpu",
    )
    (run,) = (tmp_path / "go2_walk").iterdir()
    assert list(run.glob("model_*.pt"))
    metrics = play_eval(
        "--task",
        "go2_walk",
        "--checkpoint",
        run,
        "--num_envs",
        "8",
        model,
        "--engine",
        "cpu",
    )
    assert np.isfinite(metrics["mean_return"]) and 0.0 <= metrics["fall_rate"] <= 1.0


# slow: tests/app/test_sim2sim.py walks the same policy on the same file (torque
# motors, Unitree's solver) in the default run
@pytest.mark.slow
def test_the_pretrained_go2_walk_policy_walks_on_unitrees_file():
    metrics = play_eval(
        "--task", "go2_walk", "--checkpoint", "pretrained", "--num_envs", "16",
        f"env.scene.model={VENDOR_GO2}", "--engine", "cpu",
    )  # fmt: skip
    assert walks(metrics), metrics
