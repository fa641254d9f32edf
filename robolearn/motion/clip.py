"""A motion clip: a robot's root pose and joint positions, frame by frame at a known rate.

A clip holds only what defines the motion (root position, root orientation, joint angles by
name); the world poses and velocities of its bodies are derived from it by forward
kinematics on the robot's own model (:mod:`robolearn.motion.kinematics`), so one clip file
serves any MJCF of the same robot and never disagrees with the model it drives.

Quaternions are MuJoCo's order, w x y z, and unit; a clip's consecutive root quaternions are
kept in one hemisphere (q and -q are the same rotation), so that interpolating and
differencing them takes the short way round.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robolearn.errors import RobolearnError

UNIT_TOLERANCE = 1e-3
"""How far from 1 a quaternion's norm may be (float32 files round to ~1e-7; a quaternion
off by more was not meant as a rotation, or its components are in another order)."""


@dataclass(frozen=True)
class MotionClip:
    """``num_frames`` frames at ``fps``: the root's position (m) and orientation (w x y z)
    in the world, and the joints' positions (rad or m) in ``joint_names``' order."""

    fps: float
    joint_names: tuple[str, ...]
    root_pos: np.ndarray
    """(T, 3) float64."""
    root_quat: np.ndarray
    """(T, 4) float64, w x y z, unit, consecutive frames in one hemisphere."""
    joint_pos: np.ndarray
    """(T, J) float64."""
    name: str = "clip"

    def __post_init__(self) -> None:
        where = f"motion clip {self.name!r}"
        fps = self.fps
        if not (isinstance(fps, int | float) and math.isfinite(fps) and fps > 0):
            raise RobolearnError(f"{where}: the frame rate must be a positive number, got {fps!r}")
        names = tuple(str(n) for n in self.joint_names)
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise RobolearnError(f"{where}: joint names repeat: {dup}")
        root_pos = _array(self.root_pos, where, "root_pos")
        root_quat = _array(self.root_quat, where, "root_quat")
        joint_pos = _array(self.joint_pos, where, "joint_pos")
        t = root_pos.shape[0]
        for field, value, width in (
            ("root_pos", root_pos, 3),
            ("root_quat", root_quat, 4),
            ("joint_pos", joint_pos, len(names)),
        ):
            if value.ndim != 2 or value.shape != (t, width):
                raise RobolearnError(
                    f"{where}: {field} has shape {value.shape}, expected ({t}, {width})"
                )
        if t < 1:
            raise RobolearnError(f"{where}: the clip has no frames")
        norms = np.linalg.norm(root_quat, axis=1)
        bad = np.flatnonzero(np.abs(norms - 1.0) > UNIT_TOLERANCE)
        if bad.size:
            k = int(bad[0])
            raise RobolearnError(
                f"{where}: the root quaternion of frame {k} has norm {norms[k]:.4g}, not 1 "
                f"({bad.size} of {t} frames are not unit quaternions)"
            )
        root_quat = root_quat / norms[:, None]
        # one hemisphere: flip each quaternion whose dot with its predecessor is negative
        signs = np.ones(t)
        if t > 1:
            dots = np.einsum("ij,ij->i", root_quat[1:], root_quat[:-1])
            signs[1:] = np.cumprod(np.where(dots < 0, -1.0, 1.0))
        object.__setattr__(self, "fps", float(fps))
        object.__setattr__(self, "joint_names", names)
        object.__setattr__(self, "root_pos", root_pos)
        object.__setattr__(self, "root_quat", root_quat * signs[:, None])
        object.__setattr__(self, "joint_pos", joint_pos)

    @property
    def num_frames(self) -> int:
        return int(self.root_pos.shape[0])

    @property
    def duration(self) -> float:
        """Seconds from the first frame to the last."""
        return (self.num_frames - 1) / self.fps

    def resample(self, fps: float) -> MotionClip:
        """The clip at ``fps`` over the same duration (positions interpolated linearly, the
        root's orientation by spherical interpolation); the last frame is the last one at or
        before the clip's end."""
        probe = MotionClip(fps, (), self.root_pos[:1], self.root_quat[:1], np.zeros((1, 0)))
        fps = probe.fps
        if self.num_frames == 1 or fps == self.fps:
            return self if fps == self.fps else _repeat(self, fps)
        count = math.floor(self.duration * fps + 1e-9) + 1
        x = np.arange(count) / fps * self.fps  # positions in source frames
        i = np.minimum(np.floor(x).astype(int), self.num_frames - 2)
        a = (x - i)[:, None]
        lerp = lambda v: v[i] * (1.0 - a) + v[i + 1] * a  # noqa: E731
        return MotionClip(
            fps=fps,
            joint_names=self.joint_names,
            root_pos=lerp(self.root_pos),
            root_quat=slerp(self.root_quat[i], self.root_quat[i + 1], a[:, 0]),
            joint_pos=lerp(self.joint_pos),
            name=self.name,
        )

    def in_order(self, joint_names: Sequence[str], robot: str = "the robot") -> MotionClip:
        """The clip with its joints in ``joint_names``' order (the robot's), by name.

        Raises:
            RobolearnError: naming the joints the clip lacks and those the robot lacks.
        """
        joint_names = tuple(joint_names)
        if joint_names == self.joint_names:
            return self
        missing = [n for n in joint_names if n not in self.joint_names]
        extra = [n for n in self.joint_names if n not in joint_names]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"it lacks {missing}")
            if extra:
                parts.append(f"{robot} has no joint {extra}")
            raise RobolearnError(
                f"motion clip {self.name!r} has {len(self.joint_names)} joints and "
                f"{robot} {len(joint_names)}: {'; '.join(parts)}"
            )
        index = [self.joint_names.index(n) for n in joint_names]
        return MotionClip(
            self.fps,
            joint_names,
            self.root_pos,
            self.root_quat,
            self.joint_pos[:, index],
            self.name,
        )


def slerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Spherical interpolation of unit quaternions (..., 4) at fractions ``t`` (...)."""
    dot = np.einsum("...i,...i->...", a, b)
    b = np.where((dot < 0)[..., None], -b, b)
    dot = np.abs(dot)
    angle = np.arccos(np.clip(dot, -1.0, 1.0))
    small = angle < 1e-6
    sin = np.where(small, 1.0, np.sin(angle))
    wa = np.where(small, 1.0 - t, np.sin((1.0 - t) * angle) / sin)
    wb = np.where(small, t, np.sin(t * angle) / sin)
    q = wa[..., None] * a + wb[..., None] * b
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _repeat(clip: MotionClip, fps: float) -> MotionClip:
    return MotionClip(
        fps, clip.joint_names, clip.root_pos, clip.root_quat, clip.joint_pos, clip.name
    )


def _array(value, where: str, field: str) -> np.ndarray:
    try:
        out = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise RobolearnError(f"{where}: {field} is not an array of numbers ({e})") from None
    if not np.isfinite(out).all():
        raise RobolearnError(f"{where}: {field} holds values that are not finite")
    return out
