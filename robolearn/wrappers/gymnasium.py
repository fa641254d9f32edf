"""The batched env as gymnasium's ``VectorEnv`` and one env as its ``Env``.

* :class:`GymVectorEnv`: gymnasium's ``VectorEnv`` with same-step autoreset: numpy arrays,
  ``terminated`` and ``truncated`` apart, the pre-reset observation in
  ``infos["final_obs"]`` for the envs that finished (mask ``infos["_final_obs"]``).
  ``gymnasium.make_vec("robolearn/<task>-v0", num_envs=N)`` builds one.
* :class:`GymEnv`: one env as a gymnasium ``Env`` (``gymnasium.make``), with
  ``render_mode="rgb_array"`` (offscreen, as robolearn's videos) or ``"human"`` (a window).

Spaces are bounded by what the terms know (:mod:`robolearn.wrappers.spaces`); by default
the action space is normalized to ``[-1, 1]``
(:class:`~robolearn.wrappers.spaces.ActionScaling`), as gymnasium's and SB3's checkers
recommend; ``normalize_actions=False`` gives the task's own action units.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.wrappers.env_view import EnvView, available_render_modes, check_render_mode
from robolearn.wrappers.episode_log import ended_episode_log
from robolearn.wrappers.make import make_env
from robolearn.wrappers.spaces import ActionScaling, observation_space


class GymVectorEnv(gym.vector.VectorEnv):
    """A ManagerBasedRLEnv as a gymnasium VectorEnv over one observation group.

    ``render()`` (with ``render_mode="rgb_array"``) returns one frame, of env 0: a batch of
    thousands of envs is watched through one of them, as ``robolearn play --video`` does.
    """

    metadata: ClassVar[dict] = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        env: ManagerBasedRLEnv,
        obs_group: str = "policy",
        render_mode: str | None = None,
        normalize_actions: bool = True,
    ) -> None:
        self.single_observation_space = observation_space(env, obs_group)
        self.action_scaling = ActionScaling(env, normalize_actions)
        self.single_action_space = self.action_scaling.space
        self.env = env
        self.obs_group = obs_group
        self.num_envs = env.num_envs
        self.render_mode = render_mode
        self._view = EnvView(env, render_mode)
        self.metadata = {
            "autoreset_mode": AutoresetMode.SAME_STEP,
            "render_modes": available_render_modes(),
            "render_fps": 1.0 / env.step_dt,
        }
        env.record_final_obs = True
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
        obs, reward, terminated, time_outs, extras = self.env.step(
            self.action_scaling.to_env(action)
        )
        done = terminated | time_outs
        infos: dict[str, Any] = {"log": ended_episode_log(extras["log"])}
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

    def render(self) -> np.ndarray | None:
        """Env 0's frame (``rgb_array``), or None after drawing the window (``human``)."""
        return self._view.render()

    def close_extras(self, **kwargs: Any) -> None:
        self._view.close()
        self.env.close()


class GymEnv(gym.Env):
    """One env of a task as a plain gymnasium Env (``gymnasium.make("robolearn/<task>-v0")``).

    For single-env tools and checks; training wants the vector env. When an episode ends,
    ``step`` returns its final observation, and the next ``reset`` starts a new one.
    ``render_mode``: ``"rgb_array"`` (offscreen frames, as videos) or ``"human"`` (a window;
    needs a display). Actions are normalized to ``[-1, 1]`` unless ``normalize_actions`` is
    False (:class:`~robolearn.wrappers.spaces.ActionScaling`).
    """

    def __init__(
        self,
        env: ManagerBasedRLEnv,
        obs_group: str = "policy",
        render_mode: str | None = None,
        normalize_actions: bool = True,
    ) -> None:
        if env.num_envs != 1:
            raise RobolearnError(f"GymEnv holds one env, got {env.num_envs}")
        self._vec = GymVectorEnv(env, obs_group, render_mode, normalize_actions)
        self.env = env
        self.render_mode = render_mode
        self.metadata = {
            "render_modes": available_render_modes(),
            "render_fps": 1.0 / env.step_dt,
        }
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

    def render(self) -> np.ndarray | None:
        """An (H, W, 3) uint8 frame (``rgb_array``), or None after drawing the window."""
        return self._vec.render()

    def close(self) -> None:
        self._vec.close()


def make_gym_vector_env(
    num_envs: int = 1,
    task: str = "",
    engine: str | None = None,
    render_mode: str | None = None,
    overrides: Sequence[str] = (),
    normalize_actions: bool = True,
    **kwargs: Any,
) -> GymVectorEnv:
    """gymnasium's vector entry point for ``robolearn/<task>-v0``."""
    kwargs.pop("max_episode_steps", None)  # episodes end by the task's own time-out term
    if kwargs:
        raise RobolearnError(f"unexpected arguments for {task}: {', '.join(kwargs)}")
    check_render_mode(render_mode)  # before the env is built, which takes a while
    env = make_env(task, num_envs=num_envs, engine=engine, overrides=overrides)
    return GymVectorEnv(env, render_mode=render_mode, normalize_actions=normalize_actions)


def make_gym_env(
    task: str = "",
    engine: str | None = None,
    render_mode: str | None = None,
    overrides: Sequence[str] = (),
    normalize_actions: bool = True,
    **kwargs: Any,
) -> GymEnv:
    """gymnasium's single-env entry point for ``robolearn/<task>-v0``."""
    kwargs.pop("max_episode_steps", None)
    if kwargs:
        raise RobolearnError(f"unexpected arguments for {task}: {', '.join(kwargs)}")
    check_render_mode(render_mode)
    env = make_env(task, num_envs=1, engine=engine, overrides=overrides)
    return GymEnv(env, render_mode=render_mode, normalize_actions=normalize_actions)
