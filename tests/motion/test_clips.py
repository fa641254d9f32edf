"""Motion clips: validation, resampling, files (npz and the retargeted CSV), forward
kinematics on a real model, keyframed clips and the clips robolearn ships."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from robolearn.assets import ASSETS_DIR

from robolearn.errors import RobolearnError
from robolearn.motion import (
    MotionClip,
    RobotModel,
    clip_from_keyframes,
    clip_kinematics,
    load_clip,
    lowest_point,
    plausibility_problems,
    read_csv,
    save_clip,
)

HUMANOID = str(ASSETS_DIR / "humanoid" / "scene.xml")


@pytest.fixture(scope="module")
def humanoid() -> RobotModel:
    model = mujoco.MjModel.from_xml_path(HUMANOID)
    joints = [
        model.joint(j).name
        for j in range(model.njnt)
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE
    ]
    return RobotModel.of(model, "pelvis", joints)


def _yaw_quat(yaw: np.ndarray) -> np.ndarray:
    return np.stack((np.cos(yaw / 2), 0 * yaw, 0 * yaw, np.sin(yaw / 2)), axis=-1)


def _clip(t: int = 11, fps: float = 10.0, joints: tuple[str, ...] = ("a", "b")) -> MotionClip:
    time = np.arange(t) / fps
    return MotionClip(
        fps=fps,
        joint_names=joints,
        root_pos=np.stack((0.5 * time, 0 * time, 0.7 + 0 * time), axis=-1),
        root_quat=_yaw_quat(0.8 * time),  # turning at 0.8 rad/s
        joint_pos=np.stack([0.3 * time + i for i in range(len(joints))], axis=-1),
        name="ramp",
    )


# ---- the clip type ----------------------------------------------------------------------


@pytest.mark.parametrize("fps", [0, -30, math.nan, math.inf])
def test_a_rate_that_is_not_positive_is_refused(fps):
    with pytest.raises(RobolearnError, match="frame rate must be a positive number"):
        MotionClip(fps, ("a",), np.zeros((2, 3)), _yaw_quat(np.zeros(2)), np.zeros((2, 1)))


def test_a_quaternion_that_is_not_unit_is_refused_naming_its_frame():
    quat = _yaw_quat(np.zeros(4))
    quat[2] *= 0.5
    with pytest.raises(RobolearnError, match=r"frame 2 has norm 0\.5"):
        MotionClip(30.0, ("a",), np.zeros((4, 3)), quat, np.zeros((4, 1)))


def test_arrays_whose_frames_disagree_are_refused():
    with pytest.raises(RobolearnError, match=r"joint_pos has shape \(3, 1\), expected \(4, 1\)"):
        MotionClip(30.0, ("a",), np.zeros((4, 3)), _yaw_quat(np.zeros(4)), np.zeros((3, 1)))


def test_consecutive_quaternions_are_put_in_one_hemisphere():
    quat = _yaw_quat(np.array([0.0, 0.1, 0.2]))
    quat[1] *= -1.0  # the same rotation
    clip = MotionClip(30.0, ("a",), np.zeros((3, 3)), quat, np.zeros((3, 1)))
    assert (np.einsum("ij,ij->i", clip.root_quat[1:], clip.root_quat[:-1]) > 0).all()


def test_resampling_keeps_the_motion_and_its_duration():
    clip = _clip(t=11, fps=10.0)  # 1 s
    fine = clip.resample(50.0)
    assert fine.num_frames == 51 and fine.duration == pytest.approx(1.0)
    time = np.arange(51) / 50.0
    np.testing.assert_allclose(fine.joint_pos[:, 0], 0.3 * time, atol=1e-12)
    np.testing.assert_allclose(fine.root_pos[:, 0], 0.5 * time, atol=1e-12)
    # spherical interpolation of a steady turn is the steady turn
    np.testing.assert_allclose(fine.root_quat, _yaw_quat(0.8 * time), atol=1e-12)


def test_resampling_to_a_coarser_rate_ends_at_or_before_the_clip_end():
    clip = _clip(t=11, fps=10.0).resample(3.0)
    assert clip.num_frames == 4 and clip.duration == pytest.approx(1.0)


def test_joints_are_put_in_the_robots_order_by_name():
    clip = _clip(joints=("a", "b"))
    swapped = clip.in_order(("b", "a"))
    np.testing.assert_array_equal(swapped.joint_pos[:, 0], clip.joint_pos[:, 1])


def test_a_joint_mismatch_names_what_each_side_lacks():
    with pytest.raises(RobolearnError, match=r"it lacks \['c'\]; the robot has no joint \['b'\]"):
        _clip(joints=("a", "b")).in_order(("a", "c"))


# ---- files ------------------------------------------------------------------------------


def test_npz_round_trip(tmp_path):
    clip = _clip()
    path = save_clip(clip, tmp_path / "ramp.npz")
    back = load_clip(path)
    assert back.joint_names == clip.joint_names and back.fps == clip.fps
    for field in ("root_pos", "root_quat", "joint_pos"):
        np.testing.assert_array_equal(getattr(back, field), getattr(clip, field))


def test_a_file_that_is_not_a_clip_says_so(tmp_path):
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(RobolearnError, match="not a robolearn motion clip: it has no"):
        load_clip(tmp_path / "other.npz")
    (tmp_path / "clip.csv").write_text("1,2\n")
    with pytest.raises(RobolearnError, match="convert it first with `robolearn motion convert"):
        load_clip(tmp_path / "clip.csv")
    with pytest.raises(RobolearnError, match="does not exist"):
        load_clip(tmp_path / "missing.npz")


def test_a_stored_rate_of_zero_is_refused_on_load(tmp_path):
    clip = _clip()
    path = save_clip(clip, tmp_path / "ramp.npz")
    with np.load(path) as data:
        arrays = dict(data)
    arrays["fps"] = np.float64(0.0)
    np.savez(tmp_path / "zero.npz", **arrays)
    with pytest.raises(RobolearnError, match="frame rate must be a positive number"):
        load_clip(tmp_path / "zero.npz")


def _write_csv(path, clip: MotionClip, order: str = "xyzw") -> None:
    quat = clip.root_quat[:, [1, 2, 3, 0]] if order == "xyzw" else clip.root_quat
    rows = np.concatenate((clip.root_pos, quat, clip.joint_pos), axis=1)
    path.write_text("\n".join(",".join(f"{v:.9f}" for v in row) for row in rows) + "\n")


def test_csv_reads_the_retargeted_layout_with_xyzw_quaternions(tmp_path):
    clip = _clip()
    _write_csv(tmp_path / "walk.csv", clip)
    back = read_csv(tmp_path / "walk.csv", clip.joint_names, fps=10.0)
    np.testing.assert_allclose(back.root_quat, clip.root_quat, atol=1e-8)
    np.testing.assert_allclose(back.joint_pos, clip.joint_pos, atol=1e-8)


def test_csv_with_a_wrong_column_count_says_what_it_takes(tmp_path):
    (tmp_path / "bad.csv").write_text("0,0,0.7,0,0,0,1,0.1\n")
    with pytest.raises(RobolearnError, match=r"line 1: 8 columns; this robot's clips have 9"):
        read_csv(tmp_path / "bad.csv", ("a", "b"), fps=30.0)


def test_csv_in_the_other_quaternion_order_is_caught(tmp_path):
    # a walker facing 40 to 140 degrees: read in the wrong order its root lies tilted over
    time = np.arange(20) / 20.0
    clip = MotionClip(
        20.0, ("a",), np.zeros((20, 3)), _yaw_quat(0.7 + 1.7 * time), np.zeros((20, 1))
    )
    _write_csv(tmp_path / "w.csv", clip, order="xyzw")
    with pytest.raises(RobolearnError, match="the file writes them xyzw"):
        read_csv(tmp_path / "w.csv", ("a",), fps=20.0, quat_order="wxyz")
    _write_csv(tmp_path / "w2.csv", clip, order="wxyz")
    with pytest.raises(RobolearnError, match=r"pass --quat_order wxyz"):
        read_csv(tmp_path / "w2.csv", ("a",), fps=20.0)
    assert read_csv(tmp_path / "w2.csv", ("a",), fps=20.0, quat_order="wxyz").num_frames == 20


# ---- kinematics ------------------------------------------------------------------------


def _humanoid_clip(robot: RobotModel, frames: int = 21) -> MotionClip:
    t = np.arange(frames) / 20.0
    joints = np.zeros((frames, len(robot.joint_names)))
    knee = robot.joint_names.index("left_knee")
    joints[:, knee] = 0.2 + 1.5 * t  # 1.5 rad/s
    root = np.stack((0.4 * t, 0 * t, 0.8 + 0 * t), axis=-1)
    return MotionClip(20.0, robot.joint_names, root, _yaw_quat(0.6 * t), joints, "k")


def test_forward_kinematics_matches_mujoco_and_the_velocities_the_motion_has(humanoid):
    clip = _humanoid_clip(humanoid)
    kin = clip_kinematics(humanoid, clip)
    data = mujoco.MjData(humanoid.model)
    data.qpos[:] = humanoid.qpos(clip)[7]
    mujoco.mj_kinematics(humanoid.model, data)
    np.testing.assert_allclose(kin.body_pos[7], data.xpos, atol=1e-12)
    np.testing.assert_allclose(np.abs(np.einsum("bi,bi->b", kin.body_quat[7], data.xquat)), 1.0)
    knee = humanoid.joint_names.index("left_knee")
    np.testing.assert_allclose(kin.joint_vel[:, knee], 1.5, atol=1e-9)
    pelvis = humanoid.body_id("pelvis")
    np.testing.assert_allclose(kin.body_lin_vel[:, pelvis], [[0.4, 0.0, 0.0]] * 21, atol=1e-9)
    np.testing.assert_allclose(kin.body_ang_vel[:, pelvis], [[0.0, 0.0, 0.6]] * 21, atol=1e-9)


def test_a_body_the_model_lacks_is_named_with_the_bodies_there_are(humanoid):
    with pytest.raises(RobolearnError, match=r"has no body 'left_hand'.*bodies: pelvis"):
        humanoid.body_id("left_hand")


def test_plausibility_finds_joints_out_of_range_and_feet_through_the_floor(humanoid):
    clip = _humanoid_clip(humanoid)
    root = clip.root_pos.copy()
    root[:, 2] = 0.6  # 15 cm too low: the feet sink
    joints = clip.joint_pos.copy()
    joints[5, humanoid.joint_names.index("left_elbow")] = 1.0  # range [-2.2, 0.2]
    sunk = MotionClip(clip.fps, clip.joint_names, root, clip.root_quat, joints)
    problems = plausibility_problems(humanoid, sunk)
    assert any("joint left_elbow at 1.000 in frame 5" in p for p in problems), problems
    assert any("through the floor" in p for p in problems), problems


def test_a_keyframed_squat_keeps_its_feet_planted_on_the_floor(humanoid):
    from robolearn.tasks.tracking.motions import HUMANOID_JOINTS, squat_keyframes

    default = {"left_knee": 0.6, "right_knee": 0.6}
    clip = clip_from_keyframes(
        humanoid, squat_keyframes(HUMANOID_JOINTS, elbow=-0.3), default, ["left_foot", "right_foot"]
    )
    assert plausibility_problems(humanoid, clip) == []
    kin = clip_kinematics(humanoid, clip)
    feet = [humanoid.body_id("left_foot"), humanoid.body_id("right_foot")]
    drift = kin.body_pos[:, feet, 0:2].mean(axis=1) - kin.body_pos[0, feet, 0:2].mean(axis=0)
    assert np.abs(drift).max() < 1e-9
    np.testing.assert_allclose(lowest_point(humanoid, clip, reach=0.05), 0.0, atol=1e-3)
    # the squat goes down: the pelvis at the bottom is 20 cm or more below standing
    assert clip.root_pos[0, 2] - clip.root_pos[:, 2].min() > 0.2


def test_keyframes_must_start_at_zero_and_name_joints_the_robot_has(humanoid):
    from robolearn.motion import Keyframe

    with pytest.raises(RobolearnError, match="start at time 0"):
        clip_from_keyframes(humanoid, [Keyframe(1.0)], {}, ["left_foot"])
    with pytest.raises(RobolearnError, match="names no joint"):
        clip_from_keyframes(
            humanoid, [Keyframe(0.0), Keyframe(1.0, {"left_wrist": 1.0})], {}, ["left_foot"]
        )


# ---- the shipped clips ------------------------------------------------------------------


SHIPPED = {
    "g1_walk": "g1_walk",
    "g1_squat": "g1_walk",
    "humanoid_walk": "humanoid_walk",
    "humanoid_squat": "humanoid_walk",
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_the_shipped_clips_are_plausible_on_their_robots(name):
    from robolearn.app.motion import robot_scene

    _, robot = robot_scene(SHIPPED[name], [])
    clip = load_clip(ASSETS_DIR / "motions" / f"{name}.npz")
    assert clip.fps == 50.0 and clip.duration >= 6.0
    assert plausibility_problems(robot, clip) == []


@pytest.mark.parametrize("name", ["g1_squat", "humanoid_squat"])
def test_the_shipped_squats_are_what_the_keyframes_make(name):
    from robolearn.tasks.tracking.motions import SQUATS, squat_keyframes

    from robolearn.app.motion import robot_scene

    task, joints, planted, elbow = SQUATS[name]
    scene, robot = robot_scene(task, [])
    default = dict(zip(scene.joint_names, scene.default_joint_pos[0].tolist(), strict=True))
    made = clip_from_keyframes(robot, squat_keyframes(joints, elbow), default, planted, 50.0)
    shipped = load_clip(ASSETS_DIR / "motions" / f"{name}.npz")
    np.testing.assert_allclose(shipped.joint_pos, made.joint_pos, atol=1e-9)
    np.testing.assert_allclose(shipped.root_pos, made.root_pos, atol=1e-6)


def test_the_shipped_walks_walk():
    for name in ("g1_walk", "humanoid_walk"):
        clip = load_clip(ASSETS_DIR / "motions" / f"{name}.npz")
        speed = np.linalg.norm(clip.root_pos[-1, :2] - clip.root_pos[0, :2]) / clip.duration
        assert 0.3 < speed < 0.6, (name, speed)  # recorded at a 0.5 m/s command
