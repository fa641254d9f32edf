"""Pose commands: a goal pose for a frame (an end effector, an object), drawn uniformly in
a box of the robot's base frame (Isaac Lab's ``UniformPoseCommand``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from robolearn.config import check_range
from robolearn.errors import RobolearnError
from robolearn.managers import CommandTerm, CommandTermCfg, Marker
from robolearn.math import quat_angle_between, quat_from_euler_xyz, sample_uniform
from robolearn.mdp.frames import FrameCfg, frame, pose_in, pose_to_world
from robolearn.mdp.protocol import TaskEnv

AXES = ("pos_x", "pos_y", "pos_z", "roll", "pitch", "yaw")
GOAL_RGBA = (1.0, 0.25, 0.2, 0.9)
CURRENT_RGBA = (0.2, 0.85, 0.3, 0.9)


class UniformPoseCommand(CommandTerm):
    """``command`` is (N, 7): the goal position (m) and orientation (w x y z) of
    ``cfg.tracked`` in the frame ``cfg.base``, drawn per env in the config's ranges."""

    cfg: UniformPoseCommandCfg

    def __init__(self, cfg: UniformPoseCommandCfg, env: TaskEnv, name: str) -> None:
        super().__init__(cfg, env, name)
        what = f"commands.{name}"
        unknown = sorted(set(cfg.ranges) - set(AXES))
        if unknown:
            raise RobolearnError(f"{what}.ranges: unknown axes {unknown}; axes: {', '.join(AXES)}")
        self._ranges = {
            axis: check_range(cfg.ranges.get(axis, (0.0, 0.0)), f"{what}.ranges.{axis}", floor=None)
            for axis in AXES
        }
        self.base = frame(env, cfg.base, f"{what}.base")
        self.tracked = frame(env, cfg.tracked, f"{what}.tracked")
        n, dev = env.num_envs, env.device
        self._command = torch.zeros(n, 7, device=dev)
        self._command[:, 3] = 1.0
        self.metrics = {
            "position_error": torch.zeros(n, device=dev),
            "orientation_error": torch.zeros(n, device=dev),
        }
        self._steps = torch.zeros(n, device=dev)

    @property
    def command(self) -> torch.Tensor:
        return self._command

    def _resample(self, env_mask: torch.Tensor) -> None:
        n, dev = self.env.num_envs, self.env.device
        draw = [sample_uniform(*self._ranges[axis], (n,), dev) for axis in AXES]
        quat = quat_from_euler_xyz(draw[3], draw[4], draw[5])
        pose = torch.cat((torch.stack(draw[0:3], dim=-1), quat), dim=-1)
        torch.where(env_mask.unsqueeze(-1), pose, self._command, out=self._command)

    def _tracked_b(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The tracked frame's pose now, in the base frame."""
        return pose_in(self.tracked.pose_w(), self.base.pose_w())

    def errors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(N,) position (m) and orientation (rad) errors of the tracked frame now."""
        pos, quat = self._tracked_b()
        position = (pos - self._command[:, 0:3]).norm(dim=-1)
        return position, quat_angle_between(quat, self._command[:, 3:7])

    def position_delta(self) -> torch.Tensor:
        """(N, 3) the goal position minus the tracked frame's, in the base frame, m."""
        return self._command[:, 0:3] - self._tracked_b()[0]

    def _update_metrics(self) -> None:
        position, orientation = self.errors()
        # the episode means the training log reports (Metrics/<term>/...), as running sums
        # turned into means at each step: no per-episode step count to keep elsewhere
        self._steps += 1.0
        w = 1.0 / self._steps
        self.metrics["position_error"].mul_(1.0 - w).add_(position * w)
        self.metrics["orientation_error"].mul_(1.0 - w).add_(orientation * w)

    def reset(self, env_mask, keep=None):
        log = super().reset(env_mask, keep=keep)
        self._steps.masked_fill_(env_mask, 0.0)
        return log

    def step_metrics(self) -> dict[str, torch.Tensor]:
        position, orientation = self.errors()
        return {"position_error": position, "orientation_error": orientation}

    def goal_w(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(N, 3), (N, 4): the goal as a world pose."""
        return pose_to_world((self._command[:, 0:3], self._command[:, 3:7]), self.base.pose_w())

    def debug_markers(self, env_id: int) -> list[Marker]:
        """The goal (red sphere and frame) and the tracked frame now (green)."""
        goal = torch.cat(self.goal_w(), dim=-1)[env_id]
        now = torch.cat(self.tracked.pose_w(), dim=-1)[env_id]
        g, c = torch.stack((goal, now)).detach().cpu().double().tolist()
        size = float(self.cfg.marker_size)
        return [
            Marker("sphere", tuple(g[0:3]), rgba=GOAL_RGBA, size=0.012),
            Marker("frame", tuple(g[0:3]), quat=tuple(g[3:7]), rgba=GOAL_RGBA, size=size),
            Marker("frame", tuple(c[0:3]), quat=tuple(c[3:7]), rgba=CURRENT_RGBA, size=size),
        ]


@dataclass
class UniformPoseCommandCfg(CommandTermCfg):
    """A goal pose for ``tracked`` in ``base``'s frame, uniform in ``ranges`` (m for
    ``pos_x``, ``pos_y``, ``pos_z``; rad for ``roll``, ``pitch``, ``yaw``, composed as
    Rz(yaw) Ry(pitch) Rx(roll)); an axis left out is 0."""

    class_type: type[CommandTerm] | None = UniformPoseCommand
    base: FrameCfg | str = "link0"
    """The frame the goal is in: the robot's base."""
    tracked: FrameCfg | str = "hand"
    """The frame the goal is for (its errors are the term's metrics)."""
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    resampling_time_range: tuple[float, float] = (4.0, 4.0)
    marker_size: float = 0.08
    """Length of the drawn frames' axes (m)."""
