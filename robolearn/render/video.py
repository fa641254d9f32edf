"""Offscreen frames of envs and mp4 videos, without a display.

MuJoCo's renderer draws one env at a time from a host copy of its state, so it works the
same for every engine. Headless machines render through EGL (Mesa or a GPU driver);
robolearn sets ``MUJOCO_GL=egl`` when no display is present (see robolearn/__init__.py).
"""

from __future__ import annotations

import copy
import math
import os
import sys
import time
from pathlib import Path
from typing import TextIO

import mujoco
import numpy as np

from robolearn.errors import RobolearnError
from robolearn.files import atomic_path
from robolearn.render.overlays import add_marker

VISUAL_FIELDS = ("geom_size", "geom_rgba", "geom_rbound", "geom_pos", "geom_quat")
"""Model fields that change what a frame shows: where the engine holds them per env (an
object's per-env shape, size and colour), each env is drawn with its own."""


class EnvRenderer:
    """Renders env ``env_id`` of an engine, with a camera that follows the robot's root, and
    with that env's own values of the model fields the engine varies per env (a copy of the
    model is drawn then, so the engine's is never touched).

    ``shadows`` and ``reflections`` (of a reflective floor) are off unless asked for: without
    them Mesa's software renderer drew a 640x480 frame of the humanoid 3.4x faster (0.04 s
    against 0.15 s on 2 cores, ``benchmarks/video_renderers.py``); the robot, the terrain,
    the markers and the antialiasing look the same. The web viewer asks for both."""

    def __init__(
        self,
        engine,
        width: int = 640,
        height: int = 480,
        track_body: int | None = None,
        distance: float = 3.0,
        fit: bool = True,
        shadows: bool = False,
        reflections: bool = False,
    ) -> None:
        """``fit``: shrink a size larger than the model's offscreen buffer to it (a default
        size); False refuses it (a size the user asked for), in a RobolearnError."""
        per_env = set(getattr(engine, "per_env_fields", ()))
        self._visual = [f for f in VISUAL_FIELDS if f in per_env]
        # MuJoCo's renderer draws the model it was made with: a copy takes each env's fields
        model = copy.deepcopy(engine.model) if self._visual else engine.model
        vis = model.vis.global_
        if not fit and (width > vis.offwidth or height > vis.offheight):
            raise RobolearnError(
                f"a {width}x{height} video is larger than the model's offscreen buffer "
                f"({vis.offwidth}x{vis.offheight}), which MuJoCo's renderer draws into: ask "
                "for at most that, or raise <visual><global offwidth offheight> in the MJCF "
                "(OpenGL draws up to its GL_MAX_RENDERBUFFER_SIZE, 16384 on Mesa)"
            )
        width, height = min(width, vis.offwidth), min(height, vis.offheight)
        try:
            self.renderer = mujoco.Renderer(model, height, width)
        except Exception as exc:  # the GL backend could not start
            if "framebuffer is not complete" in str(exc):  # a buffer OpenGL cannot make
                raise RobolearnError(
                    f"OpenGL cannot draw the model's {vis.offwidth}x{vis.offheight} "
                    "offscreen buffer (beyond its GL_MAX_RENDERBUFFER_SIZE, 16384 on Mesa); "
                    "lower <visual><global offwidth offheight> in the MJCF"
                ) from None
            backend = os.environ.get("MUJOCO_GL", "default")
            raise RobolearnError(
                f"cannot render offscreen with MUJOCO_GL={backend} ({exc}); install Mesa's EGL "
                "(Debian: libegl1 libgl1-mesa-dri) or set MUJOCO_GL=osmesa with libosmesa6"
            ) from exc
        self.renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = shadows
        self.renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = reflections
        self.engine = engine
        self.model = model
        self.data = mujoco.MjData(model)
        self.camera = mujoco.MjvCamera()
        if track_body is not None:
            self.camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
            self.camera.trackbodyid = track_body
        else:
            self.camera.type = mujoco.mjtCamera.mjCAMERA_FREE
            self.camera.lookat[:] = model.stat.center
        self.camera.distance = distance if track_body is not None else 1.5 * model.stat.extent
        self.camera.elevation = -15.0
        self.camera.azimuth = 135.0
        self.width, self.height = width, height

    def sync(self, env_id: int) -> mujoco.MjData:
        """The host MjData holding env ``env_id``'s current pose (kinematics computed)."""
        e = self.engine
        for field in self._visual:
            getattr(self.model, field)[:] = e.model_field(field)[env_id].detach().cpu().numpy()
        e.copy_state_to(env_id, self.data)
        mujoco.mj_forward(self.model, self.data)
        return self.data

    def frame(
        self, env_id: int = 0, option: mujoco.MjvOption | None = None, markers: list | None = None
    ) -> np.ndarray:
        """(height, width, 3) uint8 RGB image of env ``env_id``, with optional scene options
        (e.g. contact drawing) and debug markers (:class:`~robolearn.managers.Marker`)."""
        kwargs = {"scene_option": option} if option is not None else {}
        self.renderer.update_scene(self.sync(env_id), camera=self.camera, **kwargs)
        for marker in markers or ():
            add_marker(self.renderer.scene, marker)
        return self.renderer.render().copy()

    def grid(self, env_ids: list[int], markers_of=None) -> np.ndarray:
        """Several envs tiled in a near-square grid, one frame per env."""
        tiles = [self.frame(i, markers=markers_of(i) if markers_of else None) for i in env_ids]
        cols = int(np.ceil(np.sqrt(len(tiles))))
        rows = int(np.ceil(len(tiles) / cols))
        blank = np.zeros_like(tiles[0])
        tiles += [blank] * (rows * cols - len(tiles))
        return np.concatenate(
            [np.concatenate(tiles[r * cols : (r + 1) * cols], axis=1) for r in range(rows)], axis=0
        )

    def close(self) -> None:
        self.renderer.close()


def require_video_memory(
    frames: int, width: int = 640, height: int = 480, tiles: int = 1, flag: str = "--video_length"
) -> None:
    """Refuse a clip whose frames, held in memory until the mp4 is encoded, do not fit:
    ``frames`` images of ``tiles`` envs (tiled near-square) of ``width`` x ``height`` RGB
    pixels each."""
    from robolearn.sim.memory import require

    cols = math.ceil(math.sqrt(tiles))
    rows = math.ceil(tiles / cols)
    per_frame = width * height * 3 * cols * rows
    require(
        frames * per_frame,
        "cpu",
        f"{frames:,} video frames of {width * cols}x{height * rows} pixels (held until the "
        "mp4 is encoded)",
        frames,
        advice=f"record fewer frames ({flag})",
    )


def write_mp4(path: str | os.PathLike, frames: list[np.ndarray] | np.ndarray, fps: float) -> Path:
    """Encode RGB frames as an H.264 mp4 at ``path``, atomically (temp file, then rename)."""
    try:
        import imageio.v2 as imageio
    except ImportError as exc:
        raise RobolearnError("videos need the video extra: pip install 'robolearn[video]'") from exc

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if len(frames) == 0:
        raise RobolearnError("no frames to write")
    with (
        atomic_path(path, suffix=".mp4") as tmp,
        imageio.get_writer(
            tmp, fps=fps, codec="libx264", quality=7, macro_block_size=8, ffmpeg_log_level="error"
        ) as writer,
    ):
        for f in frames:
            writer.append_data(np.asarray(f))
    return path


class FrameProgress:
    """``video: frame <done>/<total>`` on stderr while a video renders (a frame takes 0.1-0.5 s
    on a CPU): one line rewritten in place on a terminal, else a line at every tenth of
    the frames, so that a log holds ten."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total, self.done = total, 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self.tenths = 0  # shown, where not a terminal

    def step(self) -> None:
        """One more frame done."""
        self.done += 1
        last = self.done == self.total
        if self.tty:
            self.stream.write(f"\r{self._line()}" + ("\n" if last else ""))
        elif self.done * 10 // self.total > self.tenths or last:
            self.tenths = self.done * 10 // self.total
            self.stream.write(self._line() + "\n")
        self.stream.flush()

    def _line(self) -> str:
        rate = self.done / max(time.monotonic() - self.started, 1e-9)
        left = (self.total - self.done) / rate
        return f"video: frame {self.done}/{self.total} ({rate:.1f} frames/s, {left:.0f} s left)"


def track_body_of(env) -> int | None:
    """The body a follow camera should track: the floating root, if the scene has one."""
    return env.scene.root_body_id


class PeriodicVideo:
    """Records env 0 for ``length`` env steps every ``interval`` env steps during training.

    Called after each env step; clips go to ``folder/step_<env step>.mp4``.
    """

    def __init__(self, env, folder: str | os.PathLike, length: int, interval: int) -> None:
        if length < 1 or interval < 1:
            raise RobolearnError("--video_length and --video_interval must be >= 1")
        self.env = env
        self.folder = Path(folder)
        self.length, self.interval = length, interval
        self.fps = 1.0 / env.step_dt
        self.renderer = EnvRenderer(env.scene.engine, track_body=track_body_of(env))
        self.step = 0
        self.frames: list[np.ndarray] = []
        self.started_at = 0

    def __call__(self, iteration: int) -> None:
        if self.step % self.interval == 0 and not self.frames:
            self.started_at = self.step
            self.frames.append(self.renderer.frame(0))
        elif self.frames:
            self.frames.append(self.renderer.frame(0))
            if len(self.frames) >= self.length:
                self.flush()
        self.step += 1

    def flush(self) -> None:
        if self.frames:
            write_mp4(self.folder / f"step_{self.started_at}.mp4", self.frames, self.fps)
            self.frames = []

    def close(self) -> None:
        self.flush()
        self.renderer.close()
