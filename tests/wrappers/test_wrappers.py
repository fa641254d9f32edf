"""Stable-Baselines3 and skrl over the batched env: their API contracts, learning, and
robolearn without them."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
import robolearn.tasks  # noqa: F401  (registers the tasks with gymnasium, as a user does)
import torch
from conftest import slider_task_cfg

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.registry import gym_id
from robolearn.wrappers import make_env
from robolearn.wrappers.gymnasium import GymVectorEnv

TASK = "cartpole_balance"


def evaluate(act, num_envs: int = 256) -> tuple[float, float]:
    """(mean return, fall rate) of the first episode of each of ``num_envs`` envs under
    ``act`` (policy observations -> actions, tensors), as ``robolearn play --eval`` measures
    the rsl-rl policy in tests/app/test_train.py."""
    env = make_env(TASK, num_envs=num_envs, play=True)
    obs, _ = env.reset(seed=0)
    active = torch.ones(num_envs, dtype=torch.bool)
    returns = torch.zeros(num_envs)
    fell = torch.zeros(num_envs, dtype=torch.bool)
    for _ in range(env.max_episode_length):
        with torch.no_grad():
            action = act(obs["policy"])
        obs, reward, terminated, time_outs, _ = env.step(action)
        returns += reward * active
        fell |= active & terminated
        active &= ~(terminated | time_outs)
        if not active.any():
            break
    return float(returns.mean()), float(fell.float().mean())


# The bar rsl-rl's PPO reaches in tests/app/test_train.py after 40 iterations of 256 envs x
# 16 steps (164k env steps): the average pole stays up 3.5 of 5 s and under 35% fall. An
# untrained policy returns 0.15 with every pole down; the other learners get the same
# budget of env steps.
BAR_RETURN, BAR_FALL_RATE, BUDGET = 3.5, 0.35, 40 * 256 * 16


# ---- Stable-Baselines3 ----------------------------------------------------------------


def test_sb3_env_checker_passes_on_the_single_env_without_warnings():
    from stable_baselines3.common.env_checker import check_env

    env = gym.make(gym_id(TASK))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []
    env.close()


@pytest.fixture(scope="module")
def sb3_env():
    from robolearn.wrappers.sb3 import Sb3VecEnv

    vec = Sb3VecEnv(make_env(TASK, num_envs=8, engine="cpu"))
    yield vec
    vec.close()


def test_sb3_vecenv_is_sb3s_vecenv_over_every_env(sb3_env):
    from stable_baselines3.common.vec_env import VecEnv

    assert isinstance(sb3_env, VecEnv)
    assert sb3_env.num_envs == 8
    assert sb3_env.observation_space.shape == (4,)
    assert sb3_env.observation_space.dtype == np.float32
    # the cart's motor takes ctrl in [-1, 1] at scale 1: the actions that do anything
    np.testing.assert_array_equal(sb3_env.action_space.low, [-1.0])
    np.testing.assert_array_equal(sb3_env.action_space.high, [1.0])
    assert sb3_env.get_attr("max_episode_length") == [sb3_env.env.max_episode_length] * 8
    assert sb3_env.get_attr("num_envs", indices=[0, 3]) == [8, 8]
    assert sb3_env.env_is_wrapped(gym.Wrapper) == [False] * 8


def test_sb3_reset_is_seeded_by_seed(sb3_env):
    sb3_env.seed(5)
    first = sb3_env.reset()
    assert first.shape == (8, 4) and first.dtype == np.float32
    sb3_env.seed(5)
    np.testing.assert_array_equal(sb3_env.reset(), first)
    sb3_env.seed(6)
    assert not np.array_equal(sb3_env.reset(), first)


def test_sb3_step_gives_terminal_observations_of_the_envs_that_finished(sb3_env):
    sb3_env.seed(0)
    sb3_env.reset()
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(200):
        sb3_env.step_async(rng.uniform(-1, 1, (8, 1)).astype(np.float32))
        new_obs, rewards, dones, infos = sb3_env.step_wait()
        assert new_obs.shape == (8, 4) and rewards.shape == (8,) and dones.dtype == np.bool_
        assert len(infos) == 8
        for i in range(8):
            if not dones[i]:
                assert infos[i] == {}  # nothing is built for the envs that go on
                continue
            finished += 1
            info = infos[i]
            terminal = info["terminal_observation"]
            assert terminal.shape == (4,) and terminal.dtype == np.float32
            # the next episode has started: the returned observation is its first
            assert not np.array_equal(terminal, new_obs[i])
            if not info["TimeLimit.truncated"]:
                # a failure: the terminal state is the pole down or the cart out
                cart, pole = terminal[0], terminal[1]
                assert abs(pole) > np.pi / 2 or abs(cart) > 2.0
            assert info["episode"]["l"] >= 1
    assert finished >= 8  # random pushes drop poles within ~0.6 s


def test_sb3_time_limit_is_a_truncation(sb3_env):
    sb3_env.reset()
    sb3_env.env.episode_length_buf[:] = sb3_env.env.max_episode_length - 1
    _, _, dones, infos = sb3_env.step(np.zeros((8, 1), np.float32))
    assert dones.all()
    assert all(info["TimeLimit.truncated"] is True for info in infos)


@pytest.mark.slow  # 70-130 s on this 2-core machine (busy), mostly SB3's own updates
def test_sb3_ppo_learns_cartpole_to_the_rsl_rl_bar():
    """Measured: mean return 3.99, fall rate 0.23 (rsl-rl: 4.39-4.63, 7-22%)."""
    from stable_baselines3 import PPO

    from robolearn.wrappers.sb3 import Sb3VecEnv

    env = Sb3VecEnv(make_env(TASK, num_envs=256, engine="cpu"))
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=16,
        batch_size=1024,
        n_epochs=5,
        learning_rate=1e-3,
        ent_coef=0.0,
        policy_kwargs={"net_arch": [32, 32]},
        seed=1,
        device="cpu",
    )
    model.learn(BUDGET)
    # SB3 read our episode infos: its rollout/ep_rew_mean has something to average
    assert len(model.ep_info_buffer) == 100

    def act(obs: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(model.predict(obs.numpy(), deterministic=True)[0])

    mean_return, fall_rate = evaluate(act)
    assert mean_return > BAR_RETURN and fall_rate < BAR_FALL_RATE, (mean_return, fall_rate)


# ---- skrl -------------------------------------------------------------------------------


def test_skrl_wrapper_keeps_tensors_on_the_device_in_skrls_shapes():
    from skrl.envs.wrappers.torch import Wrapper

    from robolearn.wrappers.skrl import SkrlVecEnv

    env = SkrlVecEnv(make_env(TASK, num_envs=8, engine="cpu"))
    assert isinstance(env, Wrapper)
    assert env.num_envs == 8 and env.device == torch.device("cpu")
    assert env.observation_space.shape == (4,) and env.action_space.shape == (1,)
    assert env.state_space is None and env.state() is None  # cartpole has no critic group
    obs, info = env.reset()
    assert isinstance(obs, torch.Tensor) and obs.shape == (8, 4) and info == {}
    env.env.episode_length_buf[:] = env.env.max_episode_length - 1
    obs2, reward, terminated, truncated, info = env.step(torch.zeros(8, 1))
    assert obs2.shape == (8, 4) and reward.shape == (8, 1) and reward.dtype == torch.float32
    assert terminated.shape == truncated.shape == (8, 1) and truncated.all()
    # episode statistics of the envs that reset, as tensors skrl's trainer logs
    assert info["episode"]["Episode_Termination/time_out"].item() == 8
    # the envs reset themselves: a later reset() does not start the episodes again
    again, _ = env.reset()
    assert again is obs2


def test_skrl_state_is_the_critic_group():
    from robolearn.wrappers.skrl import SkrlVecEnv

    base = make_env("humanoid_walk", num_envs=2, engine="cpu")
    env = SkrlVecEnv(base)
    dims = base.observation_manager.group_dims
    assert env.observation_space.shape == (dims["policy"],)
    assert env.state_space.shape == (dims["critic"],)
    env.reset()
    env.step(torch.zeros(2, base.num_actions))
    torch.testing.assert_close(env.state(), base.obs_buf["critic"])


def _skrl_models(env):
    import torch.nn as nn
    from skrl.models.torch import DeterministicMixin, GaussianMixin, Model

    def mlp(inputs: int, outputs: int) -> nn.Module:
        return nn.Sequential(
            nn.Linear(inputs, 32), nn.ELU(), nn.Linear(32, 32), nn.ELU(), nn.Linear(32, outputs)
        )

    class Policy(GaussianMixin, Model):
        def __init__(self) -> None:
            Model.__init__(
                self,
                observation_space=env.observation_space,
                action_space=env.action_space,
                device=env.device,
            )
            # unclipped samples: the env clamps them itself; clipping here stores the
            # clamped action with its density, and the mean runs off past the bound
            GaussianMixin.__init__(self, clip_actions=False)
            self.net = mlp(self.num_observations, self.num_actions)
            self.log_std = nn.Parameter(torch.zeros(self.num_actions))

        def compute(self, inputs, role=""):
            return self.net(inputs["observations"]), {"log_std": self.log_std}

    class Value(DeterministicMixin, Model):
        def __init__(self) -> None:
            Model.__init__(
                self,
                observation_space=env.observation_space,
                action_space=env.action_space,
                device=env.device,
            )
            DeterministicMixin.__init__(self)
            self.net = mlp(self.num_observations, 1)

        def compute(self, inputs, role=""):
            return self.net(inputs["observations"]), {}

    return {"policy": Policy(), "value": Value()}


@pytest.mark.slow  # about 100 s on this 2-core machine (busy)
def test_skrl_ppo_learns_cartpole_to_the_rsl_rl_bar(tmp_path):
    """Measured: mean return 4.57, fall rate 0.08 (rsl-rl: 4.39-4.63, 7-22%)."""
    from skrl.agents.torch.base import ExperimentCfg
    from skrl.agents.torch.ppo import PPO, PPO_CFG
    from skrl.memories.torch import RandomMemory
    from skrl.trainers.torch import SequentialTrainer

    from robolearn.wrappers.skrl import SkrlVecEnv

    env = SkrlVecEnv(make_env(TASK, num_envs=256, engine="cpu"))
    cfg = PPO_CFG(
        rollouts=16,
        learning_epochs=5,
        mini_batches=4,
        learning_rate=1e-3,
        entropy_loss_scale=0.005,
        value_loss_scale=1.0,
        experiment=ExperimentCfg(directory=str(tmp_path), write_interval=0, checkpoint_interval=0),
    )
    agent = PPO(
        models=_skrl_models(env),
        memory=RandomMemory(memory_size=16, num_envs=env.num_envs, device=env.device),
        observation_space=env.observation_space,
        state_space=env.state_space,
        action_space=env.action_space,
        device=env.device,
        cfg=cfg,
    )
    trainer_cfg = {
        "timesteps": BUDGET // env.num_envs,
        "headless": True,
        "disable_progressbar": True,
        "close_environment_at_exit": False,
    }
    SequentialTrainer(env=env, agents=agent, cfg=trainer_cfg).train()

    def act(obs: torch.Tensor) -> torch.Tensor:
        return agent.policy.act({"observations": obs}, role="policy")[1]["mean_actions"]

    mean_return, fall_rate = evaluate(act)
    assert mean_return > BAR_RETURN and fall_rate < BAR_FALL_RATE, (mean_return, fall_rate)


# ---- bounds and bad input ----------------------------------------------------------------


def _unbounded_slider(clip=None) -> ManagerBasedRLEnv:
    """One slide joint driven by a <general> actuator with no ctrlrange."""
    cfg = slider_task_cfg("biased_slider.xml", num_envs=2)
    cfg.actions["force"].clip = clip
    return ManagerBasedRLEnv(cfg)


def test_an_action_term_without_a_range_needs_a_clip_for_every_wrapper():
    from robolearn.wrappers.sb3 import Sb3VecEnv
    from robolearn.wrappers.skrl import SkrlVecEnv

    env = _unbounded_slider()
    env.step(torch.full((2, 1), 1e3))  # rsl-rl needs no bound: training is untouched
    for wrapper in (GymVectorEnv, Sb3VecEnv, SkrlVecEnv):
        with pytest.raises(RobolearnError) as err:
            wrapper(env)
        message = str(err.value)
        assert "\n" not in message
        assert "actions.force: no finite action range" in message
        assert "add a clip, e.g. env.actions.force.clip=[-1,1]" in message


def test_a_declared_clip_is_the_bound_and_holds():
    env = _unbounded_slider(clip=(-2.0, 3.0))
    raw = GymVectorEnv(env, normalize_actions=False)
    np.testing.assert_array_equal(raw.single_action_space.low, [-2.0])
    np.testing.assert_array_equal(raw.single_action_space.high, [3.0])
    vec = GymVectorEnv(env)  # normalized: u = 1 is the wider end of the clip
    np.testing.assert_array_equal(vec.single_action_space.low, [-1.0])
    np.testing.assert_array_equal(vec.single_action_space.high, [1.0])
    vec.step(np.array([[1.0], [-1.0]], np.float32))
    assert env.scene.engine.ctrl[:, 0].tolist() == [3.0, -2.0]  # -3 saturates at the clip's -2
    # beyond the bound, an action does what the bound does
    env.step(torch.tensor([[-50.0], [80.0]]))
    assert env.scene.engine.ctrl[:, 0].tolist() == [-2.0, 3.0]
    assert env.action_manager.action[:, 0].tolist() == [-50.0, 80.0]  # last_action: raw
    with pytest.raises(RobolearnError, match=r"actions.force.clip must be \[low, high\]"):
        _unbounded_slider(clip=(1.0, -1.0))


def test_the_clip_override_from_the_error_message_works_through_gymnasium():
    env = gym.make_vec(
        gym_id(TASK),
        num_envs=2,
        engine="cpu",
        normalize_actions=False,
        overrides=["env.actions.cart_force.clip=[-0.5,0.5]"],
    )
    assert env.single_action_space.low.tolist() == [-0.5]
    assert env.single_action_space.high.tolist() == [0.5]
    env.close()
    with pytest.raises(RobolearnError, match=r"must start with 'env\.'"):
        make_env(TASK, overrides=["agent.seed=1"])


def test_robolearn_works_without_sb3_and_skrl_and_says_what_to_install():
    code = (
        "import sys\n"
        "sys.modules['stable_baselines3'] = None\n"  # as if not installed
        "sys.modules['skrl'] = None\n"
        "import gymnasium as gym\n"
        "import robolearn.tasks\n"
        "env = gym.make('robolearn/cartpole_balance-v0')\n"
        "print(env.reset(seed=0)[0].shape)\n"
        "from robolearn.errors import RobolearnError\n"
        "for name in ('sb3', 'skrl'):\n"
        "    try:\n"
        "        __import__('robolearn.wrappers.' + name)\n"
        "    except RobolearnError as exc:\n"
        "        print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "(4,)"
    assert "pip install 'robolearn[sb3]'" in lines[1]
    assert "pip install 'robolearn[skrl]'" in lines[2]
