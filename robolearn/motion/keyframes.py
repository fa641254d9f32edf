"""Clips authored from keyframes: joint angles at a few instants, eased in between, the root
placed so that the feet stay planted on the floor.

The author gives poses; the floor and the feet fix where the root must be. For every frame
the root is moved horizontally so that the planted bodies keep their starting place (no
sliding), and vertically so that the robot's lowest collision point touches the floor
(MuJoCo's collision detection on the robot's own model), so a squat lowers the pelvis by
exactly what the bent knees take.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from robolearn.errors import RobolearnError
from robolearn.motion.clip import MotionClip
from robolearn.motion.kinematics import RobotModel, clip_kinematics, lowest_point


@dataclass(frozen=True)
class Keyframe:
    """A pose at ``time`` seconds: ``joints`` maps joint-name regexes to angles (rad); a
    joint no regex names takes the default pose. ``yaw`` turns the root (rad)."""

    time: float
    joints: Mapping[str, float] = field(default_factory=dict)
    yaw: float = 0.0


def clip_from_keyframes(
    robot: RobotModel,
    keyframes: Sequence[Keyframe],
    default_pose: Mapping[str, float],
    planted: Sequence[str],
    fps: float = 50.0,
    name: str = "keyframes",
) -> MotionClip:
    """A clip through ``keyframes`` (times increasing from 0) at ``fps``, eased between
    keyframes (a cosine ease: zero joint velocity at every keyframe), with the root placed
    so that the bodies ``planted`` keep their starting horizontal place and the robot's
    lowest point stays on the floor.

    Raises:
        RobolearnError: keyframes out of order or not starting at 0, a regex that names no
            joint of the robot, a planted body the robot lacks.
    """
    if not keyframes or keyframes[0].time != 0.0:
        raise RobolearnError("keyframes start at time 0")
    times = [k.time for k in keyframes]
    if any(b <= a for a, b in itertools.pairwise(times)):
        raise RobolearnError(f"keyframe times must increase, got {times}")
    names = robot.joint_names
    poses = np.array([_pose(k, names, default_pose) for k in keyframes])
    yaws = np.array([k.yaw for k in keyframes])
    count = math.floor(times[-1] * fps + 1e-9) + 1
    t = np.arange(count) / fps
    seg = np.clip(np.searchsorted(times, t, side="right") - 1, 0, max(len(times) - 2, 0))
    if len(times) == 1:
        joint_pos, yaw = np.repeat(poses, count, axis=0), np.repeat(yaws, count)
    else:
        span = np.array(times)[seg + 1] - np.array(times)[seg]
        u = np.clip((t - np.array(times)[seg]) / span, 0.0, 1.0)
        ease = (0.5 - 0.5 * np.cos(np.pi * u))[:, None]
        joint_pos = poses[seg] * (1.0 - ease) + poses[seg + 1] * ease
        yaw = yaws[seg] * (1.0 - ease[:, 0]) + yaws[seg + 1] * ease[:, 0]
    quat = np.stack((np.cos(yaw / 2), 0 * yaw, 0 * yaw, np.sin(yaw / 2)), axis=-1)
    start_z = 1.0
    root = np.zeros((count, 3))
    root[:, 2] = start_z
    raw = MotionClip(fps, names, root, quat, joint_pos, name)
    feet = [robot.body_id(b) for b in planted]
    where = clip_kinematics(robot, raw).body_pos[:, feet, 0:2].mean(axis=1)
    root[:, 0:2] = where[0] - where
    lifted = MotionClip(fps, names, root, quat, joint_pos, name)
    root[:, 2] = start_z - lowest_point(robot, lifted, reach=start_z + 0.5)
    # MuJoCo's distances are exact near contact but not always from far away (a mesh's,
    # with a wide margin): refine with the floor a few cm off
    for _ in range(3):
        placed = MotionClip(fps, names, root, quat, joint_pos, name)
        root[:, 2] -= lowest_point(robot, placed, reach=0.05)
    return MotionClip(fps, names, root, quat, joint_pos, name)


def _pose(key: Keyframe, names: Sequence[str], default_pose: Mapping[str, float]) -> list[float]:
    pose = [float(default_pose.get(n, 0.0)) for n in names]
    for pattern, angle in key.joints.items():
        hits = [i for i, n in enumerate(names) if re.fullmatch(pattern, n)]
        if not hits:
            raise RobolearnError(
                f"keyframe at {key.time} s: {pattern!r} names no joint of the robot"
            )
        for i in hits:
            pose[i] = float(angle)
    return pose
