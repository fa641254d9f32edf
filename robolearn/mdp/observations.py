"""Observation terms: ``fn(env, **params) -> (num_envs, k)``.

Base quantities are in the base (root body) frame; joint quantities are relative to each
env's default joint positions, so 0 means "at the default pose".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from robolearn.env import ManagerBasedRLEnv


def base_lin_vel(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Base linear velocity in the base frame, m/s (3)."""
    return env.scene.root_lin_vel_b


def base_ang_vel(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Base angular velocity in the base frame, rad/s (3)."""
    return env.scene.root_ang_vel_b


def projected_gravity(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Unit gravity direction in the base frame (3); (0, 0, -1) when upright."""
    return env.scene.projected_gravity_b


def base_height(env: ManagerBasedRLEnv) -> torch.Tensor:
    """Height of the base above the world origin, m (1)."""
    return env.scene.root_pos_w[:, 2:3]


def joint_pos_rel(env: ManagerBasedRLEnv, joints: str | Sequence[str] = ".*") -> torch.Tensor:
    """Joint positions minus the env's default positions, rad or m."""
    ids = env.scene.index("joint", joints)
    scene = env.scene
    return scene.joint_pos.index_select(1, ids) - scene.default_joint_pos.index_select(1, ids)


def joint_pos(env: ManagerBasedRLEnv, joints: str | Sequence[str] = ".*") -> torch.Tensor:
    """Absolute joint positions, rad or m."""
    return env.scene.joint_pos[:, env.scene.index("joint", joints)]


def joint_vel_rel(env: ManagerBasedRLEnv, joints: str | Sequence[str] = ".*") -> torch.Tensor:
    """Joint velocities (the default velocity is 0), rad/s or m/s."""
    return env.scene.joint_vel[:, env.scene.index("joint", joints)]


def last_action(env: ManagerBasedRLEnv) -> torch.Tensor:
    """The policy's previous raw action (all action terms)."""
    return env.action_manager.action


def generated_commands(env: ManagerBasedRLEnv, command_name: str) -> torch.Tensor:
    """The current command of a command term (e.g. (vx, vy, yaw rate))."""
    return env.command_manager.get_command(command_name)


def sensor(env: ManagerBasedRLEnv, name: str) -> torch.Tensor:
    """The values of one MuJoCo sensor by name (its columns of sensordata)."""
    return env.engine.sensordata[:, env.scene.sensor_slice(name)].float()


def feet_contact(env: ManagerBasedRLEnv, threshold: float = 1.0) -> torch.Tensor:
    """1 for each foot pressing the ground with more than ``threshold`` newtons, else 0."""
    return (foot_contact_force(env).norm(dim=-1) > threshold).float()


def foot_contact_force(env: ManagerBasedRLEnv) -> torch.Tensor:
    """(N, num_feet, 3) external force on each foot body (scene.feet), world frame, N."""
    return env.scene.feet_contact_force
