"""Curriculum terms: ``fn(env, env_mask, **params)``, run as episodes end; return a value.

Both decide on the device and return 0-d tensors: the env step never waits for the GPU.
"""

from __future__ import annotations

import torch

from robolearn.managers import CurriculumTermCfg, ManagerTerm, as_env_mask
from robolearn.mdp.protocol import TaskEnv


class command_velocity_levels(ManagerTerm):  # noqa: N801 - a term is named like a function
    """Widen the velocity command ranges by ``step`` when tracking succeeds.

    Success: the ending episodes' mean sum of ``reward_term``, per second of the maximum
    episode length, exceeds ``threshold`` x the term's weight. Checked at most once per
    episode length. The ranges widen on the device
    (:meth:`~robolearn.mdp.UniformVelocityCommand.widen`; ``live_ranges()`` reads
    them). Returns the current upper bound of the forward velocity range.
    """

    def __init__(self, cfg: CurriculumTermCfg, env: TaskEnv) -> None:
        super().__init__(cfg, env)
        self.last_change = 0

    def __call__(
        self,
        env: TaskEnv,
        env_mask: torch.Tensor,
        command_name: str,
        reward_term: str,
        threshold: float = 0.8,
        step: float = 0.25,
        limit_lin_vel_x: tuple[float, float] = (-1.0, 1.0),
        limit_ang_vel_z: tuple[float, float] = (-1.0, 1.0),
    ) -> torch.Tensor:
        env_mask = as_env_mask(env, env_mask)
        term = env.command_manager.terms[command_name]
        if env.common_step_counter - self.last_change >= env.max_episode_length:
            self.last_change = env.common_step_counter
            weight = env.reward_manager.cfg[reward_term].weight
            sums = env.reward_manager.episode_sums[reward_term]
            # the mean over the ending episodes; NaN (no success) when none ends
            mean = torch.where(env_mask, sums, 0.0).sum() / env_mask.sum()
            success = mean / env.max_episode_length_s > threshold * weight
            limits = {"lin_vel_x": limit_lin_vel_x, "ang_vel_z": limit_ang_vel_z}
            term.widen(success, step, limits)
        return term.range_tensor()[0, 1]


def terrain_levels(
    env: TaskEnv, env_mask: torch.Tensor, command_name: str
) -> dict[str, torch.Tensor]:
    """Move resetting envs between terrain rows by how far their robot walked (legged_gym's
    and Isaac Lab's rule): farther than half a tile from its origin moves up a level; less
    than half the distance its command asked for over a whole episode moves down. Envs
    past the top row go to a random row. Envs that took no step yet (the first reset) stay.
    Returns the mean level over all envs (``mean``) and over the envs of each sub-terrain
    type (logged as ``Curriculum/<term>/mean``, ``Curriculum/<term>/<type>``)."""
    env_mask = as_env_mask(env, env_mask)
    terrain = env.scene.require_terrain()
    walked = (env.scene.root_pos_w[:, :2] - terrain.env_origins[:, :2]).norm(dim=-1)
    command = env.command_manager.get_command(command_name)[:, :2]
    started = env_mask & (env.episode_length_buf > 0)
    up = started & (walked > min(terrain.tile_size) / 2)
    asked = command.norm(dim=-1) * env.max_episode_length_s * 0.5
    down = started & (walked < asked) & ~up
    terrain.move(up, down)
    return {"mean": terrain.mean_level()} | terrain.mean_level_per_type()
