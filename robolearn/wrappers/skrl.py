"""The batched env as an skrl environment wrapper (``pip install 'robolearn[skrl]'``).

::

    from robolearn.wrappers import make_env
    from robolearn.wrappers.skrl import SkrlVecEnv

    env = SkrlVecEnv(make_env("cartpole_balance", num_envs=256))
    # then skrl's agents and trainers as for any wrapped env: env.observation_space,
    # env.state_space (the critic's group, if the task has one), env.action_space

skrl takes torch tensors: observations, rewards and dones stay on the env's device, with no
copy and no loop over envs. Envs reset themselves when their episodes end (skrl's
convention for vectorized envs), so ``reset()`` resets every env the first time only and
afterwards returns the current observations. ``infos["episode"]`` holds the episode
statistics of the envs that reset in the step (robolearn's ``extras["log"]``), which skrl's
trainer logs.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import torch

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.wrappers.episode_log import ended_episode_log
from robolearn.wrappers.spaces import ActionScaling, observation_space

try:
    from skrl.envs.wrappers.torch.base import Wrapper
except ImportError as exc:  # an optional extra: robolearn itself never imports this module
    raise RobolearnError("the skrl wrapper needs skrl: pip install 'robolearn[skrl]'") from exc


class SkrlVecEnv(Wrapper):
    """A ManagerBasedRLEnv (all its envs) as an skrl single-agent env.

    ``obs_group`` feeds the policy (skrl's observations); ``state_group`` (default: the
    task's ``critic`` group, if it has one) feeds skrl's states, which an asymmetric
    critic reads. The action space is ``[-1, 1]``, scaled to each action term's range
    (:class:`~robolearn.wrappers.spaces.ActionScaling`; ``normalize_actions=False`` keeps the
    task's units).
    """

    def __init__(
        self,
        env: ManagerBasedRLEnv,
        obs_group: str = "policy",
        state_group: str | None = "critic",
        normalize_actions: bool = True,
    ) -> None:
        super().__init__(env)
        if state_group is not None and state_group not in env.obs_buf:
            state_group = None  # a task without a critic group: skrl's states are None
        self.env = env
        self.obs_group, self.state_group = obs_group, state_group
        self._observation_space = observation_space(env, obs_group)
        self._state_space = observation_space(env, state_group) if state_group else None
        self.action_scaling = ActionScaling(env, normalize_actions)
        self._action_space = self.action_scaling.space
        self._obs: dict[str, torch.Tensor] = env.obs_buf
        self._reset_once = True

    @property
    def observation_space(self) -> gymnasium.Space:
        """One env's observation space (the policy's group)."""
        return self._observation_space

    @property
    def state_space(self) -> gymnasium.Space | None:
        """One env's state space (the critic's group), or None."""
        return self._state_space

    @property
    def action_space(self) -> gymnasium.Space:
        """One env's action space."""
        return self._action_space

    @property
    def num_envs(self) -> int:
        return self.env.num_envs

    def reset(self) -> tuple[torch.Tensor, dict[str, Any]]:
        """Reset every env the first time; later, the current observations (envs reset
        themselves when their episodes end)."""
        if self._reset_once:
            self._obs, _ = self.env.reset()
            self._reset_once = False
        return self._obs[self.obs_group], {}

    def step(
        self, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """One step of every env; reward, terminated and truncated as (N, 1), as skrl wants."""
        with torch.no_grad():
            obs, reward, terminated, time_outs, extras = self.env.step(
                self.action_scaling.to_env(actions)
            )
        self._obs = obs
        # statistics of ended episodes are NaN in a step where none ended: left out (skrl
        # reads each value on the host anyway, to track it)
        log = {k: torch.tensor(v) for k, v in ended_episode_log(extras["log"]).items()}
        return (
            obs[self.obs_group],
            reward.view(-1, 1),
            terminated.view(-1, 1),
            time_outs.view(-1, 1),
            {"episode": log},
        )

    def state(self) -> torch.Tensor | None:
        """The critic group's observations of the latest step, or None."""
        return self._obs[self.state_group] if self.state_group else None

    def render(self, *args: Any, **kwargs: Any) -> None:
        """Nothing: skrl's trainer calls this every step unless ``headless``; watch a run
        with ``robolearn view`` or record one through gymnasium's ``render_mode``."""
        return None

    def close(self) -> None:
        self.env.close()
