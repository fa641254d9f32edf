"""The gymnasium VectorEnv and rsl-rl VecEnv adapters, and the task registry."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import robolearn.tasks  # noqa: F401  (registers the tasks with gymnasium, as a user does)
import torch
from tensordict import TensorDict

from robolearn.adapters import RslRlVecEnv, make_env
from robolearn.errors import RobolearnError
from robolearn.registry import get_task, gym_id, task_names


def test_registry_lists_every_task_and_suggests_close_names():
    assert {"cartpole_balance", "quadruped_walk", "humanoid_walk"} <= set(task_names())
    with pytest.raises(
        RobolearnError, match=r"unknown task 'humanoid_wlak' \(did you mean 'humanoid_walk'"
    ):
        get_task("humanoid_wlak")


def test_cli_list_prints_each_task_with_its_description():
    out = subprocess.run(
        [sys.executable, "-m", "robolearn", "list"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0
    lines = out.stdout.strip().splitlines()
    assert len(lines) == len(task_names())
    for name in task_names():
        line = next(ln for ln in lines if ln.startswith(name + " "))
        assert get_task(name).description in line


@pytest.fixture(scope="module")
def gym_env():
    env = gym.make_vec(gym_id("cartpole_balance"), num_envs=8, engine="cpu")
    yield env
    env.close()


def test_gymnasium_make_vec_builds_the_task(gym_env):
    assert gym_env.num_envs == 8
    assert gym_env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    assert gym_env.single_observation_space.shape == (4,)
    assert gym_env.observation_space.shape == (8, 4)
    assert gym_env.action_space.shape == (8, 1)


def test_gymnasium_vector_api(gym_env):
    """The checks gymnasium's vector-env contract implies, on a real task."""
    obs, info = gym_env.reset(seed=123)
    assert isinstance(info, dict)
    assert obs.dtype == np.float32 and gym_env.observation_space.contains(obs)
    again, _ = gym_env.reset(seed=123)
    np.testing.assert_array_equal(obs, again)  # seeding makes resets reproducible
    other, _ = gym_env.reset(seed=7)
    assert not np.array_equal(obs, other)
    seen_final = False
    for _ in range(400):
        action = gym_env.action_space.sample()
        obs, reward, terminated, truncated, info = gym_env.step(action)
        assert gym_env.observation_space.contains(obs)
        assert reward.shape == (8,) and reward.dtype == np.float32
        assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
        assert not (terminated & truncated).any()
        if "final_obs" in info:
            done = terminated | truncated
            np.testing.assert_array_equal(info["_final_obs"], done)
            # same-step autoreset: the returned obs already belongs to the new episode
            assert not np.array_equal(info["final_obs"][done], obs[done])
            seen_final = True
    assert seen_final


def test_rsl_rl_vecenv_adapter():
    env = make_env("humanoid_walk", num_envs=4, engine="cpu")
    vec = RslRlVecEnv(env)
    obs = vec.get_observations()
    assert isinstance(obs, TensorDict) and obs.batch_size == torch.Size([4])
    assert set(obs.keys()) == {"policy", "critic"}
    dims = env.observation_manager.group_dims
    assert obs["policy"].shape == (4, dims["policy"]) and obs["critic"].shape == (4, dims["critic"])
    assert dims["critic"] > dims["policy"]  # the critic sees privileged terms too
    actuated = sum(t.action_dim for t in env.action_manager.terms.values())
    assert vec.num_actions == actuated and vec.max_episode_length == env.max_episode_length
    vec.episode_length_buf = torch.full((4,), env.max_episode_length - 1)  # as rsl-rl does
    _, _, dones, extras = vec.step(torch.zeros(4, vec.num_actions))
    assert dones.tolist() == [1, 1, 1, 1] and extras["time_outs"].all()
    assert "Episode_Termination/time_out" in extras["log"]


def test_gymnasium_make_gives_one_env_that_passes_gymnasiums_checker():
    from gymnasium.utils.env_checker import check_env

    env = gym.make(gym_id("cartpole_balance"))
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    env.action_space.seed(0)
    assert obs.shape == env.observation_space.shape and obs.dtype == np.float32
    # random actions topple the pole: the episode ends with its own final observation
    for _ in range(1000):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            break
    assert terminated and not truncated
    assert isinstance(reward, float) and env.observation_space.contains(obs)
    # the observation is the state that ended the episode (pole down or cart out), not the
    # next episode's start: joint positions are (cart, pole) relative to the default pose
    cart, pole = obs[0], obs[1]
    assert abs(pole) > np.pi / 2 or abs(cart) > 2.0
    env.close()


def test_gymnasium_module_prefix_registers_the_tasks_in_a_fresh_interpreter():
    code = (
        "import gymnasium as gym\n"
        "env = gym.make_vec('robolearn.tasks:robolearn/cartpole_balance-v0', num_envs=2)\n"
        "print(env.reset(seed=0)[0].shape)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "(2, 4)"
