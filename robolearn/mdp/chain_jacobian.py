"""A point's Jacobian over chosen hinge and slide joints, from the bodies' world poses.

For a hinge joint with world axis ``a`` through the anchor ``p_j``, a point ``p`` moving
with a body below it has the translational column ``a x (p - p_j)`` and the rotational
column ``a``; a slide joint has ``a`` and 0; a joint that is not on the body's chain to the
world has zeros. The axes and anchors come from the joint bodies' ``xpos`` and ``xquat``,
which every engine exposes, so this is a handful of batched torch ops on the engine's
device: no kinematics pass and no engine call. ``Engine.jacobian`` runs MuJoCo's
``mj_kinematics``, ``mj_comPos`` and ``mj_jac`` per env on the cpu batch; with it the IK
term took 12.9% of a 1024-env panda_lift_ik step, with this 7.1% (BENCHMARKS.md section
20). It also has the timing of the body poses (the derived fields'), so a frame's pose
error and its Jacobian describe the same state.
"""

from __future__ import annotations

import mujoco
import torch

from robolearn.errors import RobolearnError
from robolearn.math import quat_rotate
from robolearn.mdp.protocol import TaskEnv

_HINGE, _SLIDE = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)


class ChainJacobian:
    """Jacobians of points fixed to ``body`` over the model joints ``joints`` (hinge or
    slide), in that column order."""

    def __init__(self, env: TaskEnv, joints: list[int], body: int) -> None:
        m = env.scene.model
        types = [int(m.jnt_type[j]) for j in joints]
        if any(t not in (_HINGE, _SLIDE) for t in types):
            names = [m.joint(j).name for j, t in zip(joints, types, strict=True)]
            raise RobolearnError(f"a chain Jacobian takes hinge and slide joints, got {names}")
        chain = set()
        b = int(body)
        while b > 0:
            chain.add(b)
            b = int(m.body_parentid[b])
        dev = env.device
        on_chain = torch.tensor([int(m.jnt_bodyid[j]) in chain for j in joints], device=dev)
        hinge = torch.tensor([t == _HINGE for t in types], device=dev)
        self._bodies = torch.tensor([int(m.jnt_bodyid[j]) for j in joints], device=dev)
        self._pos = torch.as_tensor(m.jnt_pos[joints], dtype=torch.float32, device=dev)
        self._axis = torch.as_tensor(m.jnt_axis[joints], dtype=torch.float32, device=dev)
        self._lin_of_hinge = (hinge & on_chain).float().unsqueeze(-1)  # (k, 1)
        self._lin_of_slide = (~hinge & on_chain).float().unsqueeze(-1)
        self._rot = (hinge & on_chain).float().unsqueeze(-1)
        self._engine = env.scene.engine

    def __call__(self, point: torch.Tensor) -> torch.Tensor:
        """(N, 6, k): rows d(point velocity)/d(qvel) then d(angular velocity)/d(qvel),
        world frame, for ``point`` (N, 3) in the world."""
        e = self._engine
        xpos = e.xpos.index_select(1, self._bodies).float()  # (N, k, 3)
        xquat = e.xquat.index_select(1, self._bodies).float()
        axis = quat_rotate(xquat, self._axis.expand_as(xpos))
        anchor = xpos + quat_rotate(xquat, self._pos.expand_as(xpos))
        swing = torch.linalg.cross(axis, point.unsqueeze(1) - anchor)
        lin = swing * self._lin_of_hinge + axis * self._lin_of_slide
        return torch.cat((lin, axis * self._rot), dim=-1).transpose(1, 2)
