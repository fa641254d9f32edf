"""Task-space actions: the policy commands an end effector's pose, differential inverse
kinematics turns it into the arm's joint position targets.

Each env step, :class:`DifferentialIKAction` takes the pose error of its frame (a site or
body of the robot, see :mod:`robolearn.mdp.frames`), the frame's Jacobian over the arm's
joints from the joint bodies' poses (:mod:`robolearn.mdp.chain_jacobian`: batched torch
ops on any engine, no host synchronisation, the same as MuJoCo's ``mj_jac``), and solves
damped least squares,

    dq = J^T (J J^T + lambda^2 I)^-1 e,

for a joint step; the targets ``q + dq`` are clamped to the joints' limits and written to
the arm's position loops. The command is in the robot's base frame (``base``; the world
where None), absolute or relative to the frame's current pose, a pose or a position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from robolearn.errors import RobolearnError
from robolearn.managers import ActionTerm, ActionTermCfg, Marker
from robolearn.math import (
    axis_angle_from_quat,
    quat_conjugate,
    quat_from_axis_angle,
    quat_mul,
    take_columns,
)
from robolearn.mdp.chain_jacobian import ChainJacobian
from robolearn.mdp.frames import FrameCfg, Pose, frame, pose_in, pose_to_world
from robolearn.mdp.protocol import TaskEnv

COMMAND_TYPES = ("pose", "position")


class DifferentialIKAction(ActionTerm):
    """An end effector's pose (or position) commanded in the base frame, reached by damped
    least squares on its Jacobian; see the module docstring."""

    cfg: DifferentialIKActionCfg

    def __init__(self, cfg: DifferentialIKActionCfg, env: TaskEnv, name: str) -> None:
        super().__init__(cfg, env, name)
        scene, what = env.scene, f"actions.{name}"
        if cfg.command_type not in COMMAND_TYPES:
            raise RobolearnError(
                f"{what}.command_type must be one of {', '.join(COMMAND_TYPES)}, "
                f"got {cfg.command_type!r}"
            )
        if not cfg.damping >= 0 or not cfg.scale > 0 or not cfg.rotation_scale > 0:
            raise RobolearnError(
                f"{what}: damping must be >= 0 and scale, rotation_scale > 0, got "
                f"{cfg.damping}, {cfg.scale}, {cfg.rotation_scale}"
            )
        joint_of = scene.actuator_joint[self.actuator_ids]
        ids = self.actuator_ids.tolist()
        targets = scene.takes_position_targets(ids)
        bad = [
            scene.actuator_names[a]
            for a, j, t in zip(ids, joint_of.tolist(), targets, strict=True)
            if j < 0 or not t
        ]
        if bad:
            raise RobolearnError(
                f"{what}: differential IK sets joint position targets and needs position "
                f"loops on joints; not such: {', '.join(bad)}"
            )
        self.joint_ids = joint_of
        self._joint_cols = joint_of  # columns of the scene's (N, num_joints) tensors
        limits = scene.joint_pos_limits.index_select(0, joint_of)
        self._low, self._high = limits[:, 0], limits[:, 1]
        self.frame = frame(env, cfg.frame, f"{what}.frame")
        model_joints = [scene.model.joint(scene.joint_names[j]).id for j in joint_of.tolist()]
        self._jacobian = ChainJacobian(env, model_joints, self.frame.body_id)
        self.base = frame(env, cfg.base, f"{what}.base") if cfg.base is not None else None
        position_only = cfg.command_type == "position"
        self.action_dim = 3 if position_only else (6 if cfg.relative else 7)
        n = env.num_envs
        self.raw_actions = torch.zeros(n, self.action_dim, device=env.device)
        self.processed_actions = torch.zeros(n, 7, device=env.device)
        """(N, 7) the commanded pose in the base frame: position (m), quaternion (w x y z)."""
        self.processed_actions[:, 3] = 1.0
        self._rows = 3 if position_only else 6
        self._eye = torch.eye(self._rows, device=env.device) * float(cfg.damping) ** 2
        self.joint_targets = torch.zeros(n, len(ids), device=env.device)
        """(N, k) the joint position targets of the latest step."""
        # made once: a tensor from Python data in the step would be a copy that waits
        self._identity = torch.tensor([1.0, 0.0, 0.0, 0.0], device=env.device)
        self._aim_at_current()

    def _base_pose(self) -> Pose | None:
        return self.base.pose_w() if self.base is not None else None

    def frame_pose_b(self) -> Pose:
        """The end effector's current pose in the base frame."""
        pose, base = self.frame.pose_w(), self._base_pose()
        return pose if base is None else pose_in(pose, base)

    def _aim_at_current(self, env_mask: torch.Tensor | None = None) -> None:
        pos, quat = self.frame_pose_b()
        current = torch.cat((pos, quat), dim=-1)
        if env_mask is None:
            self.processed_actions.copy_(current)
        else:
            torch.where(
                env_mask.unsqueeze(-1), current, self.processed_actions, out=self.processed_actions
            )

    def process_actions(self, actions: torch.Tensor) -> None:
        cfg = self.cfg
        self.raw_actions[:] = actions
        if cfg.relative:
            pos, quat = self.frame_pose_b()
            pos = pos + cfg.scale * actions[:, 0:3]
            if cfg.command_type == "pose":
                turn = quat_from_axis_angle(cfg.rotation_scale * actions[:, 3:6])
                quat = quat_mul(turn, quat)
            self.processed_actions[:, 0:3] = pos
            self.processed_actions[:, 3:7] = quat
        else:
            self.processed_actions[:, 0:3] = cfg.scale * actions[:, 0:3]
            if cfg.command_type == "pose":
                quat = actions[:, 3:7]
                norm = quat.norm(dim=-1, keepdim=True)
                # a zero quaternion from the policy means "no rotation", not NaN
                quat = torch.where(norm > 1e-6, quat / norm.clamp(min=1e-6), self._identity)
                self.processed_actions[:, 3:7] = quat

    def action_bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.cfg.clip is not None:
            return super().action_bounds()
        inf = torch.full((self.action_dim,), float("inf"), dtype=torch.float64)
        return -inf, inf

    def describe(self) -> dict[str, Any]:
        cfg = self.cfg
        goal = "the current pose moved by" if cfg.relative else "the pose"
        return {
            "mapping": f"differential IK: each step, {goal} the action ({cfg.command_type}, "
            "in the base frame) is the frame's goal; dq = J^T (J J^T + damping^2 I)^-1 e "
            "on the frame's Jacobian over the joints, target = clamp(q + dq, lower, upper)",
            "frame": self.frame.describe(),
            "base": self.base.describe() if self.base is not None else None,
            "command_type": cfg.command_type,
            "relative": cfg.relative,
            "rotation_scale": cfg.rotation_scale,
            "damping": cfg.damping,
            "lower": self._low.tolist(),
            "upper": self._high.tolist(),
        }

    def joint_step(self) -> torch.Tensor:
        """(N, k) the damped-least-squares joint step toward the commanded pose."""
        cfg = self.cfg
        cmd_b = (self.processed_actions[:, 0:3], self.processed_actions[:, 3:7])
        base = self._base_pose()
        goal = cmd_b if base is None else pose_to_world(cmd_b, base)
        pos, quat = self.frame.pose_w()
        jac = self._jacobian(pos)  # (N, 6, k)
        if cfg.command_type == "position":
            jac = jac[:, 0:3]
            err = goal[0] - pos
        else:
            turn = axis_angle_from_quat(quat_mul(goal[1], quat_conjugate(quat)))
            err = torch.cat((goal[0] - pos, turn), dim=-1)
        jjt = jac @ jac.transpose(1, 2) + self._eye
        return (jac.transpose(1, 2) @ torch.linalg.solve(jjt, err.unsqueeze(-1))).squeeze(-1)

    def apply_actions(self) -> None:
        joint_pos = take_columns(self.env.scene.joint_pos, self._joint_cols)
        target = (joint_pos + self.joint_step()).clamp(self._low, self._high)
        self.joint_targets.copy_(target)
        self.env.scene.write_ctrl(self._ctrl_cols, target)

    def reset(self, env_mask: torch.Tensor) -> None:
        super().reset(env_mask)
        # until the policy's first action, a reset env's command is where its hand is
        self._aim_at_current(env_mask)

    def debug_markers(self, env_id: int) -> list[Marker]:
        """The commanded pose of ``env_id`` as a frame."""
        cmd_b = (self.processed_actions[env_id : env_id + 1, 0:3],)
        cmd_b = (cmd_b[0], self.processed_actions[env_id : env_id + 1, 3:7])
        base = self._base_pose()
        if base is not None:
            base = (base[0][env_id : env_id + 1], base[1][env_id : env_id + 1])
            cmd_b = pose_to_world(cmd_b, base)
        values = torch.cat(cmd_b, dim=-1)[0].detach().cpu().double().tolist()
        return [Marker("frame", tuple(values[0:3]), quat=tuple(values[3:7]), size=0.08)]


@dataclass
class DifferentialIKActionCfg(ActionTermCfg):
    """Differential inverse kinematics on the arm's position loops (``actuators``).

    Action: ``relative`` pose (dx, dy, dz in m per unit x ``scale``; a rotation vector in rad
    per unit x ``rotation_scale``, both in the base frame), absolute pose (x, y, z x
    ``scale``, then a quaternion w x y z, normalised), or with ``command_type="position"``
    the position alone (3).
    """

    class_type: type[ActionTerm] | None = DifferentialIKAction
    frame: FrameCfg | str = "hand"
    """The end effector: a site or body of the robot, with an offset (a tool centre point)."""
    base: FrameCfg | str | None = None
    """The frame the command is in, e.g. the arm's base link; None: the world."""
    command_type: str = "pose"
    """``pose`` (position and orientation) or ``position`` (orientation left free)."""
    relative: bool = True
    """Command a change of the current pose (6, or 3 for a position); else the pose itself."""
    scale: float = 1.0
    """Metres of position per unit of action."""
    rotation_scale: float = 1.0
    """Radians of rotation per unit of action (relative poses)."""
    damping: float = 0.05
    """Lambda of damped least squares: the step shrinks near singular poses, where plain
    least squares would swing the joints."""
