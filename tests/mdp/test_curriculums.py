"""Curriculum terms of robolearn.mdp."""

from __future__ import annotations

import pytest
import torch

from robolearn import mdp
from robolearn.managers import CurriculumTermCfg

from .truth import (
    make,
)

# ---- curriculum -------------------------------------------------------------------------


def test_command_velocity_levels_widens_the_ranges_once_per_episode_on_success():
    env = make("quadruped_walk", 2)
    params = {
        "command_name": "base_velocity",
        "reward_term": "track_lin_vel_xy",
        "limit_lin_vel_x": (-1.0, 1.0),
        "limit_ang_vel_z": (-1.0, 1.0),
    }
    term = mdp.command_velocity_levels(CurriculumTermCfg(func=mdp.command_velocity_levels), env)
    command = env.command_manager.terms["base_velocity"]
    assert command.cfg.ranges.lin_vel_x == (-0.6, 0.6) and command.cfg.ranges.ang_vel_z == (
        -1.0,
        1.0,
    )
    sums = env.reward_manager.episode_sums["track_lin_vel_xy"]
    weight = env.cfg.rewards["track_lin_vel_xy"].weight
    full = weight * env.max_episode_length_s  # tracking perfectly for a whole episode
    ids = env.all_env_ids  # env indices, as a hand-made call passes them; the env passes masks

    def level() -> float:
        value = term(env, ids, **params)
        assert isinstance(value, torch.Tensor) and value.dim() == 0  # no host read
        return float(value)

    sums[:] = 0.9 * full
    assert level() == pytest.approx(0.6)  # not an episode since the start yet
    env.common_step_counter = env.max_episode_length
    assert level() == pytest.approx(0.85)
    assert command.live_ranges().lin_vel_x == pytest.approx((-0.85, 0.85))
    assert command.live_ranges().ang_vel_z == (-1.0, 1.0)  # at its limit already
    assert level() == pytest.approx(0.85)  # checked once per episode
    env.common_step_counter += env.max_episode_length
    sums[:] = 0.7 * full  # below the 0.8 threshold
    assert level() == pytest.approx(0.85)
    env.common_step_counter += env.max_episode_length
    sums[:] = torch.tensor([0.7, 1.0]) * full  # the mean is 0.85 of it
    assert level() == pytest.approx(1.0)  # 1.1, capped at the limit
    assert command.live_ranges().lin_vel_x == pytest.approx((-1.0, 1.0))
    # the config keeps what the task set; an edit of it takes over from the curriculum
    assert command.cfg.ranges.lin_vel_x == (-0.6, 0.6)
    command.cfg.ranges.lin_vel_x = (-0.2, 0.2)
    assert command.live_ranges().lin_vel_x == pytest.approx((-0.2, 0.2))
