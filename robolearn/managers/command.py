"""Commands: goals the policy is asked to follow, resampled on a timer.

A command term holds a (num_envs, k) ``command``, resamples it for each env when that env's
timer (drawn from ``resampling_time_range``) runs out and at every reset, and tracks metrics
(e.g. the velocity tracking error) that are logged per episode as ``Metrics/<term>/<name>``.

A config names the class that implements it in ``class_type``: the built-in configs name
theirs, a subclass of one inherits it, and a config of your own names your
:class:`CommandTerm` subclass.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import torch

from robolearn.errors import RobolearnError
from robolearn.managers.base import ClassTermManager, EnvRows, as_env_mask, none_selected
from robolearn.managers.markers import Marker
from robolearn.managers.protocol import ManagedEnv
from robolearn.math import sample_uniform
from robolearn.scene.mirror import IndexMirror


@dataclass
class CommandTermCfg:
    """Settings every command term has."""

    resampling_time_range: tuple[float, float] = (10.0, 10.0)
    """Seconds between resamples, drawn uniformly per env."""
    debug_vis: bool = True
    """Let viewers draw the command (arrows for velocity commands)."""
    class_type: type[CommandTerm] | None = None
    """The :class:`CommandTerm` subclass built from this config; the built-in configs set
    theirs, and a subclass of one inherits it."""


class CommandTerm(abc.ABC):
    """Base class: a timer per env, ``resample`` on expiry, metrics averaged per episode."""

    def __init__(self, cfg: CommandTermCfg, env: ManagedEnv, name: str) -> None:
        self.cfg = cfg
        self.env = env
        self.name = name
        self.time_left = torch.zeros(env.num_envs, device=env.device)
        self.metrics: dict[str, torch.Tensor] = {}
        self.last_episode: dict[str, torch.Tensor] = {}
        """(N,) values of each env's last ended episode, set as it resets (e.g. the share of
        its clip a tracking command's episode followed); ``robolearn play --eval`` averages
        them over the episodes as ``<term>/<name>``. Empty by default."""

    @property
    @abc.abstractmethod
    def command(self) -> torch.Tensor:
        """(N, k): the current command of every env."""

    @abc.abstractmethod
    def _resample(self, env_mask: torch.Tensor) -> None:
        """Draw new commands for the envs where ``env_mask`` ((N,) bool) is true: draw for
        every env and keep the others' with ``torch.where`` (indexing with the mask would
        make the host wait for the GPU), or through :class:`~robolearn.managers.EnvRows`,
        which does that on the GPU and draws for the selected envs alone on the cpu
        engine."""

    def _update_command(self) -> None:  # noqa: B027 - an optional hook
        """Called every step after resampling (e.g. heading control)."""

    def mirror(self) -> IndexMirror:
        """The command's left-right mirror image, a signed permutation of its columns (for
        symmetry augmentation); a term that has one overrides this."""
        raise RobolearnError(
            f"command {self.name!r} ({type(self).__name__}) has no mirror: override "
            "CommandTerm.mirror to use symmetry augmentation"
        )

    def _update_metrics(self) -> None:  # noqa: B027 - an optional hook
        """Called every step to accumulate metrics."""

    measure_steps: bool = False
    """Whether :meth:`step_metrics` is read after each step (evaluation turns it on);
    a term that measures its step metrics while it updates (before it resamples) does so
    only then, so training pays nothing for them."""

    def step_metrics(self) -> dict[str, torch.Tensor]:
        """(N,) values of this step that ``robolearn play --eval`` averages over the steps
        of every episode and reports as ``<term>/<name>`` (e.g. a reaching task's distance
        to its target, a velocity command's tracking errors); none by default."""
        return {}

    def debug_markers(self, env_id: int) -> list[Marker]:
        """What viewers and videos draw for env ``env_id`` when ``cfg.debug_vis`` is on
        (e.g. a target as a sphere); nothing by default."""
        return []

    def resample(self, env_mask: torch.Tensor) -> None:
        """Draw new commands, and new timers, for the envs where ``env_mask`` is true (or
        for env indices)."""
        env_mask = as_env_mask(self.env, env_mask)
        lo, hi = self.cfg.resampling_time_range
        rows = EnvRows.of(self.env, env_mask)
        rows.put(self.time_left, sample_uniform(lo, hi, (rows.n,), self.env.device))
        self._resample(env_mask)

    def compute(self, dt: float) -> None:
        """One env step of ``dt`` seconds: metrics, timers, resampling, command update."""
        self._update_metrics()
        self.time_left -= dt
        # A tolerance, so that 50 steps of 0.02 s make 1 s despite float rounding.
        due = self.time_left <= 1e-6
        if not none_selected(self.env, due):
            self.resample(due)
        self._update_command()

    def reset(
        self, env_mask: torch.Tensor, keep: torch.Tensor | None = None
    ) -> dict[str, float | torch.Tensor]:
        """Resample the command where ``env_mask`` ((N,) bool) is true; returns the mean
        metrics of their episodes (NaN where none is averaged).

        ``keep`` ((N,) bool) names the episodes the means average, as
        :meth:`RewardManager.reset` does; None for all of ``env_mask``.
        """
        env_mask = as_env_mask(self.env, env_mask)
        log: dict[str, float | torch.Tensor] = {}
        if self.metrics:
            rows = EnvRows.of(self.env, env_mask)
            kept = rows if keep is None else EnvRows.of(self.env, as_env_mask(self.env, keep))
            count = kept.count()
            for key, values in self.metrics.items():
                log[f"Metrics/{self.name}/{key}"] = kept.sum(values) / count
                rows.fill_(values, 0.0)
        self.resample(env_mask)
        self._update_command()
        return log


class CommandManager(ClassTermManager[CommandTerm]):
    """Holds the command terms; advances their timers each step and resets them."""

    section = "commands"
    term_kind = "command"
    term_type = CommandTerm
    examples = "mdp.UniformVelocityCommand, mdp.GaitPhaseCommand"

    def get_command(self, name: str) -> torch.Tensor:
        """(N, k): the current command of term ``name``."""
        if name not in self.terms:
            raise RobolearnError(
                f"no command {name!r}; commands: {', '.join(self.terms) or 'none'}"
            )
        return self.terms[name].command

    def compute(self, dt: float) -> None:
        """Advance every term by ``dt`` seconds (timers, resampling, metrics)."""
        for term in self.terms.values():
            term.compute(dt)

    def reset(
        self, env_mask: torch.Tensor, keep: torch.Tensor | None = None
    ) -> dict[str, float | torch.Tensor]:
        """Reset every term where ``env_mask`` ((N,) bool) is true; ``keep`` as in
        :meth:`CommandTerm.reset`."""
        log: dict[str, float | torch.Tensor] = {}
        for term in self.terms.values():
            log.update(term.reset(env_mask, keep=keep))
        return log
