"""Curriculum terms: ``fn(env, env_ids, **params)``, run as envs reset; return a number."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from robolearn.managers import CurriculumTermCfg, ManagerTerm

if TYPE_CHECKING:
    from robolearn.env import ManagerBasedRLEnv


class command_velocity_levels(ManagerTerm):  # noqa: N801 - a term is named like a function
    """Widen the velocity command ranges by ``step`` when tracking succeeds.

    Success: the resetting envs' mean episode sum of ``reward_term``, per second of the
    maximum episode length, exceeds ``threshold`` x the term's weight. Checked at most once
    per episode length. Returns the current upper bound of the forward velocity range.
    """

    def __init__(self, cfg: CurriculumTermCfg, env: ManagerBasedRLEnv) -> None:
        super().__init__(cfg, env)
        self.last_change = 0

    def __call__(
        self,
        env: ManagerBasedRLEnv,
        env_ids: torch.Tensor,
        command_name: str,
        reward_term: str,
        threshold: float = 0.8,
        step: float = 0.25,
        limit_lin_vel_x: tuple[float, float] = (-1.0, 1.0),
        limit_ang_vel_z: tuple[float, float] = (-1.0, 1.0),
    ) -> float:
        ranges = env.command_manager.terms[command_name].cfg.ranges
        due = env.common_step_counter - self.last_change >= env.max_episode_length
        if due and env_ids.numel():
            self.last_change = env.common_step_counter
            weight = env.reward_manager.cfg[reward_term].weight
            sums = env.reward_manager.episode_sums[reward_term][env_ids]
            if float(sums.mean()) / env.max_episode_length_s > threshold * weight:
                ranges.lin_vel_x = (
                    max(ranges.lin_vel_x[0] - step, limit_lin_vel_x[0]),
                    min(ranges.lin_vel_x[1] + step, limit_lin_vel_x[1]),
                )
                ranges.ang_vel_z = (
                    max(ranges.ang_vel_z[0] - step, limit_ang_vel_z[0]),
                    min(ranges.ang_vel_z[1] + step, limit_ang_vel_z[1]),
                )
        return ranges.lin_vel_x[1]
