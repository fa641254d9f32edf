"""Event terms that randomize how the robot's sensors misread it: encoder bias and IMU
mounting (see :mod:`robolearn.scene.sensor_errors`, where the draws are kept and read).

Both are drawn per env, usually at reset (a robot keeps its calibration for an episode),
and the policy does not see them: it reads the joints and the IMU through them, as it
will on the real robot, and has to be robust to them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from robolearn.config import check_range
from robolearn.errors import RobolearnError
from robolearn.managers.base import EnvRows, as_env_mask
from robolearn.math import quat_from_euler_xyz
from robolearn.mdp.axes import axis_ranges
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.cache import fixed, names_key


def randomize_encoder_bias(
    env: TaskEnv,
    env_mask: torch.Tensor,
    bias_range: tuple[float, float],
    joints: str | Sequence[str] = ".*",
) -> None:
    """Each env's encoders of ``joints`` read uniform(bias_range) rad (m) beyond the truth,
    one draw per joint per env: the joint position observations read the bias, and a joint
    position target holds the joint that much off what it asks (the motor driver closes
    its loop on the reading)."""
    rows = EnvRows.of(env, as_env_mask(env, env_mask))
    scene = env.scene
    key = ("encoder_bias", names_key(joints), tuple(bias_range))

    def make():
        bounds = check_range(bias_range, "randomize_encoder_bias.bias_range", floor=None)
        return scene.joint_columns(joints).joints, scene.index("joint", joints).numel(), bounds

    cols, k, (low, high) = fixed(scene, key, make)
    errors = scene.sensor_errors
    if errors.encoder_bias is None:
        errors.encoder_bias = torch.zeros(scene.num_envs, len(scene.joint_names),
                                          device=env.device)  # fmt: skip
    bias = errors.encoder_bias
    draw = torch.rand(scene.num_envs, k, device=env.device)
    rows.copy_columns(bias, cols, draw * (high - low) + low)


def randomize_imu_mounting(
    env: TaskEnv,
    env_mask: torch.Tensor,
    tilt_range: dict[str, tuple[float, float]],
) -> None:
    """Each env's IMU sits rotated by uniform roll, pitch and yaw (rad, axes ``roll, pitch,
    yaw``) in the base: the angular velocity and gravity observations are measured in its
    frame, one draw per env."""
    env_mask = as_env_mask(env, env_mask)
    scene = env.scene
    low, width = fixed(
        scene,
        ("imu_mounting", tuple(sorted((a, tuple(r)) for a, r in tilt_range.items()))),
        lambda: _tilt_ranges(tilt_range, env.device),
    )
    angles = torch.addcmul(low, width, torch.rand(scene.num_envs, 3, device=env.device))
    quat = quat_from_euler_xyz(angles[:, 0], angles[:, 1], angles[:, 2])
    errors = scene.sensor_errors
    if errors.imu_quat is None:
        errors.imu_quat = torch.zeros(scene.num_envs, 4, device=env.device)
        errors.imu_quat[:, 0] = 1.0
    errors.imu_quat.copy_(torch.where(env_mask.unsqueeze(-1), quat, errors.imu_quat))


def _tilt_ranges(tilt_range: dict, device) -> tuple[torch.Tensor, torch.Tensor]:
    """(3,) lows and widths of roll, pitch and yaw, the axes checked."""
    where = "randomize_imu_mounting.tilt_range"
    unknown = set(tilt_range) - {"roll", "pitch", "yaw"}
    if unknown:
        raise RobolearnError(f"{where}: unknown axes {sorted(unknown)}; valid: roll, pitch, yaw")
    for axis, bounds in tilt_range.items():
        check_range(bounds, f"{where}.{axis}", floor=None)
    low, width = axis_ranges(tilt_range, where, device)
    return low[3:].clone(), width[3:].clone()
