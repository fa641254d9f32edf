"""The motion files users hand robolearn, as the command line meets them: a clip of another
robot."""

from __future__ import annotations

from robolearn.assets import ASSETS_DIR

from tests.cli_helpers import one_line_error, robolearn_in_process

TASK = "humanoid_track"


# ---- a clip of another robot --------------------------------------------------------------


def test_a_clip_of_another_robot_names_the_robot_and_the_joints(capsys):
    clip = ASSETS_DIR / "motions" / "g1_walk.npz"
    out = robolearn_in_process(capsys, "motion", "info", clip, "--task", TASK)
    one_line_error(out, f"has 29 joints and {TASK}'s robot 21: it lacks ['left_hip_yaw'")
    assert f"{TASK}'s robot has no joint ['left_hip_pitch_joint'" in out.stderr
