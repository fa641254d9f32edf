"""Rewards: a weighted sum of terms, scaled by the env step's duration.

Each step, term ``i`` contributes ``weight_i * value_i * step_dt`` (step_dt = physics dt x
decimation), so an episode's return does not depend on the control rate, as in Isaac Lab.
The contributions are summed per episode for logging: ``Episode_Reward/<term>`` is an
episode's sum divided by the maximum episode length in seconds (a per-second average).
``step_reward`` keeps the latest contribution of each term, for the viewer.

Weights are read from the term configs at every step (a curriculum may change them; see
:meth:`RewardManager.get_term_cfg` and :meth:`RewardManager.set_term_cfg`). An env whose
physics diverged earns nothing in that step and its episode sums leave that step out.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robolearn.errors import RobolearnError
from robolearn.managers.base import (
    EnvRows,
    ManagerBase,
    TermCfg,
    check_term_output,
    raise_named,
)
from robolearn.managers.protocol import ManagedEnv


@dataclass
class RewardTermCfg(TermCfg):
    """A reward term: ``func(env, **params)`` -> (num_envs,), times ``weight``."""

    weight: float = 1.0
    """Multiplies the term (negative for a penalty); 0 disables it."""


class RewardManager(ManagerBase):
    """Evaluates the reward terms each step and keeps each term's episode sums.

    Term configs are read live: a change of a term's ``weight`` (or ``params``) takes effect
    at the next step, whether made on the config (``env.cfg.rewards[name]``) or through
    :meth:`set_term_cfg`, so a curriculum can reweight terms while training. Terms cannot be
    added or removed once the env is built: the episode sums have one column per term.
    """

    section = "rewards"
    term_kind = "reward term"

    def __init__(self, cfg: dict[str, RewardTermCfg], env: ManagedEnv) -> None:
        super().__init__(cfg, env)
        self.term_names = list(cfg)
        """The terms, in the order of the columns of :attr:`step_reward`."""
        self._log_keys = [f"Episode_Reward/{name}" for name in self.term_names]
        n, dev = env.num_envs, env.device
        self._episode_sums = torch.zeros(n, len(cfg), device=dev)
        self.step_reward = torch.zeros(n, len(cfg), device=dev)
        """(N, num_terms): each term's contribution in the latest step (weight x value x dt)."""
        self.last_episode_sums = torch.zeros(n, len(cfg), device=dev)
        """(N, num_terms): each term's sum over each env's previous episode (kept past the
        reset that zeroes the running sums, for evaluation and viewers)."""
        self._weight_key: tuple[float, ...] | None = None
        self.sync_weights()

    def sync_weights(self) -> None:
        """Rebuild the weight tensor and the active columns when a weight changed.

        Comparing a tuple of Python floats costs about a microsecond per step; the tensor
        is rebuilt (a host-to-device copy) only when a weight actually changed.
        """
        key = tuple(float(t.weight) for t in self.cfg.values())
        if key == self._weight_key:
            return
        if list(self.cfg) != self.term_names:
            raise RobolearnError(
                "reward terms cannot be added or removed after the env is built (set a "
                "term's weight to 0 to switch it off)"
            )
        dev = self.env.device
        self._weight_key = key
        self._active = [i for i, w in enumerate(key) if w != 0.0]
        self._active_cols = torch.tensor(self._active, dtype=torch.long, device=dev)
        self._weights = torch.tensor(key, device=dev)
        self._scaled_weights: tuple[float, torch.Tensor] | None = None
        # a column of a term just switched off would otherwise keep its last value
        self.step_reward.zero_()

    # ---- the step -----------------------------------------------------------------------

    @property
    def episode_sums(self) -> dict[str, torch.Tensor]:
        """Per term, (N,) sums of its contributions since each env's episode began (views)."""
        return {name: self._episode_sums[:, i] for i, name in enumerate(self.term_names)}

    def compute(self, dt: float, exclude: torch.Tensor | None = None) -> torch.Tensor:
        """The step's reward (N,), float32.

        Args:
            dt: the env step's duration, which scales every term.
            exclude: (N,) bool, envs whose step earns nothing and adds nothing to their
                episode sums (envs whose physics diverged: their terms read garbage).
        """
        self.sync_weights()
        return self.compute_synced(dt, exclude)

    def compute_synced(self, dt: float, exclude: torch.Tensor | None = None) -> torch.Tensor:
        """:meth:`compute` once the weights are in step with the configs: the part the fused
        step compiles (reading the weights there would make a changed weight recompile)."""
        n = self.env.num_envs
        values = []
        name = ""
        try:
            for i in self._active:
                name = self.term_names[i]
                value = check_term_output(
                    self._terms[name](self.env, **self.cfg[name].params), n, f"rewards.{name}"
                )
                if value.dim() != 1:
                    raise RobolearnError(f"rewards.{name} returned {tuple(value.shape)}; want (N,)")
                values.append(value if value.dtype == torch.float32 else value.float())
        except RobolearnError as exc:
            # a term finds its names at its first call: say whose they were
            raise_named(exc, f"rewards.{name}", self.cfg.get(name))
        # One write of all columns instead of a small strided write per term.
        if values and len(self._active) == len(self.term_names):
            torch.stack(values, dim=1, out=self.step_reward)
        elif values:
            self.step_reward.index_copy_(1, self._active_cols, torch.stack(values, dim=1))
        # One multiply and one sum for all terms, instead of a few small ops per term.
        self.step_reward.mul_(self._weights_times(dt))
        if exclude is not None:
            # masked_fill, not a multiply by the mask: 0 x NaN is NaN
            self.step_reward.masked_fill_(exclude.unsqueeze(-1), 0.0)
        self._episode_sums += self.step_reward
        return self.step_reward.sum(-1)

    def weighted_sum(self, dt: float) -> torch.Tensor:
        """The terms' weighted sum (N,) at the env's current state, as a new tensor that
        keeps the terms' autograd history; no buffer or episode sum changes. For a learner
        that evaluates the task's reward on a state of its own (the differentiable learner,
        inside :meth:`~robolearn.scene.Scene.reading_state`)."""
        self.sync_weights()
        total = torch.zeros(self.env.num_envs, device=self.env.device)
        name = ""
        try:
            for i in self._active:
                name = self.term_names[i]
                value = self._terms[name](self.env, **self.cfg[name].params)
                total = total + float(self.cfg[name].weight) * dt * value.float()
        except RobolearnError as exc:
            raise_named(exc, f"rewards.{name}", self.cfg.get(name))
        return total

    def _weights_times(self, dt: float) -> torch.Tensor:
        """The weights x ``dt``, multiplied once per weight change or new ``dt``."""
        scaled = self._scaled_weights
        if scaled is None or scaled[0] != dt:
            scaled = self._scaled_weights = (dt, self._weights * dt)
        return scaled[1]

    def reset(
        self, env_mask: torch.Tensor, keep: torch.Tensor | None = None
    ) -> dict[str, float | torch.Tensor]:
        """Start new episodes where ``env_mask`` ((N,) bool) is true; returns
        ``Episode_Reward/<term>``, the mean over the ended episodes of each term's sum per
        second of episode (NaN where none is averaged).

        Args:
            env_mask: the envs that reset.
            keep: (N,) bool, the episodes to average in the log (the others, e.g. ended by
                divergence, are left out); None for all of ``env_mask``.
        """
        rows = EnvRows.of(self.env, env_mask)
        kept = rows if keep is None else EnvRows.of(self.env, keep)
        sums = kept.sum(self._episode_sums) / (kept.count() * self.env.max_episode_length_s)
        # one unbind, not a Python index per term
        log = dict(zip(self._log_keys, sums.unbind(), strict=True))
        super().reset(env_mask)
        rows.copy_(self.last_episode_sums, self._episode_sums)
        rows.fill_(self._episode_sums, 0.0)
        rows.fill_(self.step_reward, 0.0)
        return log

    def nonfinite_terms(self) -> list[str]:
        """Terms whose episode sums, or whose value at the current state, are not finite.

        For diagnosis after a non-finite reward was found (it re-evaluates every term).
        """
        bad = ~torch.isfinite(self._episode_sums).all(0)
        names = {self.term_names[i] for i in bad.nonzero().flatten().tolist()}
        for name, fn in self._terms.items():
            value = fn(self.env, **self.cfg[name].params)
            if isinstance(value, torch.Tensor) and not bool(torch.isfinite(value).all()):
                names.add(name)
        return [n for n in self.term_names if n in names]
