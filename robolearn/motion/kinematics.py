"""What a clip means for a robot: its bodies' world poses and velocities frame by frame, by
forward kinematics on the robot's own compiled model, and whether the motion is physically
plausible there (feet not through the floor, joints inside their limits).

Velocities are central differences of the poses (one-sided at the ends): of the joint
positions, of the bodies' positions, and of their orientations (the rotation between the
neighbouring frames as an angular velocity in the world frame). Forward kinematics runs once,
on the cpu, when a task loads its clips; the env reads the results as tensors.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np
import torch

from robolearn.errors import RobolearnError, did_you_mean
from robolearn.math import axis_angle_from_quat, quat_conjugate, quat_mul
from robolearn.motion.clip import MotionClip


@dataclass(frozen=True)
class RobotModel:
    """The model a clip drives: a compiled MuJoCo model, where its free root sits in qpos,
    and its joints (the robot's, in the order clips are put in)."""

    model: mujoco.MjModel
    root_qpos_adr: int
    joint_names: tuple[str, ...]
    joint_qpos_adr: tuple[int, ...]
    name: str = "the robot"

    @classmethod
    def of(
        cls,
        model: mujoco.MjModel,
        root_body: str,
        joint_names: Sequence[str],
        name: str = "the robot",
    ) -> RobotModel:
        """The robot whose floating base is ``root_body`` and whose joints are
        ``joint_names`` in ``model``."""
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, root_body)
        if body < 0:
            raise RobolearnError(f"the model has no body {root_body!r}")
        jnt = int(model.body_jntadr[body])
        if jnt < 0 or model.jnt_type[jnt] != mujoco.mjtJoint.mjJNT_FREE:
            raise RobolearnError(f"body {root_body!r} has no free joint: a clip moves a free root")
        adr = []
        for joint in joint_names:
            j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint)
            if j < 0:
                raise RobolearnError(f"the model has no joint {joint!r}")
            adr.append(int(model.jnt_qposadr[j]))
        return cls(model, int(model.jnt_qposadr[jnt]), tuple(joint_names), tuple(adr), name)

    def body_id(self, name: str) -> int:
        """The id of body ``name``, or an error naming the bodies there are."""
        found = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, name)
        if found < 0:
            names = [self.model.body(i).name for i in range(1, self.model.nbody)]
            raise RobolearnError(
                f"{self.name} has no body {name!r}{did_you_mean(name, names)}; bodies: "
                f"{', '.join(names)}"
            )
        return int(found)

    def qpos(self, clip: MotionClip) -> np.ndarray:
        """(T, nq) the model's qpos along ``clip`` (its joints put in this robot's order); the
        rest of qpos (other entities) at the model's reference pose."""
        clip = clip.in_order(self.joint_names, self.name)
        q = np.tile(self.model.qpos0, (clip.num_frames, 1))
        r = self.root_qpos_adr
        q[:, r : r + 3] = clip.root_pos
        q[:, r + 3 : r + 7] = clip.root_quat
        q[:, list(self.joint_qpos_adr)] = clip.joint_pos
        return q


@dataclass(frozen=True)
class ClipKinematics:
    """A clip on a robot, derived: per frame, every body's world pose and velocity."""

    clip: MotionClip
    """The clip, its joints in the robot's order."""
    joint_vel: np.ndarray
    """(T, J)"""
    body_pos: np.ndarray
    """(T, nbody, 3) world positions of every body of the model (body 0 is the world)."""
    body_quat: np.ndarray
    """(T, nbody, 4) world orientations, w x y z, each body's frames in one hemisphere."""
    body_lin_vel: np.ndarray
    """(T, nbody, 3) world linear velocities of the bodies' origins."""
    body_ang_vel: np.ndarray
    """(T, nbody, 3) world angular velocities."""


def clip_kinematics(robot: RobotModel, clip: MotionClip) -> ClipKinematics:
    """Forward kinematics of ``clip`` on ``robot``, with the velocities that go with it."""
    clip = clip.in_order(robot.joint_names, robot.name)
    qpos = robot.qpos(clip)
    data = mujoco.MjData(robot.model)
    t, nb = clip.num_frames, robot.model.nbody
    pos, quat = np.zeros((t, nb, 3)), np.zeros((t, nb, 4))
    for k in range(t):
        data.qpos[:] = qpos[k]
        mujoco.mj_kinematics(robot.model, data)
        pos[k], quat[k] = data.xpos, data.xquat
    # one hemisphere per body across frames, for the differences below
    if t > 1:
        dots = np.einsum("tbi,tbi->tb", quat[1:], quat[:-1])
        signs = np.cumprod(np.where(dots < 0, -1.0, 1.0), axis=0)
        quat[1:] *= signs[..., None]
    dt = 1.0 / clip.fps
    return ClipKinematics(
        clip=clip,
        joint_vel=_derivative(clip.joint_pos, dt),
        body_pos=pos,
        body_quat=quat,
        body_lin_vel=_derivative(pos, dt),
        body_ang_vel=_angular_velocity(quat, dt),
    )


def plausibility_problems(
    robot: RobotModel,
    clip: MotionClip,
    floor_tolerance: float = 0.02,
    limit_tolerance: float = 0.01,
) -> list[str]:
    """What makes ``clip`` impossible for ``robot``: a joint outside its range by more than
    ``limit_tolerance``, a geom through the floor (a contact with a world geom deeper than
    ``floor_tolerance`` m: MuJoCo's soft contacts let a striking foot sink about a
    centimetre, and a clip recorded from the simulator keeps that). Each problem once, at
    its worst frame; empty when plausible."""
    clip = clip.in_order(robot.joint_names, robot.name)
    m = robot.model
    problems = []
    for i, name in enumerate(robot.joint_names):
        j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
        if not m.jnt_limited[j]:
            continue
        lo, hi = m.jnt_range[j]
        q = clip.joint_pos[:, i]
        over = np.maximum(lo - q, q - hi)
        k = int(np.argmax(over))
        if over[k] > limit_tolerance:
            problems.append(
                f"joint {name} at {q[k]:.3f} in frame {k}, outside its range [{lo:.3f}, {hi:.3f}]"
            )
    depth = floor_penetration(robot, clip)
    k = int(np.argmax(depth))
    if depth[k] > floor_tolerance:
        problems.append(f"a geom {100 * depth[k]:.1f} cm through the floor in frame {k}")
    return problems


def floor_penetration(robot: RobotModel, clip: MotionClip) -> np.ndarray:
    """(T,) how deep (m, 0 when clear) the robot's geoms reach into the world's geoms (the
    floor) in each frame, from MuJoCo's collision detection."""
    return np.maximum(0.0, -_floor_distances(robot.model, robot.qpos(clip), 0.0))


def lowest_point(robot: RobotModel, clip: MotionClip, reach: float = 1.0) -> np.ndarray:
    """(T,) the signed height of the robot's lowest collision point above the world's geoms
    (the floor) in each frame (negative: through it), from contacts detected with a margin
    of ``reach`` m on the world's geoms; ``reach`` where nothing comes that close."""
    return _floor_distances(_with_floor_margin(robot.model, reach), robot.qpos(clip), reach)


def _floor_distances(m: mujoco.MjModel, qpos: np.ndarray, far: float) -> np.ndarray:
    """(T,) per pose, the least distance of a contact between a world geom and another
    (MuJoCo's collision detection; negative: penetrating), ``far`` where there is none."""
    data = mujoco.MjData(m)
    world = m.geom_bodyid == 0
    out = np.full(len(qpos), far)
    for k, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_fwdPosition(m, data)
        c = data.contact[: data.ncon]
        if data.ncon:
            floor = world[c.geom1] ^ world[c.geom2]
            if floor.any():
                out[k] = float(c.dist[floor].min())
    return out


def _with_floor_margin(model: mujoco.MjModel, reach: float) -> mujoco.MjModel:
    """A copy of ``model`` whose world geoms report contacts from ``reach`` m away."""
    out = copy.deepcopy(model)
    out.geom_margin[out.geom_bodyid == 0] = reach
    return out


def _derivative(x: np.ndarray, dt: float) -> np.ndarray:
    """Central differences along the first axis, one-sided at the ends; zeros for one frame."""
    if x.shape[0] < 2:
        return np.zeros_like(x)
    return np.gradient(x, dt, axis=0)


def _angular_velocity(quat: np.ndarray, dt: float) -> np.ndarray:
    """(T, ..., 3) world angular velocities of orientations (T, ..., 4), by central
    differences (q[t+1] q[t-1]^-1 over 2 dt), one-sided at the ends."""
    t = quat.shape[0]
    if t < 2:
        return np.zeros((*quat.shape[:-1], 3))
    q = torch.from_numpy(quat)
    after = torch.cat((q[1:], q[-1:]), dim=0)
    before = torch.cat((q[:1], q[:-1]), dim=0)
    steps = torch.full((t,), 2.0 * dt, dtype=q.dtype)
    steps[0] = steps[-1] = dt
    rot = axis_angle_from_quat(quat_mul(after, quat_conjugate(before)))
    return (rot / steps.reshape((t,) + (1,) * (quat.ndim - 1))).numpy()
