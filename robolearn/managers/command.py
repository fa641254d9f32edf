"""Commands: goals the policy is asked to follow, resampled on a timer.

A command term holds a (num_envs, k) ``command``, resamples it for each env when that env's
timer (drawn from ``resampling_time_range``) runs out and at every reset, and tracks metrics
(e.g. the velocity tracking error) that are logged per episode as ``Metrics/<term>/<name>``.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from robolearn.errors import RobolearnError
from robolearn.math import quat_rotate, sample_uniform, wrap_to_pi, yaw_from_quat, yaw_quat

if TYPE_CHECKING:
    from robolearn.env import ManagerBasedRLEnv


@dataclass
class CommandTermCfg:
    """Settings every command term has."""

    resampling_time_range: tuple[float, float] = (10.0, 10.0)
    """Seconds between resamples, drawn uniformly per env."""
    debug_vis: bool = True
    """Let viewers draw the command (arrows for velocity commands)."""


class CommandTerm(abc.ABC):
    """Base class: a timer per env, ``resample`` on expiry, metrics averaged per episode."""

    def __init__(self, cfg: CommandTermCfg, env: ManagerBasedRLEnv, name: str) -> None:
        self.cfg = cfg
        self.env = env
        self.name = name
        self.time_left = torch.zeros(env.num_envs, device=env.device)
        self.metrics: dict[str, torch.Tensor] = {}

    @property
    @abc.abstractmethod
    def command(self) -> torch.Tensor:
        """(N, k): the current command of every env."""

    @abc.abstractmethod
    def _resample(self, env_ids: torch.Tensor) -> None:
        """Draw new commands for ``env_ids``."""

    def _update_command(self) -> None:  # noqa: B027 - an optional hook
        """Called every step after resampling (e.g. heading control)."""

    def _update_metrics(self) -> None:  # noqa: B027 - an optional hook
        """Called every step to accumulate metrics."""

    def resample(self, env_ids: torch.Tensor) -> None:
        if env_ids.numel() == 0:
            return
        lo, hi = self.cfg.resampling_time_range
        self.time_left[env_ids] = sample_uniform(lo, hi, (env_ids.numel(),), self.env.device)
        self._resample(env_ids)

    def compute(self, dt: float) -> None:
        self._update_metrics()
        self.time_left -= dt
        # A tolerance, so that 50 steps of 0.02 s make 1 s despite float rounding.
        self.resample((self.time_left <= 1e-6).nonzero().flatten())
        self._update_command()

    def reset(self, env_ids: torch.Tensor) -> dict[str, float | torch.Tensor]:
        log: dict[str, float | torch.Tensor] = {}
        for key, values in self.metrics.items():
            log[f"Metrics/{self.name}/{key}"] = values[env_ids].mean()
            values[env_ids] = 0.0
        self.resample(env_ids)
        self._update_command()
        return log


@dataclass
class VelocityRanges:
    """Ranges of a base velocity command (uniform)."""

    lin_vel_x: tuple[float, float] = (-1.0, 1.0)
    """Forward velocity in the heading frame, m/s."""
    lin_vel_y: tuple[float, float] = (0.0, 0.0)
    """Lateral (leftward) velocity in the heading frame, m/s."""
    ang_vel_z: tuple[float, float] = (-1.0, 1.0)
    """Yaw rate, rad/s (ignored for heading envs, whose yaw rate comes from the heading)."""
    heading: tuple[float, float] = (-3.14159, 3.14159)
    """Target heading, rad, for heading envs."""


@dataclass
class UniformVelocityCommandCfg(CommandTermCfg):
    """Base velocity commands (x, y in the heading frame; yaw rate), uniformly sampled.

    A share of envs stands (zero command) and a share follows a target heading, the yaw
    rate then being ``heading_control_stiffness x heading error`` clipped to the range.
    """

    ranges: VelocityRanges = field(default_factory=VelocityRanges)
    """Sampling ranges; a curriculum may widen them."""
    rel_standing_envs: float = 0.0
    """Share of resampled envs commanded to stand still."""
    rel_heading_envs: float = 0.0
    """Share of resampled envs commanded by heading instead of yaw rate."""
    heading_control_stiffness: float = 0.5
    """Yaw rate per radian of heading error, for heading envs."""


class UniformVelocityCommand(CommandTerm):
    """``command`` is (N, 3): forward and lateral velocity (heading frame), yaw rate."""

    cfg: UniformVelocityCommandCfg

    def __init__(self, cfg: UniformVelocityCommandCfg, env: ManagerBasedRLEnv, name: str) -> None:
        super().__init__(cfg, env, name)
        env.scene._require_root()
        n, dev = env.num_envs, env.device
        self._command = torch.zeros(n, 3, device=dev)
        self.heading_target = torch.zeros(n, device=dev)
        self.is_heading_env = torch.zeros(n, dtype=torch.bool, device=dev)
        self.is_standing_env = torch.zeros(n, dtype=torch.bool, device=dev)
        self.metrics = {
            "error_vel_xy": torch.zeros(n, device=dev),
            "error_vel_yaw": torch.zeros(n, device=dev),
        }

    @property
    def command(self) -> torch.Tensor:
        return self._command

    def _resample(self, env_ids: torch.Tensor) -> None:
        r, k, dev = self.cfg.ranges, env_ids.numel(), self.env.device
        cmd = torch.stack(
            (
                sample_uniform(*r.lin_vel_x, (k,), dev),
                sample_uniform(*r.lin_vel_y, (k,), dev),
                sample_uniform(*r.ang_vel_z, (k,), dev),
            ),
            dim=-1,
        )
        self._command[env_ids] = cmd
        self.heading_target[env_ids] = sample_uniform(*r.heading, (k,), dev)
        self.is_heading_env[env_ids] = torch.rand(k, device=dev) < self.cfg.rel_heading_envs
        self.is_standing_env[env_ids] = torch.rand(k, device=dev) < self.cfg.rel_standing_envs

    def _update_command(self) -> None:
        scene, r = self.env.scene, self.cfg.ranges
        if self.cfg.rel_heading_envs > 0:
            error = wrap_to_pi(self.heading_target - yaw_from_quat(scene.root_quat_w))
            yaw_rate = (self.cfg.heading_control_stiffness * error).clamp(*r.ang_vel_z)
            self._command[:, 2] = torch.where(self.is_heading_env, yaw_rate, self._command[:, 2])
        self._command *= (~self.is_standing_env).unsqueeze(-1)

    def _update_metrics(self) -> None:
        scene = self.env.scene
        max_steps = self.env.max_episode_length
        lin = scene.root_lin_vel_b[:, :2]
        self.metrics["error_vel_xy"] += (self._command[:, :2] - lin).norm(dim=-1) / max_steps
        yaw = scene.root_ang_vel_b[:, 2]
        self.metrics["error_vel_yaw"] += (self._command[:, 2] - yaw).abs() / max_steps

    def debug_arrows(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(origin, commanded velocity, actual velocity), each (N, 3) in the world frame.

        Velocities are planar (z = 0), expressed in the world: what a viewer draws as arrows
        from above the robot's base.
        """
        scene = self.env.scene
        heading = yaw_quat(scene.root_quat_w)
        cmd = torch.zeros(self.env.num_envs, 3, device=self.env.device)
        cmd[:, :2] = self._command[:, :2]
        commanded = quat_rotate(heading, cmd)
        actual = scene.root_lin_vel_w.clone()
        actual[:, 2] = 0.0
        origin = scene.root_pos_w.clone()
        origin[:, 2] += 0.5
        return origin, commanded, actual


@dataclass
class GaitPhaseCommandCfg(CommandTermCfg):
    """A gait clock per env: which foot should be on the ground when.

    The phase runs from 0 to 1 once per ``period_s``; see :class:`GaitPhaseCommand` for
    which foot is meant to be down when. The starting phase is drawn uniformly at every
    reset, so envs do not step in unison.
    """

    period_s: float = 0.8
    """Seconds per gait cycle (two steps for a biped)."""
    resampling_time_range: tuple[float, float] = (1e9, 1e9)
    """The clock is not resampled during an episode."""


class GaitPhaseCommand(CommandTerm):
    """``command`` is (N, 2): sin and cos of the gait phase, an observation for the policy.

    ``phase`` (N,) in [0, 1) advances by step_dt / period_s each step. For two feet, foot 0
    is meant to be in stance while phase < 0.5 and foot 1 while phase >= 0.5, both swinging
    briefly around the switch; :func:`robolearn.mdp.feet_gait_contact` rewards feet that
    follow it.
    """

    cfg: GaitPhaseCommandCfg

    def __init__(self, cfg: GaitPhaseCommandCfg, env: ManagerBasedRLEnv, name: str) -> None:
        super().__init__(cfg, env, name)
        if cfg.period_s <= 0:
            raise RobolearnError(f"commands.{name}.period_s must be > 0, got {cfg.period_s}")
        self.phase = torch.zeros(env.num_envs, device=env.device)
        self._command = torch.zeros(env.num_envs, 2, device=env.device)

    @property
    def command(self) -> torch.Tensor:
        return self._command

    def _resample(self, env_ids: torch.Tensor) -> None:
        self.phase[env_ids] = torch.rand(env_ids.numel(), device=self.env.device)

    def _update_command(self) -> None:
        angle = 2 * torch.pi * self.phase
        self._command[:, 0] = torch.sin(angle)
        self._command[:, 1] = torch.cos(angle)

    def compute(self, dt: float) -> None:
        self.phase = torch.remainder(self.phase + dt / self.cfg.period_s, 1.0)
        self._update_command()


_TERMS: dict[type, type[CommandTerm]] = {
    UniformVelocityCommandCfg: UniformVelocityCommand,
    GaitPhaseCommandCfg: GaitPhaseCommand,
}


class CommandManager:
    def __init__(self, cfg: dict[str, CommandTermCfg], env: ManagerBasedRLEnv) -> None:
        self.terms: dict[str, CommandTerm] = {}
        for name, term_cfg in cfg.items():
            term_cls = _TERMS.get(type(term_cfg))
            if term_cls is None:
                raise RobolearnError(
                    f"commands.{name}: unknown command config {type(term_cfg).__name__}; "
                    f"valid: {', '.join(c.__name__ for c in _TERMS)}"
                )
            self.terms[name] = term_cls(term_cfg, env, name)

    def get_command(self, name: str) -> torch.Tensor:
        if name not in self.terms:
            raise RobolearnError(
                f"no command {name!r}; commands: {', '.join(self.terms) or 'none'}"
            )
        return self.terms[name].command

    def compute(self, dt: float) -> None:
        for term in self.terms.values():
            term.compute(dt)

    def reset(self, env_ids: torch.Tensor) -> dict[str, float | torch.Tensor]:
        log: dict[str, float | torch.Tensor] = {}
        for term in self.terms.values():
            log.update(term.reset(env_ids))
        return log


def register_command(cfg_type: type, term_type: type[CommandTerm]) -> None:
    """Make a custom command term usable from configs of ``cfg_type``."""
    _TERMS[cfg_type] = term_type
