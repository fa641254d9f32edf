"""The native viewer: MuJoCo's own window (``mujoco.viewer``), driven by a ViewerSession.

The window shows one env of many, mirrored into a host MjData each frame, with MuJoCo's
contact drawing and robolearn's velocity arrows; the per-term rewards and the status are
text overlays. Keys (besides MuJoCo's own):

    space      pause / resume         right arrow   one step (paused)
    backspace  reset this env         delete        reset every env
    [ and ]    previous / next env    - and =       slower / faster
    F          toggle the follow camera

Ctrl-C in the terminal closes the window as its close button does (a second Ctrl-C
interrupts at once).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import mujoco

from robolearn.errors import RobolearnError
from robolearn.render.overlays import add_marker
from robolearn.viewer.live_state import SPEEDS, ViewerSession, speed_text

_KEYS = {
    32: {"action": "toggle"},  # space
    262: {"action": "step"},  # right arrow
    259: {"action": "reset"},  # backspace
    261: {"action": "reset_all"},  # delete
}


def run_native(
    session: ViewerSession,
    max_steps: int | None = None,
    max_seconds: float | None = None,
    low_priority: Callable[[], contextlib.AbstractContextManager] | None = None,
) -> int:
    """Open the window and run until it is closed or a limit is reached; returns frames shown.

    ``low_priority``: a context the simulation loop runs in once the window's thread is up
    (:func:`robolearn.viewer.priority.yield_cpu` beside a training run)."""
    _check_display()
    import mujoco.viewer

    model = session.env.scene.engine.model
    data = mujoco.MjData(model)
    if max_seconds is not None:
        # A bounded run never hangs: should the window's GL/X teardown stall far past the
        # limit, print every thread's stack (where it stalled) and exit non-zero.
        faulthandler.dump_traceback_later(max_seconds + 60, exit=True)
    started = time.monotonic()
    with (
        _close_on_ctrl_c() as stop,
        mujoco.viewer.launch_passive(model, data, key_callback=_key_handler(session)) as viewer,
    ):
        viewer.opt.flags[mujoco.mjtVisFlag.mjVIS_CONTACTPOINT] = True
        viewer.opt.flags[mujoco.mjtVisFlag.mjVIS_CONTACTFORCE] = True
        frames = _loop(session, viewer, data, stop, started, max_steps, max_seconds, low_priority)
    _wait_for_window_thread()
    if max_seconds is not None:
        faulthandler.cancel_dump_traceback_later()
    return frames


def _loop(session, viewer, data, stop, started, max_steps, max_seconds, low_priority) -> int:
    """Step, show the watched env, and sync the window until it closes or a limit is met."""
    frames = 0
    with low_priority() if low_priority is not None else contextlib.nullcontext():
        while viewer.is_running() and not stop.is_set():
            session.tick()
            with viewer.lock():
                _show_env(session, viewer, data)
            # Outside the lock: set_texts takes the viewer's lock itself and waits for the
            # render thread, which needs that lock; called under it, the two deadlocked
            # (caught under load, stuck in set_texts, by the faulthandler watchdog above).
            viewer.set_texts(_texts(session))
            viewer.sync()
            frames += 1
            if max_steps is not None and session.steps >= max_steps:
                break
            if max_seconds is not None and time.monotonic() - started >= max_seconds:
                break
            time.sleep(0.01)
    return frames


def _check_display() -> None:
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        raise RobolearnError(
            "the native viewer needs a display (DISPLAY is not set); on a headless machine use "
            "--viewer web, or run under Xvfb"
        )
    if os.environ.get("MUJOCO_GL", "glfw") not in ("glfw", ""):
        raise RobolearnError(
            f"the native viewer needs MUJOCO_GL=glfw (now {os.environ['MUJOCO_GL']}); unset it"
        )


def _key_handler(session: ViewerSession) -> Callable[[int], None]:
    """The window's keys as session commands (the session checks and applies them)."""
    num_envs = session.env.num_envs

    def on_key(key: int) -> None:
        if key in _KEYS:
            session.submit(_KEYS[key])
        elif key in (ord("["), ord("]")):
            # wrap around here: the session refuses env ids outside [0, num_envs)
            step = -1 if key == ord("[") else 1
            session.submit({"action": "env", "value": (session.env_id + step) % num_envs})
        elif key in (ord("-"), ord("=")):
            i = min(range(len(SPEEDS)), key=lambda k: abs(SPEEDS[k] - session.speed))
            i = max(0, i - 1) if key == ord("-") else min(len(SPEEDS) - 1, i + 1)
            session.submit({"action": "speed", "value": SPEEDS[i]})
        elif key == ord("F"):
            session.submit({"action": "camera", "value": not session.follow_camera})

    return on_key


def _show_env(session: ViewerSession, viewer, data) -> None:
    """Copy the watched env's state into the window's MjData, camera and markers (under the
    viewer's lock)."""

    engine, i, model = session.env.scene.engine, session.env_id, session.env.scene.engine.model
    engine.copy_state_to(i, data)
    mujoco.mj_forward(model, data)
    root = session.env.scene.root_body_id
    if session.follow_camera and root is not None:
        viewer.cam.type = mujoco.mjtCamera.mjCAMERA_TRACKING
        viewer.cam.trackbodyid = root
    viewer.user_scn.ngeom = 0
    for marker in session.markers():
        add_marker(viewer.user_scn, marker)


@contextlib.contextmanager
def _close_on_ctrl_c() -> Iterator[threading.Event]:
    """Turn the first Ctrl-C into a request to close the window (an Event the loop checks).

    A KeyboardInterrupt raised wherever the main thread happens to be (inside sync, inside
    the viewer's lock) left MuJoCo's window thread stuck with X errors and the process
    hanging; ending the loop normally tears the window down the way its close button does.
    A second Ctrl-C raises KeyboardInterrupt as usual, for a teardown that is itself stuck.
    """
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop  # signal handlers can only be set from the main thread
        return

    def on_sigint(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def _window_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if "_launch_internal" in t.name and t.is_alive()]


def _wait_for_window_thread(timeout: float = 10.0) -> None:
    """Let MuJoCo's window thread finish tearing down before the interpreter exits; GLFW
    terminated under a live render loop crashes or hangs the process."""
    for thread in _window_threads():
        thread.join(timeout)


def exit_if_window_lingers(status: int) -> None:
    """For a process about to end: end it now if MuJoCo's window thread outlived the viewer,
    else bound the interpreter's own teardown.

    The thread is not a daemon: the interpreter would wait for it at exit, forever if its
    render loop never ends, and then terminate GLFW under it. Our work is done and flushed.
    """
    if _window_threads():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    # GLFW's atexit terminate runs during teardown; should it stall, show where and end
    faulthandler.dump_traceback_later(30, exit=True)


def _speed_line(s: dict[str, Any]) -> str:
    """The status overlay's speed line: what the web page's header says, with env steps/s."""
    text = speed_text(s)
    if s.get("steps_per_s") is not None:
        text += f"  ({s['steps_per_s']:.0f} steps/s)"
    return text


def _texts(session: ViewerSession) -> list[tuple]:
    s = session.status()
    left = [
        f"env {s['env']}/{s['num_envs']}  step {s['steps']}  t {s['episode_time_s']:.2f} s",
        _speed_line(s),
        f"last reset: {s['last_termination'] or '-'}",
    ]
    if "terrain" in s:
        t = s["terrain"]
        left.append(f"terrain {t['type']}, level {t['level']} of {t['levels'] - 1}")
    if "command" in s:
        c, v = s["command"], s["velocity"]
        left.append(f"command vx {c['vx']:+.2f} vy {c['vy']:+.2f} wz {c['wz']:+.2f}")
        left.append(f"actual  vx {v['vx']:+.2f} vy {v['vy']:+.2f} wz {v['wz']:+.2f}")
    names = "\n".join(s["rewards"]) + "\ntotal"
    values = "\n".join(f"{x:+.3f}" for x in s["rewards"].values()) + f"\n{s['reward_total']:+.3f}"
    return [
        (None, mujoco.mjtGridPos.mjGRID_TOPLEFT, "\n".join(left), ""),
        (None, mujoco.mjtGridPos.mjGRID_TOPRIGHT, names, values),
    ]
