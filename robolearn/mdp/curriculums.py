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


def terrain_levels(
    env: ManagerBasedRLEnv, env_ids: torch.Tensor, command_name: str
) -> dict[str, torch.Tensor]:
    """Move resetting envs between terrain rows by how far their robot walked (legged_gym's
    and Isaac Lab's rule): farther than half a tile from its origin moves up a level; less
    than half the distance its command asked for over a whole episode moves down. Envs
    past the top row go to a random row. Envs that took no step yet (the first reset) stay.
    Returns the mean level over all envs (``mean``) and over the envs of each sub-terrain
    type (logged as ``Curriculum/<term>/mean``, ``Curriculum/<term>/<type>``)."""
    terrain = env.scene.require_terrain()
    walked = (env.scene.root_pos_w[env_ids, :2] - terrain.env_origins[env_ids, :2]).norm(dim=-1)
    command = env.command_manager.get_command(command_name)[env_ids, :2]
    started = env.episode_length_buf[env_ids] > 0
    up = started & (walked > min(terrain.tile_size) / 2)
    asked = command.norm(dim=-1) * env.max_episode_length_s * 0.5
    down = started & (walked < asked) & ~up
    terrain.move(env_ids, up, down)
    return {"mean": terrain.mean_level()} | terrain.mean_level_per_type()
