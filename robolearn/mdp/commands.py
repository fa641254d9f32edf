"""Command terms: the goals of the shipped tasks (base velocity, a gait clock).

Each is a :class:`~robolearn.managers.CommandTerm` named by its config's ``class_type``;
the manager that runs them is :class:`~robolearn.managers.CommandManager`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from robolearn.errors import RobolearnError
from robolearn.managers import CommandTerm, CommandTermCfg, EnvRows, Marker
from robolearn.managers.markers import ACTUAL_RGBA, COMMAND_RGBA
from robolearn.math import (
    quat_rotate,
    quat_rotate_inverse,
    wrap_to_pi,
    yaw_from_quat,
    yaw_quat,
)
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.mirror import IndexMirror


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

    def __init__(self, cfg: UniformVelocityCommandCfg, env: TaskEnv, name: str) -> None:
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
        self._step_metrics: dict[str, torch.Tensor] = {}

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
        if self.measure_steps:
            # the command of the step just taken, before this step's resampling: the
            # velocity in the heading frame, which is the command's own
            vel = quat_rotate_inverse(yaw_quat(scene.root_quat_w), scene.root_lin_vel_w)[:, :2]
            self._step_metrics = {
                "lin_vel_error": (self._command[:, :2] - vel).norm(dim=-1),
                "ang_vel_error": (self._command[:, 2] - scene.root_ang_vel_w[:, 2]).abs(),
            }

    def step_metrics(self) -> dict[str, torch.Tensor]:
        """The step's tracking errors, (N,) each, when :attr:`measure_steps` is on:
        ``lin_vel_error`` (m/s, planar, heading frame) and ``ang_vel_error`` (rad/s, yaw
        rate)."""
        return self._step_metrics if self.measure_steps else {}

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

    def __init__(self, cfg: GaitPhaseCommandCfg, env: TaskEnv, name: str) -> None:
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
        # one write of both columns (torch.compile takes no strided out= tensor)
        torch.stack((torch.sin(angle), torch.cos(angle)), dim=1, out=self._command)

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
