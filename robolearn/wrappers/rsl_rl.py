"""The batched env as rsl-rl's ``VecEnv``: what robolearn's own runner trains on.

TensorDict observations by group, ``dones``, ``extras["time_outs"]`` and ``extras["log"]``,
on the env's device, with no copies.
"""

from __future__ import annotations

import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from robolearn.env import ManagerBasedRLEnv


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
