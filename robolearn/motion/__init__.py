"""Motion clips: the clip type, its files (robolearn's npz, retargeted CSV), forward
kinematics on the robot's model, and clips authored from keyframes."""

from robolearn.motion.clip import MotionClip, slerp
from robolearn.motion.clip_files import load_clip, read_csv, save_clip
from robolearn.motion.keyframes import Keyframe, clip_from_keyframes
from robolearn.motion.kinematics import (
    ClipKinematics,
    RobotModel,
    clip_kinematics,
    floor_penetration,
    lowest_point,
    plausibility_problems,
)

__all__ = [
    "ClipKinematics",
    "Keyframe",
    "MotionClip",
    "RobotModel",
    "clip_from_keyframes",
    "clip_kinematics",
    "floor_penetration",
    "load_clip",
    "lowest_point",
    "plausibility_problems",
    "read_csv",
    "save_clip",
    "slerp",
]
