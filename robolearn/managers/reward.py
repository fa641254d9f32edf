"""Rewards: a weighted sum of terms, scaled by the env step's duration.

Each step, term ``i`` contributes ``weight_i * value_i * step_dt`` (step_dt = physics dt x
decimation), so an episode's return does not depend on the control rate, as in Isaac Lab.
The contributions are summed per episode for logging: ``Episode_Reward/<term>`` is an
episode's sum divided by the maximum episode length in seconds (a per-second average).
``step_reward`` keeps the latest contribution of each term, for the viewer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from robolearn.errors import RobolearnError
from robolearn.managers.base import TermCfg, check_term_output, reset_term, resolve_term

if TYPE_CHECKING:
    from robolearn.env import ManagerBasedRLEnv


@dataclass
class RewardTermCfg(TermCfg):
    """A reward term: ``func(env, **params)`` -> (num_envs,), times ``weight``."""

    weight: float = 1.0
    """Multiplies the term (negative for a penalty); 0 disables it."""


class RewardManager:
    def __init__(self, cfg: dict[str, RewardTermCfg], env: ManagerBasedRLEnv) -> None:
        self.env = env
        self.cfg = cfg
        self.term_names = list(cfg)
        self._terms = {name: resolve_term(t, env, f"rewards.{name}") for name, t in cfg.items()}
        n, dev = env.num_envs, env.device
        self._active = [i for i, t in enumerate(cfg.values()) if t.weight != 0.0]
        self._active_cols = torch.tensor(self._active, dtype=torch.long, device=dev)
        self._weights = torch.tensor([t.weight for t in cfg.values()], device=dev)
        self._episode_sums = torch.zeros(n, len(cfg), device=dev)
        self.step_reward = torch.zeros(n, len(cfg), device=dev)
        """(N, num_terms): each term's contribution in the latest step (weight x value x dt)."""

    @property
    def episode_sums(self) -> dict[str, torch.Tensor]:
        """Per term, (N,) sums of its contributions since each env's episode began (views)."""
        return {name: self._episode_sums[:, i] for i, name in enumerate(self.term_names)}

    def compute(self, dt: float) -> torch.Tensor:
        """The step's reward (N,), float32."""
        n = self.env.num_envs
        values = []
        for i in self._active:
            name = self.term_names[i]
            value = check_term_output(
                self._terms[name](self.env, **self.cfg[name].params), n, f"rewards.{name}"
            )
            if value.dim() != 1:
                raise RobolearnError(f"rewards.{name} returned {tuple(value.shape)}; want (N,)")
            values.append(value.float())
        # One write of all columns instead of a small strided write per term.
        if len(self._active) == len(self.term_names):
            torch.stack(values, dim=1, out=self.step_reward)
        elif values:
            self.step_reward.index_copy_(1, self._active_cols, torch.stack(values, dim=1))
        # One multiply and one sum for all terms, instead of a few small ops per term.
        self.step_reward.mul_(self._weights * dt)
        self._episode_sums += self.step_reward
        return self.step_reward.sum(-1)

    def reset(self, env_ids: torch.Tensor) -> dict[str, float | torch.Tensor]:
        sums = self._episode_sums[env_ids].mean(0) / self.env.max_episode_length_s
        log: dict[str, float | torch.Tensor] = {
            f"Episode_Reward/{name}": sums[i] for i, name in enumerate(self.term_names)
        }
        for fn in self._terms.values():
            reset_term(fn, env_ids)
        self._episode_sums[env_ids] = 0.0
        self.step_reward[env_ids] = 0.0
        return log
