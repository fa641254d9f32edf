"""Reward terms: ``fn(env, **params) -> (num_envs,)``; the manager applies weight and dt.

Tracking terms return values in [0, 1] (exponential kernels); penalties return
non-negative values and get negative weights.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from robolearn.managers import ManagerTerm, RewardTermCfg, as_env_mask
from robolearn.managers.differentiable import differentiable
from robolearn.math import take_columns, yaw_from_quat
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.cache import fixed, names_key

# ---- task ---------------------------------------------------------------------------


@differentiable
def track_lin_vel_xy_exp(env: TaskEnv, command_name: str, std: float) -> torch.Tensor:
    """exp(-|v_cmd - v|^2 / std^2) for planar base velocity in the yaw (heading) frame."""
    scene = env.scene
    # The world velocity turned by -yaw in the plane: what rotating it by the inverse of
    # the heading quaternion gives, without building that quaternion and rotating in 3D.
    yaw = yaw_from_quat(scene.root_quat_w)
    cos, sin = torch.cos(yaw), torch.sin(yaw)
    vx, vy, _ = scene.root_lin_vel_w.unbind(-1)
    cmd_x, cmd_y, _ = env.command_manager.get_command(command_name).unbind(-1)
    ex = cmd_x - (cos * vx + sin * vy)
    ey = cmd_y - (cos * vy - sin * vx)
    return torch.exp((ex * ex + ey * ey) / -(std**2))


@differentiable
def track_ang_vel_z_exp(env: TaskEnv, command_name: str, std: float) -> torch.Tensor:
    """exp(-(w_cmd - w_z)^2 / std^2) for the yaw rate about world z."""
    yaw_rate = env.scene.root_ang_vel_w[:, 2]
    cmd = env.command_manager.get_command(command_name)[:, 2]
    error = cmd - yaw_rate
    return torch.exp(error * error / -(std**2))


@differentiable
def is_alive(env: TaskEnv) -> torch.Tensor:
    """1 for envs that did not fail this step (time-outs count as alive)."""
    return (~env.termination_manager.terminated).float()


@differentiable
def is_terminated(env: TaskEnv) -> torch.Tensor:
    """1 for envs that failed this step (not time-outs); weight it negatively."""
    return env.termination_manager.terminated.float()


# ---- base ---------------------------------------------------------------------------


@differentiable
def lin_vel_z_l2(env: TaskEnv) -> torch.Tensor:
    """Squared vertical base velocity (base frame)."""
    vz = env.scene.root_lin_vel_b[:, 2]
    return vz * vz


@differentiable
def ang_vel_xy_l2(env: TaskEnv) -> torch.Tensor:
    """Squared roll and pitch rates of the base."""
    xy = env.scene.root_ang_vel_b[:, :2]
    return (xy * xy).sum(-1)


@differentiable
def flat_orientation_l2(env: TaskEnv) -> torch.Tensor:
    """Squared horizontal components of gravity in the base frame: 0 when level."""
    xy = env.scene.projected_gravity_b[:, :2]
    return (xy * xy).sum(-1)


@differentiable
def upright(env: TaskEnv) -> torch.Tensor:
    """Cosine of the base's tilt from vertical: 1 upright, 0 lying, -1 upside down."""
    return -env.scene.projected_gravity_b[:, 2]


@differentiable
def base_height_l2(env: TaskEnv, target_height: float) -> torch.Tensor:
    """Squared error of the base height above the ground under it from ``target_height`` (m)."""
    error = env.scene.root_height - target_height
    return error * error


# ---- joints and actuators -----------------------------------------------------------


def joint_torques_l2(env: TaskEnv, actuators: str | Sequence[str] = ".*") -> torch.Tensor:
    """Sum of squared actuator forces (N^2 or (N m)^2)."""
    ids = env.scene.index("actuator", actuators)
    return env.scene.engine.actuator_force.index_select(1, ids).float().square().sum(-1)


def energy(env: TaskEnv) -> torch.Tensor:
    """Mechanical power of the joint actuators, sum of |force x gear x joint velocity| (W):
    an actuator of gear g puts g x its force on its joint."""
    scene = env.scene

    def make() -> tuple[torch.Tensor, torch.Tensor]:
        ids = scene.joint_actuator_ids
        return scene.actuator_joint[ids], scene.nominal("actuator_gear")[ids, 0].float()

    joint_of, gear = fixed(scene, ("energy",), make)
    ids = scene.joint_actuator_ids
    vel = scene.joint_vel.index_select(1, joint_of)
    force = env.scene.engine.actuator_force.index_select(1, ids).float()
    return (force * gear * vel).abs().sum(-1)


@differentiable
def joint_vel_l2(env: TaskEnv, joints: str | Sequence[str] = ".*") -> torch.Tensor:
    """Sum of squared joint velocities."""
    vel = take_columns(env.scene.joint_vel, env.scene.joint_columns(joints).joints)
    return (vel * vel).sum(-1)


@differentiable
def joint_vel_l1(env: TaskEnv, joints: str | Sequence[str] = ".*") -> torch.Tensor:
    """Sum of absolute joint velocities."""
    return take_columns(env.scene.joint_vel, env.scene.joint_columns(joints).joints).abs().sum(-1)


@differentiable
def joint_pos_target_l2(
    env: TaskEnv, joints: str | Sequence[str], target: float = 0.0
) -> torch.Tensor:
    """Sum of squared distances of ``joints`` from ``target`` (absolute position)."""
    error = take_columns(env.scene.joint_pos, env.scene.joint_columns(joints).joints) - target
    return (error * error).sum(-1)


def joint_acc_l2(env: TaskEnv, joints: str | Sequence[str] = ".*") -> torch.Tensor:
    """Sum of squared joint accelerations."""
    acc = take_columns(env.scene.engine.qacc, env.scene.joint_columns(joints).dofs).float()
    return (acc * acc).sum(-1)


@differentiable
def action_rate_l2(env: TaskEnv) -> torch.Tensor:
    """Sum of squared changes of the raw action since the last step."""
    am = env.action_manager
    change = am.action - am.prev_action
    return (change * change).sum(-1)


@differentiable
def action_l2(env: TaskEnv) -> torch.Tensor:
    """Sum of squared raw actions."""
    return env.action_manager.action.square().sum(-1)


@differentiable
def joint_pos_limits(
    env: TaskEnv, joints: str | Sequence[str] = ".*", soft_ratio: float = 0.9
) -> torch.Tensor:
    """How far joints are past the middle ``soft_ratio`` of their range (rad), summed."""
    scene = env.scene

    def make() -> tuple[torch.Tensor, torch.Tensor]:
        ids = scene.index("joint", joints)
        lo, hi = scene.joint_pos_limits[ids, 0], scene.joint_pos_limits[ids, 1]
        mid, half = (lo + hi) / 2, (hi - lo) / 2 * soft_ratio
        return mid - half, mid + half

    low, high = fixed(scene, ("joint_pos_limits", names_key(joints), soft_ratio), make)
    pos = take_columns(scene.joint_pos, scene.joint_columns(joints).joints)
    over = (pos - high).clamp(min=0) + (low - pos).clamp(min=0)
    return torch.nan_to_num(over, nan=0.0, posinf=0.0).sum(-1)


@differentiable
def joint_deviation_l1(env: TaskEnv, joints: str | Sequence[str]) -> torch.Tensor:
    """Sum of |joint position - default| over ``joints``."""
    scene = env.scene
    cols = scene.joint_columns(joints).joints
    deviation = take_columns(scene.joint_pos, cols) - take_columns(scene.default_joint_pos, cols)
    return deviation.abs().sum(-1)


# ---- contacts -----------------------------------------------------------------------


def undesired_contacts(
    env: TaskEnv, bodies: str | Sequence[str], threshold: float = 1.0
) -> torch.Tensor:
    """Number of ``bodies`` touching something with more than ``threshold`` newtons."""
    ids = env.scene.index("body", bodies)
    return (env.scene.contact_force_of(ids).norm(dim=-1) > threshold).sum(-1).float()


def feet_slide(env: TaskEnv, threshold: float = 1.0) -> torch.Tensor:
    """Planar speed of feet that touch the ground (m/s), summed: slipping feet."""
    in_contact = env.scene.feet_force_norm > threshold
    speed = env.scene.feet_lin_vel_w[..., :2].norm(dim=-1)
    return (speed * in_contact).sum(-1)


def feet_gait_contact(
    env: TaskEnv,
    gait_command: str,
    velocity_command: str,
    swing_margin: float = 0.05,
    threshold: float = 1.0,
    min_speed: float = 0.1,
    min_yaw_rate: float = 0.1,
) -> torch.Tensor:
    """How many of two feet are where the gait clock wants them (0, 1 or 2).

    Moving: foot 0 should touch the ground while the phase is below 0.5 and swing
    otherwise, foot 1 the opposite; within ``swing_margin`` of a switch either is fine.
    Standing: both feet should touch the ground. An env is moving when its command asks for
    a planar speed above ``min_speed`` (m/s) or a yaw rate above ``min_yaw_rate`` (rad/s):
    the two are compared apart, as metres and radians do not add up (turning on the spot
    takes steps too). ``velocity_command`` is a (vx, vy, yaw rate) command.
    """
    phase = env.command_manager.terms[gait_command].phase
    in_contact = env.scene.feet_force_norm > threshold
    # (phase < 0.5, phase >= 0.5) per env: foot 0 down in the first half, foot 1 not
    second_foot = fixed(
        env.scene, ("second_foot",), lambda: torch.arange(2, device=env.device) == 1
    )
    stance = (phase < 0.5).unsqueeze(-1) != second_foot
    # the distance to the nearer switch (at 0 or 1, and at 0.5)
    to_switch = torch.minimum(torch.minimum(phase, 1 - phase), (phase - 0.5).abs())
    matches = (in_contact == stance) | (to_switch < swing_margin).unsqueeze(-1)
    command = env.command_manager.get_command(velocity_command)
    moving = (command[:, :2].norm(dim=-1) > min_speed) | (command[:, 2].abs() > min_yaw_rate)
    # standing: the feet down count
    return torch.where(moving.unsqueeze(-1), matches, in_contact).sum(-1).float()


def feet_swing_height(env: TaskEnv, target_height: float, threshold: float = 1.0) -> torch.Tensor:
    """Squared shortfall of swinging feet below ``target_height`` (m, height of the foot
    body's origin above the ground under it): feet that shuffle instead of stepping."""
    scene = env.scene
    z = scene.feet_pos_w[..., 2]
    if scene.terrain is not None:
        z = z - scene.ground_height(scene.feet_pos_w[..., :2])
    swinging = env.scene.feet_force_norm <= threshold
    shortfall = (target_height - z).clamp(min=0)
    return (shortfall * shortfall * swinging).sum(-1)


def feet_distance_below(env: TaskEnv, minimum: float) -> torch.Tensor:
    """How much closer than ``minimum`` (m) two feet are in the horizontal plane: legs that
    cross or collide."""
    pos = env.scene.feet_pos_w[..., :2]
    return (minimum - (pos[:, 0] - pos[:, 1]).norm(dim=-1)).clamp(min=0)


class feet_air_time(ManagerTerm):  # noqa: N801 - a term is named like a function
    """Rewards steps: the air time of each foot as it lands, beyond ``threshold`` seconds.

    For each foot that touches down this step, adds (air time - threshold); for a biped
    (``single_stance=True``) instead rewards, while exactly one foot is down, the shorter
    of the current stance and swing times, capped at ``threshold``. Zero when the commanded
    speed is below 0.1 m/s, so standing still is not punished.
    """

    def __init__(self, cfg: RewardTermCfg, env: TaskEnv) -> None:
        super().__init__(cfg, env)
        n = env.num_envs
        nfeet = len(env.scene.feet_body_ids) if env.scene.feet_body_ids is not None else 0
        self.air_time = torch.zeros(n, nfeet, device=env.device)
        self.contact_time = torch.zeros(n, nfeet, device=env.device)

    def reset(self, env_mask: torch.Tensor) -> None:
        env_mask = as_env_mask(self.env, env_mask)
        self.air_time.masked_fill_(env_mask.unsqueeze(-1), 0.0)
        self.contact_time.masked_fill_(env_mask.unsqueeze(-1), 0.0)

    def __call__(
        self,
        env: TaskEnv,
        command_name: str,
        threshold: float,
        single_stance: bool = False,
        contact_threshold: float = 1.0,
    ) -> torch.Tensor:
        dt = env.step_dt
        in_contact = env.scene.feet_force_norm > contact_threshold
        landed = in_contact & (self.air_time > 0)
        if single_stance:
            self.air_time = torch.where(in_contact, 0.0, self.air_time + dt)
            self.contact_time = torch.where(in_contact, self.contact_time + dt, 0.0)
            phase = torch.where(in_contact, self.contact_time, self.air_time)
            one_down = in_contact.sum(-1) == 1
            reward = torch.where(one_down.unsqueeze(-1), phase, 0.0).min(-1).values
            reward = reward.clamp(max=threshold)
        else:
            air = self.air_time + dt
            reward = ((air - threshold) * landed).sum(-1)
            self.air_time = torch.where(in_contact, 0.0, air)
        moving = env.command_manager.get_command(command_name)[:, :2].norm(dim=-1) > 0.1
        return reward * moving
