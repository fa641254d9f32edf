"""Terminations: failure terms end an episode; time-out terms truncate it.

The two are kept apart so the learner can bootstrap the value of a truncated episode (a time
out is not the robot's fault) and not of a failed one. ``Episode_Termination/<term>`` logs how
many of the envs that reset ended by each term. An env whose physics diverged fires no term:
the env counts it as ``Episode_Termination/nonfinite`` only.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robolearn.errors import RobolearnError
from robolearn.managers.base import EnvRows, ManagerBase, TermCfg, raise_named
from robolearn.managers.protocol import ManagedEnv
from robolearn.math import columns_of, take_columns


@dataclass
class TerminationTermCfg(TermCfg):
    """A termination: ``func(env, **params)`` -> (num_envs,) bool."""

    time_out: bool = False
    """True for a truncation (episode length, leaving the arena); False for a failure."""


class TerminationManager(ManagerBase):
    """Evaluates the termination terms each step, failures and time-outs apart."""

    section = "terminations"
    term_kind = "termination term"

    def __init__(self, cfg: dict[str, TerminationTermCfg], env: ManagedEnv) -> None:
        if not any(t.time_out for t in cfg.values()):
            raise RobolearnError(
                "a task needs a time-out termination (e.g. mdp.time_out with time_out=True)"
            )
        super().__init__(cfg, env)
        self.term_names = list(cfg)
        self._log_keys = [f"Episode_Termination/{name}" for name in self.term_names]
        n, dev = env.num_envs, env.device
        self.term_dones = torch.zeros(n, len(cfg), dtype=torch.bool, device=dev)
        """(N, num_terms): which terms fired in the latest step."""
        flags = [t.time_out for t in cfg.values()]
        # column ids, not masks: index_select is several times faster than mask indexing,
        # and a view of consecutive columns (a time-out listed first or last) costs nothing
        self._time_out_cols = columns_of([i for i, f in enumerate(flags) if f], dev)
        self._failure_cols = columns_of([i for i, f in enumerate(flags) if not f], dev)
        self.terminated = torch.zeros(n, dtype=torch.bool, device=dev)
        self.time_outs = torch.zeros(n, dtype=torch.bool, device=dev)
        self.last_episode_dones = torch.zeros(n, len(cfg), dtype=torch.bool, device=dev)
        """(N, num_terms): the terms that ended each env's previous episode (for viewers)."""

    def _check_replacement(self, name: str, cfg: TerminationTermCfg) -> None:
        if cfg.time_out != self.cfg[name].time_out:
            raise RobolearnError(
                f"terminations.{name}: whether a term is a time-out cannot change once the "
                "env is built"
            )

    def compute(self, exclude: torch.Tensor | None = None) -> torch.Tensor:
        """Evaluate every term; returns terminated | time_outs.

        Args:
            exclude: (N,) bool, envs none of whose terms may fire (envs whose physics
                diverged: their terms read garbage, and the env counts them as
                ``nonfinite`` alone).
        """
        values = []
        name = ""
        try:
            for name, fn in self._terms.items():
                value = fn(self.env, **self.cfg[name].params)
                if value.shape != (self.env.num_envs,):
                    raise RobolearnError(f"terminations.{name} must return (num_envs,) bools")
                values.append(value if value.dtype == torch.bool else value.bool())
        except RobolearnError as exc:
            # a term finds its names at its first call: say whose they were
            raise_named(exc, f"terminations.{name}", self.cfg.get(name))
        # one write of every column, not a strided copy per term
        torch.stack(values, dim=1, out=self.term_dones)
        if exclude is not None:
            self.term_dones.masked_fill_(exclude.unsqueeze(-1), False)
        self.time_outs = take_columns(self.term_dones, self._time_out_cols).any(-1)
        self.terminated = take_columns(self.term_dones, self._failure_cols).any(-1)
        return self.terminated | self.time_outs

    def last_reason(self, env_id: int) -> str | None:
        """Names of the terms that ended ``env_id``'s previous episode, or None."""
        names = [
            n
            for n, hit in zip(
                self.term_names, self.last_episode_dones[env_id].tolist(), strict=True
            )
            if hit
        ]
        return ", ".join(names) if names else None

    def reset(self, env_mask: torch.Tensor) -> dict[str, float | torch.Tensor]:
        """Start new episodes where ``env_mask`` ((N,) bool) is true; returns
        ``Episode_Termination/<term>``, how many of them each term ended."""
        rows = EnvRows.of(self.env, env_mask)
        counts = rows.sum(self.term_dones)
        log = dict(zip(self._log_keys, counts.unbind(), strict=True))
        super().reset(env_mask)
        rows.copy_(self.last_episode_dones, self.term_dones)
        rows.fill_(self.term_dones, False)
        return log
