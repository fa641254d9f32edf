"""How each env's sensors misread the robot: encoder offsets and a tilted IMU.

A real robot's joint encoders are calibrated to a zero that is off by a little (an
encoder bias), and its IMU is mounted a little askew of the base. Neither shows in the
simulator's state, so a policy trained on the truth meets both only on the robot. The
randomization terms (``mdp.randomize_encoder_bias``, ``mdp.randomize_imu_mounting``)
draw them per env; the observation terms read the robot through them; and a joint
position target, which the robot's motor driver tracks in its encoder's frame, holds the
joint a bias away from what was asked (the joint position action's offset). Rewards and
terminations keep reading the truth.

Until a term draws them they are None, and nothing is computed at any step.
"""

from __future__ import annotations

import torch

from robolearn.math import quat_rotate_inverse, take_columns


class SensorErrors:
    """Each env's encoder bias and IMU mounting; None where never drawn."""

    def __init__(self) -> None:
        self.encoder_bias: torch.Tensor | None = None
        """(N, joints) what each env's encoders read beyond the truth, rad or m, in the
        scene's joint order; None: exact encoders."""
        self.imu_quat: torch.Tensor | None = None
        """(N, 4) the IMU's orientation in the base frame (w, x, y, z); None: aligned."""

    def joint_pos(self, true: torch.Tensor, cols: slice | torch.Tensor) -> torch.Tensor:
        """What the encoders of joint columns ``cols`` read, given their ``true`` (N, k)
        positions."""
        if self.encoder_bias is None:
            return true
        return true + take_columns(self.encoder_bias, cols).to(true.dtype)

    def imu(self, vector_b: torch.Tensor) -> torch.Tensor:
        """A (N, 3) base-frame vector (angular velocity, gravity) as the IMU measures it, in
        its own tilted frame."""
        if self.imu_quat is None:
            return vector_b
        return quat_rotate_inverse(self.imu_quat.to(vector_b.dtype), vector_b)
