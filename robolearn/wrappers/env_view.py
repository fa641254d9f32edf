"""Frames of env 0 for gymnasium's ``render()``, and the render modes this machine offers."""

from __future__ import annotations

import os
import threading

import numpy as np

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError

RENDER_MODES = ("rgb_array", "human")


class EnvView:
    """Frames of env 0 for ``render()``: ``rgb_array`` through robolearn's offscreen
    renderer (the one videos use, with the commands' markers), or ``human`` in MuJoCo's
    own window. Built on the first frame, so an env that never renders pays nothing."""

    def __init__(self, env: ManagerBasedRLEnv, mode: str | None) -> None:
        check_render_mode(mode)
        self.env, self.mode = env, mode
        self._renderer = None
        self._window = None
        self._data = None

    def render(self) -> np.ndarray | None:
        """An (H, W, 3) uint8 frame (``rgb_array``), or None after drawing the window."""
        if self.mode == "rgb_array":
            return self._frame()
        if self.mode == "human":
            self._show()
        return None

    def _frame(self) -> np.ndarray:
        from robolearn.render.markers import collect_markers
        from robolearn.render.video import EnvRenderer, track_body_of

        if self._renderer is None:
            self._renderer = EnvRenderer(self.env.scene.engine, track_body=track_body_of(self.env))
        return self._renderer.frame(0, markers=collect_markers(self.env, 0))

    def _show(self) -> None:
        import mujoco
        import mujoco.viewer

        model = self.env.scene.engine.model
        if self._window is None:
            self._data = mujoco.MjData(model)
            self._window = mujoco.viewer.launch_passive(model, self._data)
        if not self._window.is_running():  # the user closed the window: stop drawing
            return
        with self._window.lock():
            # the window draws a host MjData: mirror env 0 into it (any engine, any device)
            self.env.scene.engine.copy_state_to(0, self._data)
            mujoco.mj_forward(model, self._data)
        self._window.sync()

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        if self._window is not None:
            self._window.close()
            self._window = None
            # MuJoCo's window thread tears the window down after close() returns; GLFW
            # terminated at exit under a live render loop crashes the process
            for thread in threading.enumerate():
                if "_launch_internal" in thread.name:
                    thread.join(10.0)


def has_display() -> bool:
    """Whether a window can open: a display, and MuJoCo on GLFW (robolearn picks EGL only
    where there is no display)."""
    display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    return bool(display) and os.environ.get("MUJOCO_GL", "glfw") in ("glfw", "")


def available_render_modes() -> list[str]:
    """The render modes this machine offers: ``rgb_array``, and ``human`` with a display."""
    return ["rgb_array", "human"] if has_display() else ["rgb_array"]


def check_render_mode(mode: str | None) -> None:
    """Raise RobolearnError for a render mode robolearn lacks or this machine cannot show."""
    if mode is not None and mode not in RENDER_MODES:
        raise RobolearnError(
            f"render_mode {mode!r} is not one of: {', '.join(available_render_modes())}"
        )
    if mode == "human":
        _check_display()


def _check_display() -> None:
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise RobolearnError(
            "render_mode='human' needs a display (DISPLAY is not set); on a headless machine "
            "use render_mode='rgb_array', or run under Xvfb"
        )
    if not has_display():
        raise RobolearnError(
            f"render_mode='human' needs MUJOCO_GL=glfw (now {os.environ['MUJOCO_GL']}); unset it"
        )
