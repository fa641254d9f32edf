"""Adapters from ManagerBasedRLEnv to the interfaces learners expect.

* :class:`RslRlVecEnv`: rsl-rl's ``VecEnv`` (TensorDict observations by group, ``dones``,
  ``extras["time_outs"]`` and ``extras["log"]``), on the env's device, no copies.
* :class:`GymVectorEnv`: gymnasium's ``VectorEnv`` with same-step autoreset: numpy arrays,
  ``terminated`` and ``truncated`` apart, the pre-reset observation in
  ``infos["final_obs"]`` for the envs that finished (mask ``infos["_final_obs"]``).
  ``gymnasium.make_vec("robolearn/<task>-v0", num_envs=N)`` builds one.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError


class RslRlVecEnv(VecEnv):
    """A ManagerBasedRLEnv as rsl-rl's VecEnv."""

    def __init__(self, env: ManagerBasedRLEnv) -> None:
        self.env = env
        self.num_envs = env.num_envs
        self.num_actions = env.num_actions
        self.max_episode_length = env.max_episode_length
        self.device = env.device
        self.cfg = env.cfg

    @property
    def episode_length_buf(self) -> torch.Tensor:
        return self.env.episode_length_buf

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        # rsl-rl randomizes episode lengths at the start of training to spread resets.
        self.env.episode_length_buf[:] = value

    def _obs(self, groups: dict[str, torch.Tensor]) -> TensorDict:
        return TensorDict(groups, batch_size=[self.num_envs], device=self.device)

    def get_observations(self) -> TensorDict:
        return self._obs(self.env.obs_buf)

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        obs, reward, terminated, time_outs, extras = self.env.step(actions)
        dones = (terminated | time_outs).long()
        return self._obs(obs), reward, dones, {"time_outs": time_outs, "log": extras["log"]}

    def reset(self) -> TensorDict:
        obs, _ = self.env.reset()
        return self._obs(obs)

    def close(self) -> None:
        self.env.close()


class GymVectorEnv(gym.vector.VectorEnv):
    """A ManagerBasedRLEnv as a gymnasium VectorEnv over one observation group."""

    metadata: ClassVar[dict] = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, env: ManagerBasedRLEnv, obs_group: str = "policy") -> None:
        if obs_group not in env.obs_buf:
            raise RobolearnError(
                f"observation group {obs_group!r} not in the task; groups: {', '.join(env.obs_buf)}"
            )
        self.env = env
        self.obs_group = obs_group
        self.num_envs = env.num_envs
        env.record_final_obs = True
        dim = env.observation_manager.group_dims[obs_group]
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (dim,), np.float32)
        self.single_action_space = gym.spaces.Box(-np.inf, np.inf, (env.num_actions,), np.float32)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    @staticmethod
    def _np(t: torch.Tensor) -> np.ndarray:
        return t.detach().cpu().numpy()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        obs, _ = self.env.reset(seed=seed)
        return self._np(obs[self.obs_group]), {}

    def step(self, actions):
        action = torch.as_tensor(np.asarray(actions), dtype=torch.float32, device=self.env.device)
        obs, reward, terminated, time_outs, extras = self.env.step(action)
        done = terminated | time_outs
        infos: dict[str, Any] = {"log": extras["log"]}
        if bool(done.any()):
            infos["final_obs"] = self._np(extras["final_obs"][self.obs_group])
            infos["_final_obs"] = self._np(done)
        return (
            self._np(obs[self.obs_group]),
            self._np(reward),
            self._np(terminated),
            self._np(time_outs),
            infos,
        )

    def close_extras(self, **kwargs: Any) -> None:
        self.env.close()


class GymEnv(gym.Env):
    """One env of a task as a plain gymnasium Env (``gymnasium.make("robolearn/<task>-v0")``).

    For single-env tools and checks; training wants the vector env. When an episode ends,
    ``step`` returns its final observation, and the next ``reset`` starts a new one.
    """

    def __init__(self, env: ManagerBasedRLEnv, obs_group: str = "policy") -> None:
        if env.num_envs != 1:
            raise RobolearnError(f"GymEnv holds one env, got {env.num_envs}")
        self._vec = GymVectorEnv(env, obs_group)
        self.env = env
        self.observation_space = self._vec.single_observation_space
        self.action_space = self._vec.single_action_space

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        obs, info = self._vec.reset(seed=seed, options=options)
        return obs[0], info

    def step(self, action):
        obs, reward, terminated, truncated, info = self._vec.step(np.asarray(action)[None])
        if "final_obs" in info:
            obs = info["final_obs"]
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), info

    def close(self) -> None:
        self._vec.close()


def make_env(task: str, num_envs: int | None = None, engine: str | None = None, play: bool = False):
    """Build a registered task's ManagerBasedRLEnv with optional num_envs and engine."""
    from robolearn.registry import get_task

    cfg = get_task(task).make_env_cfg(play=play)
    if num_envs is not None:
        cfg.scene.num_envs = num_envs
    if engine is not None:
        cfg.sim.engine = engine
    return ManagerBasedRLEnv(cfg)


def make_gym_vector_env(
    num_envs: int = 1, task: str = "", engine: str | None = None, **kwargs: Any
) -> GymVectorEnv:
    """gymnasium's vector entry point for ``robolearn/<task>-v0``."""
    kwargs.pop("max_episode_steps", None)  # episodes end by the task's own time-out term
    if kwargs:
        raise RobolearnError(f"unexpected arguments for {task}: {', '.join(kwargs)}")
    return GymVectorEnv(make_env(task, num_envs=num_envs, engine=engine))


def make_gym_env(task: str = "", engine: str | None = None, **kwargs: Any) -> GymEnv:
    """gymnasium's single-env entry point for ``robolearn/<task>-v0``."""
    kwargs.pop("max_episode_steps", None)
    kwargs.pop("render_mode", None)
    if kwargs:
        raise RobolearnError(f"unexpected arguments for {task}: {', '.join(kwargs)}")
    return GymEnv(make_env(task, num_envs=1, engine=engine))
