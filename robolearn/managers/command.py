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
import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from robolearn.errors import RobolearnError
from robolearn.managers.base import ClassTermManager, EnvRows, as_env_mask, none_selected
from robolearn.managers.markers import ACTUAL_RGBA, COMMAND_RGBA, Marker
from robolearn.math import quat_rotate, sample_uniform, wrap_to_pi, yaw_from_quat, yaw_quat
from robolearn.scene.mirror import IndexMirror

if TYPE_CHECKING:
    from robolearn.env import ManagerBasedRLEnv


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

    def step_metrics(self) -> dict[str, torch.Tensor]:
        """(N,) values of this step that ``robolearn play --eval`` averages over the steps
        of every episode and reports as ``<term>/<name>`` (e.g. a reaching task's distance
        to its target); none by default."""
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


class UniformVelocityCommand(CommandTerm):
    """``command`` is (N, 3): forward and lateral velocity (heading frame), yaw rate."""

    def mirror(self) -> IndexMirror:
        """Lateral velocity and yaw rate change sign in the mirror."""
        return IndexMirror((0, 1, 2), (1.0, -1.0, -1.0))

    cfg: UniformVelocityCommandCfg

    def __init__(self, cfg: UniformVelocityCommandCfg, env: ManagerBasedRLEnv, name: str) -> None:
        super().__init__(cfg, env, name)
        env.scene.require_floating_base()
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

    # Rows of the range tensor: the fields of VelocityRanges, in order.
    _ROWS = tuple(f.name for f in dataclasses.fields(VelocityRanges))

    def range_tensor(self) -> torch.Tensor:
        """(4, 2) the sampling ranges as the term uses them, on the device: one row per
        field of :class:`VelocityRanges` (lin_vel_x, lin_vel_y, ang_vel_z, heading).

        Built from ``cfg.ranges`` when those change (a Python comparison per call, a copy
        to the device only on a change), so an edit of the config applies at the next
        resample; a curriculum widens the tensor itself (:meth:`widen`), on the device.
        """
        ranges = self.cfg.ranges  # read per call: a shallow tuple, not astuple's deep copy
        key = tuple(tuple(getattr(ranges, name)) for name in self._ROWS)
        if key != getattr(self, "_ranges_key", None):
            self._ranges = torch.tensor(key, dtype=torch.float32, device=self.env.device)
            self._ranges_key = key
        return self._ranges

    def live_ranges(self) -> VelocityRanges:
        """The ranges in use now, curriculum included, read back to the host (for
        viewers and tests: a read that waits for the device)."""
        rows = self.range_tensor().tolist()
        return VelocityRanges(
            **{name: tuple(row) for name, row in zip(self._ROWS, rows, strict=True)}
        )

    def widen(
        self, where: torch.Tensor, step: float, limits: dict[str, tuple[float, float]]
    ) -> None:
        """Widen the ranges named in ``limits`` by ``step`` at each end, within their
        limits, if ``where`` (a 0-d bool tensor) holds: on the device, with no wait."""
        ranges = self.range_tensor()
        for name, (low, high) in limits.items():
            row = ranges[self._ROWS.index(name)]
            wider = torch.stack(((row[0] - step).clamp(min=low), (row[1] + step).clamp(max=high)))
            row.copy_(torch.where(where, wider, row))

    def _resample(self, env_mask: torch.Tensor) -> None:
        r, rows = self.range_tensor(), EnvRows.of(self.env, env_mask)
        lo, hi = r[:, 0], r[:, 1]
        # one draw: a number per field of the ranges, then the heading and standing shares
        uniform = torch.rand(rows.n, 6, device=self.env.device)
        draw = lo + (hi - lo) * uniform[:, :4]
        rows.put(self._command, draw[:, :3])
        rows.put(self.heading_target, draw[:, 3])
        rows.put(self.is_heading_env, uniform[:, 4] < self.cfg.rel_heading_envs)
        rows.put(self.is_standing_env, uniform[:, 5] < self.cfg.rel_standing_envs)

    def _update_command(self) -> None:
        scene = self.env.scene
        if self.cfg.rel_heading_envs > 0:
            yaw = self.range_tensor()[2]
            error = wrap_to_pi(self.heading_target - yaw_from_quat(scene.root_quat_w))
            yaw_rate = torch.clamp(self.cfg.heading_control_stiffness * error, yaw[0], yaw[1])
            self._command[:, 2] = torch.where(self.is_heading_env, yaw_rate, self._command[:, 2])
        self._command *= (~self.is_standing_env).unsqueeze(-1)

    def _update_metrics(self) -> None:
        scene = self.env.scene
        max_steps = self.env.max_episode_length
        lin = scene.root_lin_vel_b[:, :2]
        self.metrics["error_vel_xy"] += (self._command[:, :2] - lin).norm(dim=-1) / max_steps
        yaw = scene.root_ang_vel_b[:, 2]
        self.metrics["error_vel_yaw"] += (self._command[:, 2] - yaw).abs() / max_steps

    def debug_markers(self, env_id: int) -> list[Marker]:
        """The commanded velocity (green) and the actual one (blue, just above it) as
        arrows from above the base."""
        arrows = torch.stack(self.debug_arrows(env_id)).squeeze(1)
        origin, commanded, actual = arrows.detach().cpu().double().tolist()  # one transfer
        lifted = (origin[0], origin[1], origin[2] + 0.05)
        return [
            Marker("arrow", tuple(origin), _plus(origin, commanded), COMMAND_RGBA),
            Marker("arrow", lifted, _plus(lifted, actual), ACTUAL_RGBA),
        ]

    def debug_arrows(
        self, env_id: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(origin, commanded velocity, actual velocity), each (N, 3) in the world frame,
        or (1, 3) for env ``env_id`` alone.

        Velocities are planar (z = 0), expressed in the world: what a viewer draws as arrows
        from above the robot's base.
        """
        scene = self.env.scene
        rows = slice(None) if env_id is None else slice(env_id, env_id + 1)
        heading = yaw_quat(scene.root_quat_w[rows])
        cmd = torch.zeros_like(scene.root_pos_w[rows])
        cmd[:, :2] = self._command[rows, :2]
        commanded = quat_rotate(heading, cmd)
        actual = scene.root_lin_vel_w[rows].clone()
        actual[:, 2] = 0.0
        origin = scene.root_pos_w[rows].clone()
        origin[:, 2] += 0.5
        return origin, commanded, actual


def _plus(a: list[float], b: list[float]) -> tuple[float, float, float]:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@dataclass
class UniformVelocityCommandCfg(CommandTermCfg):
    """Base velocity commands (x, y in the heading frame; yaw rate), uniformly sampled.

    A share of envs stands (zero command) and a share follows a target heading, the yaw
    rate then being ``heading_control_stiffness x heading error`` clipped to the range.
    """

    class_type: type[CommandTerm] | None = UniformVelocityCommand
    ranges: VelocityRanges = field(default_factory=VelocityRanges)
    """Sampling ranges; a curriculum may widen them."""
    rel_standing_envs: float = 0.0
    """Share of resampled envs commanded to stand still."""
    rel_heading_envs: float = 0.0
    """Share of resampled envs commanded by heading instead of yaw rate."""
    heading_control_stiffness: float = 0.5
    """Yaw rate per radian of heading error, for heading envs."""


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

    def _resample(self, env_mask: torch.Tensor) -> None:
        rows = EnvRows.of(self.env, env_mask)
        rows.put(self.phase, torch.rand(rows.n, device=self.env.device))

    def _update_command(self) -> None:
        angle = 2 * torch.pi * self.phase
        # straight into the command's columns: no temporary and no copy
        torch.sin(angle, out=self._command[:, 0])
        torch.cos(angle, out=self._command[:, 1])

    def mirror(self) -> IndexMirror:
        """Half a cycle on: in the mirror the other foot is down (sin and cos negate)."""
        return IndexMirror((0, 1), (-1.0, -1.0))

    def compute(self, dt: float) -> None:
        """Advance the phase by ``dt``; there is no timer."""
        self.phase = torch.remainder(self.phase + dt / self.cfg.period_s, 1.0)
        self._update_command()


@dataclass
class GaitPhaseCommandCfg(CommandTermCfg):
    """A gait clock per env: which foot should be on the ground when.

    The phase runs from 0 to 1 once per ``period_s``; see :class:`GaitPhaseCommand` for
    which foot is meant to be down when. The starting phase is drawn uniformly at every
    reset, so envs do not step in unison; the clock is not resampled during an episode
    (``resampling_time_range`` is not used).
    """

    class_type: type[CommandTerm] | None = GaitPhaseCommand
    period_s: float = 0.8
    """Seconds per gait cycle (two steps for a biped)."""


# Configs made usable with register_command, the older way to name a term class.
_REGISTERED: dict[type, type[CommandTerm]] = {}


class CommandManager(ClassTermManager[CommandTerm]):
    """Holds the command terms; advances their timers each step and resets them."""

    section = "commands"
    term_kind = "command"
    term_type = CommandTerm
    examples = "UniformVelocityCommand, GaitPhaseCommand"

    def __init__(self, cfg: dict[str, CommandTermCfg], env: ManagerBasedRLEnv) -> None:
        super().__init__(cfg, env)
        # Terms whose reset takes keep (the built-in one does; an override written before
        # it may not, and then logs every episode).
        self._filters_logs = {
            t for t in self.terms.values() if "keep" in inspect.signature(t.reset).parameters
        }

    def _term_class(self, cfg: CommandTermCfg) -> type[CommandTerm] | None:
        """The class a config names: registered for its exact type, else its
        ``class_type``, else registered for a base class of its type."""
        registered = _REGISTERED.get(type(cfg))
        if registered is not None:
            return registered
        term_cls = super()._term_class(cfg)
        if term_cls is not None:
            return term_cls
        return next((_REGISTERED[b] for b in type(cfg).__mro__[1:] if b in _REGISTERED), None)

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
            if keep is None or term not in self._filters_logs:
                log.update(term.reset(env_mask))
            else:
                log.update(term.reset(env_mask, keep=keep))
        return log


def register_command(cfg_type: type, term_type: type[CommandTerm]) -> None:
    """Make a custom command term usable from configs of ``cfg_type`` (and its subclasses
    that set no ``class_type`` of their own).

    Setting ``class_type`` in the config class is the simpler way; this stays for configs
    written before it.
    """
    _REGISTERED[cfg_type] = term_type
