"""The motion-tracking command (the BeyondMimic recipe): each env follows a frame of a clip,
starts its episode in the clip's state at a sampled frame, and ends it when the clip ends.

At a reset an env draws a clip and a frame (``sampling``: ``"uniform"`` over every frame of
every clip, ``"start"`` at the clips' first frames, or ``"adaptive"``: toward the stretches
where episodes fail, as BeyondMimic does), and the robot is put in the clip's state there
(root pose and velocity, joint positions and velocities) with the configured noise. From
then on the command is the clip's next frame: the pose the robot should reach by the end of
the env step, advancing one frame per step at the control rate the clips are resampled to.

What the reference exposes to terms (all tensors on the env's device, float32):

* ``command``: (N, 2J) the reference joint positions and velocities;
* ``ref_body_pos_w`` and the rest: the tracked bodies' world poses and velocities;
* :meth:`ref_body_pose_relative`: the reference bodies moved so that the reference anchor
  sits over the robot's anchor, yawed to its heading, at the reference's own height (the
  rewards on body positions compare this, so that a robot that drifted still scores for
  its posture);
* ``robot_body_pos_w`` and the rest: the same bodies of the robot now.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from robolearn.assets import ASSETS_DIR
from robolearn.config import check_range
from robolearn.errors import RobolearnError
from robolearn.managers import CommandTerm, CommandTermCfg, EnvRows, Marker, as_env_mask
from robolearn.math import (
    quat_angle_between,
    quat_conjugate,
    quat_from_euler_xyz,
    quat_mul,
    quat_rotate,
    quat_rotate_inverse,
    sample_uniform,
    yaw_quat,
)
from robolearn.mdp.axes import sample_axes
from robolearn.mdp.protocol import TaskEnv
from robolearn.motion import MotionClip, RobotModel, clip_kinematics, load_clip
from robolearn.scene.cache import per_step
from robolearn.sim.memory import require

SAMPLINGS = ("adaptive", "uniform", "start")
REF_RGBA = (0.95, 0.45, 0.1, 0.8)
ROBOT_RGBA = (0.2, 0.6, 0.95, 0.8)


def clip_bytes(frames: int, robot: RobotModel, tracked: int) -> int:
    """Memory a clip of ``frames`` frames at the control rate takes while it is loaded for
    training: its resampled frames and their kinematics (every body's pose and velocities,
    float64), and its table of the ``tracked`` bodies (float32, two copies)."""
    joints, bodies = len(robot.joint_names), robot.model.nbody
    resampled = 3 * (7 + joints) * 8  # the clip and the interpolation's temporaries
    kinematics = (2 * 13 * bodies + robot.model.nq + joints) * 8
    table = 2 * (2 * joints + 13 * (tracked + 1)) * 4
    return frames * (resampled + kinematics + table)


_BYTES_PER_BIN_PAIR = 30
"""Adaptive sampling's (bins, bins) kernel, float32, and the temporaries that make it."""


def motion_path(name: str) -> Path:
    """A clip's file: a path relative to robolearn's shipped assets (``motions/g1_walk.npz``)
    if one is there, else the path as given."""
    shipped = ASSETS_DIR / name
    return shipped if shipped.is_file() else Path(name).expanduser()


class MotionCommand(CommandTerm):
    """``command`` is (N, 2J): the reference joint positions then velocities of the frame
    each env is to reach by the end of this step (see the module docstring)."""

    cfg: MotionCommandCfg

    def __init__(self, cfg: MotionCommandCfg, env: TaskEnv, name: str) -> None:
        super().__init__(cfg, env, name)
        what = f"commands.{name}"
        if cfg.sampling not in SAMPLINGS:
            raise RobolearnError(
                f"{what}.sampling {cfg.sampling!r} is not one of {', '.join(SAMPLINGS)}"
            )
        if not cfg.motion_files:
            raise RobolearnError(f"{what}.motion_files names no clip")
        scene = env.scene
        scene.require_floating_base()
        model = scene.model
        root = model.body(scene.root_body_id).name
        self.robot = RobotModel.of(model, root, scene.joint_names)
        names = list(dict.fromkeys([cfg.anchor_body, *cfg.body_names]))
        body_ids = [self.robot.body_id(b) for b in names]
        self.body_names = names
        """The tracked bodies: the anchor first, then ``body_names`` (without it)."""
        self.body_ids = torch.as_tensor(body_ids, device=env.device)
        dt = env.step_dt
        files = {path: load_clip(motion_path(path)) for path in cfg.motion_files}
        self._require_memory(files, dt, len(names), what)
        self.clips = [self._load(path, clip, dt, what) for path, clip in files.items()]
        self._build_tables(self.clips, body_ids, scene.root_body_id, dt)
        n, dev = env.num_envs, env.device
        self.frame = torch.zeros(n, dtype=torch.long, device=dev)
        """(N,) the global index (into the concatenated clips) of the frame to reach."""
        self.last_frame = torch.zeros(n, dtype=torch.long, device=dev)
        """(N,) the global index of the last frame of each env's clip."""
        self.start_frame = torch.zeros(n, dtype=torch.long, device=dev)
        """(N,) the frame each env's episode started in."""
        self._pose_noise = dict(cfg.pose_range)
        self._velocity_noise = dict(cfg.velocity_range)
        self._joint_noise = check_range(
            cfg.joint_position_range, f"{what}.joint_position_range", floor=None
        )
        self._bins(cfg, what)
        self.metrics = {
            k: torch.zeros(n, device=dev)
            for k in ("body_pos_error", "anchor_pos_error", "anchor_ori_error", "joint_pos_error")
        }
        self._steps = torch.zeros(n, device=dev)
        self._version = 0
        self._step_cache: dict[str, object] = {}
        self._cache_stamp: tuple = ()
        # the share of the clip time left at its start that each ended episode followed
        self.last_episode = {"tracked_fraction": torch.zeros(n, device=dev)}
        self._update_command()

    # ---- clips ------------------------------------------------------------------------

    def _require_memory(
        self, files: dict[str, MotionClip], dt: float, tracked: int, what: str
    ) -> None:
        """Refuse clips whose frames at the control rate do not fit in memory, before they
        are resampled: a clip's rate in its file sets how long it lasts, and a clip saved at
        a rate far too low (1e-9 Hz) asked for terabytes here. The largest is named."""
        frames = {path: self._frames(clip, dt) for path, clip in files.items()}
        bin_s = self.cfg.adaptive_bin_s  # checked when the bins are made
        per_bin = max(1, round(bin_s / dt)) if bin_s > 0 and math.isfinite(bin_s) else 1
        bins = sum(math.ceil(f / per_bin) for f in frames.values())
        path = max(frames, key=lambda p: frames[p])
        clip = files[path]
        require(
            sum(clip_bytes(f, self.robot, tracked) for f in frames.values())
            + bins * bins * _BYTES_PER_BIN_PAIR,
            self.env.device,
            f"{what}: {path}'s {frames[path]:,} frames at the control rate ({1 / dt:g} Hz; "
            f"{clip.num_frames:,} at {clip.fps:g} Hz in its file, {clip.duration:,.0f} s)"
            + (f" and those of {len(files) - 1} other clips" if len(files) > 1 else ""),
            advice="convert it again at its true frame rate (robolearn motion convert --fps), "
            "or track shorter clips",
        )

    @staticmethod
    def _frames(clip: MotionClip, dt: float) -> int:
        """How many frames ``clip`` has at the control step ``dt`` (as resampled)."""
        return math.floor(clip.duration / dt + 1e-9) + 1

    def _load(self, path: str, clip: MotionClip, dt: float, what: str) -> MotionClip:
        if clip.duration < dt:
            raise RobolearnError(
                f"{what}: clip {path} lasts {clip.duration:.4g} s, shorter than one control "
                f"step ({dt:.4g} s)"
            )
        return clip.in_order(self.robot.joint_names, "the robot").resample(1.0 / dt)

    def _build_tables(self, clips: list[MotionClip], body_ids, root_id: int, dt: float) -> None:
        """The clips' frames, concatenated, as device tensors."""
        dev = self.env.device
        parts: dict[str, list[torch.Tensor]] = {}
        starts, ends = [], []
        total = 0
        for clip in clips:
            kin = clip_kinematics(self.robot, clip)
            for key, value in (
                ("joint_pos", kin.clip.joint_pos),
                ("joint_vel", kin.joint_vel),
                ("body_pos", kin.body_pos[:, body_ids]),
                ("body_quat", kin.body_quat[:, body_ids]),
                ("body_lin_vel", kin.body_lin_vel[:, body_ids]),
                ("body_ang_vel", kin.body_ang_vel[:, body_ids]),
                ("root_pos", kin.body_pos[:, root_id]),
                ("root_quat", kin.body_quat[:, root_id]),
                ("root_lin_vel", kin.body_lin_vel[:, root_id]),
                ("root_ang_vel", kin.body_ang_vel[:, root_id]),
            ):
                parts.setdefault(key, []).append(torch.as_tensor(value, dtype=torch.float32))
            starts.append(total)
            total += clip.num_frames
            ends.append(total - 1)
        self.table = {k: torch.cat(v).to(dev) for k, v in parts.items()}
        """Per global frame: ``joint_pos``, ``joint_vel`` (F, J); ``body_*`` (F, B, 3 or 4)
        of the tracked bodies; ``root_*`` of the robot's floating base."""
        self.clip_starts = torch.as_tensor(starts, device=dev)
        self.clip_ends = torch.as_tensor(ends, device=dev)
        clip_of = torch.cat(
            [torch.full((c.num_frames,), i, dtype=torch.long) for i, c in enumerate(clips)]
        )
        self.clip_of_frame = clip_of.to(dev)
        """(F,) which clip each global frame belongs to."""
        # frames an episode may start in: all but each clip's last (one step at least)
        startable = torch.ones(total, dtype=torch.bool)
        startable[torch.as_tensor(ends)] = False
        self._startable = torch.nonzero(startable).squeeze(-1).to(dev)

    def _bins(self, cfg: MotionCommandCfg, what: str) -> None:
        """Adaptive sampling's bins: stretches of ``adaptive_bin_s`` of every clip's start
        frames, each with a failure rate, and the kernel that spreads a failure to the bins
        before it (an episode that starts a little earlier meets the same difficulty)."""
        if not (cfg.adaptive_bin_s > 0 and math.isfinite(cfg.adaptive_bin_s)):
            raise RobolearnError(f"{what}.adaptive_bin_s must be a positive number")
        dev = self.env.device
        per_bin = max(1, round(cfg.adaptive_bin_s / self.env.step_dt))
        starts = self._startable
        clip = self.clip_of_frame[starts]
        local = starts - self.clip_starts[clip]
        bin_in_clip = local // per_bin
        # a bin id per start frame, distinct across clips
        first_bin = torch.zeros(len(self.clips) + 1, dtype=torch.long, device=dev)
        counts = torch.zeros(len(self.clips), dtype=torch.long, device=dev)
        counts.scatter_reduce_(0, clip, bin_in_clip + 1, reduce="amax")
        first_bin[1:] = torch.cumsum(counts, 0)
        self._bin_of_start = first_bin[clip] + bin_in_clip
        num_bins = int(first_bin[-1])
        self.num_bins = num_bins
        # a bin's start frames are a run of the list of start frames: its size and offset
        self._bin_size = torch.bincount(self._bin_of_start, minlength=num_bins)
        self._bin_offset = torch.cumsum(self._bin_size, 0) - self._bin_size
        frame_bin = torch.zeros(self.clip_of_frame.shape[0], dtype=torch.long, device=dev)
        frame_bin[starts] = self._bin_of_start
        # a clip's last frame counts in its last bin
        frame_bin[self.clip_ends] = frame_bin[self.clip_ends - 1]
        self._frame_bin = frame_bin
        k, lam = int(cfg.adaptive_kernel_size), float(cfg.adaptive_lambda)
        if k < 1:
            raise RobolearnError(f"{what}.adaptive_kernel_size must be >= 1")
        bin_clip = torch.searchsorted(first_bin[1:], torch.arange(num_bins, device=dev), right=True)
        i = torch.arange(num_bins, device=dev)
        lag = i.unsqueeze(0) - i.unsqueeze(1)  # [start bin, failed bin]: failed - start
        same = bin_clip.unsqueeze(0) == bin_clip.unsqueeze(1)
        self._kernel = torch.where(
            (lag >= 0) & (lag < k) & same, lam ** lag.clamp(min=0).float(), 0.0
        )
        self.bin_failure = torch.zeros(num_bins, device=dev)
        """(bins,) each bin's failure rate, a moving average over steps."""
        self._new_failures = torch.zeros(num_bins, device=dev)

    def sampling_probabilities(self) -> torch.Tensor:
        """(bins,) how likely adaptive sampling starts an episode in each bin now."""
        cfg = self.cfg
        weight = self.bin_failure + cfg.adaptive_uniform_ratio / self.num_bins
        p = self._kernel @ weight
        return p / p.sum()

    # ---- the reference ----------------------------------------------------------------

    @property
    def command(self) -> torch.Tensor:
        return torch.cat((self.ref_joint_pos, self.ref_joint_vel), dim=-1)

    def _state_stamp(self) -> tuple[int, int, int, int]:
        """What the per-state values below follow (:func:`~robolearn.scene.cache.per_step`):
        several rewards, terminations and metrics read them each step. It changes with every
        env step, every torch write to the state (a reset, a push) and every new frame."""
        e = self.env.scene.engine
        return (self.env.common_step_counter, e.qpos._version, e.qvel._version, self._version)

    def _update_command(self) -> None:
        self._version += 1
        t, f = self.table, self.frame
        origin = self.env.scene.env_origins.unsqueeze(1)
        self.ref_joint_pos = t["joint_pos"][f]
        self.ref_joint_vel = t["joint_vel"][f]
        self.ref_body_pos_w = t["body_pos"][f] + origin
        self.ref_body_quat_w = t["body_quat"][f]
        self.ref_body_lin_vel_w = t["body_lin_vel"][f]
        self.ref_body_ang_vel_w = t["body_ang_vel"][f]

    @property
    def ref_anchor_pos_w(self) -> torch.Tensor:
        return self.ref_body_pos_w[:, 0]

    @property
    def ref_anchor_quat_w(self) -> torch.Tensor:
        return self.ref_body_quat_w[:, 0]

    @per_step
    def robot_body_pos_w(self) -> torch.Tensor:
        """(N, B, 3) world positions of the robot's tracked bodies."""
        return self.env.scene.engine.xpos.index_select(1, self.body_ids).float()

    @per_step
    def robot_body_quat_w(self) -> torch.Tensor:
        """(N, B, 4) world orientations of the robot's tracked bodies."""
        return self.env.scene.engine.xquat.index_select(1, self.body_ids).float()

    def robot_body_vel_w(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(N, B, 3) linear and angular world velocities of the robot's tracked bodies."""
        return self._robot_body_vel

    @per_step
    def _robot_body_vel(self) -> tuple[torch.Tensor, torch.Tensor]:
        lin, ang = self.env.scene.engine.body_velocity(self.body_ids)
        return lin.float(), ang.float()

    def ref_body_pose_relative(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(N, B, 3), (N, B, 4): the reference bodies with the reference anchor moved over
        the robot's anchor (its x and y, the reference's height) and turned to its heading."""
        return self._relative

    @per_step
    def _relative(self) -> tuple[torch.Tensor, torch.Tensor]:
        robot_anchor_pos = self.robot_body_pos_w[:, 0]
        robot_anchor_quat = self.robot_body_quat_w[:, 0]
        ref_pos, ref_quat = self.ref_body_pos_w, self.ref_body_quat_w
        anchor = torch.cat((robot_anchor_pos[:, 0:2], ref_pos[:, 0, 2:3]), dim=-1)
        turn = yaw_quat(quat_mul(robot_anchor_quat, quat_conjugate(ref_quat[:, 0])))
        b = ref_pos.shape[1]
        turn_b = turn.unsqueeze(1).expand(-1, b, -1)
        pos = anchor.unsqueeze(1) + quat_rotate(turn_b, ref_pos - ref_pos[:, 0:1])
        return pos, quat_mul(turn_b, ref_quat)

    def anchor_in_robot_frame(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(N, 3), (N, 4): the reference anchor's pose in the robot anchor's frame."""
        pos = self.robot_body_pos_w[:, 0]
        quat = self.robot_body_quat_w[:, 0]
        rel = quat_rotate_inverse(quat, self.ref_anchor_pos_w - pos)
        return rel, quat_mul(quat_conjugate(quat), self.ref_anchor_quat_w)

    def errors(self) -> dict[str, torch.Tensor]:
        """(N,) the tracking errors now: mean body position error (m, of the relative
        reference), anchor position (m) and orientation (rad) errors in the world, mean
        absolute joint position error (rad)."""
        return self._errors

    @per_step
    def _errors(self) -> dict[str, torch.Tensor]:
        rel_pos, _ = self.ref_body_pose_relative()
        body = (self.robot_body_pos_w - rel_pos).norm(dim=-1).mean(dim=-1)
        anchor = (self.robot_body_pos_w[:, 0] - self.ref_anchor_pos_w).norm(dim=-1)
        ori = quat_angle_between(self.robot_body_quat_w[:, 0], self.ref_anchor_quat_w)
        joints = (self.env.scene.joint_pos - self.ref_joint_pos).abs().mean(dim=-1)
        return {
            "body_pos_error": body,
            "anchor_pos_error": anchor,
            "anchor_ori_error": ori,
            "joint_pos_error": joints,
        }

    def clip_ended(self) -> torch.Tensor:
        """(N,) bool: the frame to reach is the clip's last."""
        return self.frame >= self.last_frame

    # ---- the step and resets ----------------------------------------------------------

    def compute(self, dt: float) -> None:
        """One env step: metrics, failure rates, then the next frame (clips end episodes, so
        the command is never resampled on a timer)."""
        self._update_metrics()
        a = float(self.cfg.adaptive_alpha)
        self.bin_failure.mul_(1.0 - a).add_(self._new_failures, alpha=a)
        self._new_failures.zero_()
        # an env that reset inside this step starts at its first target: not advanced
        moved = self.env.episode_length_buf > 0
        self.frame = torch.where(moved, torch.minimum(self.frame + 1, self.last_frame), self.frame)
        self._update_command()

    def _update_metrics(self) -> None:
        errors = self.errors()
        self._steps += 1.0
        w = 1.0 / self._steps
        for key, value in errors.items():
            self.metrics[key].mul_(1.0 - w).add_(value * w)

    def step_metrics(self) -> dict[str, torch.Tensor]:
        return self.errors()

    def reset(self, env_mask, keep=None):
        env = self.env
        env_mask = as_env_mask(env, env_mask)
        # failures counted in the bin of the frame they failed at
        failed = env_mask & env.reset_terminated & (env.episode_length_buf > 0)
        self._new_failures.index_add_(0, self._frame_bin[self.frame], failed.float())
        possible = (self.last_frame - self.start_frame).clamp(min=1).float()
        tracked = ((self.frame - self.start_frame).float() / possible).clamp(max=1.0)
        tracked = torch.where(self.clip_ended(), 1.0, tracked)
        rows = EnvRows.of(env, env_mask)
        rows.put(self.last_episode["tracked_fraction"], rows.take(tracked))
        log = super().reset(env_mask, keep=keep)
        self._steps.masked_fill_(env_mask, 0.0)
        return log

    def _resample(self, env_mask: torch.Tensor) -> None:
        env = self.env
        rows = EnvRows.of(env, env_mask)
        n, dev = rows.n, env.device
        start = self._draw_starts(n, dev)
        clip = self.clip_of_frame[start]
        rows.put(self.start_frame, start)
        rows.put(self.frame, start + 1)
        rows.put(self.last_frame, self.clip_ends[clip])
        self._write_state(rows, start)
        env.scene.forward(env_mask)

    def _draw_starts(self, n: int, dev) -> torch.Tensor:
        cfg = self.cfg
        if cfg.sampling == "start":
            pick = torch.randint(len(self.clips), (n,), device=dev)
            return self.clip_starts[pick]
        if cfg.sampling == "uniform":
            pick = torch.randint(self._startable.shape[0], (n,), device=dev)
            return self._startable[pick]
        bins = torch.multinomial(self.sampling_probabilities(), n, replacement=True)
        within = (torch.rand(n, device=dev) * self._bin_size[bins]).long()
        index = torch.minimum(within, self._bin_size[bins] - 1)
        return self._startable[self._bin_offset[bins] + index]

    def _write_state(self, rows: EnvRows, frame: torch.Tensor) -> None:
        """The robot in the clips' state at ``frame`` (one per selected env), with noise."""
        env, t = self.env, self.table
        scene, e = env.scene, env.scene.engine
        n = rows.n
        q0, v0 = scene.root_qpos_adr, scene.root_dof_adr
        pose = sample_axes(self._pose_noise, n, f"commands.{self.name}.pose_range", env.device)
        vel = sample_axes(
            self._velocity_noise, n, f"commands.{self.name}.velocity_range", env.device
        )
        pos = t["root_pos"][frame] + rows.take(scene.env_origins) + pose[:, 0:3]
        turn = quat_from_euler_xyz(pose[:, 3], pose[:, 4], pose[:, 5])
        quat = quat_mul(turn, t["root_quat"][frame])
        lin = t["root_lin_vel"][frame] + vel[:, 0:3]
        ang_b = quat_rotate_inverse(quat, t["root_ang_vel"][frame] + vel[:, 3:6])
        joints = t["joint_pos"][frame] + sample_uniform(
            *self._joint_noise, tuple(t["joint_pos"][frame].shape), env.device
        )
        lo, hi = scene.joint_pos_limits.unbind(-1)
        joints = torch.maximum(torch.minimum(joints, hi), lo)
        cols = scene.joint_columns(list(scene.joint_names))
        rows.put_columns(e.qpos, slice(q0, q0 + 3), pos.to(e.dtype))
        rows.put_columns(e.qpos, slice(q0 + 3, q0 + 7), quat.to(e.dtype))
        rows.put_columns(e.qvel, slice(v0, v0 + 3), lin.to(e.dtype))
        rows.put_columns(e.qvel, slice(v0 + 3, v0 + 6), ang_b.to(e.dtype))
        rows.put_columns(e.qpos, cols.qpos, joints.to(e.dtype))
        rows.put_columns(e.qvel, cols.dofs, t["joint_vel"][frame].to(e.dtype))

    def debug_markers(self, env_id: int) -> list[Marker]:
        """The reference bodies (orange spheres, where the clip has them, moved over the
        robot as the rewards compare them) and the robot's (blue)."""
        ref, _ = self.ref_body_pose_relative()
        pts = torch.stack((ref[env_id], self.robot_body_pos_w[env_id])).detach().cpu().double()
        ref_pts, robot_pts = pts.tolist()
        size = float(self.cfg.marker_size)
        out = [Marker("sphere", tuple(p), rgba=REF_RGBA, size=size) for p in ref_pts]
        out += [Marker("sphere", tuple(p), rgba=ROBOT_RGBA, size=0.6 * size) for p in robot_pts]
        return out


@dataclass
class MotionCommandCfg(CommandTermCfg):
    """Track the clips ``motion_files`` (robolearn's npz; paths relative to robolearn's
    assets, or any path) with the bodies ``anchor_body`` and ``body_names``."""

    class_type: type[CommandTerm] | None = MotionCommand
    motion_files: list[str] = field(default_factory=list)
    anchor_body: str = "torso_link"
    """The body whose pose the reference is aligned to (BeyondMimic's anchor: the torso)."""
    body_names: list[str] = field(default_factory=list)
    """The bodies whose poses and velocities the rewards compare."""
    sampling: str = "adaptive"
    """Where episodes start: ``adaptive`` (toward failures), ``uniform``, ``start``."""
    adaptive_bin_s: float = 1.0
    """Seconds of clip per adaptive-sampling bin."""
    adaptive_kernel_size: int = 1
    """Bins back from a failure that share its weight (1: the failed bin alone)."""
    adaptive_lambda: float = 0.8
    """Decay of that weight per bin back."""
    adaptive_uniform_ratio: float = 0.1
    """The weight every bin keeps, against the failure rates."""
    adaptive_alpha: float = 0.001
    """Per step, how fast the bins' failure rates follow new failures."""
    pose_range: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Noise on the root's pose at a reset (x, y, z in m; roll, pitch, yaw in rad)."""
    velocity_range: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Noise on the root's velocity at a reset (world; m/s and rad/s)."""
    joint_position_range: tuple[float, float] = (0.0, 0.0)
    """Noise added to the joint positions at a reset (rad), clamped to the joints' limits."""
    resampling_time_range: tuple[float, float] = (1.0e9, 1.0e9)
    marker_size: float = 0.04
