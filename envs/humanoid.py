"""The robolearn humanoid on flat ground (``assets/humanoid``).

21 position-controlled joints: per leg hip yaw, roll, pitch, knee, ankle pitch, roll; a
waist yaw; per arm shoulder pitch, roll, yaw and elbow. Default pose: the ``stand``
keyframe (knees bent 0.6 rad, pelvis at 0.757 m).
"""

from __future__ import annotations

from robolearn.scene import EntityCfg

LEG_JOINTS = (
    ".*_hip_yaw",
    ".*_hip_roll",
    ".*_hip_pitch",
    ".*_knee",
    ".*_ankle_pitch",
    ".*_ankle_roll",
)
FEET = ("left_foot", "right_foot")


def humanoid_robot() -> EntityCfg:
    """The humanoid (its MJCF holds the ground), starting from the ``stand`` keyframe."""
    return EntityCfg(
        model="humanoid/scene.xml",
        keyframe="stand",
        root_body="pelvis",
        feet=FEET,
    )
