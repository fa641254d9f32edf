"""Terms of motion tracking: what the policy sees of the reference, the rewards for matching
it, and the terminations when the robot has lost it. They read a
:class:`~robolearn.mdp.motion_command.MotionCommand` named by ``command_name``.

The rewards are exponential kernels, ``exp(-e / std^2)`` of a squared error ``e`` (a mean
over the tracked bodies where several are compared), so each lies in (0, 1] and ``std`` is
the error (m, rad, m/s, rad/s) at which it has fallen to ``exp(-1)``. BeyondMimic's widths:
anchor position 0.3 m, anchor orientation 0.4 rad, body positions 0.3 m, body
orientations 0.4 rad, linear velocities 1.0 m/s, angular velocities 3.14 rad/s.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from robolearn.errors import RobolearnError
from robolearn.math import quat_angle_between, quat_conjugate, quat_mul, quat_rotate_inverse
from robolearn.mdp.motion_command import MotionCommand
from robolearn.mdp.protocol import TaskEnv


def _command(env: TaskEnv, command_name: str) -> MotionCommand:
    term = env.command_manager.terms.get(command_name)
    if term is None:
        raise RobolearnError(
            f"no command {command_name!r}; commands: {', '.join(env.command_manager.terms)}"
        )
    if not isinstance(term, MotionCommand):
        raise RobolearnError(
            f"command {command_name!r} is a {type(term).__name__}, not a MotionCommand"
        )
    return term


def _bodies(cmd: MotionCommand, body_names: Sequence[str] | None) -> slice | torch.Tensor:
    """Columns of the command's tracked bodies for ``body_names`` (None: all)."""
    if body_names is None:
        return slice(None)
    key = tuple(body_names)
    cache = cmd.__dict__.setdefault("_body_columns", {})
    if key not in cache:
        missing = [b for b in key if b not in cmd.body_names]
        if missing:
            raise RobolearnError(
                f"bodies {missing} are not tracked by command {cmd.name!r}; it tracks "
                f"{', '.join(cmd.body_names)}"
            )
        cache[key] = torch.as_tensor([cmd.body_names.index(b) for b in key], device=cmd.env.device)
    return cache[key]


def _rotation_6d(quat: torch.Tensor) -> torch.Tensor:
    """The first two columns of the rotation matrices of ``quat`` (..., 4): a continuous
    orientation code (..., 6)."""
    w, x, y, z = quat.unbind(-1)
    return torch.stack(
        (
            1 - 2 * (y * y + z * z),
            2 * (x * y + w * z),
            2 * (x * z - w * y),
            2 * (x * y - w * z),
            1 - 2 * (x * x + z * z),
            2 * (y * z + w * x),
        ),
        dim=-1,
    )


# ---- observations ---------------------------------------------------------------------


def motion_anchor_pos_b(env: TaskEnv, command_name: str = "motion") -> torch.Tensor:
    """(N, 3) the reference anchor's position in the robot anchor's frame (m)."""
    return _command(env, command_name).anchor_in_robot_frame()[0]


def motion_anchor_ori_b(env: TaskEnv, command_name: str = "motion") -> torch.Tensor:
    """(N, 6) the reference anchor's orientation in the robot anchor's frame (the first two
    columns of its rotation matrix)."""
    return _rotation_6d(_command(env, command_name).anchor_in_robot_frame()[1])


def robot_body_pos_b(env: TaskEnv, command_name: str = "motion") -> torch.Tensor:
    """(N, 3B) the robot's tracked bodies' positions in its anchor's frame (m)."""
    cmd = _command(env, command_name)
    pos, quat = cmd.robot_body_pos_w, cmd.robot_body_quat_w
    anchor_q = quat[:, 0:1].expand_as(quat)
    return quat_rotate_inverse(anchor_q, pos - pos[:, 0:1]).flatten(1)


def robot_body_ori_b(env: TaskEnv, command_name: str = "motion") -> torch.Tensor:
    """(N, 6B) the robot's tracked bodies' orientations in its anchor's frame."""
    cmd = _command(env, command_name)
    quat = cmd.robot_body_quat_w
    rel = quat_mul(quat_conjugate(quat[:, 0:1]).expand_as(quat), quat)
    return _rotation_6d(rel).flatten(1)


# ---- rewards --------------------------------------------------------------------------


def _kernel(squared_error: torch.Tensor, std: float) -> torch.Tensor:
    return torch.exp(-squared_error / (std * std))


def motion_anchor_position_error_exp(
    env: TaskEnv, std: float, command_name: str = "motion"
) -> torch.Tensor:
    """The anchor's world position against the reference's."""
    cmd = _command(env, command_name)
    err = (cmd.robot_body_pos_w[:, 0] - cmd.ref_anchor_pos_w).square().sum(-1)
    return _kernel(err, std)


def motion_anchor_orientation_error_exp(
    env: TaskEnv, std: float, command_name: str = "motion"
) -> torch.Tensor:
    """The anchor's world orientation against the reference's (the angle between them)."""
    cmd = _command(env, command_name)
    angle = quat_angle_between(cmd.robot_body_quat_w[:, 0], cmd.ref_anchor_quat_w)
    return _kernel(angle.square(), std)


def motion_body_position_error_exp(
    env: TaskEnv, std: float, body_names: Sequence[str] | None = None, command_name: str = "motion"
) -> torch.Tensor:
    """The bodies' positions against the reference's moved over the robot's anchor
    (:meth:`MotionCommand.ref_body_pose_relative`), mean squared error over the bodies."""
    cmd = _command(env, command_name)
    cols = _bodies(cmd, body_names)
    ref, _ = cmd.ref_body_pose_relative()
    err = (cmd.robot_body_pos_w[:, cols] - ref[:, cols]).square().sum(-1).mean(-1)
    return _kernel(err, std)


def motion_body_orientation_error_exp(
    env: TaskEnv, std: float, body_names: Sequence[str] | None = None, command_name: str = "motion"
) -> torch.Tensor:
    """The bodies' orientations against the relative reference's, mean squared angle."""
    cmd = _command(env, command_name)
    cols = _bodies(cmd, body_names)
    _, ref = cmd.ref_body_pose_relative()
    angle = quat_angle_between(cmd.robot_body_quat_w[:, cols], ref[:, cols])
    return _kernel(angle.square().mean(-1), std)


def _velocity_error(
    env: TaskEnv, body_names: Sequence[str] | None, command_name: str, angular: bool
) -> torch.Tensor:
    """(N,) the tracked bodies' mean squared world velocity error, linear or angular."""
    cmd = _command(env, command_name)
    cols = _bodies(cmd, body_names)
    robot = cmd.robot_body_vel_w()[1 if angular else 0]
    ref = cmd.ref_body_ang_vel_w if angular else cmd.ref_body_lin_vel_w
    return (robot[:, cols] - ref[:, cols]).square().sum(-1).mean(-1)


def motion_body_lin_vel_error_exp(
    env: TaskEnv, std: float, body_names: Sequence[str] | None = None, command_name: str = "motion"
) -> torch.Tensor:
    """The bodies' world linear velocities against the reference's, mean squared error."""
    return _kernel(_velocity_error(env, body_names, command_name, angular=False), std)


def motion_body_ang_vel_error_exp(
    env: TaskEnv, std: float, body_names: Sequence[str] | None = None, command_name: str = "motion"
) -> torch.Tensor:
    """The bodies' world angular velocities against the reference's, mean squared error."""
    return _kernel(_velocity_error(env, body_names, command_name, angular=True), std)


# ---- terminations ---------------------------------------------------------------------


def motion_anchor_height_deviation(
    env: TaskEnv, threshold: float, command_name: str = "motion"
) -> torch.Tensor:
    """The anchor's height is more than ``threshold`` m from the reference's."""
    cmd = _command(env, command_name)
    return (cmd.robot_body_pos_w[:, 0, 2] - cmd.ref_anchor_pos_w[:, 2]).abs() > threshold


def motion_anchor_orientation_deviation(
    env: TaskEnv, threshold: float, command_name: str = "motion"
) -> torch.Tensor:
    """The anchor's tilt differs from the reference's: the vertical components of gravity
    in the two anchor frames differ by more than ``threshold`` (0 to 2)."""
    cmd = _command(env, command_name)
    down = env.scene.gravity_dir.expand(env.num_envs, 3)
    robot = quat_rotate_inverse(cmd.robot_body_quat_w[:, 0], down)[:, 2]
    ref = quat_rotate_inverse(cmd.ref_anchor_quat_w, down)[:, 2]
    return (robot - ref).abs() > threshold


def motion_body_height_deviation(
    env: TaskEnv, threshold: float, body_names: Sequence[str], command_name: str = "motion"
) -> torch.Tensor:
    """One of ``body_names`` (end effectors: ankles, wrists) is more than ``threshold`` m
    above or below its place in the relative reference."""
    cmd = _command(env, command_name)
    cols = _bodies(cmd, body_names)
    ref, _ = cmd.ref_body_pose_relative()
    dz = (cmd.robot_body_pos_w[:, cols, 2] - ref[:, cols, 2]).abs()
    return (dz > threshold).any(-1)


def motion_clip_ended(env: TaskEnv, command_name: str = "motion") -> torch.Tensor:
    """The env has reached its clip's last frame (a time-out: the clip is over)."""
    return _command(env, command_name).clip_ended()
