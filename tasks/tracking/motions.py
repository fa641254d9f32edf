"""The clips robolearn makes itself (``assets/motions``), so that the tracking tasks, their
tests and their demo need nothing from outside.

* ``<robot>_walk.npz``: the shipped walking policy of the robot (g1_walk, humanoid_walk),
  recorded from the simulator at 50 Hz for 10 s walking forward at 0.5 m/s (``robolearn
  motion record``);
* ``<robot>_squat.npz``: a squat with an arm swing, authored here from keyframes
  (:func:`squat_keyframes`), the feet planted and the lowest point on the floor.

``python scripts/make_motions.py`` writes all four; the tests check the keyframed ones
against this module and every clip for plausibility on its robot.
"""

from __future__ import annotations

from robolearn.motion import Keyframe

SQUAT_S = 6.0
"""The squat clip's length: stand 1 s, down 1.5 s, hold 1 s, up 1.5 s, stand 1 s."""


def squat_keyframes(
    joint: dict[str, str], elbow: float = 0.3, depth: float = 1.0
) -> list[Keyframe]:
    """A squat with the arms swung forward, for a biped whose joint-name regexes are
    ``joint`` (``hip_pitch``, ``knee``, ``ankle_pitch``, ``shoulder_pitch``, ``elbow``,
    and ``waist_pitch`` where it has one). ``depth`` scales the bend: at 1 the hips flex
    1.1 rad, the knees 1.9 and the ankles 0.8 (the foot stays flat), the shoulders swing
    the arms 1.3 rad forward and the elbows bend to ``elbow`` (rad, in the robot's own
    sign)."""
    down = {
        joint["hip_pitch"]: -1.1 * depth,
        joint["knee"]: 1.9 * depth,
        joint["ankle_pitch"]: -0.8 * depth,
        joint["shoulder_pitch"]: -1.3,
        joint["elbow"]: elbow,
    }
    if "waist_pitch" in joint:
        down[joint["waist_pitch"]] = 0.35 * depth
    return [
        Keyframe(0.0),
        Keyframe(1.0),
        Keyframe(2.5, down),
        Keyframe(3.5, down),
        Keyframe(5.0),
        Keyframe(SQUAT_S),
    ]


G1_JOINTS = {
    "hip_pitch": ".*_hip_pitch_joint",
    "knee": ".*_knee_joint",
    "ankle_pitch": ".*_ankle_pitch_joint",
    "shoulder_pitch": ".*_shoulder_pitch_joint",
    "elbow": ".*_elbow_joint",
    "waist_pitch": "waist_pitch_joint",
}
HUMANOID_JOINTS = {
    "hip_pitch": ".*_hip_pitch",
    "knee": ".*_knee",
    "ankle_pitch": ".*_ankle_pitch",
    "shoulder_pitch": ".*_shoulder_pitch",
    "elbow": ".*_elbow",
}

SQUATS = {
    # clip name: (the task whose robot it is for, its joints, the planted bodies, the elbows)
    "g1_squat": ("g1_walk", G1_JOINTS, ("left_ankle_roll_link", "right_ankle_roll_link"), 0.3),
    "humanoid_squat": ("humanoid_walk", HUMANOID_JOINTS, ("left_foot", "right_foot"), -0.3),
}
WALKS = {
    # clip name: the task whose shipped policy walks it
    "g1_walk": "g1_walk",
    "humanoid_walk": "humanoid_walk",
}
WALK_COMMAND = [
    "env.commands.base_velocity.ranges.lin_vel_x=[0.5,0.5]",
    "env.commands.base_velocity.ranges.lin_vel_y=[0.0,0.0]",
    "env.commands.base_velocity.ranges.ang_vel_z=[0.0,0.0]",
    "env.commands.base_velocity.rel_heading_envs=0.0",
    "env.commands.base_velocity.rel_standing_envs=0.0",
]
"""What the walking clips are recorded with: 0.5 m/s forward."""
