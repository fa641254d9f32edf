"""Curricula: adjust the task as the policy improves, evaluated when envs reset.

A term is ``func(env, env_ids, **params)``; it may change any config value the env reads
live (command ranges, event params, reward weights and params: through
``env.reward_manager.get_term_cfg(name)`` / ``set_term_cfg(name, cfg)`` or on the config
itself, from the next step) and returns a number describing its state, logged as
``Curriculum/<term>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from robolearn.managers.base import TermCfg, resolve_term

if TYPE_CHECKING:
    from robolearn.env import ManagerBasedRLEnv


@dataclass
class CurriculumTermCfg(TermCfg):
    """A curriculum term: ``func(env, env_ids, **params)`` -> a number to log."""


class CurriculumManager:
    def __init__(self, cfg: dict[str, CurriculumTermCfg], env: ManagerBasedRLEnv) -> None:
        self.env = env
        self.cfg = cfg
        self._terms = {
            name: resolve_term(t, env, f"curriculum.{name}", ("env", "env_ids"))
            for name, t in cfg.items()
        }
        self.state: dict[str, float] = {}

    def compute(self, env_ids: torch.Tensor) -> dict[str, float | torch.Tensor]:
        log: dict[str, float | torch.Tensor] = {}
        for name, fn in self._terms.items():
            value = fn(self.env, env_ids, **self.cfg[name].params)
            if value is not None:
                self.state[name] = value
                log[f"Curriculum/{name}"] = value
        return log
