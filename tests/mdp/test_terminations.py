"""Termination terms of robolearn.mdp on hand-built states."""

from __future__ import annotations

import math

import torch

from robolearn import mdp

from .truth import (
    check,
    joint,
    poses,
    set_state,
    tilted,
)

# ---- terminations -----------------------------------------------------------------------


def test_time_out_fires_at_the_episode_length(humanoid):
    env = humanoid
    n = env.max_episode_length
    assert n == math.ceil(env.cfg.episode_length_s / env.step_dt) == 1000
    env.episode_length_buf[:] = torch.tensor([n - 1, n, n + 1])
    check(mdp.time_out(env), torch.tensor([False, True, True]), env, torch.bool)


def test_base_height_below_and_bad_orientation(humanoid):
    env = humanoid
    qpos = poses(env, "stand", "stand", "stand")
    qpos[:, 2] = torch.tensor([0.46, 0.44, 0.8], dtype=torch.float64)
    set_state(env, qpos)
    check(mdp.base_height_below(env, 0.45), torch.tensor([False, True, False]), env, torch.bool)
    qpos[:, 3:7] = torch.stack((tilted(0.98), tilted(-1.02), tilted(math.pi)))
    set_state(env, qpos)
    check(mdp.bad_orientation(env, 1.0), torch.tensor([False, True, True]), env, torch.bool)
    check(mdp.bad_orientation(env, 1.2), torch.tensor([False, False, True]), env, torch.bool)


def test_joint_pos_out_of_bounds(humanoid):
    env = humanoid
    qpos = poses(env, "stand", "stand", "stand")
    qpos[:, joint(env, "left_knee")] = torch.tensor([0.5, 1.21, 0.5], dtype=torch.float64)
    qpos[2, joint(env, "right_knee")] = -0.01
    set_state(env, qpos)
    got = mdp.joint_pos_out_of_bounds(env, ".*_knee", (0.0, 1.2))
    check(got, torch.tensor([False, True, True]), env, torch.bool)
    got = mdp.joint_pos_out_of_bounds(env, "left_knee", (0.0, 1.2))
    check(got, torch.tensor([False, True, False]), env, torch.bool)
