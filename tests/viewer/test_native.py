"""The native viewer in a real window (on conftest's xvfb display), and without a display."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from .helpers import (
    START_S,
    STOP_S,
    green_pixels,
    robot_pixels,
    spawn,
)


def test_native_viewer_opens_a_window_and_renders_frames(xvfb, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MUJOCO_GL"}
    env.update(DISPLAY=xvfb, PYTHONUNBUFFERED="1")
    cmd = [
        sys.executable,
        "-m",
        "robolearn",
        "view",
        "--viewer",
        "native",
        "--task",
        "humanoid_walk",
        "--num_envs",
        "2",
        "--max_seconds",
        "900",  # a safety net only: the test closes the window with Ctrl-C once it has looked
    ]
    out, err = tmp_path / "native.out", tmp_path / "native.err"
    proc = spawn(cmd, out, err, env)
    import mss

    # Retried until the window shows the robot in two different pictures (it is drawing, not
    # frozen) and has shown the command's green arrow (the terms' markers reach the window;
    # a standing command has none): how soon that is depends on the machine's load, so the
    # wait is a condition.
    first, seen, arrow = None, (0.0, 0), 0
    deadline = time.time() + START_S
    try:
        with mss.MSS(display=xvfb) as grabber:
            while True:
                shot = np.asarray(grabber.grab(grabber.monitors[1]))[..., :3].astype(np.int16)
                seen = (float(shot.std()), robot_pixels(shot[:, :, ::-1]))
                arrow = max(arrow, green_pixels(shot[:, :, ::-1]))
                if seen[0] > 10 and seen[1] > 200:
                    if first is None:
                        first = shot
                    elif (shot != first).any() and arrow > 30:
                        break
                assert proc.poll() is None, f"the viewer exited: {err.read_text()[-3000:]}"
                assert time.time() < deadline, (
                    f"no robot and arrow drawn in {START_S} s (std, robot pixels) = {seen}, "
                    f"green pixels {arrow}: {err.read_text()[-3000:]}"
                )
                time.sleep(0.5)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # Ctrl-C closes the native viewer cleanly
        try:
            proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"the native viewer did not exit: {err.read_text()[-3000:]}")
    # a stalled teardown ends the process after max_seconds + 60 s with every thread's stack
    assert proc.returncode == 0, err.read_text()[-3000:]
    match = re.search(r"native viewer closed after \d+ env steps, (\d+) frames", out.read_text())
    assert match, out.read_text()[-2000:]
    assert int(match.group(1)) >= 2  # two different pictures were seen above


def test_native_viewer_without_a_display_is_a_clear_error():
    from cli_helpers import one_line_error, robolearn

    env_backup = os.environ.pop("DISPLAY", None)
    try:
        out = robolearn(
            "view", "--viewer", "native", "--task", "cartpole_balance", "--max_steps", 1
        )
    finally:
        if env_backup is not None:
            os.environ["DISPLAY"] = env_backup
    one_line_error(out, "needs a display")
