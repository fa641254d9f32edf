"""Curricula: adjust the task as the policy improves, evaluated when envs reset.

A term is ``func(env, env_ids, **params)``; it may change any config value the env reads
live (command ranges, event params, reward weights and params: through a manager's
``get_term_cfg(name)`` / ``set_term_cfg(name, cfg)``, e.g. ``env.reward_manager``'s, or on
the config itself, from the next step) and returns a number describing its state, logged
as ``Curriculum/<term>``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robolearn.managers.base import ManagerBase, TermCfg


@dataclass
class CurriculumTermCfg(TermCfg):
    """A curriculum term: ``func(env, env_ids, **params)`` -> a number to log."""


class CurriculumManager(ManagerBase):
    """Runs the curriculum terms for the envs about to reset."""

    section = "curriculum"
    term_kind = "curriculum term"
    term_args = ("env", "env_ids")

    def compute(self, env_ids: torch.Tensor) -> dict[str, float | torch.Tensor]:
        """Run every term for ``env_ids``; returns ``Curriculum/<term>`` of those that
        return a value."""
        log: dict[str, float | torch.Tensor] = {}
        for name, fn in self._terms.items():
            value = fn(self.env, env_ids, **self.cfg[name].params)
            if value is not None:
                log[f"Curriculum/{name}"] = value
        return log
